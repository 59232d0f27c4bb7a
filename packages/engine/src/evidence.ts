import {
  type DocumentLedger,
  type DocumentRecord,
  type GoneEvidence,
  type GoodObservation,
  type Reason,
  reasonLine,
  type StateStore,
} from '@ragfresh/core';
import type { DeletionPolicy, EngineLogger } from './types.js';

export type { GoneEvidence, GoodObservation } from '@ragfresh/core';

/**
 * What the evidence and review stages read from their context: the state store (read), the
 * ledger (every write), the deletion policy, the clock and the logger. `EngineContext` is one;
 * the LangChain loader builds its own, so pages are emitted or withheld by the same evidence
 * rules on both paths.
 */
export interface EvidenceContext {
  readonly deps: { readonly state: StateStore };
  readonly ledger: DocumentLedger;
  readonly deletion: DeletionPolicy;
  readonly log: EngineLogger;
  nowIso(): string;
}

/**
 * The evidence stage: observations that publish nothing (304, unchanged content, degraded,
 * gone), each one ledger transition. Anything that publishes is recorded by the publisher, in
 * the journalled write that makes the version current.
 */
export async function recordGood(
  ctx: EvidenceContext,
  base: DocumentRecord,
  seen: GoodObservation,
): Promise<void> {
  await ctx.ledger.observed(base, seen);
}

/**
 * A 304: the observation moves, nothing else, written with the next batch of them (one
 * transaction per batch, not a record write per page). Whoever runs the pages flushes the
 * batch when they are done (`ctx.ledger.flushObservations()`).
 */
export async function recordNotModified(
  ctx: EvidenceContext,
  base: DocumentRecord,
  seen: GoodObservation,
): Promise<void> {
  await ctx.ledger.observedLater(base, seen);
}

/**
 * Never overwrite: the last good version stays current; readers are told it is stale. A page
 * judged not the document carries the version it would have been (`wouldBe`) in its history
 * entry, so runs with the same verdict on unchanged content can be counted. The record keeps
 * the reasons' printed lines (`reasonLine`): every caller (the engine's stages, the LangChain
 * loader) passes `Reason`s, so the line is made here, once.
 */
export async function recordDegraded(
  ctx: EvidenceContext,
  base: DocumentRecord,
  reasons: readonly Reason[],
  wouldBe?: string,
): Promise<DocumentRecord> {
  return ctx.ledger.degraded(base, reasons.map(reasonLine), wouldBe);
}

/** Records one 404/410 observation and says whether the evidence now suffices for a proposal. */
export function recordGone(
  ctx: EvidenceContext,
  base: DocumentRecord,
  status: number,
): Promise<GoneEvidence> {
  return ctx.ledger.goneEvidence(base, status, ctx.deletion);
}
