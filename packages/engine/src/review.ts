import type { DocumentRecord, RemovalRequest, ReviewItem } from '@ragfresh/core';
import type { EngineContext, SourceRun } from './context.js';
import { addHistory, type EvidenceContext } from './evidence.js';

/** The document a proposal is about. */
export interface ProposalSubject {
  readonly sourceId: string;
  readonly documentId: string;
  readonly url: string;
}

/** Creates a pending deletion proposal; undefined when one is already pending. */
export async function proposeDeletion(
  ctx: EvidenceContext,
  subject: ProposalSubject,
  reason: string,
  evidence: readonly string[],
): Promise<ReviewItem | undefined> {
  const id = `delete:${subject.documentId}`;
  const existing = await ctx.deps.state.getReviewItem(id);
  if (existing?.status === 'pending') return undefined;
  const item: ReviewItem = {
    id,
    kind: 'deletion',
    documentId: subject.documentId,
    sourceId: subject.sourceId,
    url: subject.url,
    reason,
    evidence: [...evidence],
    createdAt: ctx.nowIso(),
    status: 'pending',
  };
  await ctx.deps.state.putReviewItem(item);
  ctx.log.info('review-item', { id, reason, url: subject.url });
  return item;
}

/** Counts a new proposal and, under `deletion.autoApprove`, approves it at once. */
export async function afterProposal(
  ctx: EngineContext,
  run: SourceRun,
  item: ReviewItem | undefined,
): Promise<void> {
  if (item === undefined) return;
  run.counts.reviewCreated++;
  if (ctx.deletion.autoApprove && (await approve(ctx, item.id, 'auto-policy:deletion.autoApprove')))
    run.counts.removed++;
}

/**
 * A tombstoned URL answering 200 is observed, never published; after `goneChecks` such
 * answers an ingestion review item proposes lifting the tombstone.
 */
export async function observeResurrection(
  ctx: EngineContext,
  run: SourceRun,
  base: DocumentRecord,
): Promise<void> {
  const at = ctx.nowIso();
  const seen = (base.history ?? []).filter((h) => h.event === 'alive-after-tombstone').length + 1;
  await ctx.deps.state.putDocument(
    addHistory({ ...base, lastAttemptAt: at }, at, 'alive-after-tombstone', [
      'HTTP 200 while tombstoned',
    ]),
  );
  if (seen < ctx.deletion.goneChecks) return;
  const id = `ingest:${base.documentId}`;
  if ((await ctx.deps.state.getReviewItem(id))?.status === 'pending') return;
  await ctx.deps.state.putReviewItem({
    id,
    kind: 'ingestion',
    documentId: base.documentId,
    sourceId: base.sourceId,
    url: base.url,
    reason: 'tombstoned page answers 200 again',
    evidence: [`HTTP 200 observed ${seen} times after the tombstone`],
    createdAt: at,
    status: 'pending',
  });
  run.counts.reviewCreated++;
}

/** After a run with complete coverage: every live document the inventory no longer lists is proposed for deletion. */
export async function proposeInventoryDiff(
  ctx: EngineContext,
  run: SourceRun,
  listed: ReadonlySet<string>,
): Promise<void> {
  const absent: DocumentRecord[] = [];
  for await (const r of ctx.deps.state.listDocuments({ sourceId: run.source.id })) {
    if (listed.has(r.documentId) || r.currentVersionId === undefined || r.status === 'tombstoned')
      continue;
    absent.push(r);
  }
  for (const r of absent) {
    const item = await proposeDeletion(ctx, r, 'inventory-diff', [
      'absent from a run whose coverage was complete (every sitemap read, every page answered)',
      ...r.statusReasons.map((reason) => `last observation: ${reason}`),
    ]);
    if (item !== undefined) run.event(r.url, r.documentId, 'deletion-proposed', ['inventory-diff']);
    await afterProposal(ctx, run, item);
  }
}

async function retire(ctx: EngineContext, item: ReviewItem, by: string): Promise<boolean> {
  const removal: RemovalRequest = {
    documentId: item.documentId,
    reason: `${item.reason}: ${item.evidence.join('; ')}`,
  };
  const report = await ctx.publishLock.run(() =>
    ctx.deps.publisher.publish([], { removals: [removal] }),
  );
  const r = report.documents.find((d) => d.documentId === item.documentId);
  if (r?.outcome === 'rejected-by-gate') {
    ctx.log.warn('approval-blocked', { id: item.id, reasons: r.reasons });
    return false;
  }
  await ctx.deps.state.putTombstone({
    documentId: item.documentId,
    sourceId: item.sourceId,
    url: item.url,
    reason: item.reason,
    evidence: item.evidence,
    createdAt: ctx.nowIso(),
    approvedBy: by,
  });
  return true;
}

async function liftTombstone(ctx: EngineContext, item: ReviewItem, by: string): Promise<void> {
  await ctx.deps.state.deleteTombstone(item.documentId);
  const record = await ctx.deps.state.getDocument(item.documentId);
  if (record === undefined) return;
  // Validators are dropped so the next run fetches the page in full and publishes it.
  const { validators: _v, ...rest } = record;
  await ctx.deps.state.putDocument(
    addHistory(
      { ...rest, status: 'healthy', statusReasons: [] },
      ctx.nowIso(),
      'tombstone-lifted',
      [by],
    ),
  );
}

/** Approves a review item: a deletion retires the chunks and writes a tombstone; an ingestion lifts one. */
export async function approve(ctx: EngineContext, reviewId: string, by: string): Promise<boolean> {
  const item = await ctx.deps.state.getReviewItem(reviewId);
  if (item === undefined || item.status !== 'pending') return false;
  if (item.kind === 'deletion') {
    if (!(await retire(ctx, item, by))) return false;
  } else {
    await liftTombstone(ctx, item, by);
  }
  await ctx.deps.state.putReviewItem({
    ...item,
    status: 'approved',
    decidedAt: ctx.nowIso(),
    decidedBy: by,
  });
  return true;
}

/** Rejects a review item; a rejected deletion resets the gone evidence. */
export async function reject(ctx: EvidenceContext, reviewId: string, by: string): Promise<boolean> {
  const item = await ctx.deps.state.getReviewItem(reviewId);
  if (item === undefined || item.status !== 'pending') return false;
  await ctx.deps.state.putReviewItem({
    ...item,
    status: 'rejected',
    decidedAt: ctx.nowIso(),
    decidedBy: by,
  });
  if (item.kind === 'deletion') {
    const record = await ctx.deps.state.getDocument(item.documentId);
    if (record !== undefined) await ctx.deps.state.putDocument({ ...record, goneCount: 0 });
  }
  return true;
}
