import { type DocumentRecord, reasonLine } from '@ragfresh/core';
import type { ExtractedDocument, PageOutcome as PageVerdict } from '@ragfresh/engine/pipeline';
import {
  type Acquisition,
  type EvidenceContext,
  type JudgeContext,
  judgePage,
  proposeDeletion,
  recordDegraded,
  recordGone,
  recordGood,
} from '@ragfresh/engine/stages';
import type { OkResult } from '@ragfresh/fetch';
import type { PageCopyStore } from './copies.js';
import type { LoadedPage, PageOrigin } from './pages.js';

/** What happened to one URL in one load. */
export type PageOutcome =
  /** A new version (first load or an edit): emitted fresh. */
  | 'changed'
  /** 200 with the same version: emitted. */
  | 'unchanged'
  /** 304: the stored copy emitted. */
  | 'not-modified'
  /** Failure, wall, soft 404, unreadable: marked degraded, the last good copy emitted. */
  | 'degraded'
  /** 404/410 without confirmed evidence yet: the last good copy emitted. */
  | 'gone-unconfirmed'
  /** 404/410 with confirmed, approved evidence (tombstoned): withheld, so `index()` may delete it. */
  | 'gone-confirmed'
  /** Tombstoned earlier: withheld, not fetched. */
  | 'tombstoned'
  /** Its host asked for a longer Retry-After than the loader waits: not requested, last good copy emitted. */
  | 'deferred'
  /** The URL is refused by the identity policy. */
  | 'invalid-url';

export interface PageReport {
  readonly url: string;
  readonly documentId?: string;
  /** The identity-policy URL (`metadata.source`). */
  readonly identityUrl?: string;
  readonly outcome: PageOutcome;
  /** Emitted fresh, as the last good copy, or not at all. */
  readonly emitted: 'fresh' | 'copy' | 'none';
  /** Whether a conditional request (If-None-Match / If-Modified-Since) was sent. */
  readonly conditional: boolean;
  readonly reasons: readonly string[];
  /** Pending deletion review item created by this observation. */
  readonly proposal?: string;
}

/** The load step a page goes through, with what the state already knows of it. */
export interface PageTask {
  readonly ctx: EvidenceContext;
  readonly copies: PageCopyStore;
  readonly url: string;
  readonly identityUrl: string;
  readonly documentId: string;
  readonly sourceId: string;
  readonly base: DocumentRecord;
  /** The state had a record of the document before this load. */
  readonly known: boolean;
  readonly copy: LoadedPage | undefined;
  readonly conditional: boolean;
}

export interface Settled {
  readonly report: PageReport;
  readonly page?: LoadedPage;
}

function emitCopy(task: PageTask, origin: PageOrigin): LoadedPage | undefined {
  return task.copy === undefined ? undefined : { ...task.copy, origin };
}

function report(
  task: PageTask,
  outcome: PageOutcome,
  page: LoadedPage | undefined,
  reasons: readonly string[] = [],
  proposal?: string,
): Settled {
  const emitted =
    page === undefined ? 'none' : page.origin === 'fetched' ? 'fresh' : ('copy' as const);
  return {
    report: {
      url: task.url,
      documentId: task.documentId,
      identityUrl: task.identityUrl,
      outcome,
      emitted,
      conditional: task.conditional,
      reasons,
      ...(proposal === undefined ? {} : { proposal }),
    },
    ...(page === undefined ? {} : { page }),
  };
}

/** A page whose host is deferred: nothing observed, nothing written, the last good copy emitted. */
export function settleDeferred(task: PageTask, host: string): Settled {
  return report(task, 'deferred', emitCopy(task, 'last-good'), [
    `deferred: ${host} asked to wait longer than the loader waits (Retry-After)`,
  ]);
}

/**
 * Records one acquisition with the engine's evidence rules (the same writers: recordGood,
 * recordDegraded, recordGone, proposeDeletion), judges a fetched page with the engine's
 * classify stage (`judgePage`: host evidence, the source's `classify.ignore`, reviewers'
 * acceptances) and decides what the load emits: a new version fresh, everything else as its
 * last good copy, and nothing only for a page whose deletion is confirmed (tombstoned) or that
 * never had a good copy.
 */
export async function settle(
  task: PageTask,
  acquired: Acquisition<PageVerdict>,
  toPage: (doc: ExtractedDocument, result: OkResult) => Promise<LoadedPage>,
  judge: JudgeContext,
): Promise<Settled> {
  const { ctx, base } = task;
  switch (acquired.kind) {
    case 'not-modified': {
      const page = emitCopy(task, 'not-modified');
      if (page === undefined) {
        // Validators are sent only beside a copy; a copy lost since is refetched next run.
        await ctx.ledger.validatorsForgotten(base.documentId);
        return report(task, 'degraded', undefined, ['not-modified without a stored copy']);
      }
      await recordGood(ctx, base, {
        validators: acquired.result.validators,
        retrievedAt: acquired.result.fetchedAt,
      });
      return report(task, 'not-modified', page);
    }
    case 'gone': {
      const gone = await recordGone(ctx, base, acquired.result.status);
      if (!gone.proposable)
        return report(task, 'gone-unconfirmed', emitCopy(task, 'last-good'), [gone.reason]);
      const item = await proposeDeletion(
        ctx,
        { sourceId: task.sourceId, documentId: task.documentId, url: task.url },
        'confirmed-gone',
        [`HTTP ${acquired.result.status} observed ${gone.goneCount} times since ${gone.goneSince}`],
      );
      const id = item?.id ?? `delete:${task.documentId}`;
      if (ctx.deletion.autoApprove)
        await approveDeletion(ctx, id, 'auto-policy:deletion.autoApprove');
      if ((await ctx.deps.state.getTombstone(task.documentId)) !== undefined)
        return report(task, 'gone-confirmed', undefined, [gone.reason], id);
      return report(task, 'gone-unconfirmed', emitCopy(task, 'last-good'), [gone.reason], id);
    }
    case 'failed':
      await recordDegraded(ctx, base, [acquired.reason]);
      return report(task, 'degraded', emitCopy(task, 'last-good'), [reasonLine(acquired.reason)]);
    case 'unreadable':
      await recordDegraded(ctx, { ...base, goneCount: 0 }, acquired.reasons);
      return report(
        task,
        'degraded',
        emitCopy(task, 'last-good'),
        acquired.reasons.map(reasonLine),
      );
    case 'page': {
      const { result } = acquired;
      const verdict = await judgePage(
        judge,
        { url: task.url, documentId: task.documentId, ...(task.known ? { record: base } : {}) },
        acquired.outcome,
        result,
      );
      if (verdict.kind === 'not-the-document') {
        // The version it would have been, as a refresh records it (runs on unchanged content).
        await recordDegraded(
          ctx,
          { ...base, goneCount: 0 },
          verdict.reasons,
          verdict.asDocument?.versionId,
        );
        return report(
          task,
          'degraded',
          emitCopy(task, 'last-good'),
          verdict.reasons.map(reasonLine),
        );
      }
      const page = await toPage(verdict.doc, result);
      if (base.currentVersionId === page.prepared.versionId) {
        if (task.copy === undefined) await task.copies.put(page);
        await recordGood(ctx, base, {
          validators: result.validators,
          retrievedAt: result.fetchedAt,
          rawDigest: result.rawDigest,
        });
        return report(task, 'unchanged', page, verdict.labels.map(reasonLine));
      }
      // Copy first: a crash between the writes leaves a copy of a version not yet current,
      // which the next load does not trust (it fetches in full), never a current version
      // without its copy.
      await task.copies.put(page);
      await recordVersion(ctx, base, page);
      return report(task, 'changed', page, verdict.labels.map(reasonLine));
    }
  }
}

/**
 * Makes a loaded version current in the state record. On the `index()` path the loader is the
 * writer of its documents' records (ragfresh's publisher is on the other path); do not share a
 * state namespace between a loader and an engine publishing the same source.
 */
async function recordVersion(
  ctx: EvidenceContext,
  base: DocumentRecord,
  page: LoadedPage,
): Promise<void> {
  const { prepared, fetch } = page;
  await ctx.ledger.loaded(base, {
    url: page.url,
    versionId: prepared.versionId,
    chunkIds: prepared.chunks.map((c) => c.chunkId),
    chunkHashes: prepared.chunks.map((c) => c.contentHash),
    contentHash: prepared.contentHash,
    textChars: prepared.textChars,
    validators: fetch.validators,
    ...(fetch.rawDigest === undefined ? {} : { rawDigest: fetch.rawDigest }),
    retrievedAt: fetch.retrievedAt,
    ...(fetch.sourceModifiedAt === undefined ? {} : { sourceModifiedAt: fetch.sourceModifiedAt }),
  });
}

/**
 * Approves a pending deletion proposal on the `index()` path: the review item is marked approved
 * and a tombstone written, so the loader withholds the page from then on (`index()` with `full`
 * cleanup deletes it; with `incremental`, `RagfreshLoader.deleteConfirmedGone`). Returns false
 * when there is no such pending item.
 */
export async function approveDeletion(
  ctx: Pick<EvidenceContext, 'deps' | 'ledger'>,
  reviewId: string,
  by: string,
): Promise<boolean> {
  const item = await ctx.deps.state.getReviewItem(reviewId);
  if (item === undefined || item.status !== 'pending' || item.kind !== 'deletion') return false;
  await ctx.ledger.deletionApproved(item, by);
  return true;
}
