import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
    expect(ok.stdout).toContain('other/.changeset/otherStore-connector.md');
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
});
