import {
  type DocumentRecord,
  type Reason,
  type RemovalRequest,
  type ReviewItem,
  reasonLine,
} from '@ragfresh/core';
import type { EngineContext, SourceRun } from './context.js';
import type { EvidenceContext } from './evidence.js';
import type { ExtractedDocument, PageOutcome } from './extract.js';

/** The document a proposal is about. */
export interface ProposalSubject {
  readonly sourceId: string;
  readonly documentId: string;
  readonly url: string;
}

/**
 * Why a deletion is proposed. Only `confirmed-gone` (the requested URL itself answered 404/410
 * `goneChecks` times over `minGoneAge`) is ever approved by `deletion.autoApprove`.
 */
export const DELETION_REASONS = Object.freeze({
  confirmedGone: 'confirmed-gone',
  /** Absent from a complete inventory and the page answered 404/410 (not yet confirmed). */
  inventoryDiff: 'inventory-diff',
  /** Absent from a complete inventory while the page still answers 200/304. */
  unlistedAnswering: 'unlisted-but-answering',
});

/**
 * Runs with the same not-the-document verdict on unchanged content before the page becomes a
 * `persistent-not-the-document` review item (a reviewer may accept it as the document).
 */
export const PERSISTENT_NOT_DOCUMENT_RUNS = 3;

/** Ingestion review reasons. */
export const INGESTION_REASONS = Object.freeze({
  contractQuarantine: 'contract-quarantine',
  tombstoneLift: 'tombstoned page answers 200 again',
  /** Judged not the document on several runs with unchanged content; approval accepts it. */
  persistentNotTheDocument: 'persistent-not-the-document',
});

/**
 * Ingestion items that hold one version of a page: approval publishes exactly that version
 * from its raw snapshot (the quarantine's way out), by id prefix.
 */
const HELD_PREFIX: Readonly<Record<string, string>> = Object.freeze({
  [INGESTION_REASONS.contractQuarantine]: 'quarantine',
  [INGESTION_REASONS.persistentNotTheDocument]: 'persistent',
});

/** True for an item that holds one version for publication (`quarantine:…`, `persistent:…`). */
export function holdsVersion(item: ReviewItem): boolean {
  return item.kind === 'ingestion' && HELD_PREFIX[item.reason] !== undefined;
}

/**
 * Writes a pending review item about `subject` through the ledger and logs it: the one way every
 * proposal (deletion, tombstone lift, quarantine, persistent verdict, import row) is created.
 * Undefined when `stands` says the stored item still stands (default: one is pending).
 */
export async function proposeItem(
  ctx: Pick<EvidenceContext, 'ledger' | 'log'>,
  subject: ProposalSubject,
  item: Pick<ReviewItem, 'id' | 'kind' | 'reason' | 'versionId' | 'rawDigest'> & {
    readonly evidence: readonly string[];
  },
  stands?: (existing: ReviewItem) => boolean,
): Promise<ReviewItem | undefined> {
  const written = await ctx.ledger.proposed(
    {
      id: item.id,
      kind: item.kind,
      documentId: subject.documentId,
      sourceId: subject.sourceId,
      url: subject.url,
      reason: item.reason,
      evidence: [...item.evidence],
      ...(item.versionId === undefined ? {} : { versionId: item.versionId }),
      ...(item.rawDigest === undefined ? {} : { rawDigest: item.rawDigest }),
    },
    stands,
  );
  if (written !== undefined)
    ctx.log.info('review-item', { id: item.id, reason: item.reason, url: subject.url });
  return written;
}

/** Creates a pending deletion proposal; undefined when one is already pending. */
export function proposeDeletion(
  ctx: EvidenceContext,
  subject: ProposalSubject,
  reason: string,
  evidence: readonly string[],
): Promise<ReviewItem | undefined> {
  return proposeItem(ctx, subject, {
    id: `delete:${subject.documentId}`,
    kind: 'deletion',
    reason,
    evidence,
  });
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
  const seen = (base.history ?? []).filter((h) => h.event === 'alive-after-tombstone').length + 1;
  await ctx.ledger.resurrectionSeen(base);
  if (seen < ctx.deletion.goneChecks) return;
  const item = await proposeItem(ctx, base, {
    id: `ingest:${base.documentId}`,
    kind: 'ingestion',
    reason: INGESTION_REASONS.tombstoneLift,
    evidence: [`HTTP 200 observed ${seen} times after the tombstone`],
  });
  if (item !== undefined) run.counts.reviewCreated++;
}

/**
 * After a run with complete coverage: every live document the inventory no longer lists becomes
 * a proposal of this run — `inventory-diff` when the page answered 404/410, else
 * `unlisted-but-answering` (never auto-approved). They are written, or held as one mass-removal
 * alert, by `settleProposals`.
 */
export async function proposeInventoryDiff(
  ctx: EngineContext,
  run: SourceRun,
  listed: ReadonlySet<string>,
): Promise<void> {
  // Candidates from the run's snapshot (a document discovery did not list was live then and
  // was fetched in this run); each one's latest record decides.
  for (const seen of await ctx.records.ofSource(run.source.id)) {
    if (listed.has(seen.documentId)) continue;
    const r = await ctx.deps.state.getDocument(seen.documentId);
    if (r === undefined || r.currentVersionId === undefined || r.status === 'tombstoned') continue;
    if (run.proposals.some((p) => p.subject.documentId === r.documentId)) continue;
    const answering = run.answered.has(r.documentId);
    run.proposals.push({
      subject: r,
      reason: answering ? DELETION_REASONS.unlistedAnswering : DELETION_REASONS.inventoryDiff,
      evidence: [
        `absent from the inventory of the run of ${run.startedAt}, whose coverage was complete (every sitemap read, every page answered)`,
        answering
          ? 'the page itself still answers (200/304): absence from a listing is not evidence it is gone'
          : `last observation: ${r.statusReasons.join('; ') || 'none'}`,
      ],
    });
  }
}

/** Live (current, not tombstoned) documents of a source. */
async function liveDocuments(ctx: EngineContext, sourceId: string): Promise<number> {
  // Live at the start of the run: the gate is a share of the source as the run found it.
  let live = 0;
  for (const r of await ctx.records.ofSource(sourceId))
    if (r.currentVersionId !== undefined && r.status !== 'tombstoned') live++;
  return live;
}

/** Most removals one run may make (or propose) for a source of `live` documents. */
function allowedRemovals(ctx: EngineContext, live: number): number {
  return Math.floor(live * ctx.maxRetireShare + 1e-9);
}

/**
 * Re-evaluates the source's pending deletion proposals against this run: a page that answered
 * 200/304 withdraws a gone-based proposal, a page listed again withdraws an inventory-based one.
 * Each withdrawal is an audit log line and a history entry on the document.
 */
async function withdrawContradicted(
  ctx: EngineContext,
  run: SourceRun,
  listed: ReadonlySet<string>,
): Promise<void> {
  const pending = await ctx.deps.state.listReviewItems({ status: 'pending' });
  for (const item of pending) {
    if (item.sourceId !== run.source.id || item.kind !== 'deletion') continue;
    const answered = run.answered.has(item.documentId);
    const relisted = listed.has(item.documentId);
    const why =
      item.reason === DELETION_REASONS.unlistedAnswering
        ? relisted
          ? 'listed in the inventory again'
          : undefined
        : answered
          ? 'the page answered 200/304'
          : item.reason === DELETION_REASONS.inventoryDiff && relisted
            ? 'listed in the inventory again'
            : undefined;
    if (why !== undefined) await withdraw(ctx, item, `${why} in the run of ${run.startedAt}`);
  }
}

/** Marks a pending proposal withdrawn: its evidence no longer holds. */
export async function withdraw(ctx: EngineContext, item: ReviewItem, why: string): Promise<void> {
  await ctx.ledger.withdrawn(item, why);
  ctx.log.info('review-withdrawn', { id: item.id, url: item.url, reason: item.reason, why });
}

/**
 * The end of a source's run: pending proposals are re-evaluated (withdrawn when contradicted),
 * this run's proposals are written — or, when they exceed `maxRetireShare` of the source, held
 * as one `mass-removal-held` alert — and, under `deletion.autoApprove`, confirmed-gone
 * proposals are approved together, counted against the same per-run, per-source gate.
 */
export async function settleProposals(
  ctx: EngineContext,
  run: SourceRun,
  listed: ReadonlySet<string>,
): Promise<void> {
  await withdrawContradicted(ctx, run, listed);
  const live = await liveDocuments(ctx, run.source.id);
  const allowed = allowedRemovals(ctx, live);
  const fresh: typeof run.proposals = [];
  for (const p of run.proposals) {
    const existing = await ctx.deps.state.getReviewItem(`delete:${p.subject.documentId}`);
    if (existing?.status !== 'pending') fresh.push(p);
  }
  if (fresh.length > Math.max(1, allowed)) {
    const byReason = new Map<string, number>();
    for (const p of fresh) byReason.set(p.reason, (byReason.get(p.reason) ?? 0) + 1);
    run.alerts.push(
      `mass-removal-held: this run would propose removing ${fresh.length} of ${live} live documents (${[...byReason].map(([r, n]) => `${n} ${r}`).join(', ')}), over the ${Math.round(ctx.maxRetireShare * 100)}% gate (gates.maxRetireShare); nothing was proposed or removed. Check the source's listing; if the removal is real, raise the gate for one run.`,
    );
    run.counts.removalsHeld += fresh.length;
  } else {
    for (const p of fresh) {
      const item = await proposeDeletion(ctx, p.subject, p.reason, p.evidence);
      if (item === undefined) continue;
      run.counts.reviewCreated++;
      run.event(p.subject.url, p.subject.documentId, 'deletion-proposed', [
        { code: p.reason, detail: '' },
      ]);
    }
  }
  if (ctx.deletion.autoApprove) await autoApprove(ctx, run, live, allowed);
}

async function autoApprove(
  ctx: EngineContext,
  run: SourceRun,
  live: number,
  allowed: number,
): Promise<void> {
  const eligible = (await ctx.deps.state.listReviewItems({ status: 'pending' })).filter(
    (i) =>
      i.kind === 'deletion' &&
      i.sourceId === run.source.id &&
      i.reason === DELETION_REASONS.confirmedGone,
  );
  if (eligible.length === 0) return;
  if (run.counts.removed + eligible.length > allowed) {
    run.alerts.push(
      `auto-approval-held: ${eligible.length} confirmed-gone deletions of ${live} live documents exceed the ${Math.round(ctx.maxRetireShare * 100)}% gate (gates.maxRetireShare); they wait in the review queue.`,
    );
    run.counts.removalsHeld += eligible.length;
    return;
  }
  const approved = await approveMany(
    ctx,
    eligible.map((i) => i.id),
    'auto-policy:deletion.autoApprove',
  );
  run.counts.removed += approved.approved.length;
  for (const b of approved.blocked) run.alerts.push(`auto-approval-blocked: ${b}`);
}

/** The outcome of approving several items at once. */
export interface ApprovalReport {
  readonly approved: readonly string[];
  /** One line per item that could not be approved, with why. */
  readonly blocked: readonly string[];
}

/**
 * Approves deletions together: one removal batch, so the publisher's per-source retire gate
 * counts all of them at once. A blocked batch approves nothing.
 */
async function approveDeletions(
  ctx: EngineContext,
  items: readonly ReviewItem[],
  by: string,
): Promise<ApprovalReport> {
  if (items.length === 0) return { approved: [], blocked: [] };
  const removals: RemovalRequest[] = items.map((item) => ({
    documentId: item.documentId,
    reason: `${item.reason}: ${item.evidence.join('; ')}`,
  }));
  const report = await ctx.publishLock.run(() => ctx.publisher().publish([], { removals }));
  const approved: string[] = [];
  const blocked: string[] = [];
  for (const item of items) {
    const r = report.documents.find((d) => d.documentId === item.documentId);
    if (r?.outcome === 'rejected-by-gate' || r?.outcome === 'verify-failed') {
      ctx.log.warn('approval-blocked', { id: item.id, reasons: r.reasons });
      blocked.push(`${item.id}: ${r.reasons.map(reasonLine).join('; ')}`);
      continue;
    }
    await ctx.ledger.deletionApproved(item, by);
    approved.push(item.id);
  }
  return { approved, blocked };
}

/** Publishes a held (quarantined) candidate; provided by the engine (it needs the pipeline). */
export type PublishHeld = (item: ReviewItem) => Promise<string | undefined>;

/**
 * Approves review items: deletions retire their chunks in one batch and write tombstones; an
 * ingestion item lifts a tombstone, or publishes a quarantined candidate from its raw snapshot.
 */
export async function approveMany(
  ctx: EngineContext,
  ids: readonly string[],
  by: string,
  publishHeld?: PublishHeld,
): Promise<ApprovalReport> {
  const items: ReviewItem[] = [];
  const blocked: string[] = [];
  for (const id of ids) {
    const item = await ctx.deps.state.getReviewItem(id);
    if (item === undefined || item.status !== 'pending') blocked.push(`${id}: not pending`);
    else items.push(item);
  }
  const deletions = await approveDeletions(
    ctx,
    items.filter((i) => i.kind === 'deletion'),
    by,
  );
  const approved = [...deletions.approved];
  blocked.push(...deletions.blocked);
  for (const item of items.filter((i) => i.kind === 'ingestion')) {
    if (holdsVersion(item)) {
      const problem =
        publishHeld === undefined ? 'no publisher for held candidates' : await publishHeld(item);
      if (problem !== undefined) {
        blocked.push(`${item.id}: ${problem}`);
        continue;
      }
    } else {
      await ctx.ledger.tombstoneLifted(item.documentId, by);
    }
    await ctx.ledger.decided(item, 'approved', by);
    approved.push(item.id);
  }
  return { approved, blocked };
}

/** Approves one review item (see `approveMany`). */
export async function approve(
  ctx: EngineContext,
  reviewId: string,
  by: string,
  publishHeld?: PublishHeld,
): Promise<boolean> {
  return (await approveMany(ctx, [reviewId], by, publishHeld)).approved.length === 1;
}

/**
 * Rejects a review item. A rejected deletion resets the gone evidence; a rejected quarantine
 * keeps the old version current (healthy again) until the page changes again.
 */
export async function reject(ctx: EvidenceContext, reviewId: string, by: string): Promise<boolean> {
  const item = await ctx.deps.state.getReviewItem(reviewId);
  if (item === undefined || item.status !== 'pending') return false;
  if (item.kind === 'deletion') await ctx.ledger.deletionRejected(item, by);
  else if (item.reason === INGESTION_REASONS.contractQuarantine)
    await ctx.ledger.quarantineRejected(item, by);
  else await ctx.ledger.decided(item, 'rejected', by);
  return true;
}

/** One version of a page held for review, with the raw snapshot approval publishes it from. */
export type HeldVersion = ProposalSubject & {
  readonly versionId: string;
  readonly rawDigest?: string;
};

/**
 * Writes the ingestion item holding `held` (`<prefix>:<documentId>`, see `HELD_PREFIX`) unless
 * one already holds that version (`skipIf` says which of its statuses count). Approval
 * publishes it without refetching.
 */
async function proposeHeld(
  ctx: EngineContext,
  run: SourceRun,
  reason: string,
  held: HeldVersion,
  evidence: readonly string[],
  skipIf: ReadonlySet<ReviewItem['status']>,
): Promise<void> {
  const item = await proposeItem(
    ctx,
    held,
    {
      id: `${HELD_PREFIX[reason]}:${held.documentId}`,
      kind: 'ingestion',
      reason,
      evidence,
      versionId: held.versionId,
      ...(held.rawDigest === undefined ? {} : { rawDigest: held.rawDigest }),
    },
    (existing) => existing.versionId === held.versionId && skipIf.has(existing.status),
  );
  if (item !== undefined) run.counts.reviewCreated++;
}

/**
 * A candidate the source's publish contract rejected becomes an ingestion review item
 * (`quarantine:<documentId>`) carrying its version and raw snapshot digest; the item's evidence
 * is the gates' printed lines.
 */
export function proposeQuarantined(
  ctx: EngineContext,
  run: SourceRun,
  held: HeldVersion,
  reasons: readonly Reason[],
): Promise<void> {
  return proposeHeld(
    ctx,
    run,
    INGESTION_REASONS.contractQuarantine,
    held,
    reasons.map(reasonLine),
    new Set(['pending']),
  );
}

/** Trailing history entries that judged the page not the document as this same version. */
export function unchangedVerdictRuns(record: DocumentRecord, versionId: string): number {
  let n = 0;
  for (const h of [...(record.history ?? [])].reverse()) {
    if (h.event !== 'degraded' || h.versionId !== versionId) break;
    n++;
  }
  return n;
}

/**
 * A page judged not the document on `PERSISTENT_NOT_DOCUMENT_RUNS` runs in a row with unchanged
 * content (the same would-be version) becomes `persistent:<documentId>`: a reviewer who knows
 * it is the document (an error-code page, say) approves it, which publishes that version and
 * lets later runs index it while the content stays the same. A decided item for the same
 * version is not asked again.
 */
export async function proposePersistent(
  ctx: EngineContext,
  run: SourceRun,
  record: DocumentRecord,
  held: Omit<HeldVersion, keyof ProposalSubject>,
  reasons: readonly Reason[],
): Promise<void> {
  const runs = unchangedVerdictRuns(record, held.versionId);
  if (runs < PERSISTENT_NOT_DOCUMENT_RUNS) return;
  await proposeHeld(
    ctx,
    run,
    INGESTION_REASONS.persistentNotTheDocument,
    { documentId: record.documentId, sourceId: record.sourceId, url: record.url, ...held },
    [
      `judged not the document on ${runs} runs in a row, content unchanged`,
      ...reasons.map(reasonLine),
    ],
    new Set(['pending', 'approved', 'rejected']),
  );
}

/**
 * What an approved held item publishes, extracted again from its raw snapshot: a quarantined
 * candidate (a document by classification), or exactly the accepted version of a page judged
 * not the document. A string says why there is nothing to publish.
 */
export function heldDocument(item: ReviewItem, outcome: PageOutcome): ExtractedDocument | string {
  if (item.reason !== INGESTION_REASONS.persistentNotTheDocument)
    return outcome.kind === 'document'
      ? outcome
      : `not extractable: ${outcome.reasons.map(reasonLine).join('; ')}`;
  if (outcome.kind === 'not-the-document' && outcome.asDocument === undefined)
    return `not extractable: ${outcome.reasons.map(reasonLine).join('; ')}`;
  const doc = outcome.kind === 'document' ? outcome : outcome.asDocument!;
  return doc.versionId === item.versionId
    ? doc
    : `its raw snapshot now gives version ${doc.versionId}, not the held ${item.versionId}; the next runs propose it again`;
}

/** The version a reviewer accepted as the document despite its verdict (an approved `persistent:` item). */
export async function acceptedVersion(
  ctx: Pick<EvidenceContext, 'deps'>,
  documentId: string,
): Promise<{ versionId: string; by: string } | undefined> {
  const item = await ctx.deps.state.getReviewItem(`persistent:${documentId}`);
  if (item?.status !== 'approved' || item.versionId === undefined) return undefined;
  return { versionId: item.versionId, by: item.decidedBy ?? 'a reviewer' };
}

/** The quarantine item holding exactly this version (awaiting review, or rejected), if any. */
export async function heldVersion(
  ctx: EvidenceContext,
  documentId: string,
  versionId: string,
): Promise<ReviewItem | undefined> {
  const item = await ctx.deps.state.getReviewItem(`quarantine:${documentId}`);
  if (item === undefined || item.versionId !== versionId) return undefined;
  return item.status === 'pending' || item.status === 'rejected' ? item : undefined;
}
