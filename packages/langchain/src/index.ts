export { mapOrdered } from './concurrency.js';
export {
  buildRagPrompt,
  EVIDENCE_POLICY,
  evidenceHeader,
  evidenceProvenance,
  type FormatEvidenceOptions,
  formatEvidence,
  formatEvidenceWith,
  neutralizeEvidenceText,
  type RagPromptInput,
  ragPromptTemplate,
} from './evidence.js';
export { type LiveFetchOptions, READER_FIELDS } from './fields.js';
export {
  type ChromaWhere,
  type CurrentView,
  currentViewFilter,
  FILTER_DIALECTS,
  type FilterByDialect,
  type FilterDialect,
  type MemoryFilter,
  type PgVectorFilter,
  type PineconeFilter,
  type QdrantFilter,
} from './filters.js';
export { liveRefresh } from './live.js';
export {
  LOADER_FIELDS,
  type LoadedPage,
  RagfreshLoader,
  type RagfreshLoaderOptions,
  type SkippedPage,
  toPublishCandidate,
  VOLATILE_KEY,
  type VolatileMetadata,
  volatileMetadata,
} from './loader.js';
export {
  annotateWithRecord,
  type ConnectorRetrieverOptions,
  connectorRetriever,
  RagfreshRetriever,
  type RagfreshRetrieverOptions,
  type VectorStoreRetrieverOptions,
} from './retriever.js';
