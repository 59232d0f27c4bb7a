import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `status`'s STORE_LOST check through the LanceDB connector's light epoch probe
// (`@ragfresh/connector-lancedb/probe`), through the built CLI against a loopback site. Runs
// with `blocked` load a resolve hook that refuses `@lancedb/lancedb`: a status that exits as
// expected there read the epoch without the native library; the same run without the hook is
// the control where the answer must come from the full read.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');
const BLOCK_LANCEDB = `data:text/javascript,${encodeURIComponent(
  `import { registerHooks } from 'node:module';
registerHooks({ resolve(s, c, next) {
  if (s === '@lancedb/lancedb') throw new Error('@lancedb/lancedb blocked by the test');
  return next(s, c);
} });`,
)}`;

function cli(args: string[], cwd: string, blocked = false) {
  const node = blocked ? ['--import', BLOCK_LANCEDB] : [];
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [...node, BIN, ...args],
      { cwd, timeout: 120_000 },
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

describe('status reads the LanceDB epoch through the light probe', () => {
  let sim: SimWeb;
  let dir: string;
  let pages: string[];
  const lance = () => join(dir, '.ragfresh/lancedb');
  const epochDir = () => join(lance(), 'ragfresh__rf_epoch.lance');
  const epochFile = () => join(epochDir(), 'ragfresh-epoch.json');
  const fileEpoch = () => JSON.parse(readFileSync(epochFile(), 'utf8')).epoch as number;
  const stateEpoch = async () => {
    const r = await cli(['status', '--json'], dir);
    return Math.max(
      ...JSON.parse(r.stdout).map((s: { publishedEpoch: number }) => s.publishedEpoch),
    );
  };

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-probe-'));
    sim = await startSimWeb({ seed: 37, hosts: 1, pagesPerHost: 3 });
    pages = sim.urls(sim.hosts()[0]!);
    writeFileSync(
      join(dir, 'ragfresh.config.mjs'),
      `export default ${JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        sources: [{ id: 'docs', urls: pages, freshnessObjective: '30d' }],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      })};`,
    );
    const r = await cli(['refresh', '--all', '--json'], dir);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).report.totals.published).toBe(pages.length);
  });
  afterAll(async () => {
    await sim?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('a healthy store: exit 0 without loading LanceDB; no epoch file (an older index): the full read, until the next refresh writes one', async () => {
    expect(fileEpoch()).toBe(await stateEpoch());
    const light = await cli(['status'], dir, true);
    expect(light.code, light.stderr).toBe(0);
    expect(light.stderr).toBe('');

    // An index written before the epoch file: status must open the store (the blocked run
    // fails loading LanceDB) and finds it healthy (the control), never STORE_LOST.
    rmSync(epochFile());
    const needsFull = await cli(['status'], dir, true);
    expect(needsFull.code).toBe(1);
    expect(needsFull.stderr).toMatch(/@lancedb\/lancedb blocked by the test/);
    expect(needsFull.stderr).not.toMatch(/STORE_LOST/);
    const full = await cli(['status'], dir);
    expect(full.code, full.stderr).toBe(0);
    expect(existsSync(epochFile())).toBe(false); // status writes nothing

    // A refresh that changes nothing still takes the lease (raises the fence): the file is back.
    expect((await cli(['refresh', '--all'], dir)).code).toBe(0);
    expect(fileEpoch()).toBe(await stateEpoch());
    expect((await cli(['status'], dir, true)).code).toBe(0);
  });

  it('an older copy of the epoch table put back: STORE_LOST, from its own epoch file or, when the file is newer than the table, from the full read', async () => {
    const older = join(dir, 'epoch-table-copy');
    cpSync(epochDir(), older, { recursive: true });
    const olderEpoch = fileEpoch();
    sim.mutate(pages[0]!, 'edit', { text: 'A sentence added later.' });
    expect((await cli(['refresh', '--all'], dir)).code).toBe(0);
    const newer = await stateEpoch();
    expect(newer).toBeGreaterThan(olderEpoch);
    expect(fileEpoch()).toBe(newer);
    // Control: the moved store is healthy through the probe.
    expect((await cli(['status'], dir, true)).code).toBe(0);
    const newerFile = readFileSync(epochFile());

    rmSync(epochDir(), { recursive: true });
    cpSync(older, epochDir(), { recursive: true });
    const lost = new RegExp(
      `the lancedb store is at epoch ${olderEpoch}, behind the state's ${newer}: it was deleted, reset or replaced.*\\(code STORE_LOST\\)`,
    );
    const light = await cli(['status'], dir, true);
    expect(light.code).toBe(1);
    expect(light.stderr).toMatch(lost);
    expect(light.stdout).toMatch(/^source\s+state/);

    // The copy with the newer table's epoch file: the file names a version the copy does not
    // have, so the probe cannot tell (the blocked run needs LanceDB) and the full read says lost.
    writeFileSync(epochFile(), newerFile);
    const needsFull = await cli(['status'], dir, true);
    expect(needsFull.code).toBe(1);
    expect(needsFull.stderr).toMatch(/@lancedb\/lancedb blocked by the test/);
    const full = await cli(['status'], dir);
    expect(full.code).toBe(1);
    expect(full.stderr).toMatch(lost);
    // And the copy without any epoch file: the same, from the full read.
    rmSync(epochFile());
    const none = await cli(['status'], dir);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(lost);
  });

  it('a deleted LanceDB folder: STORE_LOST at epoch 0 without loading LanceDB, and status leaves the folder deleted', async () => {
    const state = await stateEpoch();
    rmSync(lance(), { recursive: true, force: true });
    const status = await cli(['status'], dir, true);
    expect(status.code).toBe(1);
    expect(status.stderr).toMatch(
      new RegExp(
        `the lancedb store is at epoch 0, behind the state's ${state}: it was deleted, reset or replaced.*\\(code STORE_LOST\\)`,
      ),
    );
    expect(existsSync(lance())).toBe(false);
    // Control: the full read (query opens the store) says the same.
    const query = await cli(['query', 'guide', '-k', '2'], dir);
    expect(query.code).toBe(1);
    expect(query.stderr).toMatch(/at epoch 0, behind the state's .*\(code STORE_LOST\)$/m);
  });
});
