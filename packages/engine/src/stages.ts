/**
 * The stages, for hosts that run them outside `RefreshEngine` (the `@ragfresh/queue` workers,
 * the LangChain loader): the same pipeline, not a fork of it. Each takes the `EngineContext`
 * (`ComposedEngine.context()` gives one wired from the settings) or an `EvidenceContext`.
 */
export { type AcquireDeps, type Acquisition, acquirePage } from './acquire.js';
export { learnedViewPipeline } from './boilerplate.js';
export { type HostSampleJson, learnedModelOf } from './boilerplate-sample.js';
export { type Chunking, chunkingFor, splitterPipelineKey } from './chunk.js';
export { type JudgeContext, judgePage, type Verdict } from './classify.js';
/** Composition details for hosts that wire a role's parts themselves (the LangChain loader, gc). */
export {
  composePageObserver,
  type PageObserverPorts,
  type PublisherDefaults,
  ROLE_TRAITS,
  type RoleTraits,
  retentionOf,
} from './compose.js';
export { Mutex, mapLimit } from './concurrency.js';
export { EngineContext, type EngineDeps, type GoneProposal, SourceRun } from './context.js';
export {
  addCounts,
  coverageGateAlert,
  coverageOf,
  coveragePercent,
  emptyCounts,
} from './counts.js';
export {
  type EvidenceContext,
  recordDegraded,
  recordGone,
  recordGood,
  recordNotModified,
} from './evidence.js';
export { InFlightPages } from './heartbeat.js';
export { type Inventory, type InventoryEntry, takeInventory } from './inventory.js';
export { observePage, type PageObservation, type PageObserver } from './observe.js';
export { judgeContextOf, type PageTask, refreshPage } from './page.js';
export {
  CandidateBatch,
  type CandidateSink,
  type PendingCandidate,
  PublishQueue,
} from './publish.js';
export {
  type ApprovalReport,
  DELETION_REASONS,
  INGESTION_REASONS,
  type ProposalSubject,
  proposeDeletion,
  proposeInventoryDiff,
  settleProposals,
} from './review.js';
/** A source run's shape checks, for the queue's end-of-window job (as `RefreshEngine` runs them). */
export { checkShape } from './shape.js';
/** The provenance a source's pages carry (authority, access, canonical policy), as a refresh passes it. */
export { sourceProvenance } from './snapshot.js';
