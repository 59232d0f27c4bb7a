import {
  DocumentLedger,
  type DocumentPublishResult,
  type PublishCandidate,
  reasonLine,
} from '@ragfresh/core';
import type { EngineContext, SourceRun } from './context.js';
import { type DuplicateGrouper, duplicateGrouperFor } from './duplicates.js';
import { recordGood } from './evidence.js';
import { proposeQuarantined } from './review.js';

/** Outcomes whose chunks were written to the store (promoted or not). */
const STAGED: ReadonlySet<string> = new Set(['published', 'held', 'verify-failed']);

/** A candidate on its way to the publisher, with the run it counts toward. */
export interface PendingCandidate {
  readonly candidate: PublishCandidate;
  readonly run: SourceRun;
  /** Times the publisher held it because another document of its batch failed verification. */
  readonly held?: number;
  /**
   * `repair`: re-write the current version the store lost (reconciliation); `accept`: a reviewer
   * approved a quarantined candidate, the contract is not applied.
   */
  readonly mode?: 'repair' | 'accept';
}

/**
 * Where the page stage hands a candidate it embedded: the refresh's `PublishQueue` (shared
 * batches), or a queue worker that collects a batch's candidates into one publish job.
 */
export interface CandidateSink {
  add(p: PendingCandidate): Promise<void>;
}

/** A sink that keeps what it is given (a page worker's batch, handed on in one publish job). */
export class CandidateBatch implements CandidateSink {
  readonly collected: PendingCandidate[] = [];
  async add(p: PendingCandidate): Promise<void> {
    this.collected.push(p);
  }
}

/**
 * One publish queue for a whole refresh: candidates of every due source share batches (the
 * publisher's gates are per source; a batch may mix sources), so a 1 %-edit run over many
 * hosts still publishes full batches. Batches are flushed one at a time under the publish lock.
 */
export class PublishQueue implements CandidateSink {
  readonly #ctx: EngineContext;
  readonly #duplicates: DuplicateGrouper;
  #pending: PendingCandidate[] = [];

  constructor(ctx: EngineContext) {
    this.#ctx = ctx;
    this.#duplicates = duplicateGrouperFor(ctx);
  }

  get size(): number {
    return this.#pending.length;
  }

  /** Queues a candidate; publishes a batch when one is full. */
  async add(p: PendingCandidate): Promise<void> {
    this.#pending.push(p);
    if (this.#pending.length >= this.#ctx.batchSize) await this.#flush(false);
  }

  /** Publishes everything queued, including candidates held by the last batch. */
  async drain(): Promise<void> {
    while (this.#pending.length > 0) await this.#flush(true);
  }

  #flush(all: boolean): Promise<void> {
    return this.#ctx.publishLock.run(async () => {
      if (!all && this.#pending.length < this.#ctx.batchSize) return;
      const batch = this.#pending.splice(0, this.#ctx.batchSize);
      if (batch.length > 0) await this.#publish(batch);
    });
  }

  async #publish(batch: readonly PendingCandidate[]): Promise<void> {
    const ctx = this.#ctx;
    const started = performance.now();
    const ids = (mode: PendingCandidate['mode']) =>
      new Set(batch.filter((p) => p.mode === mode).map((p) => p.candidate.documentId));
    // Near-duplicate groups (rf_dup) are assigned here, under the publish lock, in one place for
    // every path that publishes (refresh, import, re-extraction, repair, accepted review).
    const report = await ctx
      .publisher()
      .publish(await this.#duplicates.assign(batch.map((p) => p.candidate)), {
        repair: ids('repair'),
        accept: ids('accept'),
      });
    await this.#duplicates.settle(report);
    const latency = performance.now() - started;
    const byId = new Map(batch.map((p) => [p.candidate.documentId, p]));
    for (const sourceId of new Set(batch.map((p) => p.run.source.id))) {
      ctx.gauge(
        'ragfresh_publish_latency_ms',
        'Latency of the last publish batch.',
        { source: sourceId },
        latency,
      );
    }
    for (const r of report.documents) {
      const p = byId.get(r.documentId);
      if (p === undefined) continue;
      // Staged chunks count toward the run of the document they belong to.
      if (STAGED.has(r.outcome)) p.run.counts.storeWrites += p.candidate.chunks.length;
      await this.#settle(p, r);
    }
  }

  async #settle(p: PendingCandidate, r: DocumentPublishResult): Promise<void> {
    const { run, candidate: c } = p;
    switch (r.outcome) {
      case 'published':
        run.counts.published++;
        run.event(c.url, c.documentId, r.previousVersionId === undefined ? 'published' : 'updated');
        return;
      case 'held':
        // The batch is the unit of promotion: a held candidate was fine, another was not.
        // It goes once more in a later batch; held again, the next run fetches it in full.
        if ((p.held ?? 0) === 0) {
          this.#pending.push({ ...p, held: 1 });
          return;
        }
        run.counts.held++;
        run.event(c.url, c.documentId, 'held', r.reasons);
        return;
      case 'unchanged': {
        // The version became current meanwhile; the publisher wrote nothing, so the
        // observation is recorded here, once.
        run.counts.unchangedContent++;
        const record = await this.#ctx.deps.state.getDocument(c.documentId);
        if (c.validators !== undefined && c.retrievedAt !== undefined) {
          await recordGood(
            this.#ctx,
            record ?? DocumentLedger.fresh(c.documentId, c.sourceId, c.url),
            {
              validators: c.validators,
              retrievedAt: c.retrievedAt,
              ...(c.rawDigest === undefined ? {} : { rawDigest: c.rawDigest }),
            },
          );
        }
        return;
      }
      case 'skipped':
        run.counts.tombstonedSkipped++;
        run.event(c.url, c.documentId, 'tombstoned-skip', r.reasons);
        return;
      default:
        // Rejected or not queryable: quarantined by the publisher, its validators not stored,
        // so the next run fetches the page in full again.
        run.counts.rejected++;
        if (r.outcome === 'rejected-by-gate')
          await proposeQuarantined(
            this.#ctx,
            run,
            {
              sourceId: c.sourceId,
              documentId: c.documentId,
              url: c.url,
              versionId: c.versionId,
              ...(c.rawDigest === undefined ? {} : { rawDigest: c.rawDigest }),
            },
            r.reasons,
          );
        if (r.outcome === 'rejected-by-gate' && r.reasons.some((g) => g.code === 'shrink'))
          run.alerts.push(`sharp-shrink: ${c.url} (${r.reasons.map(reasonLine).join('; ')})`);
        run.event(c.url, c.documentId, 'quarantined', r.reasons);
    }
  }
}
