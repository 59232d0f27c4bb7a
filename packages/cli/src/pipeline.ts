import type { Chunk } from '@ragfresh/core';
import type { PageContext, PageInput } from '@ragfresh/extract';

// The page types are @ragfresh/extract's, so the engine and the LangChain loader agree.
export type { PageContext, PageInput } from '@ragfresh/extract';

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
