import type { Reason, StoreCheck } from '@ragfresh/core';
/** Counts of one refresh, per source and in total. Every number is counted, never estimated. */
export interface RefreshCounts {
  /** Pages due this run (the inventory's entries). */
  urls: number;
  /**
   * Pages answered definitively: 200 (a document or not), 304, 404/410, a tombstoned page
   * observed. Not counted: fetch errors, timeouts, refusals, a redirect into a 404, pages an
   * abort left unobserved. `definitive / urls` is the run's coverage (`coverageOf`).
   */
  definitive: number;
  fetched200: number;
  notModified: number;
  gone: number;
  fetchErrors: number;
  extracted: number;
  notTheDocument: number;
  unchangedContent: number;
  validatorChurn: number;
  candidates: number;
  published: number;
  rejected: number;
  /** Candidates held twice because another document of their batch failed verification. */
  held: number;
  removed: number;
  chunksEmbedded: number;
  chunksReused: number;
  storeWrites: number;
  tombstonedSkipped: number;
  reviewCreated: number;
  /** Documents re-extracted from raw snapshots (pipeline change), without network. */
  reextracted: number;
  /** Removals (proposals or auto-approvals) held back by the per-run retire gate. */
  removalsHeld: number;
  /** Quarantined (or rejected) candidates seen again unchanged: not embedded, not published. */
  heldUnchanged: number;
  /** Sitemaps, sitemap indexes and llms.txt files answered 304 (the listing was not downloaded). */
  listingsNotModified: number;
}

export function emptyCounts(): RefreshCounts {
  return {
    urls: 0,
    definitive: 0,
    fetched200: 0,
    notModified: 0,
    gone: 0,
    fetchErrors: 0,
    extracted: 0,
    notTheDocument: 0,
    unchangedContent: 0,
    validatorChurn: 0,
    candidates: 0,
    published: 0,
    rejected: 0,
    held: 0,
    removed: 0,
    chunksEmbedded: 0,
    chunksReused: 0,
    storeWrites: 0,
    tombstonedSkipped: 0,
    reviewCreated: 0,
    reextracted: 0,
    removalsHeld: 0,
    heldUnchanged: 0,
    listingsNotModified: 0,
  };
}

/** Adds `from` into `into`, key by key. */
export function addCounts(into: RefreshCounts, from: Readonly<RefreshCounts>): RefreshCounts {
  for (const k of Object.keys(from) as (keyof RefreshCounts)[]) into[k] += from[k];
  return into;
}

/**
 * Pages answered definitively over pages due, in [0, 1]. With no page due it is 1 when the
 * listings were read whole (nothing to answer) and 0 when they were not (a sitemap that did not
 * answer says nothing about what is due: nothing was covered).
 */
export function coverageOf(counts: Readonly<RefreshCounts>, listingsComplete: boolean): number {
  if (counts.urls === 0) return listingsComplete ? 1 : 0;
  return Math.min(1, counts.definitive / counts.urls);
}

/** A run that answers fewer of its due pages definitively than this is below the gate. */
export const DEFAULT_MIN_COVERAGE = 0.9;

/** A coverage share as printed: floored to a tenth of a percent, so 89.96 % never reads as the 90 % gate. */
export function coveragePercent(share: number): string {
  return `${(Math.floor(share * 1000) / 10).toString()}%`;
}

/**
 * The alert of a source run that answered too few of its due pages definitively
 * (`coverageOf` below `minCoverage`, config `gates.minCoverage`), or undefined when it did not.
 */
export function coverageGateAlert(
  counts: Readonly<RefreshCounts>,
  listingsComplete: boolean,
  minCoverage: number,
): string | undefined {
  const coverage = coverageOf(counts, listingsComplete);
  if (coverage >= minCoverage) return undefined;
  return `coverage below the gate gates.minCoverage ${coveragePercent(minCoverage)}: ${coveragePercent(coverage)} (${counts.definitive}/${counts.urls}) of due pages answered; the others failed or timed out`;
}

/** What one page did in a run (`published`, `quarantined`, `degraded`, ...) and why, typed. */
export interface DocumentEvent {
  readonly url: string;
  readonly documentId: string;
  readonly event: string;
  /** Printed with `reasonLine` by whoever shows the event (the CLI, a log line). */
  readonly reasons: readonly Reason[];
}

export interface SourceReport {
  readonly sourceId: string;
  readonly complete: boolean;
  /** Pages answered definitively / pages due (`coverageOf`). */
  readonly coverage: number;
  readonly counts: RefreshCounts;
  readonly alerts: readonly string[];
  readonly events: readonly DocumentEvent[];
}

export interface RefreshReport {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly sources: readonly SourceReport[];
  readonly totals: RefreshCounts;
  /** Over every source of the run: pages answered definitively / pages due (1 with none due). */
  readonly coverage: number;
  /** The state/store check the refresh started with. */
  readonly storeCheck?: StoreCheckReport;
}

/** What the check of state against store found before a refresh, and what it repaired. */
export interface StoreCheckReport {
  readonly verdict: StoreCheck['verdict'];
  readonly problems: readonly string[];
  /** Documents republished from raw snapshots (no refetch). */
  readonly repaired: number;
  /** Missing documents without a raw snapshot: fetched in full and republished in this run. */
  readonly refetch: number;
}
