import type { Reason } from '@ragfresh/core';

/** A chunk an export already cut: its boundaries and heading path are part of the version. */
export interface ProvidedChunk {
  readonly text: string;
  readonly headingPath: readonly string[];
}

/**
 * One page of an export, in ragfresh's terms, whatever vendor wrote it. Only `url` is
 * identity; every other URL is provenance. Times are kept as the export wrote them so the
 * import can refuse a time without a timezone instead of guessing one.
 */
export interface ImportRow {
  /** Position in the input (1-based), for messages and review evidence. */
  readonly line: number;
  /** The requested URL: identity under the source's URL policy. */
  readonly url: string;
  readonly loadedUrl?: string;
  readonly canonicalUrl?: string;
  readonly referrerUrl?: string;
  /** When the crawler fetched the page, as written in the export. */
  readonly loadedTime?: string;
  readonly title?: string;
  readonly markdown?: string;
  readonly text?: string;
  /** The crawler's own hash of the content (provenance; ragfresh hashes the text itself). */
  readonly contentHash?: string;
  readonly chunks?: readonly ProvidedChunk[];
  /** HTTP status the crawler saw, when the export says. */
  readonly httpStatus?: number;
  /** The export says the page left the site (Firecrawl `removed` / `hidden`): evidence, never a deletion. */
  readonly removal?: { readonly evidence: string };
}

/** One item of an export on its way into `importRows`: a row, or a record that never became one. */
export type ImportItem =
  | { readonly kind: 'row'; readonly row: ImportRow }
  | { readonly kind: 'unreadable'; readonly line: number; readonly reason: string }
  | {
      readonly kind: 'refused';
      readonly line: number;
      readonly reason: Reason;
      readonly url?: string;
    };

/** Whether an export can speak for the whole site, and why not. */
export interface ExportCoverage {
  readonly complete: boolean;
  readonly reasons: readonly string[];
}

/** An export read into rows, with its coverage and the records that could not be read. */
export interface ParsedExport {
  readonly format: string;
  readonly rows: readonly ImportRow[];
  readonly coverage: ExportCoverage;
  /** Records without a readable URL: reported, never guessed. */
  readonly unreadable: readonly { readonly line: number; readonly reason: string }[];
  /** Records refused as they were read (too large, too deep), with their URL when it was seen. */
  readonly refused: readonly {
    readonly line: number;
    readonly reason: string;
    readonly url?: string;
  }[];
  /** Earliest crawl time the export states (Firecrawl/Apify run start), if any. */
  readonly crawlStartedAt?: string;
}

export const PARTIAL_UNPROVEN: ExportCoverage = Object.freeze({
  complete: false,
  reasons: Object.freeze(['the export does not prove it covers every page of the source']),
}) as ExportCoverage;
