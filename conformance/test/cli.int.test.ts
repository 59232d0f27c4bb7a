import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CASES, type ConformanceReport, SUITE_VERSION } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'conformance/dist/cli.js');
const BUILT = [
  CLI,
  join(ROOT, 'conformance/dist/crash-child.js'),
  join(ROOT, 'connectors/memory/dist/fixture.js'),
];

function cli(args: string[], cwd = ROOT, extraEnv: Record<string, string> = {}) {
  // pnpm exec sets NODE_PATH; a user's shell does not, and resolution must not depend on it.
  const { NODE_PATH: _ignored, ...env } = process.env;
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...env, ...extraEnv },
    encoding: 'utf8',
    timeout: 120_000,
  });
  const errors = r.stderr.split('\n').filter((l) => l.startsWith('ragfresh-conformance:'));
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, errors };
}

describe('ragfresh-conformance CLI', () => {
  let dir: string;
  beforeAll(() => {
    const missing = BUILT.filter((p) => !existsSync(p));
    if (missing.length > 0) {
      throw new Error(
        `built files missing (${missing.join(', ')}): run npx -y pnpm@10 run build first.`,
      );
    }
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-cli-test-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs every case against --store memory, prints the table and writes the JSON report', {
    timeout: 150_000,
  }, () => {
    const json = join(dir, 'report.json');
    const r = cli(['--store', 'memory', '--json', json]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('store:        memory');
    expect(r.stdout).toContain('target:       embedded');
    expect(r.stdout).toContain(`suite:        @ragfresh/conformance ${SUITE_VERSION}`);
    expect(r.stdout).toContain(
      'capabilities: promotion=snapshot flagPromotion=overlap visibility=immediate',
    );
    expect(r.stdout).toMatch(/^promotion-epoch-readers\s+pass\s+snapshot: both=0, neither=0/m);
    // langchain-reader does not apply: the memory connector names no LangChain class.
    expect(r.stdout).toContain(`PASS: ${CASES.length - 1} passed, 0 failed, 1 skipped`);
    const report = JSON.parse(readFileSync(json, 'utf8')) as ConformanceReport;
    expect(report.suite).toEqual({ name: '@ragfresh/conformance', version: SUITE_VERSION });
    expect(report.capabilities.store).toBe('memory');
    expect(report.target.kind).toBe('embedded');
    expect(report.cases.map((c) => c.id)).toEqual(CASES.map((c) => c.id));
    expect(
      report.cases.every(
        (c) =>
          c.status === (c.id === 'langchain-reader' ? 'skipped' : 'passed') &&
          c.guarantee !== '' &&
          c.whenItFails !== '',
      ),
    ).toBe(true);
    const flags = report.cases.find((c) => c.id === 'promotion-flag-readers')!;
    expect(flags.observations.neither).toBe(0);
  });

  it('runs only the cases asked for', { timeout: 60_000 }, () => {
    const r = cli(['--store', 'memory', '--cases', 'sentinel-empty,ids-deterministic']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('PASS: 2 passed, 0 failed, 0 skipped');
  });

  it('exits 1 and explains the failing case for a broken connector', { timeout: 60_000 }, () => {
    const project = join(dir, 'broken-project');
    const pkg = join(project, 'node_modules/@ragfresh/connector-leaky');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(project, 'package.json'), '{"name":"user-project","private":true}');
    writeFileSync(
      join(pkg, 'package.json'),
      '{"name":"@ragfresh/connector-leaky","type":"module","exports":{"./fixture":"./fixture.js"}}',
    );
    const broken = pathToFileURL(join(ROOT, 'conformance/dist/broken/index.js')).href;
    writeFileSync(
      join(pkg, 'fixture.js'),
      `import { BROKEN_CONNECTORS } from ${JSON.stringify(broken)};\nexport const fixture = BROKEN_CONNECTORS.find((b) => b.kind === 'leaky-retire').fixture;\n`,
    );
    const r = cli(['--store', 'leaky', '--cases', 'sentinel-empty,retire-after-grace'], project);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain('store:        broken-leaky-retire');
    expect(r.stdout).toMatch(
      /^retire-after-grace\s+FAIL\s+stored for 2 epochs, then 0 chunks\s+stored 7 -> 7 -> 3/m,
    );
    expect(r.stdout).toContain('chunk(s) of the replaced version are still stored');
    expect(r.stdout).toContain('    check: Core retires through _countMany then _deleteVersions');
    expect(r.stdout).toContain('FAIL: 1 passed, 1 failed, 0 skipped');
  });

  /** A connector package whose fixture is the broken connector `kind` (built conformance code). */
  function fakeConnector(at: string, name: string, version: string, kind: string): void {
    mkdirSync(at, { recursive: true });
    writeFileSync(
      join(at, 'package.json'),
      JSON.stringify({ name, version, type: 'module', exports: { './fixture': './fixture.js' } }),
    );
    const broken = pathToFileURL(join(ROOT, 'conformance/dist/broken/index.js')).href;
    writeFileSync(
      join(at, 'fixture.js'),
      `import { BROKEN_CONNECTORS } from ${JSON.stringify(broken)};\nexport const fixture = BROKEN_CONNECTORS.find((b) => b.kind === ${JSON.stringify(kind)}).fixture;\n`,
    );
  }

  it('resolves --store x as @ragfresh/connector-x, then ragfresh-connector-x, and names the package in the report', {
    timeout: 60_000,
  }, () => {
    const project = join(dir, 'third-party-project');
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'package.json'), '{"name":"user-project","private":true}');
    fakeConnector(
      join(project, 'node_modules/ragfresh-connector-acme'),
      'ragfresh-connector-acme',
      '2.3.4',
      'staged-visible',
    );
    const json = join(dir, 'acme.json');
    const plain = cli(['--store', 'acme', '--cases', 'sentinel-empty', '--json', json], project);
    expect(plain.code, plain.stdout + plain.stderr).toBe(0);
    expect(plain.stdout).toContain('store:        broken-staged-visible');
    expect(plain.stdout).toContain('package:      ragfresh-connector-acme 2.3.4');
    const report = JSON.parse(readFileSync(json, 'utf8')) as ConformanceReport;
    expect(report.connector).toEqual({ package: 'ragfresh-connector-acme', version: '2.3.4' });

    // With both installed, the project's own scope comes first.
    fakeConnector(
      join(project, 'node_modules/@ragfresh/connector-acme'),
      '@ragfresh/connector-acme',
      '0.1.0',
      'leaky-retire',
    );
    const scoped = cli(['--store', 'acme', '--cases', 'sentinel-empty'], project);
    expect(scoped.code, scoped.stdout + scoped.stderr).toBe(0);
    expect(scoped.stdout).toContain('store:        broken-leaky-retire');
    expect(scoped.stdout).toContain('package:      @ragfresh/connector-acme 0.1.0');
  });

  it('resolves --store as a path: a package folder (relative) by its ./fixture export, or a fixture file (absolute)', {
    timeout: 60_000,
  }, () => {
    const work = join(dir, 'author');
    fakeConnector(
      join(work, 'connector-mine'),
      'ragfresh-connector-mine',
      '0.0.1',
      'lagging-index',
    );
    const folder = cli(['--store', './connector-mine', '--cases', 'sentinel-empty'], work);
    expect(folder.code, folder.stdout + folder.stderr).toBe(0);
    expect(folder.stdout).toContain('store:        broken-lagging-index');
    expect(folder.stdout).toContain('package:      ragfresh-connector-mine 0.0.1');
    const file = cli(
      ['--store', join(work, 'connector-mine/fixture.js'), '--cases', 'sentinel-empty'],
      dir,
    );
    expect(file.code, file.stdout + file.stderr).toBe(0);
    expect(file.stdout).toContain('store:        broken-lagging-index');

    const missing = cli(['--store', './no-such-folder'], work);
    expect(missing.code).toBe(2);
    expect(missing.errors).toEqual([
      `ragfresh-conformance: --store ./no-such-folder: ${join(work, 'no-such-folder')} does not exist; give a connector package folder or its built fixture file.`,
    ]);
    mkdirSync(join(work, 'not-a-package'));
    const unnamed = cli(['--store', './not-a-package'], work);
    expect(unnamed.code).toBe(2);
    expect(unnamed.errors[0]).toContain('has no package.json with a name');
  });

  it.each([
    [[], '--store is required'],
    [['--store'], "Option '--store <value>' argument missing"],
    [['--store', 'memory', '--bogus'], "Unknown option '--bogus'"],
    [['--store', 'Mem ory'], 'is not a store name'],
    [['--store', 'memory', '--cases', 'no-such-case'], 'unknown case id(s) no-such-case'],
    [['--store', 'memory', '--url', 'not a url'], 'is not an absolute URL'],
    [
      ['--store', 'nope'],
      'cannot resolve @ragfresh/connector-nope/fixture (nor ragfresh-connector-nope/fixture)',
    ],
  ])('exits 2 with one line for %j', (args, message) => {
    const r = cli(args);
    expect(r.code).toBe(2);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toContain(message);
    expect(r.stdout).toBe('');
  });

  it("resolves with an ordinary ESM import: NODE_PATH (pnpm's hidden hoist folder) is not used", () => {
    // A folder laid out like pnpm's hidden hoist (node_modules/.pnpm/node_modules), holding
    // the connector: built here, so the check does not depend on what an install hoisted.
    const hoist = join(dir, 'hoist');
    mkdirSync(join(hoist, '@ragfresh'), { recursive: true });
    symlinkSync(join(ROOT, 'connectors/memory'), join(hoist, '@ragfresh/connector-memory'), 'dir');
    expect(existsSync(join(hoist, '@ragfresh/connector-memory/package.json'))).toBe(true);
    const empty = join(dir, 'empty-with-node-path');
    mkdirSync(empty);
    const r = cli(['--store', 'memory'], empty, { NODE_PATH: hoist });
    expect(r.code).toBe(2);
    expect(r.errors[0]).toContain(
      `cannot resolve @ragfresh/connector-memory/fixture (nor ragfresh-connector-memory/fixture) from ${empty}`,
    );
  });

  it('resolves the fixture from the current directory, as a user project sees it', {
    timeout: 60_000,
  }, () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    const missing = cli(['--store', 'memory'], empty);
    expect(missing.code).toBe(2);
    expect(missing.errors[0]).toContain(
      `cannot resolve @ragfresh/connector-memory/fixture (nor ragfresh-connector-memory/fixture) from ${empty}`,
    );

    const project = join(dir, 'project');
    mkdirSync(join(project, 'node_modules/@ragfresh'), { recursive: true });
    writeFileSync(
      join(project, 'package.json'),
      '{"name":"user-project","private":true,"type":"module"}',
    );
    symlinkSync(
      join(ROOT, 'connectors/memory'),
      join(project, 'node_modules/@ragfresh/connector-memory'),
      'dir',
    );
    const found = cli(['--store', 'memory', '--cases', 'sentinel-empty'], project);
    expect(found.code, found.stdout + found.stderr).toBe(0);
    expect(found.stdout).toContain('PASS: 1 passed');
  });
});
