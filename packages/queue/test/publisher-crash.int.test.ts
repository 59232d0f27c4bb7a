import { fixture } from '@ragfresh/connector-pgvector/fixture';
import { type DocumentRecord, type JournalStep, openStateStore } from '@ragfresh/core';
import type { EngineSource } from '@ragfresh/engine';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import { Fetcher } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, queueStatus, scheduleDueSources } from '../src/index.js';
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
const PAGES = 20;

// One round per step: the publisher SIGKILLs itself at that step of its first batch; the next
// publisher must roll the journal back (before the epoch moved) or forward (after).
const CRASHES: readonly { step: JournalStep; action: 'rolled back' | 'rolled forward' }[] = [
  { step: 'staged', action: 'rolled back' },
  { step: 'promoted', action: 'rolled forward' },
  { step: 'flagged', action: 'rolled forward' },
  { step: 'confirmed', action: 'rolled forward' },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  // A hang guard, not a performance bound: the vitest timeout ends a stuck run.
  while (!(await check())) await sleep(100);
}
const logs = (c: Child) => c.events.flatMap((e) => (e.event === 'log' ? [String(e.message)] : []));

describe('a publisher process SIGKILLed at a step, the next one recovers (real Redis and Postgres)', () => {
  const prefix = uniqueName('crash');
  const namespace = uniqueName('state').replace(/-/g, '_');
  const children: Child[] = [];
  let sim: Awaited<ReturnType<typeof startSimWeb>>;
  let target: Awaited<ReturnType<typeof fixture.start>>;
  let redis: ReturnType<typeof connectRedis>;
  let state: Awaited<ReturnType<typeof openStateStore>>;
  let sources: EngineSource[];
  let spec: (name: string, role: QueueProcessSpec['role']) => QueueProcessSpec;
  let worker: Child;

  beforeAll(async () => {
    sim = await startSimWeb({ seed: 11, hosts: CRASHES.length, pagesPerHost: PAGES });
    target = await fixture.start();
    redis = connectRedis({ redis: REDIS_URL, prefix });
    state = await openStateStore(STATE_URL, { namespace });
    sources = sim.hosts().map((h) => ({
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
        fetch: { userAgent: UA, minIntervalMs: 20, allowPrivateNetworks: true },
        concurrency: 4,
        // One publish job (10 candidates) per batch: the crash hits the first job only.
        batchSize: 10,
        publish: { leaseTtlMs: 3000 },
      },
      lockDurationMs: 3000,
      stalledIntervalMs: 500,
    });
    worker = startChild(spec('worker', 'pages'));
    children.push(worker);
    await worker.waitFor('ready');
  });

  afterAll(async () => {
    for (const c of children)
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    await clearServices(redis, prefix, namespace);
    await state.close();
    await target.stop();
    await sim.stop();
  });

  for (const [round, { step, action }] of CRASHES.entries()) {
    it(`crash at ${step}: the next publisher ${action} the journal and every page is published exactly once`, async () => {
      const source = sources[round]!;
      const connector = await target.createConnector(namespace);
      const fetcher = new Fetcher({
        userAgent: UA,
        network: { allowPrivateNetworks: true },
        robots: { store: state },
      });
      try {
        await connector.open({ dimensions: DIMENSIONS });
        const report = await scheduleDueSources({
          connection: redis,
          prefix,
          deps: {
            sources: [source],
            connector,
            state,
            fetcher,
            pipeline: new ExtractPipeline({}),
            embeddings: { embedDocuments: async () => [], embedQuery: async () => [] },
          },
          all: true,
          urlsPerJob: 10,
        });
        expect(report.sources.map((s) => s.jobs)).toEqual([2]);
        await until(async () => (await queueStatus(redis, prefix)).queues[1]!.waiting === 2);

        const first = startChild({
          ...spec(`publisher-${step}`, 'publish'),
          crashAt: { batch: 1, step },
        });
        children.push(first);
        expect((await first.exited).signal).toBe('SIGKILL');
        expect(logs(first)).toContain(`crash hook: SIGKILL at batch 1 step ${step}`);

        const next = startChild(spec(`publisher-after-${step}`, 'publish'));
        children.push(next);
        await until(async () => {
          const [pages, publish] = (await queueStatus(redis, prefix)).queues;
          return (
            publish!.completed === 2 * (round + 1) &&
            publish!.waiting + publish!.active + publish!.delayed === 0 &&
            pages!.failed === 0
          );
        });
        next.proc.kill('SIGTERM');
        expect((await next.exited).code).toBe(0);
        expect(logs(next).filter((m) => m.startsWith('recovered the journal'))).toEqual([
          expect.stringMatching(
            new RegExp(`left at step ${step} \\(10 documents\\): ${action}$`, 'u'),
          ),
        ]);
        expect((await queueStatus(redis, prefix)).queues[1]!.failed).toBe(0);

        // This round's documents: current, healthy, each version recorded once.
        const records: DocumentRecord[] = [];
        for await (const r of state.listDocuments({ sourceId: source.id })) records.push(r);
        expect(records.length).toBe(PAGES);
        for (const r of records) {
          expect(r.status, r.url).toBe('healthy');
          expect(
            (r.history ?? []).map((h) => `${h.event} ${h.versionId}`),
            r.url,
          ).toEqual([`published ${r.currentVersionId}`]);
        }
        expect(await state.getJournal()).toBeUndefined();
        // The store: this round's documents in one version each, no duplicate chunk ids.
        const opts = (
          target.connectorSpec!(namespace) as unknown as {
            options: { connectionString: string; table: string };
          }
        ).options;
        const client = new pg.Client({ connectionString: opts.connectionString });
        await client.connect();
        try {
          const rows = await client.query<{
            rf_doc: string;
            versions: string;
            n: string;
            ids: string;
          }>(
            `SELECT rf_doc, count(DISTINCT rf_version) AS versions, count(*) AS n, count(DISTINCT id) AS ids
             FROM ${pg.escapeIdentifier(opts.table)} WHERE rf_doc = ANY($1) GROUP BY rf_doc`,
            [records.map((r) => r.documentId)],
          );
          expect(rows.rows.length).toBe(PAGES);
          for (const row of rows.rows) {
            expect(row.versions).toBe('1');
            expect(row.n).toBe(row.ids);
          }
        } finally {
          await client.end();
        }
        const counts = await connector.countChunksMany(
          records.map((r) => ({ documentId: r.documentId, versionId: r.currentVersionId! })),
        );
        expect(counts).toEqual(records.map((r) => r.currentChunkIds.length));
      } finally {
        await fetcher.close();
        await connector.close();
      }
    });
  }
});
