import {
  pagePipelineKey,
  type TiktokenEncodingName,
  type TokenCounter,
  tiktokenCounter,
} from '@ragfresh/extract';

export interface ChunkingOptions {
  /** Token budget per chunk. Default 512. */
  readonly maxTokens?: number;
  /** tiktoken encoding the budget is counted in. Default cl100k_base. */
  readonly encoding?: string;
}

/** How pages are cut, and the pipeline key validators are recorded under. */
export interface Chunking {
  readonly counter: TokenCounter;
  readonly maxTokens?: number;
  /**
   * Extractor, chunker (with the tokenizer) and schema versions plus the budget. Validators
   * recorded under another key are not sent; the document is re-extracted from its raw snapshot.
   */
  readonly pipelineKey: string;
}

/**
 * The chunking policy shared by the engine, the LangChain loader and live refresh, so one
 * page gives one versionId on every path. The tokenizer's ranks load on the first count, not
 * here: building a pipeline that never extracts (status, a no-change refresh) costs nothing.
 */
export function chunkingFor(options: ChunkingOptions = {}): Chunking {
  const counter = tiktokenCounter((options.encoding ?? 'cl100k_base') as TiktokenEncodingName);
  const budget = options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens };
  return { counter, ...budget, pipelineKey: pagePipelineKey({ counter, ...budget }) };
}
