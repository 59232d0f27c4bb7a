import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ConformanceReport, SUITE_VERSION } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCAFFOLD_HOOKS, scaffold } from '../src/scaffold.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const cli = join(root, 'conformance', 'dist', 'cli.js');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

let tmp: string;
let pkg: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'ragfresh-scaffold-'));
  pkg = join(tmp, 'connector-acme');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const run = (args: string[], cwd: string) =>
  spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 120_000 });

/** Builds the scaffold and runs two cases through the CLI; returns the report. */
function buildAndRun(): ConformanceReport {
  const built = run([tsc, '-p', 'tsconfig.json'], pkg);
  expect(built.stdout + built.stderr, 'the scaffold type-checks and builds').toBe('');
  expect(built.status).toBe(0);
  const json = join(tmp, 'report.json');
  const r = run(
    [cli, '--store', 'acme', '--cases', 'sentinel-empty,staged-invisible', '--json', json],
    pkg,
  );
  expect(r.status, r.stderr).toBe(1);
  return JSON.parse(readFileSync(json, 'utf8')) as ConformanceReport;
}

describe('ragfresh-conformance init', () => {
  it('writes the package, fixture, conformance test, README and changeset', () => {
    const result = scaffold({
      store: 'acme',
      dir: pkg,
      packageName: '@ragfresh/connector-acme',
      changesetDir: join(tmp, 'changesets'),
    });
    expect(result.files.map((f) => f.slice(tmp.length + 1)).sort()).toEqual([
      'changesets/acme-connector.md',
      'connector-acme/.gitignore',
      'connector-acme/README.md',
      'connector-acme/package.json',
      'connector-acme/src/fixture.ts',
      'connector-acme/src/index.ts',
      'connector-acme/test/acme.conformance.test.ts',
      'connector-acme/tsconfig.json',
    ]);
    const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
    expect(manifest.exports['./fixture'].default).toBe('./dist/fixture.js');
    expect(manifest.devDependencies['@ragfresh/conformance']).toBe(SUITE_VERSION);
    expect(readFileSync(join(pkg, 'src/fixture.ts'), 'utf8')).toContain(
      "new URL('../dist/index.js', import.meta.url)",
    );
    const readme = readFileSync(join(pkg, 'README.md'), 'utf8');
    for (const section of [
      '## Stored layout',
      '## Declared capabilities and why',
      '### How each verb maps to the store',
      '## Reading with LangChain',
      '## Errors',
      '## Fixture and test targets',
      '## Tests',
    ])
      expect(readme).toContain(section);
    expect(readFileSync(join(tmp, 'changesets/acme-connector.md'), 'utf8')).toContain(
      "'@ragfresh/connector-acme': minor",
    );
    // A second init into the same folder overwrites nothing.
    expect(() => scaffold({ store: 'acme', dir: pkg })).toThrow(/exists and is not empty/);
    expect(() => scaffold({ store: 'Acme!' })).toThrow(/not valid/);
  });

  it('is the CLI command `init <store>` (exit 2 and one line on bad input)', () => {
    const ok = run([cli, 'init', 'other-store', '--dir', join(tmp, 'other')], tmp);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('created ragfresh-connector-other-store in other:');
    // Outside a repo that uses changesets, no changeset (and no stray .changeset folder).
    expect(ok.stdout).not.toContain('.changeset');
    expect(existsSync(join(tmp, 'other', '.changeset'))).toBe(false);
    expect(readFileSync(join(tmp, 'other', 'src', 'index.ts'), 'utf8')).toContain(
      'export class OtherStoreConnector extends Connector',
    );
    const again = run([cli, 'init', 'other-store', '--dir', join(tmp, 'other')], tmp);
    expect(again.status).toBe(2);
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
    expect(again.stderr).toContain('exists and is not empty');
  });

  it('builds, and fails the suite naming the hook still to write; the next hook once it is written', () => {
    // The scaffold's dependencies, as an install would place them.
    mkdirSync(join(pkg, 'node_modules', '@ragfresh'), { recursive: true });
    symlinkSync(join(root, 'packages', 'core'), join(pkg, 'node_modules', '@ragfresh', 'core'));
    symlinkSync(join(root, 'conformance'), join(pkg, 'node_modules', '@ragfresh', 'conformance'));
    mkdirSync(join(pkg, 'node_modules', '@types'));
    symlinkSync(
      join(root, 'node_modules', '@types', 'node'),
      join(pkg, 'node_modules', '@types', 'node'),
    );
    const first = buildAndRun();
    expect(first.counts).toEqual({ passed: 0, failed: 2, skipped: 0 });
    for (const c of first.cases)
      expect(c.failures.join('\n')).toContain('_open is not written yet: create the collection');
    expect(SCAFFOLD_HOOKS[0]).toBe('_open');

    // Write _open: the suite moves on and names the next hook it reaches.
    const index = join(pkg, 'src', 'index.ts');
    const source = readFileSync(index, 'utf8');
    writeFileSync(
      index,
      source.replace(
        /(protected async _open\(_options: OpenOptions\): Promise<void> \{\n)[^\n]*\n/,
        '$1    // written\n',
      ),
    );
    const second = buildAndRun();
    expect(second.cases[0]!.failures.join('\n')).toMatch(/_readEpoch is not written yet/);
  });

  it('works for an author outside the repo: registry-resolvable versions, @types/node, no .changeset, the tarballs it needs named', () => {
    const outside = mkdtempSync(join(tmpdir(), 'ragfresh-author-'));
    try {
      expect(outside.startsWith(root)).toBe(false);
      const r = run([cli, 'init', 'acme'], outside);
      expect(r.status, r.stderr).toBe(0);
      const at = join(outside, 'connector-acme');
      const text = readFileSync(join(at, 'package.json'), 'utf8');
      expect(text).not.toContain('workspace:');
      const manifest = JSON.parse(text) as {
        name: string;
        peerDependencies: Record<string, string>;
        devDependencies: Record<string, string>;
        scripts: Record<string, string>;
      };
      const core = JSON.parse(readFileSync(join(root, 'packages/core/package.json'), 'utf8'));
      expect(manifest.name).toBe('ragfresh-connector-acme');
      expect(manifest.peerDependencies).toEqual({ '@ragfresh/core': `^${core.version}` });
      expect(manifest.devDependencies).toEqual({
        '@ragfresh/core': `^${core.version}`,
        '@ragfresh/conformance': SUITE_VERSION,
        '@types/node': expect.stringMatching(/^\^22\./),
        typescript: expect.stringMatching(/^\^5\./),
        vitest: expect.stringMatching(/^\^4\./),
      });
      // Every range is one a registry resolves: semver, no workspace:/file:/link: protocols.
      for (const range of Object.values(manifest.devDependencies))
        expect(range).toMatch(/^\^?\d+\.\d+\.\d+$/);
      expect(manifest.scripts.conformance).toBe('ragfresh-conformance --store .');
      const tsconfig = JSON.parse(readFileSync(join(at, 'tsconfig.json'), 'utf8'));
      expect(tsconfig.compilerOptions.types).toEqual(['node']);
      // Nothing but the package: no .changeset beside or inside it.
      expect(readdirSync(outside)).toEqual(['connector-acme']);
      expect(readdirSync(at).sort()).toEqual([
        '.gitignore',
        'README.md',
        'package.json',
        'src',
        'test',
        'tsconfig.json',
      ]);
      // The three unpublished packages, named with their versions, and how to pack them.
      const conformance = JSON.parse(readFileSync(join(root, 'conformance/package.json'), 'utf8'));
      const memory = JSON.parse(readFileSync(join(root, 'connectors/memory/package.json'), 'utf8'));
      const tgz = [
        `ragfresh-core-${core.version}.tgz`,
        `ragfresh-conformance-${conformance.version}.tgz`,
        `ragfresh-connector-memory-${memory.version}.tgz`,
      ];
      const readme = readFileSync(join(at, 'README.md'), 'utf8');
      for (const out of [readme, r.stdout]) {
        expect(out).toContain(
          'for p in packages/core conformance connectors/memory; do (cd "$p" && npx -y pnpm@10 pack --pack-destination /tmp/ragfresh-tarballs); done',
        );
        expect(out).toContain(
          `npm install -D ${tgz.map((t) => `/tmp/ragfresh-tarballs/${t}`).join(' ')}`,
        );
      }
      // The folders named are the packages' folders in the repo, and the suite depends on memory.
      for (const folder of ['packages/core', 'conformance', 'connectors/memory'])
        expect(existsSync(join(root, folder, 'package.json'))).toBe(true);
      expect(Object.keys(conformance.dependencies)).toContain('@ragfresh/connector-memory');
      expect(readme).toContain('docs/authoring.md, "Native dependencies"');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
