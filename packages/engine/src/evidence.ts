import type { DocumentRecord, FetchValidators, StateStore } from '@ragfresh/core';
import type { DeletionPolicy, EngineLogger } from './types.js';

/**
 * What the evidence and review stages read from their context: the state store, the deletion
 * policy, the clock and the logger. `EngineContext` is one; the LangChain loader builds its own,
 * so pages are emitted or withheld by the same evidence rules on both paths.
 */
export interface EvidenceContext {
  readonly deps: { readonly state: StateStore };
  readonly deletion: DeletionPolicy;
  readonly log: EngineLogger;
  nowIso(): string;
}

const HISTORY_LIMIT = 50;

/** Appends one event to a record's bounded history. */
export function addHistory(
  record: DocumentRecord,
  at: string,
  event: string,
  reasons: readonly string[],
  versionId?: string,
): DocumentRecord {
  return {
    ...record,
    history: [
      ...(record.history ?? []),
      { at, event, reasons, ...(versionId === undefined ? {} : { versionId }) },
    ].slice(-HISTORY_LIMIT),
  };
}

/** The record of a document never seen before. */
export function newRecord(documentId: string, sourceId: string, url: string): DocumentRecord {
  return {
    documentId,
    sourceId,
    url,
    status: 'healthy',
    statusReasons: [],
    currentChunkIds: [],
    timestamps: {},
  };
}

/** A good observation that publishes nothing: a 304, or a 200 whose content did not change. */
export interface GoodObservation {
  readonly validators: FetchValidators;
  readonly retrievedAt: string;
  readonly rawDigest?: string;
}

/**
 * The evidence stage is the one writer of observations that publish nothing (304, unchanged
 * content, degraded, gone). Anything that publishes is recorded by the publisher, in the
 * journalled write that makes the version current.
 */
export async function recordGood(
  ctx: EvidenceContext,
  base: DocumentRecord,
  seen: GoodObservation,
): Promise<void> {
  await ctx.deps.state.putDocument({
    ...base,
    ...(base.status === 'degraded' ? { status: 'healthy', statusReasons: [] } : {}),
    validators: seen.validators,
    ...(seen.rawDigest === undefined ? {} : { rawDigest: seen.rawDigest }),
    timestamps: { ...base.timestamps, retrievedAt: seen.retrievedAt },
    lastAttemptAt: ctx.nowIso(),
    lastGoodAt: seen.retrievedAt,
    goneCount: 0,
  });
}

/**
 * Never overwrite: the last good version stays current; readers are told it is stale. A page
 * judged not the document carries the version it would have been (`wouldBe`) in its history
 * entry, so runs with the same verdict on unchanged content can be counted.
 */
export async function recordDegraded(
  ctx: EvidenceContext,
  base: DocumentRecord,
  reasons: readonly string[],
  wouldBe?: string,
): Promise<DocumentRecord> {
  const at = ctx.nowIso();
  const status =
    base.status === 'quarantined' || base.status === 'tombstoned' ? base.status : 'degraded';
  const record = addHistory(
    { ...base, status, statusReasons: [...reasons], lastAttemptAt: at },
    at,
    'degraded',
    reasons,
    wouldBe,
  );
  await ctx.deps.state.putDocument(record);
  return record;
}

export interface GoneEvidence {
  readonly record: DocumentRecord;
  readonly reason: string;
  readonly goneCount: number;
  readonly goneSince: string;
  /** Enough observations over enough time to propose deleting a live document. */
  readonly proposable: boolean;
}

/** Records one 404/410 observation and says whether the evidence now suffices for a proposal. */
export async function recordGone(
  ctx: EvidenceContext,
  base: DocumentRecord,
  status: number,
): Promise<GoneEvidence> {
  const at = ctx.nowIso();
  const { goneChecks, minGoneAgeMs } = ctx.deletion;
  const goneCount = (base.goneCount ?? 0) + 1;
  const goneSince =
    base.goneCount !== undefined && base.goneCount > 0 && base.goneSince !== undefined
      ? base.goneSince
      : at;
  // Say what the evidence still waits for: more checks, the minimum age, or nothing.
  const ageAt = new Date(Date.parse(goneSince) + minGoneAgeMs).toISOString();
  const waits = [
    ...(goneCount < goneChecks ? [`${goneChecks - goneCount} more check(s)`] : []),
    ...(Date.parse(at) < Date.parse(ageAt) ? [`minGoneAge until ${ageAt}`] : []),
  ];
  const reason = `gone: HTTP ${status} (${goneCount} of ${goneChecks} checks since ${goneSince}; ${waits.length === 0 ? 'enough evidence for a deletion proposal' : `waits for ${waits.join(' and ')}`})`;
  const record = addHistory(
    {
      ...base,
      goneCount,
      goneSince,
      lastAttemptAt: at,
      status: base.currentVersionId === undefined ? base.status : 'degraded',
      statusReasons: [reason],
    },
    at,
    'gone',
    [reason],
  );
  await ctx.deps.state.putDocument(record);
  const ageOk = Date.parse(at) - Date.parse(goneSince) >= minGoneAgeMs;
  const proposable = base.currentVersionId !== undefined && goneCount >= goneChecks && ageOk;
  return { record, reason, goneCount, goneSince, proposable };
}
