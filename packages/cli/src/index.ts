// The engine is @ragfresh/engine; these names stay importable from `ragfresh`.
export {
  type DocumentEvent,
  type PageRenderer,
  type RefreshCounts,
  RefreshEngine,
  type RefreshReport,
  type SourceReport,
} from '@ragfresh/engine';
export {
  type ExtractedDocument,
  ExtractPipeline,
  type ExtractPipelineOptions,
  type NotTheDocument,
  type PageContext,
  type PageInput,
  type PageOutcome,
  type PagePipeline,
} from '@ragfresh/engine/pipeline';
export * from './commands.js';
export * from './config.js';
export * from './duration.js';
export * from './log.js';
export * from './metrics.js';
export { type OpenedReader, openReader, readerOver } from './reader.js';
export * from './runtime.js';
export * from './status.js';
export { watch } from './watch.js';
