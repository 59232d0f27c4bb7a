// The engine's public surface: the composition root and its settings, the engine and its
// reports, the ports a host implements, the page-pipeline port and the reading-side helpers.
// Stage functions for hosts that run stages themselves (the queue workers, the LangChain
// loader) are on `@ragfresh/engine/stages`; the export importer is on `@ragfresh/engine/import`.

export type { BoilerplateLearningOptions } from './boilerplate-sample.js';
export { DEFAULT_PAGE_LIMITS, type PageLimits } from './bounds.js';
export type { ChunkingOptions } from './chunk.js';
/** The composition root: every role is wired here, from one `EngineSettings`. */
export {
  type ComposedEngine,
  composeEngine,
  composePageObserver,
  type EnginePorts,
  type EngineRole,
  type PageObserverPorts,
  type PublisherDefaults,
  ROLE_TRAITS,
  type RoleTraits,
  retentionOf,
} from './compose.js';
export type { DocumentEvent, RefreshCounts, RefreshReport, SourceReport } from './counts.js';
/** The reading side: duplicate collapsing and a stored snapshot's text as it was published. */
export { type Citation, type CollapsedHit, collapseDuplicateHits } from './duplicates.js';
/** The refresh engine and what it reports. */
export { RefreshEngine, type RefreshOptions } from './engine.js';
/** The page pipeline port (fetched page in, document version or "not the document" out). */
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
export {
  collectGarbage,
  epochAsOf,
  type GcReport,
  type PrunedSnapshot,
  type RemovalAct,
  type RemovalReport,
  type RemovalSelector,
  removeDocuments,
  undoRemoval,
} from './governance.js';
export {
  migrateEmbeddingSpace,
  retryAfterMs,
  type SpaceMigrationOptions,
  type SpaceMigrationProgress,
  type SpaceMigrationReport,
} from './migrate-space.js';
export type { RecoverReport, VerifyReport } from './reconcile.js';
export { type ApprovalReport, DELETION_REASONS, INGESTION_REASONS } from './review.js';
/** Settings resolved once, with their defaults. */
export {
  DEFAULT_LEASE_TTL_MS,
  DEFAULT_MAX_RETIRE_SHARE,
  type EngineSettings,
  type EngineSettingsInput,
  type FetchSettings,
  type PageSettings,
  type PublishSettings,
  resolveEngineSettings,
  resolvePageSettings,
} from './settings.js';
export { extractSnapshot, type SnapshotSubject } from './snapshot.js';
/** Sources, policies and the ports a host gives the engine. */
export {
  type AcquisitionSetting,
  type ClassifySettings,
  DEFAULT_DELETION_POLICY,
  type DeletionPolicy,
  type EngineLogger,
  type EngineMetrics,
  type EngineSource,
  type Heartbeat,
  type PageRenderer,
  silentLogger,
  type TombstoneMirror,
} from './types.js';
