export { mapOrdered } from './concurrency.js';
export { PAGE_COPY_COLLECTION, type PageCopyStore, pageCopiesFor } from './copies.js';
export { type DeferredHost, HostDeferrals } from './deferral.js';
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
  type RagPromptOptions,
  ragPromptTemplate,
} from './evidence.js';
export { type LiveFetchOptions, READER_FIELDS } from './fields.js';
export {
  type ChromaWhere,
  type CurrentView,
  combineFilters,
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
  type LoadReport,
  RagfreshLoader,
  type RagfreshLoaderOptions,
  type SkippedPage,
  toPublishCandidate,
} from './loader.js';
export { approveDeletion, type PageOutcome, type PageReport } from './observe.js';
export {
  chunkDocuments,
  LOADER_FIELDS,
  type LoadedPage,
  type LoaderSplitter,
  type PageOrigin,
  pageDocument,
  splitterName,
  VOLATILE_KEY,
  type VolatileMetadata,
  volatileMetadata,
} from './pages.js';
export {
  annotateWithRecord,
  type ConnectorRetrieverOptions,
  connectorRetriever,
  RagfreshRetriever,
  type RagfreshRetrieverOptions,
  type SearchOptions,
  type VectorStoreRetrieverOptions,
} from './retriever.js';
