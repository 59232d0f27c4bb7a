import type { Chunk } from '@ragfresh/core';
import { type PageContext, type PageInput, preparePage } from '@ragfresh/extract';
import { type Chunking, type ChunkingOptions, chunkingFor } from './chunk.js';

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
  /** Stable reason codes with detail, e.g. `consent_wall: …`. */
  readonly reasons: readonly string[];
}

export type PageOutcome = ExtractedDocument | NotTheDocument;

/**
 * Classification, extraction and chunking of one decoded page, as the engine sees it. One
 * call is one parse: the page is classified on its untouched tree before anything is
 * extracted (`@ragfresh/extract`'s `preparePage`). `pipelineKey` names the versions; a change
 * re-extracts from raw snapshots.
 */
export interface PagePipeline {
  readonly pipelineKey: string;
  process(input: PageInput, context: PageContext): Promise<PageOutcome>;
}

export type ExtractPipelineOptions = ChunkingOptions;

/** The engine's page pipeline on `@ragfresh/extract` (the same steps the LangChain loader runs). */
export class ExtractPipeline implements PagePipeline {
  readonly #chunking: Chunking;

  constructor(options: ExtractPipelineOptions = {}) {
    this.#chunking = chunkingFor(options);
  }

  get pipelineKey(): string {
    return this.#chunking.pipelineKey;
  }

  async process(input: PageInput, ctx: PageContext): Promise<PageOutcome> {
    const { counter, maxTokens } = this.#chunking;
    const page = preparePage(input, ctx, {
      counter,
      ...(maxTokens === undefined ? {} : { maxTokens }),
    });
    if (page.kind === 'not-the-document') return page;
    return {
      kind: 'document',
      title: page.title,
      text: page.prepared.text,
      contentHash: page.prepared.contentHash,
      versionId: page.prepared.versionId,
      ...(page.canonicalUrl === undefined ? {} : { canonicalUrl: page.canonicalUrl }),
      chunks: page.prepared.chunks,
    };
  }
}
