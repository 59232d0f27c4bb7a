import type { ComposedEngine } from '@ragfresh/engine';

/** Metadata keys the retriever adds to returned Documents (never stored, never embedded). */
export const READER_FIELDS = Object.freeze({
  /** `true` when the document is degraded or quarantined: the copy is the last good one. */
  stale: 'rf_stale',
  /** Last good observation of a stale document. */
  staleSince: 'rf_stale_since',
  /** Document status from the StateStore (`healthy`, `degraded`, `quarantined`). */
  status: 'rf_status',
  /** Latest valid observation from the StateStore (a 304 refreshes it without rewriting chunks). */
  lastSeenAt: 'rf_last_seen_at',
  /** Published epoch the query read (absent in flag mode). */
  epoch: 'rf_epoch',
  /** Live fetch answered 304: the stored copy was confirmed at this time. */
  revalidatedAt: 'rf_revalidated_at',
  /** Live fetch answered 200 and the section changed: pageContent is the live text. */
  live: 'rf_live',
  liveFetchedAt: 'rf_live_fetched_at',
  liveVersion: 'rf_live_version',
  /** Live fetch failed (reason): the stored copy is shown instead. */
  liveFetchFailed: 'rf_live_fetch_failed',
  liveAttemptedAt: 'rf_live_attempted_at',
  /**
   * Every URL the passage is found at (`{ url, title, heading, documentId }[]`, this result's
   * own first): copies under other URLs collapsed into this result. Absent with
   * `collapseDuplicates: false`.
   */
  citations: 'rf_citations',
  /** How many hits were collapsed into this result (1 when it had no copies). */
  duplicates: 'rf_duplicates',
});

export interface LiveFetchOptions {
  /**
   * An engine composed for the `live` role (`composeEngine(settings, { state, embeddings },
   * 'live')`): the fetcher (`fetch.*`), the page step (chunking, the hosts' learned boilerplate
   * as stored, page limits), each result's source (acquisition, Markdown twin, proxy, provenance,
   * `classify`) and the state validators and last good observations are read from. It writes no
   * record. Closed by whoever composed it.
   */
  readonly engine: ComposedEngine;
  /** Freshness objective: a result whose last good observation is older than this is fetched live. */
  readonly objectiveMs: number;
  /** Live fetches at once. Default 4. */
  readonly concurrency?: number;
  readonly now?: () => Date;
}
