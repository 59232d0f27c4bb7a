import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture } from '@ragfresh/connector-pgvector/fixture';
import { type DocumentRecord, openStateStore } from '@ragfresh/core';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import { Fetcher } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { connectRedis, queueStatus, scheduleDueSources } from '../src/index.js';
import type { QueueProcessSpec } from '../src/process.js';
import { type Child, STATE_URL, startChild, UA, uniqueName } from './cluster.js';
import { freePort, REDIS_SERVER, startRedisServer } from './redis-server.js';

// A redis-server of its own on a free port, stopped and started again by the test; state on
// this machine's Postgres. Fails loudly when either is missing. Children run dist code.
const DIMENSIONS = 32;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  // A hang guard, not a performance bound: the vitest timeout ends a stuck run.
  while (!(await check())) await sleep(100);
}
const logs = (c: Child) => c.events.flatMap((e) => (e.event === 'log' ? [String(e.message)] : []));

/** redis-server with every write fsynced to its append-only file, so a restart keeps the queues. */
const startRedis = (port: number, dir: string) =>
  startRedisServer(port, dir, ['--appendonly', 'yes', '--appendfsync', 'always']);

describe('a worker (pages and publish roles) whose Redis is unreachable (own redis-server, real Postgres)', () => {
  const servers: ChildProcess[] = [];
  const children: Child[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-redis-down-'));
  afterAll(() => {
    for (const c of children)
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    for (const s of servers) if (s.exitCode === null && s.signalCode === null) s.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('says so in one line, takes no work while Redis is down, and resumes when it is back', async () => {
    execFileSync(REDIS_SERVER, ['--version']); // loud failure when the binary is missing
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const prefix = uniqueName('down');
    const namespace = uniqueName('state').replace(/-/g, '_');
    await using sim = await startSimWeb({ seed: 3, hosts: 1, pagesPerHost: 40 });
    const target = await fixture.start();
    const state = await openStateStore(STATE_URL, { namespace });
    try {
      const sources = sim.hosts().map((h) => ({
        id: h,
        sitemaps: [`${sim.origin(h)}/sitemap.xml`],
        everyMs: 86_400_000,
        identity: { mode: 'normalize' as const },
      }));
      const spec: QueueProcessSpec = {
        // Both roles in one process: the publisher must wait out the outage as the pages do.
        role: 'both',
        name: 'worker-redis-down',
        queue: { redis: url, prefix },
        state: { spec: STATE_URL, namespace },
        connector: target.connectorSpec!(namespace) as QueueProcessSpec['connector'],
        dimensions: DIMENSIONS,
        settings: {
          sources,
          fetch: { userAgent: UA, minIntervalMs: 100, allowPrivateNetworks: true },
          concurrency: 1,
          batchSize: 10,
          publish: { leaseTtlMs: 6000 },
        },
        lockDurationMs: 10_000,
        stalledIntervalMs: 1000,
      };
      const unreachable = new RegExp(
        `^redis unreachable at redis://127\\.0\\.0\\.1:${port} \\(.+\\); not taking work until it answers$`,
      );
      const answers = `redis at redis://127.0.0.1:${port} answers again; taking work`;

      // 1. Started while nothing listens on the port: one line, however long the outage.
      const worker = startChild(spec);
      children.push(worker);
      await until(() => logs(worker).some((m) => unreachable.test(m)));
      await sleep(3000); // an observation window (many reconnect attempts), not a bound
      // The lease lives in the state store (Postgres), so the publisher may lead meanwhile.
      const said = () => logs(worker).filter((m) => !m.startsWith('publisher lease taken'));
      expect(said()).toEqual([expect.stringMatching(unreachable)]);
      expect(sim.log()).toEqual([]);

      // 2. Redis comes up: the worker says so and takes the jobs.
      let server = startRedis(port, dir);
      servers.push(server.proc);
      await until(() => logs(worker).includes(answers));
      const redis = connectRedis({ redis: url, prefix });
      const fetcher = new Fetcher({
        userAgent: UA,
        network: { allowPrivateNetworks: true },
        robots: { store: state },
      });
      const connector = await target.createConnector(namespace);
      const report = await scheduleDueSources({
        connection: redis,
        prefix,
        deps: {
          sources,
          connector,
          state,
          fetcher,
          pipeline: new ExtractPipeline({}),
          embeddings: { embedDocuments: async () => [], embedQuery: async () => [] },
        },
        all: true,
        urlsPerJob: 10,
      });
      await fetcher.close();
      expect(report.sources.map((s) => s.jobs)).toEqual([4]);
      const pages = () => sim.log().filter((e) => !/\.xml(\.gz)?$|robots\.txt$/.test(e.path));
      await until(async () => (await queueStatus(redis, prefix)).queues[0]!.completed >= 1);

      // 3. Redis stops mid-run: one more line; no page is fetched while it is down beyond the
      // one request that may already have had its turn (one page at a time here).
      redis.disconnect();
      server.proc.kill('SIGTERM');
      await server.exited;
      const atOutage = pages().length;
      await until(() => logs(worker).filter((m) => unreachable.test(m)).length === 2);
      await sleep(3000); // the outage lasts; the worker must stay idle through it
      const duringOutage = pages().length - atOutage;
      expect(duringOutage).toBeLessThanOrEqual(1);
      expect(logs(worker).filter((m) => unreachable.test(m)).length).toBe(2);
      expect(atOutage).toBeLessThan(40);

      // 4. Back (its append-only file kept the queues): every batch completes, none failed.
      server = startRedis(port, dir);
      servers.push(server.proc);
      await until(() => logs(worker).filter((m) => m === answers).length === 2);
      const again = connectRedis({ redis: url, prefix });
      try {
        await until(async () =>
          (await queueStatus(again, prefix)).queues
            .filter((q) => q.name !== 'finish')
            .every((q) => q.completed === 4),
        );
        const status = await queueStatus(again, prefix);
        expect(
          status.queues.slice(0, 2).map((q) => [q.name, q.waiting, q.active, q.failed]),
        ).toEqual([
          ['pages', 0, 0, 0],
          ['publish', 0, 0, 0],
        ]);
        expect(new Set(pages().map((e) => e.url))).toEqual(new Set(sim.urls()));
        // Every page published once, through the outage.
        const records: DocumentRecord[] = [];
        for await (const r of state.listDocuments()) records.push(r);
        expect(records.length).toBe(40);
        for (const r of records)
          expect(
            (r.history ?? []).map((h) => `${h.event} ${h.versionId}`),
            r.url,
          ).toEqual([`published ${r.currentVersionId}`]);
        // Nothing else was said than the two outages, their ends and the lease.
        expect(said().filter((m) => !unreachable.test(m) && m !== answers)).toEqual([]);
      } finally {
        worker.proc.kill('SIGTERM');
        expect((await worker.exited).code).toBe(0);
        await again.quit();
      }
      server.proc.kill('SIGTERM');
      await server.exited;
    } finally {
      await state.close();
      const db = new pg.Client({ connectionString: STATE_URL });
      await db.connect();
      await db.query(`DELETE FROM ragfresh_state WHERE key LIKE $1`, [`${namespace}:%`]);
      await db.end();
      await target.stop();
    }
  });
});
