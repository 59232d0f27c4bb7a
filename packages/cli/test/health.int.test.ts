import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Health that tells the truth, through the built CLI against a loopback site: a deleted store
// makes `status` and `query` exit 1 (STORE_LOST), `verify --repair` restores the store without
// touching any document's lifecycle, and a corrupt state file is STATE_CORRUPT until `recover`
// moves it aside and rebuilds from the store. Each check has its control.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(args: string[], cwd: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(process.execPath, [BIN, ...args], { cwd, timeout: 120_000 }, (err, stdout, stderr) => {
      done({
        code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
        stdout,
        stderr,
      });
    });
  });
}

interface Lifecycle {
  readonly status: string;
  readonly statusReasons: readonly string[];
  readonly goneCount?: number;
  readonly goneSince?: string;
  readonly lastGoodAt?: string;
  readonly currentVersionId?: string;
}

describe('health through the CLI (LanceDB store, SQLite state)', () => {
  let sim: SimWeb;
  let dir: string;
  let pages: string[];
  const lance = () => join(dir, '.ragfresh/lancedb');
  const stateFile = () => join(dir, '.ragfresh/state.sqlite');

  async function lifecycle(url: string): Promise<Lifecycle> {
    const r = await cli(['inspect', url, '--json'], dir);
    expect(r.code, r.stderr).toBe(0);
    const { record } = JSON.parse(r.stdout)[0];
    return {
      status: record.status,
      statusReasons: record.statusReasons,
      goneCount: record.goneCount,
      goneSince: record.goneSince,
      lastGoodAt: record.lastGoodAt,
      currentVersionId: record.currentVersionId,
    };
  }

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-health-'));
    sim = await startSimWeb({ seed: 32, hosts: 1, pagesPerHost: 6 });
    pages = sim.urls(sim.hosts()[0]!);
    writeFileSync(
      join(dir, 'ragfresh.config.mjs'),
      `export default ${JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        sources: [{ id: 'docs', urls: pages, freshnessObjective: '30d' }],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
        deletion: { goneChecks: 1, minGoneAge: 0 },
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

  it('a deleted LanceDB folder: status and query exit 1 with STORE_LOST (control: both exit 0 before)', async () => {
    const healthy = await cli(['status'], dir);
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.stderr).not.toMatch(/STORE_LOST/);
    const answered = await cli(['query', 'guide', '-k', '2', '--json'], dir);
    expect(answered.code, answered.stderr).toBe(0);
    expect(JSON.parse(answered.stdout)).toHaveLength(2);

    rmSync(lance(), { recursive: true, force: true });
    const status = await cli(['status'], dir);
    expect(status.code).toBe(1);
    expect(status.stderr).toMatch(
      /the lancedb store is at epoch 0, behind the state's 1: it was deleted, reset or replaced.*\(code STORE_LOST\)/,
    );
    expect(status.stdout).toMatch(/^source\s+state/); // the table is still printed
    const json = await cli(['status', '--json'], dir);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)[0].publishedEpoch).toBe(1);
    const query = await cli(['query', 'guide', '-k', '2'], dir);
    expect(query.code).toBe(1);
    expect(query.stdout).toBe('');
    expect(query.stderr).not.toMatch(/no results/);
    expect(query.stderr.trim().split('\n')).toHaveLength(1);
    expect(query.stderr).toMatch(/behind the state's 1.*\(code STORE_LOST\)$/m);

    // Repair still repairs: every page back from its raw snapshot, status and query healthy.
    const repaired = await cli(['verify', '--repair', '--json'], dir);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(JSON.parse(repaired.stdout)).toMatchObject({ repaired: pages.length, notRepaired: [] });
    expect((await cli(['status'], dir)).code).toBe(0);
    expect((await cli(['query', 'guide', '-k', '2'], dir)).code).toBe(0);
  });

  it('verify --repair keeps lifecycles: a gone page with a pending deletion and a STALE page stay so', async () => {
    const [gone, stale] = [pages[1]!, pages[2]!];
    // Both are published once more first (epoch 2), so the repair below, at epoch 1 of the
    // emptied store, writes their records (a record already at the batch's epoch is skipped).
    for (const url of [gone, stale]) sim.mutate(url, 'edit', { text: 'A sentence added later.' });
    expect((await cli(['refresh', '--all'], dir)).code).toBe(0);
    sim.mutate(gone, 'delete404');
    sim.mutate(stale, 'consentWall');
    const r = await cli(['refresh', '--all'], dir);
    expect(r.code, r.stderr).toBe(5); // the deletion proposal waits for review
    const before = { gone: await lifecycle(gone), stale: await lifecycle(stale) };
    expect(before.gone).toMatchObject({ status: 'degraded', goneCount: 1 });
    expect(before.stale.status).toBe('degraded');
    const pending = async () => {
      const list = await cli(['review', 'list', '--json'], dir);
      return JSON.parse(list.stdout).map((i: { reason: string; status: string }) => i.reason);
    };
    expect(await pending()).toEqual(['confirmed-gone']);

    rmSync(lance(), { recursive: true, force: true });
    const repaired = await cli(['verify', '--repair', '--json'], dir);
    expect(repaired.code, repaired.stderr).toBe(0);
    // Control: the repair did repair every page, the gone and the stale one included.
    expect(JSON.parse(repaired.stdout)).toMatchObject({ repaired: pages.length, notRepaired: [] });
    expect(JSON.parse((await cli(['verify', '--json'], dir)).stdout).missing).toEqual([]);

    expect(await lifecycle(gone)).toEqual(before.gone);
    expect(await lifecycle(stale)).toEqual(before.stale);
    expect(await pending()).toEqual(['confirmed-gone']);
    const q = await cli(['query', 'guide', '-k', String(pages.length), '--no-collapse'], dir);
    expect(q.code, q.stderr).toBe(0);
    expect(q.stdout).toMatch(/STALE since/);
    sim.mutate(gone, 'restore');
    sim.mutate(stale, 'restore');
  });

  it('a corrupt state file is STATE_CORRUPT naming `ragfresh recover`; recover moves it aside and rebuilds', async () => {
    const asideFiles = () =>
      readdirSync(join(dir, '.ragfresh')).filter((f) =>
        /^state\.sqlite\.corrupt-[0-9TZ-]+$/.test(f),
      );
    for (const damage of ['garbage', 'truncated'] as const) {
      const file = stateFile();
      if (damage === 'garbage') writeFileSync(file, Buffer.alloc(64 * 1024, 'not a database '));
      else truncateSync(file, Math.floor(statSync(file).size / 2));
      const damaged = readFileSync(file);
      for (const args of [['status'], ['refresh', '--all']]) {
        const refused = await cli(args, dir);
        expect(refused.code).toBe(1);
        expect(refused.stderr.trim().split('\n')).toHaveLength(1);
        expect(refused.stderr).toMatch(
          /state file .* is corrupt \(.*\); run `ragfresh recover` to move it aside and rebuild the state from the store\. \(code STATE_CORRUPT\)/,
        );
      }
      const asideBefore = asideFiles().length;
      const recovered = await cli(['recover', '--json'], dir);
      expect(recovered.code, recovered.stderr).toBe(0);
      expect(recovered.stderr).toMatch(/is corrupt; moved it aside to .*state\.sqlite\.corrupt-/);
      expect(JSON.parse(recovered.stdout)).toMatchObject({
        documents: pages.length,
        readBy: 'scan',
      });
      // Moved, never deleted: the damaged bytes are kept as they were.
      const aside = asideFiles();
      expect(aside).toHaveLength(asideBefore + 1);
      const kept = aside.map((f) => readFileSync(join(dir, '.ragfresh', f)));
      expect(kept.some((b) => b.equals(damaged))).toBe(true);
      const after = await cli(['status'], dir);
      expect(after.stderr).not.toMatch(/STATE_CORRUPT|STORE_LOST/);
      expect(after.code).toBe(0);
    }
  });
});
