import type { Canary, CanonicalPolicy, PublishContract, UrlIdentityPolicy } from '@ragfresh/core';
import type { RefreshCounts } from './counts.js';

/** How a source's pages are read: the raw response, a headless render, or a render only for an empty app shell. */
export type AcquisitionSetting = 'raw' | 'rendered' | 'auto';

/**
 * A source as the engine needs it: what to list, how often it is due, how to read its pages.
 * The CLI's resolved config satisfies it; any other host builds it directly.
 */
export interface EngineSource {
  /** Stable id chosen by the user; the prefix of every documentId. */
  readonly id: string;
  readonly urls?: readonly string[];
  readonly sitemaps?: readonly string[];
  readonly llmsTxt?: readonly string[];
  /** Label carried into provenance, e.g. `official`. */
  readonly authority?: string;
  /**
   * Groups that may read the source's chunks (`rf_access`; checked and sorted by the host);
   * absent or empty: public. Part of every scoped versionId: a change republishes the source.
   */
  readonly access?: readonly string[];
  /**
   * Whose word a page's `<link rel="canonical">` (an export row's `canonicalUrl`) is: `same-site`
   * (default) cites it only on the fetched URL's own site, `trust` cites any http(s) one, `ignore`
   * keeps none (`@ragfresh/core`'s `judgeCanonical`).
   */
  readonly canonical?: CanonicalPolicy;
  /** Interval after which the source is due again. */
  readonly everyMs: number;
  /** A "frozen" alert is raised when nothing changed for longer than this. */
  readonly expectedChangeMs?: number;
  readonly acquisition?: AcquisitionSetting;
  /** Prefer a page's Markdown twin (`page.md`). */
  readonly markdownTwin?: boolean;
  readonly proxy?: { readonly url: string; readonly region?: string };
  readonly identity: UrlIdentityPolicy;
  /** What a new version must satisfy before it is published (min chars, phrases, shrink). */
  readonly contract?: PublishContract;
  /** Queries that must keep finding what they expect, checked around each publication. */
  readonly canaries?: readonly Canary[];
  /** How "not the document" verdicts act on this source's pages. */
  readonly classify?: ClassifySettings;
  /**
   * How long this source's raw snapshots and retired versions are kept (as-of reads, `gc`);
   * absent: `publish.retentionMs`.
   */
  readonly retentionMs?: number;
}

/** A source's say over classification (config `sources[].classify`). */
export interface ClassifySettings {
  /**
   * Verdict codes (`soft_404`, `rate_limited`, …; extract's `NOT_DOCUMENT_CODES`) that do not
   * block indexing: a page whose every reason is listed is indexed, its run event labelled
   * `indexed-despite` with the reasons.
   */
  readonly ignore?: readonly string[];
}

/** When gone evidence becomes a deletion proposal, and whether proposals skip review. */
export interface DeletionPolicy {
  /** 404/410 observations needed. */
  readonly goneChecks: number;
  /** Time those observations must span. */
  readonly minGoneAgeMs: number;
  /** Approve confirmed-gone deletions without review (an explicit policy; default false). Never inventory absence. */
  readonly autoApprove: boolean;
  /**
   * Count a redirect that ends in 404/410 as gone evidence for the requested URL. Default false:
   * it is recorded as "redirected to X, which answered 404" and the document is degraded.
   */
  readonly redirectedGone?: boolean;
}

export const DEFAULT_DELETION_POLICY: DeletionPolicy = Object.freeze({
  goneChecks: 3,
  minGoneAgeMs: 172_800_000,
  autoApprove: false,
});

type Fields = Readonly<Record<string, unknown>>;

/** The page pool's pulse while pages are in flight: the one it has waited on longest. */
export interface Heartbeat {
  /** Pages in flight now. */
  readonly inFlight: number;
  readonly slowestUrl: string;
  readonly slowestSource: string;
  /** How long the slowest page has been in flight. */
  readonly slowestMs: number;
  /** Pages done and due over every source of the refresh. */
  readonly done: number;
  readonly total: number;
}

/** Where the engine reports progress; the CLI's logger satisfies it. */
export interface EngineLogger {
  info(event: string, fields?: Fields): void;
  warn(event: string, fields?: Fields): void;
  /** `counts`: the source's counts so far (304s, published, errors), for a richer line. */
  progress(label: string, done: number, total: number, counts?: Readonly<RefreshCounts>): void;
  /**
   * Called every `heartbeatMs` (default 10 s) while a refresh has pages in flight, whether or
   * not any finished meanwhile. Optional: a logger without it gets no timer.
   */
  heartbeat?(beat: Heartbeat): void;
  /** The heartbeat's period; 0 turns it off. */
  readonly heartbeatMs?: number;
  done(): void;
}

export const silentLogger: EngineLogger = { info() {}, warn() {}, progress() {}, done() {} };

type Labels = Readonly<Record<string, string>>;

/** Where the engine counts; the CLI's Prometheus registry satisfies it. */
export interface EngineMetrics {
  inc(name: string, help: string, labels?: Labels, by?: number): void;
  set(name: string, help: string, labels: Labels, value: number): void;
}

/** What the engine needs from a headless browser (`@ragfresh/render`'s `Renderer` fits). */
export interface PageRenderer {
  render(url: string): Promise<{ readonly html: string; readonly finalUrl: string }>;
}

export type { TombstoneMirror } from '@ragfresh/core';
