import type { ReviewItem, RunSummary } from '@ragfresh/core';
import { reasonLine, sameContentVersion } from '@ragfresh/core';
import {
  type BoilerplateLearner,
  learnedViewPipeline,
  learnerFor,
  settleBoilerplate,
} from './boilerplate.js';
import { CanaryLog } from './canaries.js';
import { mapLimit } from './concurrency.js';
import { EngineContext, type EngineDeps, SourceRun } from './context.js';
import {
  addCounts,
  coverageOf,
  emptyCounts,
  type RefreshCounts,
  type RefreshReport,
  type SourceReport,
} from './counts.js';
import { embedNewChunks } from './embed.js';
import type { PagePipeline } from './extract.js';
import { InFlightPages } from './heartbeat.js';
import { type Inventory, type InventoryEntry, takeInventory } from './inventory.js';
import { refreshPage } from './page.js';
import { PublishQueue } from './publish.js';
import {
  checkAndRepairStore,
  type RecoverReport,
  recoverState,
  type VerifyReport,
  verifyStore,
} from './reconcile.js';
import { type RepublishReport, reextractSource, republishInPlace } from './reextract.js';
import {
  type ApprovalReport,
  approveMany,
  heldDocument,
  proposeInventoryDiff,
  reject,
  settleProposals,
} from './review.js';
import { checkShape } from './shape.js';
import { extractSnapshot, sourceProvenance } from './snapshot.js';
import type { EngineSource } from './types.js';

/** One page of one source's run, as the page pool takes it. */
type PageWork = { readonly run: SourceRun; readonly entry: InventoryEntry };

export interface RefreshOptions {
  /** Every source, due or not. */
  readonly all?: boolean;
  /** Only these sources (due or not). */
  readonly sourceIds?: readonly string[];
  /** Stops starting new pages; in-flight pages and publications finish. */
  readonly signal?: AbortSignal;
}

/**
 * The refresh engine: inventory -> acquire -> classify/extract/chunk (one parse) -> embed ->
 * publish, for every due source through one pipeline with shared publish batches, while run
 * summaries, coverage, shape checks and alerts stay per source. Cheap when nothing changed (a
 * 304 stops everything downstream), safe when something broke (a bad page never replaces a
 * good version), destructive only on evidence, through the review queue.
 */
export class RefreshEngine {
  readonly #ctx: EngineContext;
  readonly #canaries = new CanaryLog();
  readonly #boilerplate: BoilerplateLearner | undefined;
  /**
   * The pipeline to extract a stored raw snapshot with from outside a refresh (a UI, a diff):
   * cut under the hosts' learned models as stored, learning nothing, so a text shown is the
   * text that was published. The plain pipeline when learning is off.
   */
  readonly snapshotPipeline: PagePipeline;

  constructor(deps: EngineDeps) {
    const learning =
      deps.boilerplate === false
        ? undefined
        : learnerFor(deps.state, deps.pipeline, deps.boilerplate);
    this.#boilerplate = learning?.learner;
    this.snapshotPipeline =
      learning === undefined ? deps.pipeline : learnedViewPipeline(deps.state, deps.pipeline);
    this.#ctx = new EngineContext({
      ...deps,
      pipeline: learning?.pipeline ?? deps.pipeline,
      ...(deps.publisher === undefined
        ? {}
        : { publisher: this.#canaries.observe(deps.publisher) }),
    });
  }

  /** Sources whose interval has elapsed since their last run (all of them with `all`). */
  async dueSources(all = false): Promise<EngineSource[]> {
    const { sources, state } = this.#ctx.deps;
    if (all) return [...sources];
    const now = this.#ctx.now().getTime();
    const due: EngineSource[] = [];
    for (const s of sources) {
      const [last] = await state.listRuns(s.id, 1);
      if (last === undefined || Date.parse(last.startedAt) + s.everyMs <= now) due.push(s);
    }
    return due;
  }

  /** Next time any source becomes due (for the scheduler). */
  async nextDueAt(): Promise<number> {
    let next = Number.POSITIVE_INFINITY;
    for (const s of this.#ctx.deps.sources) {
      const [last] = await this.#ctx.deps.state.listRuns(s.id, 1);
      next = Math.min(next, last === undefined ? 0 : Date.parse(last.startedAt) + s.everyMs);
    }
    return next;
  }

  async refresh(options: RefreshOptions = {}): Promise<RefreshReport> {
    const ctx = this.#ctx;
    const startedAt = ctx.nowIso();
    let sources = await this.dueSources(options.all === true || options.sourceIds !== undefined);
    if (options.sourceIds !== undefined)
      sources = sources.filter((s) => options.sourceIds!.includes(s.id));
    const runs = sources.map((s) => new SourceRun(s, ctx.nowIso()));
    const queue = new PublishQueue(ctx);
    this.#canaries.reset();
    ctx.records.pin();
    try {
      return await this.#refreshRuns(runs, queue, startedAt, options.signal);
    } finally {
      ctx.records.release();
    }
  }

  async #refreshRuns(
    runs: readonly SourceRun[],
    queue: PublishQueue,
    startedAt: string,
    signal: AbortSignal | undefined,
  ): Promise<RefreshReport> {
    const ctx = this.#ctx;
    // State and store are checked against each other before anything is fetched: a lost state
    // is refused (STATE_LOST), a lost store is repaired from raw snapshots.
    const storeCheck = await checkAndRepairStore(ctx, queue);
    if (storeCheck.verdict !== 'ok' && storeCheck.verdict !== 'empty') {
      for (const run of runs)
        run.alerts.push(
          `${storeCheck.verdict.startsWith('store-') ? '' : 'store-'}${storeCheck.verdict}: ${storeCheck.problems.join('; ')}; ${storeCheck.repaired} documents republished from raw snapshots, ${storeCheck.refetch} to fetch in full`,
        );
    }
    // A new extractor/chunker: re-extract from raw snapshots and publish first, so the
    // conditional fetches below carry re-tagged validators and can still be answered 304.
    let reextracted = 0;
    for (const run of runs) reextracted += await reextractSource(ctx, queue, run, 'other-pipeline');
    await queue.drain();
    if (reextracted > 0) ctx.records.invalidate();
    const inventories = new Map<SourceRun, Inventory>();
    for (const run of runs) {
      if (signal?.aborted) break;
      const inv = await takeInventory(ctx, run.source, signal);
      run.alerts.push(...inv.problems);
      run.complete = inv.complete;
      run.listingsComplete = inv.complete;
      run.counts.urls = inv.entries.length;
      run.counts.listingsNotModified = inv.listingsNotModified;
      inventories.set(run, inv);
    }
    await this.#observeAll(inventories, queue, signal);
    await this.#settleBoilerplate(runs, queue);
    const reports: SourceReport[] = [];
    for (const run of runs) {
      const inv = inventories.get(run);
      if (inv === undefined) continue;
      reports.push(await this.#finishSource(run, inv));
    }
    const totals = emptyCounts();
    for (const r of reports) addCounts(totals, r.counts);
    return {
      startedAt,
      finishedAt: ctx.nowIso(),
      sources: reports,
      totals,
      coverage: coverageOf(
        totals,
        runs.every((r) => r.listingsComplete),
      ),
      storeCheck,
    };
  }

  /** Every page of every due source through one bounded pool and one publish queue. */
  async #observeAll(
    inventories: ReadonlyMap<SourceRun, Inventory>,
    queue: PublishQueue,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const ctx = this.#ctx;
    const work: PageWork[] = [];
    for (const [run, inv] of inventories)
      for (const entry of inv.entries) work.push({ run, entry });
    const done = new Map<SourceRun, number>();
    let finished = 0;
    const inFlight = new InFlightPages(ctx.log, () => ({ done: finished, total: work.length }));
    const observe = async (page: PageWork) => {
      const { run } = page;
      if (signal?.aborted) {
        run.complete = false;
        return;
      }
      try {
        const definitive = await inFlight.track(page.entry.url, run.source.id, () =>
          refreshPage(ctx, queue, page, signal),
        );
        if (!definitive) run.complete = false;
      } catch (err) {
        // Stopping (SIGTERM, a caller's abort) interrupts in-flight requests: those pages are
        // simply not observed this run. Anything else is a real failure.
        if (signal?.aborted !== true) throw err;
        run.complete = false;
        return;
      }
      const n = (done.get(run) ?? 0) + 1;
      done.set(run, n);
      finished++;
      ctx.log.progress(run.source.id, n, run.counts.urls, run.counts);
    };
    inFlight.start();
    try {
      await this.#runPool(work, observe);
    } finally {
      inFlight.stop();
      // The run's 304s not yet written (the last, partial batch), also when the run stops.
      await ctx.ledger.flushObservations();
    }
    await queue.drain();
    ctx.log.done();
  }

  /** The bounded page pool: each host's boilerplate warm-up first when learning is on. */
  async #runPool(
    work: readonly PageWork[],
    observe: (page: PageWork) => Promise<void>,
  ): Promise<void> {
    const ctx = this.#ctx;
    const learner = this.#boilerplate;
    if (learner === undefined) await mapLimit(work, ctx.concurrency, observe);
    else {
      // Each host's warm-up pages go first and wait at their cut for each other (see warmUp):
      // they come host by host, and the pool holds a whole host's warm-up at once.
      const { first, rest } = await learner.warmUp(work);
      const room = Math.max(ctx.concurrency, learner.settings.warmUpPages);
      await mapLimit(first, room, async (page) => {
        try {
          await observe(page);
        } finally {
          learner.pass(page.entry.documentId);
        }
      });
      learner.endWarmUp();
      await mapLimit(rest, ctx.concurrency, observe);
    }
  }

  /** Recomputes learned host models; re-extracts what a change touches; stores the learning. */
  async #settleBoilerplate(runs: readonly SourceRun[], queue: PublishQueue): Promise<void> {
    const learner = this.#boilerplate;
    if (learner === undefined) return;
    const ctx = this.#ctx;
    const reextracted = await settleBoilerplate(ctx, queue, runs, learner);
    await queue.drain();
    if (reextracted > 0) ctx.records.invalidate();
    await learner.flush();
  }

  async #finishSource(run: SourceRun, inv: Inventory): Promise<SourceReport> {
    const ctx = this.#ctx;
    if (run.complete) await proposeInventoryDiff(ctx, run, inv.listed);
    await settleProposals(ctx, run, inv.listed);
    await checkShape(ctx, run);
    const canaries = this.#canaries.of(run.source.id);
    const summary: RunSummary = {
      runId: `${run.source.id}@${run.startedAt}`,
      sourceId: run.source.id,
      startedAt: run.startedAt,
      finishedAt: ctx.nowIso(),
      complete: run.complete,
      counts: { ...run.counts },
      alerts: run.alerts,
      ...(canaries.length === 0 ? {} : { canaries }),
    };
    await ctx.deps.state.appendRun(summary);
    for (const a of run.alerts) ctx.log.warn('alert', { source: run.source.id, alert: a });
    ctx.count('ragfresh_runs_total', 'Refresh runs by source and completeness.', {
      source: run.source.id,
      complete: String(run.complete),
    });
    const report: SourceReport = run.report();
    return canaries.length === 0 ? report : Object.assign(report, { canaries });
  }

  /** Approves a review item (see `approveMany`). */
  async approve(reviewId: string, by: string): Promise<boolean> {
    return (await this.approveMany([reviewId], by)).approved.length === 1;
  }

  /**
   * Approves review items: deletions retire their chunks in one batch (the per-source retire
   * gate counts them together) and write tombstones; an ingestion item lifts a tombstone or
   * publishes a quarantined candidate from its raw snapshot, without refetching.
   */
  approveMany(reviewIds: readonly string[], by: string): Promise<ApprovalReport> {
    return approveMany(this.#ctx, reviewIds, by, (item) => this.#publishHeld(item));
  }

  /** Rejects a review item; a rejected deletion resets the gone evidence. */
  reject(reviewId: string, by: string): Promise<boolean> {
    return reject(this.#ctx, reviewId, by);
  }

  /** The full two-way reconciliation of state and store; `repair` republishes and removes orphans. */
  verify(options: { readonly repair?: boolean } = {}): Promise<VerifyReport> {
    return verifyStore(this.#ctx, new PublishQueue(this.#ctx), { repair: options.repair === true });
  }

  /** Rebuilds the state from the store's own metadata (and the tombstone mirror). */
  recover(): Promise<RecoverReport> {
    return recoverState(this.#ctx, async () => {
      const ids: string[] = [];
      for (const s of this.#ctx.deps.sources) {
        const inv = await takeInventory(this.#ctx, s);
        ids.push(...inv.entries.map((e) => e.documentId));
      }
      return ids;
    });
  }

  /** Publishes a held version (quarantined, or accepted as the document) a reviewer approved; returns why not, if it could not. */
  async #publishHeld(item: ReviewItem): Promise<string | undefined> {
    const ctx = this.#ctx;
    const source = ctx.deps.sources.find((s) => s.id === item.sourceId);
    if (source === undefined) return `source ${item.sourceId} is not configured`;
    const raw =
      item.rawDigest === undefined ? undefined : await ctx.deps.snapshots?.get(item.rawDigest);
    if (raw === undefined)
      return 'its raw snapshot is not kept; the next refresh proposes it again';
    const record = await ctx.deps.state.getDocument(item.documentId);
    const { outcome, retrievedAt } = await extractSnapshot(
      ctx.deps.pipeline,
      raw,
      {
        documentId: item.documentId,
        sourceId: source.id,
        url: item.url,
        ...sourceProvenance(source),
      },
      ctx.pageLimits,
    );
    const doc = heldDocument(item, outcome);
    if (typeof doc === 'string') return doc;
    // An approval interrupted after its publication: the version is already current.
    if (sameContentVersion(record?.currentVersionId, doc.versionId)) return undefined;
    const run = new SourceRun(source, ctx.nowIso());
    const queue = new PublishQueue(ctx);
    const chunks = await embedNewChunks(ctx, doc, record, run.counts);
    await queue.add({
      run,
      mode: 'accept',
      candidate: {
        documentId: item.documentId,
        versionId: doc.versionId,
        sourceId: source.id,
        url: item.url,
        contentHash: doc.contentHash,
        textChars: doc.text.length,
        text: doc.text,
        chunks,
        retrievedAt,
        rawDigest: item.rawDigest!,
      },
    });
    await queue.drain();
    if (run.counts.published === 1) return undefined;
    const e = run.events.at(-1);
    return `not published: ${e?.event ?? 'unknown'} ${e?.reasons.map(reasonLine).join('; ') ?? ''}`.trim();
  }

  /**
   * Re-runs extraction and chunking from stored raw snapshots (no network) for every document
   * whose raw body is kept; publishes where the version changed (e.g. a new extractor).
   */
  async reextract(
    options: { sourceIds?: readonly string[] } = {},
  ): Promise<{ documents: number; republished: number; counts: RefreshCounts }> {
    const ctx = this.#ctx;
    const queue = new PublishQueue(ctx);
    const runs = this.#runsOf(options.sourceIds);
    let documents = 0;
    for (const run of runs) documents += await reextractSource(ctx, queue, run, 'all');
    await queue.drain();
    await this.#boilerplate?.flush();
    const counts = emptyCounts();
    for (const run of runs) addCounts(counts, run.counts);
    return { documents, republished: counts.published, counts };
  }

  /**
   * Republishes in place (`ragfresh reextract --republish`): every current document whose stored
   * chunks lack a reserved key (`rf_access`, `rf_space`: a store written before them) is written
   * again from its raw snapshot, without network, in one batch and one epoch move (see
   * `republishInPlace`). Running it again republishes only what still lacks a key.
   */
  async republish(options: { sourceIds?: readonly string[] } = {}): Promise<RepublishReport> {
    const report = await republishInPlace(this.#ctx, this.#runsOf(options.sourceIds));
    if (report.republished > 0) this.#ctx.records.invalidate();
    return report;
  }

  #runsOf(sourceIds: readonly string[] | undefined): SourceRun[] {
    const ctx = this.#ctx;
    return ctx.deps.sources
      .filter((s) => sourceIds === undefined || sourceIds.includes(s.id))
      .map((s) => new SourceRun(s, ctx.nowIso()));
  }
}
