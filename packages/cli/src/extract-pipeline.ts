import {
  pagePipelineKey,
  preparePage,
  type TiktokenEncodingName,
  tiktokenCounter,
} from '@ragfresh/extract';
import type {
  ExtractedDocument,
  PageContext,
  PageInput,
  PageOutcome,
  PagePipeline,
} from './pipeline.js';

export interface ExtractPipelineOptions {
  /** Token budget per chunk. Default 512. */
  readonly maxTokens?: number;
  /** tiktoken encoding used to count tokens. Default cl100k_base. */
  readonly encoding?: string;
}

/**
 * The engine's extraction step on `@ragfresh/extract`'s `preparePage` (shared with the
 * LangChain loader): structural "not the document" detection first, then
 * Readability-or-container extraction to Markdown, then heading-aware token-budget chunking
 * with deterministic ids.
 */
export class ExtractPipeline implements PagePipeline {
  readonly pipelineKey: string;
  readonly #maxTokens: number | undefined;
  readonly #counter: ReturnType<typeof tiktokenCounter>;

  constructor(options: ExtractPipelineOptions = {}) {
    this.#counter = tiktokenCounter((options.encoding ?? 'cl100k_base') as TiktokenEncodingName);
    this.#maxTokens = options.maxTokens;
    this.pipelineKey = pagePipelineKey({
      counter: this.#counter,
      ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
    });
  }

  async process(input: PageInput, ctx: PageContext): Promise<PageOutcome> {
    const page = preparePage(input, ctx, {
      counter: this.#counter,
      ...(this.#maxTokens === undefined ? {} : { maxTokens: this.#maxTokens }),
    });
    if (page.kind === 'not-the-document') return page;
    const doc: ExtractedDocument = {
      kind: 'document',
      title: page.title,
      text: page.prepared.text,
      contentHash: page.prepared.contentHash,
      versionId: page.prepared.versionId,
      ...(page.canonicalUrl === undefined ? {} : { canonicalUrl: page.canonicalUrl }),
      chunks: page.prepared.chunks,
    };
    return doc;
  }
}
