import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as root from '../src/index.js';

// The engine root is a decision, not an accident: a name added to or removed from
// `src/index.ts` fails here until this list says so (issue 31). Everything else is on a
// documented subpath (`pipeline`, `stages`, `settings`, `governance`, `migrate`, `import`).
const VALUES = [
  'DEFAULT_DELETION_POLICY',
  'RefreshEngine',
  'collapseDuplicateHits',
  'composeEngine',
  'resolveEngineSettings',
  'silentLogger',
];
const TYPES = [
  'AcquisitionSetting',
  'Citation',
  'ClassifySettings',
  'CollapsedHit',
  'ComposedEngine',
  'DeletionPolicy',
  'DocumentEvent',
  'EngineLogger',
  'EngineMetrics',
  'EnginePorts',
  'EngineRole',
  'EngineSettings',
  'EngineSettingsInput',
  'EngineSource',
  'Heartbeat',
  'PageRenderer',
  'RecoverReport',
  'RefreshCounts',
  'RefreshOptions',
  'RefreshReport',
  'SourceReport',
  'TombstoneMirror',
  'VerifyReport',
];

interface RootExport {
  readonly name: string;
  readonly documented: boolean;
}

/** Every name `src/index.ts` exports, read from its syntax (types have no runtime trace). */
function rootExports(): RootExport[] {
  const path = new URL('../src/index.ts', import.meta.url);
  const text = readFileSync(path, 'utf8');
  const file = ts.createSourceFile('index.ts', text, ts.ScriptTarget.Latest, true);
  const out: RootExport[] = [];
  for (const statement of file.statements) {
    if (!ts.isExportDeclaration(statement)) {
      out.push({ name: `<not a re-export: ${ts.SyntaxKind[statement.kind]}>`, documented: false });
      continue;
    }
    const clause = statement.exportClause;
    if (clause === undefined || !ts.isNamedExports(clause)) {
      out.push({ name: '<export *>', documented: false });
      continue;
    }
    for (const spec of clause.elements) {
      const leading = ts.getLeadingCommentRanges(text, spec.getFullStart()) ?? [];
      const documented = leading.some((r) => text.slice(r.pos, r.end).startsWith('/**'));
      out.push({ name: spec.name.text, documented });
    }
  }
  return out;
}

describe('the @ragfresh/engine root', () => {
  it('exports exactly the pinned names, 20 to 30 of them, each with a doc comment', () => {
    const names = rootExports();
    expect(names.map((n) => n.name).sort()).toEqual([...VALUES, ...TYPES].sort());
    expect(names.length).toBeGreaterThanOrEqual(20);
    expect(names.length).toBeLessThanOrEqual(30);
    expect(names.filter((n) => !n.documented).map((n) => n.name)).toEqual([]);
  });

  it('has exactly the pinned values at run time (the rest of the list is types)', () => {
    expect(Object.keys(root).sort()).toEqual([...VALUES].sort());
  });

  it('every subpath in package.json has the source, types and default conditions, over a real file', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      exports: Record<string, Record<string, string>>;
    };
    expect(Object.keys(pkg.exports)).toEqual([
      '.',
      './pipeline',
      './stages',
      './settings',
      './governance',
      './migrate',
      './import',
    ]);
    for (const [subpath, conditions] of Object.entries(pkg.exports)) {
      expect(Object.keys(conditions), subpath).toEqual(['ragfresh-source', 'types', 'default']);
      const source = conditions['ragfresh-source']!;
      expect(() => readFileSync(new URL(`../${source}`, import.meta.url)), subpath).not.toThrow();
      expect(conditions.default, subpath).toBe(
        source.replace('./src/', './dist/').replace(/\.ts$/, '.js'),
      );
    }
  });
});
