import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// No import cycles among source files: static imports and re-exports (type-only ones too) and
// dynamic `import('./…')` all count. A cycle is how a stage ends up needing the engine that runs
// it, and how two modules each become "the" owner of a decision.

const ROOT = resolve(import.meta.dirname, '../..');
const GROUPS = ['packages', 'connectors', 'conformance', 'emulators'];
const EDGE = /(?:^(?:import|export)\s[^'";]*?from\s+|import\()'(\.[^']+)'/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

function srcDirs(): string[] {
  const dirs: string[] = [];
  for (const group of GROUPS) {
    const base = join(ROOT, group);
    if (existsSync(join(base, 'src'))) dirs.push(join(base, 'src'));
    else
      for (const pkg of readdirSync(base))
        if (existsSync(join(base, pkg, 'src'))) dirs.push(join(base, pkg, 'src'));
  }
  return dirs;
}

function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const deps: string[] = [];
    for (const m of readFileSync(file, 'utf8').matchAll(EDGE)) {
      const target = resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts'));
      const found = [target, join(target.replace(/\.ts$/, ''), 'index.ts')].find((t) =>
        known.has(t),
      );
      if (found !== undefined) deps.push(found);
    }
    graph.set(file, deps);
  }
  return graph;
}

/** Strongly connected components of more than one file (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('import cycles', () => {
  it('the detector finds a cycle (control)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(cycles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });

  it('no source file imports itself back, directly or through others', () => {
    const files = srcDirs().flatMap(sourceFiles);
    expect(files.length).toBeGreaterThan(100);
    const found = cycles(importGraph(files)).map((c) => c.map((f) => relative(ROOT, f)));
    expect(found).toEqual([]);
  });
});
