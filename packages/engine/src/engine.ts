import type { RunSummary } from '@ragfresh/core';
import { mapLimit } from './concurrency.js';
import { EngineContext, type EngineDeps, SourceRun } from './context.js';
import {
  addCounts,
  emptyCounts,
  type RefreshCounts,
  type RefreshReport,
  type SourceReport,
} from './counts.js';
import { type Inventory, type InventoryEntry, takeInventory } from './inventory.js';
import { refreshPage } from './page.js';
import { PublishQueue } from './publish.js';
import { reextractSource } from './reextract.js';
import { approve, proposeInventoryDiff, reject } from './review.js';
import { checkShape } from './shape.js';
import type { EngineSource } from './types.js';

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

  constructor(deps: EngineDeps) {
    this.#ctx = new EngineContext(deps);
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
    // A new extractor/chunker: re-extract from raw snapshots and publish first, so the
    // conditional fetches below carry re-tagged validators and can still be answered 304.
    for (const run of runs) await reextractSource(ctx, queue, run, 'other-pipeline');
    await queue.drain();
    const inventories = new Map<SourceRun, Inventory>();
    for (const run of runs) {
      if (options.signal?.aborted) break;
      const inv = await takeInventory(ctx, run.source, options.signal);
      run.alerts.push(...inv.problems);
      run.complete = inv.complete;
      run.counts.urls = inv.entries.length;
      inventories.set(run, inv);
    }
    await this.#observeAll(inventories, queue, options.signal);
    const reports: SourceReport[] = [];
    for (const run of runs) {
      const inv = inventories.get(run);
      if (inv === undefined) continue;
      reports.push(await this.#finishSource(run, inv));
    }
    const totals = emptyCounts();
    for (const r of reports) addCounts(totals, r.counts);
    return { startedAt, finishedAt: ctx.nowIso(), sources: reports, totals };
  }

  /** Every page of every due source through one bounded pool and one publish queue. */
  async #observeAll(
    inventories: ReadonlyMap<SourceRun, Inventory>,
    queue: PublishQueue,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const ctx = this.#ctx;
    const work: { run: SourceRun; entry: InventoryEntry }[] = [];
    for (const [run, inv] of inventories)
      for (const entry of inv.entries) work.push({ run, entry });
    const done = new Map<SourceRun, number>();
    await mapLimit(work, ctx.concurrency, async (page) => {
      const { run } = page;
      if (signal?.aborted) {
        run.complete = false;
        return;
      }
      if (!(await refreshPage(ctx, queue, page, signal))) run.complete = false;
      const n = (done.get(run) ?? 0) + 1;
      done.set(run, n);
      ctx.log.progress(run.source.id, n, run.counts.urls);
    });
    await queue.drain();
    ctx.log.done();
  }

  async #finishSource(run: SourceRun, inv: Inventory): Promise<SourceReport> {
    const ctx = this.#ctx;
    if (run.complete) await proposeInventoryDiff(ctx, run, inv.listed);
    await checkShape(ctx, run);
    const summary: RunSummary = {
      runId: `${run.source.id}@${run.startedAt}`,
      sourceId: run.source.id,
      startedAt: run.startedAt,
      finishedAt: ctx.nowIso(),
      complete: run.complete,
      counts: { ...run.counts },
      alerts: run.alerts,
    };
    await ctx.deps.state.appendRun(summary);
    for (const a of run.alerts) ctx.log.warn('alert', { source: run.source.id, alert: a });
    ctx.count('ragfresh_runs_total', 'Refresh runs by source and completeness.', {
      source: run.source.id,
      complete: String(run.complete),
    });
    return run.report();
  }

  /** Approves a review item: a deletion retires the chunks and writes a tombstone; an ingestion lifts one. */
  approve(reviewId: string, by: string): Promise<boolean> {
    return approve(this.#ctx, reviewId, by);
  }

  /** Rejects a review item; a rejected deletion resets the gone evidence. */
  reject(reviewId: string, by: string): Promise<boolean> {
    return reject(this.#ctx, reviewId, by);
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
    const runs = ctx.deps.sources
      .filter((s) => options.sourceIds === undefined || options.sourceIds.includes(s.id))
      .map((s) => new SourceRun(s, ctx.nowIso()));
    let documents = 0;
    for (const run of runs) documents += await reextractSource(ctx, queue, run, 'all');
    await queue.drain();
    const counts = emptyCounts();
    for (const run of runs) addCounts(counts, run.counts);
    return { documents, republished: counts.published, counts };
  }
}
