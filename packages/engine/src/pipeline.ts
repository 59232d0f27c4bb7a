/**
 * The page-pipeline port and its default: a fetched page in, a document version or "not the
 * document" out (`PagePipeline`, `ExtractPipeline`), the limits checked before parsing, the
 * chunking and boilerplate-learning options, and re-extraction of a stored raw snapshot.
 */
export type { BoilerplateLearningOptions } from './boilerplate-sample.js';
export { DEFAULT_PAGE_LIMITS, type PageLimits } from './bounds.js';
export type { ChunkingOptions } from './chunk.js';
export {
  type ExtractedDocument,
  ExtractPipeline,
  type ExtractPipelineOptions,
  type NotTheDocument,
  type PageContext,
  type PageInput,
  type PageOutcome,
  type PagePipeline,
} from './extract.js';
export { extractSnapshot, type SnapshotSubject } from './snapshot.js';
