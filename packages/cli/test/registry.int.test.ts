import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The open connector registry through the built CLI: `connector: { store: 'x' }` is a package
// resolved from the config file's folder (the user's project), not an entry of a list. Each
// case is a scratch project with its own node_modules; the CLI itself has none of these stores.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');
const ROOT = resolve(import.meta.dirname, '../../..');

function cli(args: string[], cwd: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    const { NODE_PATH: _hoist, ...env } = process.env;
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env, timeout: 120_000 },
      (err, stdout, stderr) => {
        done({
          code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
          stdout,
          stderr,
        });
      },
    );
  });
}

describe('connector registry through the CLI', () => {
  let sim: SimWeb;
  let dir: string;
  let pages: string[];

  /** A scratch project: package.json, node_modules links, and a config. */
  const project = (name: string, links: Record<string, string>, config: string, ext = 'mjs') => {
    const p = join(dir, name);
    mkdirSync(join(p, 'node_modules'), { recursive: true });
    writeFileSync(join(p, 'package.json'), `{"name":"${name}","private":true,"type":"module"}`);
    for (const [pkg, target] of Object.entries(links)) {
      mkdirSync(join(p, 'node_modules', pkg, '..'), { recursive: true });
      symlinkSync(target, join(p, 'node_modules', pkg), 'dir');
    }
    writeFileSync(join(p, `ragfresh.config.${ext}`), config);
    return p;
  };
  const lanceTables = (p: string) =>
    readdirSync(join(p, '.ragfresh/lancedb'))
      .filter((f) => f.endsWith('.lance'))
      .sort();
  const base = () => ({
    userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
    sources: [{ id: 'docs', urls: pages }],
    fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
  });

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-registry-'));
    sim = await startSimWeb({ seed: 16, hosts: 1, pagesPerHost: 4 });
    pages = sim.urls(sim.hosts()[0]!);
  });
  afterAll(async () => {
    await sim?.stop();
    if (process.env.KEEP_DIR === undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("refresh with connector: { store: 'libsql' } and no edit in the CLI (package in the project)", async () => {
    const p = project(
      'libsql-project',
      { '@ragfresh/connector-libsql': join(ROOT, 'connectors/libsql') },
      '{}',
      'json',
    );
    writeFileSync(
      join(p, 'ragfresh.config.json'),
      JSON.stringify({
        ...base(),
        connector: { store: 'libsql' },
      }),
    );
    const r = await cli(['refresh', '--all', '--json'], p);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).report.totals.published).toBe(pages.length);
    expect(readdirSync(join(p, '.ragfresh')), r.stderr).toContain('libsql.db');
    const q = await cli(['query', 'guide', '-k', '1', '--json'], p);
    expect(q.code, q.stderr).toBe(0);
    expect(JSON.parse(q.stdout)).toHaveLength(1);
  });

  it('a third-party ragfresh-connector-<store> package with the createConnector(options, context) export', async () => {
    const p = project(
      'third-party',
      { '@ragfresh/connector-memory': join(ROOT, 'connectors/memory') },
      `export default ${JSON.stringify({ ...base(), connector: { store: 'acme', persist: 'acme.json' } })};`,
    );
    const pkg = join(p, 'node_modules/ragfresh-connector-acme');
    mkdirSync(pkg);
    writeFileSync(
      join(pkg, 'package.json'),
      '{"name":"ragfresh-connector-acme","type":"module","exports":"./index.js"}',
    );
    writeFileSync(
      join(pkg, 'index.js'),
      `import { join } from 'node:path';
import { createMemoryConnector } from '@ragfresh/connector-memory';
export function createConnector(options, context) {
  return createMemoryConnector({ persistPath: join(context.dataDir, options.persist) });
}`,
    );
    const r = await cli(['refresh', '--all', '--json'], p);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).report.totals.published).toBe(pages.length);
    expect(existsSync(join(p, '.ragfresh/acme.json'))).toBe(true);
  });

  it('connector: a Connector instance in an .mjs config', async () => {
    const p = project(
      'instance',
      { '@ragfresh/connector-memory': join(ROOT, 'connectors/memory') },
      `import { createMemoryConnector } from '@ragfresh/connector-memory';
export default { ...${JSON.stringify(base())}, connector: createMemoryConnector() };`,
    );
    const r = await cli(['refresh', '--all', '--json'], p);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).report.totals.published).toBe(pages.length);
  });

  it("no connector: LanceDB from the CLI's own install, files under <dataDir>/lancedb, table ragfresh (the package's defaults)", async () => {
    const p = project('default-store', {}, JSON.stringify(base()), 'json');
    const r = await cli(['refresh', '--all', '--json'], p);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).report.totals.published).toBe(pages.length);
    expect(lanceTables(p)).toEqual(['ragfresh.lance', 'ragfresh__rf_epoch.lance']);
  });

  it("connector: { store: 'lancedb', table }: the written option wins, the path default stays", async () => {
    const p = project(
      'lancedb-table',
      {},
      JSON.stringify({ ...base(), connector: { store: 'lancedb', table: 'docs' } }),
      'json',
    );
    const r = await cli(['refresh', '--all', '--json'], p);
    expect(r.code, r.stderr).toBe(0);
    expect(lanceTables(p)).toEqual(['docs.lance', 'docs__rf_epoch.lance']);
  });

  it("an option the store's factory does not know: exit 2, one line naming connector.<key>", async () => {
    const p = project(
      'lancedb-typo',
      {},
      JSON.stringify({ ...base(), connector: { store: 'lancedb', tabel: 'docs' } }),
      'json',
    );
    // Checked when the connector is built (refresh, query, watch...); `status` reads only the state.
    const r = await cli(['refresh', '--all'], p);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      'ragfresh: config connector.tabel: is not a known lancedb option; did you mean connector.table?',
    ]);
    expect(existsSync(join(p, '.ragfresh/lancedb'))).toBe(false);
  });

  it('a store whose package is installed nowhere: exit 2, one line naming both package names', async () => {
    const p = project(
      'missing',
      {},
      `export default ${JSON.stringify({ ...base(), connector: { store: 'nosuchdb' } })};`,
    );
    const r = await cli(['status'], p);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      `ragfresh: config connector.store: "nosuchdb" needs the package @ragfresh/connector-nosuchdb (or ragfresh-connector-nosuchdb), not found from ${p}; install it there (npm i @ragfresh/connector-nosuchdb).`,
    ]);
  });
});
