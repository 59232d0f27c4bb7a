import { fixture } from '@ragfresh/connector-pgvector/fixture';
import {
  type Connector,
  HashingEmbeddings,
  InMemoryStateStore,
  openStateStore,
  Publisher,
  type ReviewItem,
  type RunSummary,
  type StateStore,
} from '@ragfresh/core';
import { type DeletionPolicy, type EngineSource, RefreshEngine } from '@ragfresh/engine';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import { Fetcher } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectRedis,
  FINISH_QUEUE,
  type FinishJob,
  finishJobId,
  PageWorker,
  PublishConsumer,
  scheduleDueSources,
} from '../src/index.js';
import { clearServices, REDIS_URL, STATE_URL, UA, uniqueName } from './cluster.js';

// Real services of this machine and CI; fails loudly without them. Everything runs in this
// process (no child process, no build needed): the subject is the end of a source's window.
const DIMENSIONS = 32;
const PAGES_PER_HOST = 24;
const DAY = 86_400_000;
// Two 404/410 answers confirm a page gone (the default three, over two days, would need more rounds).
const DELETION: DeletionPolicy = { goneChecks: 2, minGoneAgeMs: 0, autoApprove: false };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  // A hang guard, not a performance bound: the vitest timeout ends a stuck run.
  while (!(await check())) await sleep(100);
}

/** A review item as both engines must have made it (ids and evidence timestamps differ in form). */
const itemKey = (i: ReviewItem) => `${i.documentId} ${i.kind} ${i.reason} ${i.status}`;

describe('distributed refresh: the end of a source window (real Redis and Postgres)', () => {
  const prefix = uniqueName('finish');
  const namespace = uniqueName('state').replace(/-/g, '_');
  const refNamespace = uniqueName('ref').replace(/-/g, '_');
  let sim: Awaited<ReturnType<typeof startSimWeb>>;
  let target: Awaited<ReturnType<typeof fixture.start>>;
  let redis: ReturnType<typeof connectRedis>;
  let state: StateStore;
  let connector: Connector;
  let fetcher: Fetcher;
  let worker: PageWorker;
  let consumer: PublishConsumer;
  // The single-process engine on the same simulated web, its own state and table.
  let refState: InMemoryStateStore;
  let refConnector: Connector;
  let refPublisher: Publisher;
  let refFetcher: Fetcher;
  let urls: Map<string, string[]>;
  let round = 0;
  let failDocument: string | undefined;
  const t0 = Date.now();

  const sourcesNow = (): EngineSource[] =>
    [...urls].map(([id, list]) => ({
      id,
      urls: list,
      everyMs: DAY,
      identity: { mode: 'normalize' as const },
    }));

  beforeAll(async () => {
    sim = await startSimWeb({ seed: 41, hosts: 2, pagesPerHost: PAGES_PER_HOST });
    urls = new Map(sim.hosts().map((h) => [h, sim.urls(h)]));
    target = await fixture.start();
    redis = connectRedis({ redis: REDIS_URL, prefix });
    state = await openStateStore(STATE_URL, { namespace });
    connector = await target.createConnector(namespace);
    await connector.open({ dimensions: DIMENSIONS });
    fetcher = new Fetcher({
      userAgent: UA,
      minIntervalMs: 0,
      network: { allowPrivateNetworks: true },
      robots: { store: state },
    });
    const embeddings = new HashingEmbeddings({ dimensions: DIMENSIONS });
    // The page worker's state refuses to read one document while `failDocument` names it: its
    // page job fails for good (after its attempts), the way a broken state read would.
    const workerState = new Proxy(state, {
      get(target, name) {
        if (name === 'getDocument')
          return async (id: string) => {
            if (id === failDocument) throw new Error(`test: reading ${id} refused`);
            return target.getDocument(id);
          };
        const value = Reflect.get(target, name, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const deps = {
      sources: sourcesNow(),
      connector,
      state: workerState,
      fetcher,
      pipeline: new ExtractPipeline({}),
      embeddings,
      concurrency: 4,
      batchSize: 25,
      deletion: DELETION,
    };
    worker = new PageWorker({ connection: redis, prefix, deps, name: 'w1', finishPollMs: 200 });
    consumer = new PublishConsumer({
      connection: redis,
      prefix,
      deps,
      name: 'p1',
      publisher: { embedQuery: (text) => embeddings.embedQuery(text) },
    });
    consumer.start();

    refState = new InMemoryStateStore();
    refConnector = await target.createConnector(refNamespace);
    await refConnector.open({ dimensions: DIMENSIONS });
    refPublisher = await Publisher.open({ connector: refConnector, state: refState });
    refFetcher = new Fetcher({
      userAgent: UA,
      minIntervalMs: 0,
      network: { allowPrivateNetworks: true },
      robots: { store: refState },
    });
  });

  afterAll(async () => {
    await worker?.close();
    await consumer?.close();
    await clearServices(redis, prefix, namespace);
    await fetcher?.close();
    await refFetcher?.close();
    await refPublisher?.close();
    await connector?.close();
    await refConnector?.close();
    await state?.close();
    await target?.stop();
    await sim?.stop();
  });

  /** What the scheduler is given for a window at `now`. */
  const schedulerDeps = (now: Date) => ({
    sources: sourcesNow(),
    connector,
    state,
    fetcher,
    pipeline: new ExtractPipeline({}),
    embeddings: new HashingEmbeddings({ dimensions: DIMENSIONS }),
    now: () => now,
  });

  /** Schedules a new due window and waits until every source's finish job completed. */
  async function distributedRound(): Promise<Map<string, RunSummary>> {
    const now = new Date(t0 + round * DAY);
    round++;
    const report = await scheduleDueSources({
      connection: redis,
      prefix,
      deps: schedulerDeps(now),
      urlsPerJob: 10,
    });
    expect(report.sources.map((s) => s.sourceId)).toEqual(sim.hosts());
    const finish = new Queue<FinishJob>(FINISH_QUEUE, { connection: redis, prefix });
    try {
      const ids = report.sources.map((s) => finishJobId(s.sourceId, s.runKey));
      await until(async () => {
        for (const id of ids) if ((await finish.getJobState(id)) !== 'completed') return false;
        return true;
      });
    } finally {
      await finish.close();
    }
    const summaries = new Map<string, RunSummary>();
    for (const s of report.sources) {
      const [last] = await state.listRuns(s.sourceId, 1);
      summaries.set(s.sourceId, last!);
    }
    return summaries;
  }

  async function bothRounds(): Promise<{
    readonly summaries: Map<string, RunSummary>;
    readonly reference: Awaited<ReturnType<RefreshEngine['refresh']>>;
  }> {
    const summaries = await distributedRound();
    const sources = sourcesNow();
    const engine = new RefreshEngine({
      sources,
      connector: refConnector,
      state: refState,
      publisher: refPublisher,
      fetcher: refFetcher,
      pipeline: new ExtractPipeline({}),
      embeddings: new HashingEmbeddings({ dimensions: DIMENSIONS }),
      deletion: DELETION,
    });
    const reference = await engine.refresh({ all: true });
    return { summaries, reference };
  }

  const COMPARED = [
    'urls',
    'fetched200',
    'notModified',
    'gone',
    'fetchErrors',
    'extracted',
    'candidates',
    'published',
    'reviewCreated',
  ] as const;

  function expectSameCounts(
    summaries: Map<string, RunSummary>,
    reference: Awaited<ReturnType<RefreshEngine['refresh']>>,
  ): void {
    for (const r of reference.sources) {
      const s = summaries.get(r.sourceId)!;
      expect(s.complete).toBe(r.complete);
      for (const k of COMPARED)
        expect([r.sourceId, k, s.counts[k]]).toEqual([r.sourceId, k, r.counts[k]]);
    }
  }

  async function pendingItems(s: StateStore): Promise<string[]> {
    return (await s.listReviewItems()).map(itemKey).sort();
  }

  it('a first round sums every page job and publish job into one complete run summary per source', async () => {
    const { summaries, reference } = await bothRounds();
    for (const h of sim.hosts()) {
      const s = summaries.get(h)!;
      // The finish job's summary replaced the scheduler's (same runId), with the real counts.
      expect(s.complete).toBe(true);
      expect(s.counts.urls).toBe(PAGES_PER_HOST);
      expect(s.counts.fetched200).toBe(PAGES_PER_HOST);
      expect(s.counts.candidates).toBe(PAGES_PER_HOST);
      expect(s.counts.published).toBe(PAGES_PER_HOST);
      expect(s.alerts).toContain(
        `distributed: ${PAGES_PER_HOST} pages in 3 jobs (window ${s.alerts.at(-1)!.match(/window (\d+)/)![1]})`,
      );
      expect((await state.listRuns(h, 10)).length).toBe(1);
      // Every due page answered: no coverage alert.
      expect(s.alerts.filter((a) => a.startsWith('coverage below'))).toEqual([]);
    }
    expectSameCounts(summaries, reference);
    expect(await pendingItems(state)).toEqual([]);

    // The same window scheduled again (`all`): every page job and the finish job exist, so
    // nothing is added and no second summary is written.
    const again = await scheduleDueSources({
      connection: redis,
      prefix,
      deps: schedulerDeps(new Date(t0)),
      urlsPerJob: 10,
      all: true,
    });
    expect(again.sources.map((s) => [s.jobs, s.alreadyQueued])).toEqual([
      [3, 3],
      [3, 3],
    ]);
    for (const h of sim.hosts()) expect(await state.listRuns(h, 10)).toEqual([summaries.get(h)]);
  });

  it('a page gone (410) and pages dropped from the listing give the review items the single-process engine gives, and nothing is deleted', async () => {
    const [h0, h1] = sim.hosts() as [string, string];
    const gone = urls.get(h0)![3]!; // answers 410, still listed: gone evidence only
    const unlisted = urls.get(h0)![5]!; // still answers 200, no longer listed
    const goneAndUnlisted = urls.get(h1)![7]!; // answers 410 and is no longer listed
    sim.mutate(gone, 'delete410');
    sim.mutate(goneAndUnlisted, 'delete410');
    urls.set(
      h0,
      urls.get(h0)!.filter((u) => u !== unlisted),
    );
    urls.set(
      h1,
      urls.get(h1)!.filter((u) => u !== goneAndUnlisted),
    );

    // Round 2: one 410 is not yet confirmed; the complete run proposes from the inventory diff.
    const second = await bothRounds();
    expectSameCounts(second.summaries, second.reference);
    expect(second.summaries.get(h0)!.counts.gone).toBe(1);
    expect(second.summaries.get(h1)!.counts.gone).toBe(1);
    const afterSecond = await pendingItems(state);
    expect(afterSecond).toEqual(await pendingItems(refState));
    expect(afterSecond.map((k) => k.split(' ').slice(2).join(' ')).sort()).toEqual([
      'inventory-diff pending',
      'unlisted-but-answering pending',
    ]);

    // Round 3: the second 410 at the listed URL confirms it gone.
    const third = await bothRounds();
    expectSameCounts(third.summaries, third.reference);
    const items = await state.listReviewItems();
    expect(items.map(itemKey).sort()).toEqual(await pendingItems(refState));
    const byUrl = new Map(items.map((i) => [i.url, i]));
    expect(byUrl.get(gone)?.reason).toBe('confirmed-gone');
    expect(byUrl.get(unlisted)?.reason).toBe('unlisted-but-answering');
    expect(byUrl.get(goneAndUnlisted)?.reason).toBe('inventory-diff');
    expect(items.every((i) => i.kind === 'deletion' && i.status === 'pending')).toBe(true);
    expect(third.summaries.get(h0)!.counts.reviewCreated).toBe(1);

    // Nothing is deleted without review: every document still current, no tombstone.
    expect(await state.listTombstones()).toEqual([]);
    for (const i of items) {
      const r = await state.getDocument(i.documentId);
      expect(r?.currentVersionId).toBeDefined();
      expect(r?.status).not.toBe('tombstoned');
      expect(await connector.countChunks(i.documentId, r!.currentVersionId!)).toBeGreaterThan(0);
    }
  });

  it('a page job failed for good: the window still ends, with an incomplete run and no inventory-diff proposal', async () => {
    const h1 = sim.hosts()[1]!;
    const list = urls.get(h1)!;
    const records = new Map<string, string>();
    for await (const r of state.listDocuments({ sourceId: h1 })) records.set(r.url, r.documentId);
    failDocument = records.get(list[10]!);
    expect(failDocument).toBeDefined();
    const unlisted = list[12]!; // answers 200, leaves the listing: a complete run would propose it
    urls.set(
      h1,
      list.filter((u) => u !== unlisted),
    );
    const before = (await state.listReviewItems()).length;
    try {
      const summaries = await distributedRound();
      const s = summaries.get(h1)!;
      expect(s.complete).toBe(false);
      expect(s.alerts).toContain(
        'distributed: 1 of 3 page jobs failed for good; coverage incomplete, no inventory-diff proposals',
      );
      // The failed batch's pages went unanswered: below the default gate (90 %), an alert of
      // the run summary as `refresh` would exit 8 on it.
      const gate = s.alerts.filter((a) => a.startsWith('coverage below'));
      expect(gate).toHaveLength(1);
      expect(gate[0]).toMatch(
        /^coverage below the gate gates\.minCoverage 90%: (58\.3|83\.3)% \((14|20)\/24\) of due pages answered/,
      );
      expect(summaries.get(sim.hosts()[0]!)!.alerts.some((a) => a.startsWith('coverage'))).toBe(
        false,
      );
      // Every known page was scheduled (listed or not) in batches of 10, 10 and 4; the failed
      // batch's pages are not counted, the others are.
      expect(s.counts.urls).toBe(PAGES_PER_HOST);
      const c = s.counts;
      const observed = c.fetched200! + c.notModified! + c.gone! + c.fetchErrors!;
      expect([PAGES_PER_HOST - 10, PAGES_PER_HOST - 4]).toContain(observed);
      expect((await state.listReviewItems()).length).toBe(before);
      expect(summaries.get(sim.hosts()[0]!)!.complete).toBe(true);
    } finally {
      failDocument = undefined;
    }
  });
});
