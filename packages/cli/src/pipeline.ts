import type { AcquisitionMode, Chunk } from '@ragfresh/core';

/** A fetched page, decoded, on its way to extraction. */
export interface PageInput {
  readonly text: string;
  readonly contentType: string;
  readonly url: string;
  readonly finalUrl: string;
  readonly acquisition: AcquisitionMode;
}

/** Identity and provenance the chunks of this page will carry. */
export interface PageContext {
  readonly documentId: string;
  readonly sourceId: string;
  readonly retrievedAt: string;
  readonly region?: string;
  readonly authority?: string;
  readonly sourceModifiedAt?: string;
}

export interface ExtractedDocument {
  readonly kind: 'document';
  readonly title: string;
  /** Normalised Markdown of the whole page. */
  readonly text: string;
  readonly contentHash: string;
  readonly versionId: string;
  readonly canonicalUrl?: string;
  /** Chunks without vectors; `provenance.contentChangedAt` is this observation's time. */
  readonly chunks: readonly Chunk[];
}

export interface NotTheDocument {
  readonly kind: 'not-the-document';
  /** Stable reason codes with detail, e.g. `consent-wall: …`. */
  readonly reasons: readonly string[];
}

export type PageOutcome = ExtractedDocument | NotTheDocument;

/**
 * Extraction as the engine sees it: decoded page in, a document version (or the reasons it
 * is not the document) out. `pipelineKey` names the extractor/chunker versions; a change
 * drops stored validators and triggers re-extraction from raw snapshots.
 */
export interface PagePipeline {
  readonly pipelineKey: string;
  process(input: PageInput, context: PageContext): Promise<PageOutcome>;
  /** Learns per-host boilerplate from a host's pages (optional). */
  learn?(host: string, pages: readonly string[]): void;
}
