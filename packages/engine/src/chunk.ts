import {
  asSplitterPreparation,
  pagePipelineKey,
  type SectionSplitter,
  type SplitterPreparation,
  type TiktokenEncodingName,
  type TokenCounter,
  tiktokenCounter,
} from '@ragfresh/extract';

export interface ChunkingOptions {
  /** Token budget per chunk. Default 512. */
  readonly maxTokens?: number;
  /** tiktoken encoding the budget is counted in. Default cl100k_base. */
  readonly encoding?: string;
  /**
   * A splitter of your own as the chunker: a LangChain `TextSplitter` (anything with
   * `splitText(text): Promise<string[]>`), or `{ splitter, name }` to name its settings
   * yourself. Each ragfresh section (heading line and text) is given to it separately, and
   * every piece keeps the section's heading path. Its name (by default its class and a hash of
   * its settings) is part of every versionId and of the pipeline key, so changing the splitter
   * re-cuts every page once. `maxTokens` no longer applies: the splitter decides the sizes.
   */
  readonly splitter?: SectionSplitter | SplitterPreparation;
}

/** How pages are cut, and the pipeline key validators are recorded under. */
export interface Chunking {
  readonly counter: TokenCounter;
  readonly maxTokens?: number;
  readonly splitter?: SplitterPreparation;
  /**
   * Extractor, chunker (with the tokenizer) and schema versions plus the budget. Validators
   * recorded under another key are not sent; the document is re-extracted from its raw snapshot.
   */
  readonly pipelineKey: string;
}

/**
 * The chunking policy shared by the engine, the LangChain loader and live refresh: one page cut
 * under the same host boilerplate model (see `observePage`) gives one versionId on every path;
 * under another model it is another version. The tokenizer's ranks load on the first count, not
 * here: building a pipeline that never extracts (status, a no-change refresh) costs nothing.
 */
export function chunkingFor(options: ChunkingOptions = {}): Chunking {
  const counter = tiktokenCounter((options.encoding ?? 'cl100k_base') as TiktokenEncodingName);
  const budget = options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens };
  const key = pagePipelineKey({ counter, ...budget });
  if (options.splitter === undefined) return { counter, ...budget, pipelineKey: key };
  const splitter = asSplitterPreparation(options.splitter);
  return { counter, ...budget, splitter, pipelineKey: splitterPipelineKey(key, splitter) };
}

/** The pipeline key of pages cut by `splitter` (the LangChain loader's key too). */
export function splitterPipelineKey(key: string, splitter: SplitterPreparation): string {
  return `${key}+split:${splitter.name}`;
}
