import {
  createPgVectorConnector,
  type PgVectorConnectorOptions,
} from '@ragfresh/connector-pgvector';
import { type DocumentRecord, openStateStore } from '@ragfresh/core';
import type { EngineSource } from '@ragfresh/engine';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import { Fetcher, RedisPolitenessGate } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';
import { Queue } from 'bullmq';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  connectRedis,
  FINISH_QUEUE,
  finishJobId,
  queueStatus,
  scheduleDueSources,
} from '../src/index.js';
import type { QueueProcessSpec } from '../src/process.js';
import {
  type Child,
  clearServices,
  REDIS_URL,
  STATE_URL,
  startChild,
  startStore,
  UA,
  uniqueName,
} from './cluster.js';

// Real services of this machine and CI; fails loudly without them.
const INTERVAL = 50;
const HOSTS = 10;
const PAGES_PER_HOST = 100;
const DIMENSIONS = 64;

const children: Child[] = [];
afterAll(() => {
  for (const c of children)
    if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(_what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  // A hang guard, not a performance bound: the vitest timeout ends a stuck run.
  for (;;) {
    if (await check()) return;
    await sleep(250);
  }
}

// Skipped until it passes: on its first full run (1,000 pages, 3 workers, worker SIGKILL
// done) the first publisher published 38 of 40 batches, never reached its crash hook at
// batch 3, and then stopped making progress holding the last 2 publish jobs (its lease expired,
// the standby never took over). See docs/scale-out.md, "Not yet proven".
describe('scale-out: 3 page workers, a fenced publisher and its standby, on real Redis and Postgres', () => {
  it('publishes every page exactly once through a worker SIGKILL, a publisher SIGKILL mid-batch and a Retry-After', async () => {
    const prefix = uniqueName('queue');
    const namespace = uniqueName('state').replace(/-/g, '_');
    await using sim = await startSimWeb({ seed: 15, hosts: HOSTS, pagesPerHost: PAGES_PER_HOST });
    // The vector store serves from its own process, as it would in a deployment.
    const store = await startStore(namespace);
    const storeOptions = store.connector.options as PgVectorConnectorOptions;
    const redis = connectRedis({ redis: REDIS_URL, prefix });
    const state = await openStateStore(STATE_URL, { namespace });
    const connector = createPgVectorConnector(storeOptions);
    try {
      await connector.open({ dimensions: DIMENSIONS });
      const sources: EngineSource[] = sim.hosts().map((h) => ({
        id: h,
        sitemaps: [`${sim.origin(h)}/sitemap.xml`],
        everyMs: 86_400_000,
        identity: { mode: 'normalize' },
      }));
      const base = (name: string): QueueProcessSpec => ({
        role: 'pages',
        name,
        queue: { redis: REDIS_URL, prefix },
        state: { spec: STATE_URL, namespace },
        connector: store.connector,
        dimensions: DIMENSIONS,
        settings: {
          sources,
          fetch: {
            userAgent: UA,
            minIntervalMs: INTERVAL,
            allowPrivateNetworks: true,
            headers: { 'x-ragfresh-worker': name },
          },
          concurrency: 4,
          batchSize: 25,
          publish: { leaseTtlMs: 6000 },
        },
        lockDurationMs: 10_000,
        stalledIntervalMs: 1500,
      });
      const publisher = startChild({
        ...base('publisher-1'),
        role: 'publish',
        crashAt: { batch: 3, step: 'promoting' },
      });
      children.push(publisher);
      await publisher.waitFor('leader');
      const standby = startChild({ ...base('publisher-2'), role: 'publish' });
      let publisherKilledAt = 0;
      let standbyLeaderAt = 0;
      void publisher.exited.then(() => {
        publisherKilledAt = Date.now();
      });
      void standby.waitFor('leader').then(
        () => {
          standbyLeaderAt = Date.now();
        },
        () => {},
      );
      const workers = [1, 2, 3].map((i) => startChild(base(`worker-${i}`)));
      children.push(standby, ...workers);
      for (const c of [standby, ...workers]) await c.waitFor('ready');

      // The scheduler's own requests (sitemaps) go through the same shared gate.
      const gate = new RedisPolitenessGate({ redis, prefix: `${prefix}:polite` });
      const fetcher = new Fetcher({
        userAgent: UA,
        minIntervalMs: INTERVAL,
        network: { allowPrivateNetworks: true },
        robots: { store: state },
        politeness: gate,
        headers: { 'x-ragfresh-worker': 'scheduler' },
      });
      const deps = {
        sources,
        connector,
        state,
        fetcher,
        pipeline: new ExtractPipeline({}),
        embeddings: { embedDocuments: async () => [], embedQuery: async () => [] },
      };
      const first = await scheduleDueSources({ connection: redis, prefix, deps, all: true });
      expect(first.sources.map((s) => s.pages)).toEqual(sources.map(() => PAGES_PER_HOST));
      const jobs = first.sources.reduce((n, s) => n + s.jobs, 0);
      // Deterministic job ids: the same due work enqueued again adds nothing.
      const again = await scheduleDueSources({ connection: redis, prefix, deps, all: true });
      expect(again.sources.reduce((n, s) => n + s.alreadyQueued, 0)).toBe(jobs);

      const pageRequests = () =>
        sim.log().filter((e) => !e.path.endsWith('.xml') && !e.path.endsWith('robots.txt'));
      // One worker dies mid-run: its batch goes back to the queue after its lock expires.
      await until('300 page requests', () => pageRequests().length >= 300);
      workers[0]!.proc.kill('SIGKILL');
      const killedWorker = await workers[0]!.exited;
      expect(killedWorker.signal).toBe('SIGKILL');

      // A Retry-After on a host being fetched right now: every worker must wait it out.
      await until('another 100 page requests', () => pageRequests().length >= 400);
      const busyHost = pageRequests().at(-1)!.host;
      const busyAuthority = new URL(sim.origin(busyHost)).host;
      sim.mutateHost(busyHost, 'rateLimit', { times: 1, retryAfter: 2 });
      let sharedBlockSeen = 0;
      await until('the 429', async () => {
        if (!sim.log().some((e) => e.status === 429)) return false;
        sharedBlockSeen = await gate.blockedFor(busyAuthority);
        return true;
      });

      const done = async () => {
        const s = await queueStatus(redis, prefix);
        return s.queues.every((q) => q.waiting + q.active + q.delayed === 0);
      };
      await until('both queues drained', done);
      const publisherExit = await publisher.exited;
      const takeoverMs = standbyLeaderAt - publisherKilledAt;
      expect(publisherExit.signal).toBe('SIGKILL');
      expect(standby.events.some((e) => e.event === 'leader')).toBe(true);
      // The crash left the journal at 'promoting' (epoch not advanced): the standby rolled it back.
      const messages = (c: Child) =>
        c.events.flatMap((e) => (e.event === 'log' ? [e.message] : []));
      expect(messages(publisher)).toContain('crash hook: SIGKILL at batch 3 step promoting');
      expect(
        messages(standby).filter((m) => String(m).startsWith('recovered the journal')),
      ).toEqual([expect.stringMatching(/left at step promoting \(25 documents\): rolled back$/)]);
      const status = await queueStatus(redis, prefix);
      expect(status.queues.map((q) => [q.name, q.failed])).toEqual([
        ['pages', 0],
        ['publish', 0],
        ['finish', 0],
      ]);
      expect(status.queues[0]!.completed).toBe(jobs);

      // Every page published exactly once, in its current version.
      const records: DocumentRecord[] = [];
      for await (const r of state.listDocuments()) records.push(r);
      expect(records.length).toBe(HOSTS * PAGES_PER_HOST);
      const published = records.filter(
        (r) =>
          r.status === 'healthy' &&
          r.currentVersionId !== undefined &&
          (r.history ?? []).filter((h) => h.event === 'published').length === 1 &&
          !(r.history ?? []).some((h) => h.event === 'replaced'),
      );
      expect(published.length).toBe(records.length);
      expect(new Set(records.map((r) => r.url)).size).toBe(sim.urls().length);

      // Each source's window ended (its finish job, after its page and publish jobs): a run
      // summary with every page answered, complete despite the worker's death and the 429.
      const finish = new Queue(FINISH_QUEUE, { connection: redis, prefix });
      try {
        const ids = first.sources.map((s) => finishJobId(s.sourceId, s.runKey));
        await until('every finish job completed', async () => {
          for (const id of ids) if ((await finish.getJobState(id)) !== 'completed') return false;
          return true;
        });
      } finally {
        await finish.close();
      }
      let summaryPublished = 0;
      for (const s of first.sources) {
        const runs = await state.listRuns(s.sourceId, 10);
        summaryPublished += runs[0]!.counts.published ?? 0;
        expect(runs.length).toBe(1);
        const c = runs[0]!.counts;
        expect([s.sourceId, runs[0]!.complete, c.urls, c.fetched200! + c.notModified!]).toEqual([
          s.sourceId,
          true,
          PAGES_PER_HOST,
          PAGES_PER_HOST,
        ]);
      }

      // The store: one version per document, no duplicate chunk ids, nothing lost.
      const client = new pg.Client({ connectionString: storeOptions.connectionString });
      await client.connect();
      try {
        const t = pg.escapeIdentifier(storeOptions.table);
        const rows = await client.query<{
          rf_doc: string;
          rf_version: string;
          n: string;
          ids: string;
        }>(
          `SELECT rf_doc, rf_version, count(*) AS n, count(DISTINCT id) AS ids FROM ${t} GROUP BY rf_doc, rf_version`,
        );
        const byDoc = new Map<string, string[]>();
        for (const r of rows.rows)
          byDoc.set(r.rf_doc, [...(byDoc.get(r.rf_doc) ?? []), r.rf_version]);
        expect([...byDoc.values()].filter((v) => v.length > 1)).toEqual([]);
        expect(byDoc.size).toBe(records.length);
        for (const r of rows.rows) expect(r.n).toBe(r.ids);
        const total = await client.query<{ n: string; ids: string }>(
          `SELECT count(*) AS n, count(DISTINCT id) AS ids FROM ${t}`,
        );
        expect(total.rows[0]!.n).toBe(total.rows[0]!.ids);
        const expectedChunks = records.reduce((n, r) => n + (r.currentChunkIds?.length ?? 0), 0);
        expect(Number(total.rows[0]!.n)).toBe(expectedChunks);
        for (const r of records) expect(byDoc.get(r.documentId)).toEqual([r.currentVersionId]);
      } finally {
        await client.end();
      }
      // Current view: each document's current chunks are all there.
      const counts = await connector.countChunksMany(
        records.map((r) => ({ documentId: r.documentId, versionId: r.currentVersionId! })),
      );
      expect(counts).toEqual(records.map((r) => r.currentChunkIds?.length));

      // Politeness as the server measured it, all workers and the scheduler together.
      const log = sim.log();
      const minGaps: number[] = [];
      for (const host of sim.hosts()) {
        const times = log
          .filter((e) => e.host === host)
          .map((e) => e.time)
          .sort((a, b) => a - b);
        let min = Number.POSITIVE_INFINITY;
        for (let i = 1; i < times.length; i++) min = Math.min(min, times[i]! - times[i - 1]!);
        minGaps.push(min);
        expect(times.length).toBeGreaterThan(PAGES_PER_HOST);
        // Clock jitter only (Redis' clock and the sim's are this machine's).
        expect(min, `min gap on ${host}`).toBeGreaterThanOrEqual(INTERVAL - 1);
      }
      const limited = log.find((e) => e.status === 429)!;
      const afterLimit = log.filter((e) => e.host === busyHost && e.time > limited.time);
      expect(afterLimit.length).toBeGreaterThan(0);
      expect(afterLimit[0]!.time - limited.time).toBeGreaterThanOrEqual(2000 - 1);
      // The block lived in Redis (this test process saw it), not only in the 429's worker.
      expect(sharedBlockSeen).toBeGreaterThan(0);
      // What docs/scale-out.md quotes ("What was measured").
      console.info(
        `scale-out measured: ${records.length} documents, ${log.length} requests, min gap per host ${Math.min(...minGaps).toFixed(1)}-${Math.max(...minGaps).toFixed(1)} ms (interval ${INTERVAL}), first request to ${busyHost} after its 429: +${(afterLimit[0]!.time - limited.time).toFixed(0)} ms (Retry-After 2 s), standby took over ${takeoverMs} ms after the publisher's SIGKILL; run summaries count ${summaryPublished} published`,
      );
      for (const c of [standby, ...workers.slice(1)]) c.proc.kill('SIGTERM');
      for (const c of [standby, ...workers.slice(1)]) expect((await c.exited).code).toBe(0);
      await fetcher.close();
    } finally {
      await clearServices(redis, prefix, namespace);
      await connector.close().catch(() => {});
      await state.close();
      await store.stop();
    }
  });
});
