import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisCluster, redisCli, startRedisCluster } from '../../queue/test/redis-server.ts';

// The built CLI with its state on a real Redis Cluster of three masters that this file starts
// from Debian's redis-server (fails loudly without it) and stops by PID; LanceDB store, a
// loopback site.
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

describe("ragfresh refresh and status with state: 'redis://<cluster node>'", () => {
  let cluster: RedisCluster;
  let sim: SimWeb;
  let dir: string;
  let pages: string[];

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    cluster = await startRedisCluster(3);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-state-cluster-'));
    sim = await startSimWeb({ seed: 32, hosts: 1, pagesPerHost: 5 });
    pages = sim.urls(sim.hosts()[0]!);
    writeFileSync(
      join(dir, 'ragfresh.config.mjs'),
      `export default ${JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        sources: [{ id: 'docs', urls: pages, freshnessObjective: '30d' }],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
        state: cluster.seed,
      })};`,
    );
  }, 60_000);
  afterAll(async () => {
    await sim?.stop();
    await cluster?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('publishes every page, status reads them back, and the whole state sits in one slot', async () => {
    const refreshed = await cli(['refresh', '--all', '--json'], dir);
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(JSON.parse(refreshed.stdout).report.totals.published).toBe(pages.length);

    const status = await cli(['status', '--json'], dir);
    expect(status.code, status.stderr).toBe(0);
    const [docs] = JSON.parse(status.stdout) as {
      sourceId: string;
      publishedEpoch: number;
      counts: { healthy: number };
    }[];
    expect(docs).toMatchObject({ sourceId: 'docs', publishedEpoch: 1 });
    expect(docs!.counts.healthy).toBe(pages.length);

    // No state file: the state is on the cluster, every key under the default namespace's tag,
    // all on one master, in the slot of "ragfresh".
    expect(existsSync(join(dir, '.ragfresh/state.sqlite'))).toBe(false);
    const perMaster = [];
    for (const m of cluster.masters) {
      const keys = (await redisCli(m.port, '--scan', '--pattern', '*'))
        .split('\n')
        .filter((k) => k !== '');
      perMaster.push(keys);
    }
    const all = perMaster.flat();
    expect(all.length).toBeGreaterThan(pages.length * 2);
    for (const key of all) expect(key.startsWith('{ragfresh}:')).toBe(true);
    expect(perMaster.filter((keys) => keys.length > 0)).toHaveLength(1);
    const slot = (
      await redisCli(cluster.masters[0]!.port, 'cluster', 'keyslot', 'ragfresh')
    ).trim();
    const owner = cluster.masters[perMaster.findIndex((keys) => keys.length > 0)]!;
    expect((await redisCli(owner.port, 'cluster', 'countkeysinslot', slot)).trim()).toBe(
      String(all.length),
    );
  });
});
