import { createHash } from 'node:crypto';
import type { PublishCandidate } from '@ragfresh/core';

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

/** What a page job returns (kept on the completed job, summed by the scheduler's report). */
export interface PageBatchResult {
  readonly pages: number;
  readonly candidates: number;
  readonly complete: boolean;
  readonly counts: Readonly<Record<string, number>>;
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

/** The publish job of a page job: a retried page job re-adds the same id, a no-op. */
export function publishJobId(pageJobId: string): string {
  return `publish.${pageJobId}`;
}

/** The due window of a source: runs of one window share job ids. */
export function runKeyOf(nowMs: number, everyMs: number): string {
  return String(Math.floor(nowMs / Math.max(1, everyMs)));
}
