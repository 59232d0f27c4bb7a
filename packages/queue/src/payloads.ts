import { createHash } from 'node:crypto';
import type { PublishCandidate } from '@ragfresh/core';
import type { GoneProposal } from '@ragfresh/engine/stages';

/** One URL batch of one source's due run: what a page worker takes. */
export interface PageBatchJob {
  readonly sourceId: string;
  /** The due window this batch belongs to (same window, same job ids: re-enqueueing is a no-op). */
  readonly runKey: string;
  readonly pages: readonly {
    readonly url: string;
    readonly documentId: string;
    readonly listed: boolean;
  }[];
}

/** What one page batch hands to the publisher: every staged candidate of the batch, or none. */
export interface PublishJob {
  readonly pageJobId: string;
  readonly candidates: readonly {
    readonly candidate: PublishCandidate;
    readonly mode?: 'repair' | 'accept';
  }[];
}

/** What a publish job returns: its candidates' outcome counts (and alerts) per source. */
export type PublishJobResult = readonly {
  readonly sourceId: string;
  readonly counts: Readonly<Record<string, number>>;
  readonly alerts: readonly string[];
}[];

/** A gone-based deletion proposal a page made; written (or held) by the window's finish job. */
export type PageProposal = GoneProposal;

/** What a page job returns: its flow's finish job reads it (`getChildrenValues`). */
export interface PageBatchResult {
  readonly pages: number;
  readonly candidates: number;
  /** Every page of the batch answered definitively (200, 304, 404/410). */
  readonly complete: boolean;
  readonly counts: Readonly<Record<string, number>>;
  /** Documents whose page answered 200 or 304 (withdraws gone-based proposals). */
  readonly answered?: readonly string[];
  readonly proposals?: readonly PageProposal[];
  readonly alerts?: readonly string[];
}

/**
 * The end of one source's due window, the parent of its page jobs in a BullMQ flow: it runs
 * once every page job completed (or failed for good), and settles the source's run as the
 * single-process engine does (inventory diff, proposals, shape checks, the run summary).
 */
export interface FinishJob {
  readonly sourceId: string;
  readonly runKey: string;
  /** The scheduler's start of the run: the run summary keeps its runId. */
  readonly startedAt: string;
  readonly pages: number;
  readonly jobs: number;
  /** documentIds the inventory listed. */
  readonly listed: readonly string[];
  /** Every listing read untruncated. */
  readonly inventoryComplete: boolean;
  readonly problems: readonly string[];
  readonly listingsNotModified: number;
}

function slug(s: string): string {
  const safe = s.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  return `${safe}-${createHash('sha256').update(s).digest('hex').slice(0, 8)}`;
}

/**
 * Deterministic page-batch job id (BullMQ refuses ":" in custom ids): the same source, due
 * window and batch index give the same id, and BullMQ ignores an add whose id exists.
 */
export function pageJobId(sourceId: string, runKey: string, index: number): string {
  return `pages.${slug(sourceId)}.${runKey}.${index}`;
}

/** The finish job of a source's due window (the parent of its page jobs). */
export function finishJobId(sourceId: string, runKey: string): string {
  return `finish.${slug(sourceId)}.${runKey}`;
}

/** The publish job of a page job: a retried page job re-adds the same id, a no-op. */
export function publishJobId(pageJobId: string): string {
  return `publish.${pageJobId}`;
}

/** The due window of a source: runs of one window share job ids. */
export function runKeyOf(nowMs: number, everyMs: number): string {
  return String(Math.floor(nowMs / Math.max(1, everyMs)));
}
