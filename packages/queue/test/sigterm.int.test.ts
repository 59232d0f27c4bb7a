import { fixture } from '@ragfresh/connector-pgvector/fixture';
import { type DocumentRecord, openStateStore, PUBLISHER_LEASE } from '@ragfresh/core';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import { Fetcher } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectRedis,
  type PageBatchResult,
  type PublishJob,
  pageJobId,
  publishJobId,
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
  UA,
  uniqueName,
} from './cluster.js';

// Real services of this machine and CI; fails loudly without them. Children run dist code.
const DIMENSIONS = 32;
// Slow enough per host that a batch of 10 pages is still running when SIGTERM arrives.
const INTERVAL = 300;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  // A hang guard, not a performance bound: the vitest timeout ends a stuck run.
  while (!(await check())) await sleep(100);
}
const logs = (c: Child) => c.events.flatMap((e) => (e.event === 'log' ? [String(e.message)] : []));

describe('graceful SIGTERM of queue processes (real Redis and Postgres)', () => {
  const prefix = uniqueName('sigterm');
  const namespace = uniqueName('state').replace(/-/g, '_');
  const children: Child[] = [];
  let sim: Awaited<ReturnType<typeof startSimWeb>>;
  let target: Awaited<ReturnType<typeof fixture.start>>;
  let redis: ReturnType<typeof connectRedis>;
  let state: Awaited<ReturnType<typeof openStateStore>>;
  let spec: (name: string, role: QueueProcessSpec['role']) => QueueProcessSpec;
  let runKey = '';

  beforeAll(async () => {
    sim = await startSimWeb({ seed: 7, hosts: 1, pagesPerHost: 20 });
    target = await fixture.start();
    redis = connectRedis({ redis: REDIS_URL, prefix });
    state = await openStateStore(STATE_URL, { namespace });
    const sources = sim.hosts().map((h) => ({
      id: h,
      sitemaps: [`${sim.origin(h)}/sitemap.xml`],
      everyMs: 86_400_000,
      identity: { mode: 'normalize' as const },
    }));
    spec = (name, role) => ({
      role,
      name,
      queue: { redis: REDIS_URL, prefix },
      state: { spec: STATE_URL, namespace },
      connector: target.connectorSpec!(namespace) as QueueProcessSpec['connector'],
      dimensions: DIMENSIONS,
      settings: {
        sources,
        fetch: { userAgent: UA, minIntervalMs: INTERVAL, allowPrivateNetworks: true },
        concurrency: 2,
        batchSize: 25,
        publish: { leaseTtlMs: 6000 },
      },
      lockDurationMs: 10_000,
      stalledIntervalMs: 1000,
    });
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
    expect(report.sources.map((s) => [s.pages, s.jobs])).toEqual([[20, 2]]);
    runKey = report.sources[0]!.runKey;
  });

  afterAll(async () => {
    for (const c of children)
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    await clearServices(redis, prefix, namespace);
    await state.close();
    await target.stop();
    await sim.stop();
  });

  it('a page worker stopped mid-batch finishes that batch, hands over its candidates, takes no other job and exits 0', async () => {
    const pagesQueue = new Queue('pages', { connection: redis, prefix });
    const publishQueue = new Queue<PublishJob>('publish', { connection: redis, prefix });
    try {
      const source = sim.hosts()[0]!;
      const firstId = pageJobId(source, runKey, 0);
      const first = (await pagesQueue.getJob(firstId))!;
      const firstUrls = new Set(first.data.pages.map((p: { url: string }) => p.url));
      const pageRequests = () =>
        sim.log().filter((e) => !/\.xml(\.gz)?$|robots\.txt$/.test(e.path));
      sim.clearLog();

      const worker = startChild(spec('worker-sigterm', 'pages'));
      children.push(worker);
      await worker.waitFor('ready');
      await until(() => pageRequests().length >= 2);
      const atSignal = pageRequests().length;
      worker.proc.kill('SIGTERM');
      const exit = await worker.exited;

      expect(exit).toEqual({ code: 0, signal: null });
      expect(worker.events.some((e) => e.event === 'stopped')).toBe(true);
      // The batch in flight finished after the signal: all its pages, and only its pages.
      const requested = pageRequests().map((e) => e.url);
      expect(atSignal).toBeLessThan(firstUrls.size);
      expect(new Set(requested)).toEqual(firstUrls);
      const done = (await pagesQueue.getJob(firstId))!;
      expect(await done.getState()).toBe('completed');
      const result = done.returnvalue as PageBatchResult;
      expect(result.pages).toBe(10);
      // Its candidates were handed over in one publish job, all of them.
      const handed = (await publishQueue.getJob(publishJobId(firstId)))!;
      expect(handed.data.candidates.length).toBe(result.candidates);
      expect(result.candidates).toBe(10);
      // The second batch was never taken.
      const second = (await pagesQueue.getJob(pageJobId(source, runKey, 1)))!;
      // Batch 1 of each source is prioritized behind every source's batch 0 (interleaving).
      expect(await second.getState()).toBe('prioritized');
    } finally {
      await pagesQueue.close();
      await publishQueue.close();
    }
  });

  it('a publisher stopped mid-batch finishes and completes that batch, releases the lease and exits 0', async () => {
    // The second page batch first, so the publisher has two jobs to merge into one batch.
    const worker = startChild(spec('worker-2', 'pages'));
    children.push(worker);
    await until(async () => (await queueStatus(redis, prefix)).queues[0]!.completed === 2);
    worker.proc.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);

    const publisher = startChild({
      ...spec('publisher-sigterm', 'publish'),
      pauseAt: { batch: 1, step: 'staged', ms: 1500 },
    });
    children.push(publisher);
    await until(() => logs(publisher).some((m) => m.startsWith('pause hook: batch 1 step staged')));
    publisher.proc.kill('SIGTERM');
    const exit = await publisher.exited;

    expect(exit).toEqual({ code: 0, signal: null });
    const status = await queueStatus(redis, prefix);
    // Pages and publish only: the window's finish job waits for a page worker, and none runs.
    expect(
      status.queues.slice(0, 2).map((q) => [q.name, q.waiting, q.active, q.failed, q.completed]),
    ).toEqual([
      ['pages', 0, 0, 0, 2],
      ['publish', 0, 0, 0, 2],
    ]);
    // The batch was published whole: 20 documents, one version each, no journal left.
    const records: DocumentRecord[] = [];
    for await (const r of state.listDocuments()) records.push(r);
    expect(records.length).toBe(20);
    expect(
      records.filter(
        (r) =>
          r.status === 'healthy' &&
          r.currentVersionId !== undefined &&
          (r.history ?? []).filter((h) => h.event === 'published').length === 1,
      ).length,
    ).toBe(20);
    expect(await state.getJournal()).toBeUndefined();
    // The lease was released, not left to expire: another publisher may take it at once.
    expect(await state.currentFence(PUBLISHER_LEASE)).toBeUndefined();
  });
});
