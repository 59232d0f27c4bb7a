import type {
  DocumentStatus,
  DocumentTimestamps,
  IsoTime,
  ReviewItem,
  ReviewStatus,
  Tombstone,
} from '../model.js';
import type { CanaryResult } from '../publish/canary.js';

/** HTTP validators kept to make the next fetch conditional. */
export interface FetchValidators {
  readonly etag?: string;
  readonly lastModified?: string;
  /** Pipeline versions the validators were recorded under; a change drops them. */
  readonly pipelineKey?: string;
}

/** One record per document, written atomically (a single key). */
export interface DocumentRecord {
  readonly documentId: string;
  readonly sourceId: string;
  readonly url: string;
  readonly status: DocumentStatus;
  /** Why the status is what it is (empty when healthy). */
  readonly statusReasons: readonly string[];
  readonly currentVersionId?: string;
  readonly currentChunkIds: readonly string[];
  /** Hash of the current version's normalised text. */
  readonly contentHash?: string;
  readonly textChars?: number;
  /** sha256 of each current chunk text, by ordinal (lets unchanged chunks reuse vectors). */
  readonly chunkHashes?: readonly string[];
  /** SimHash of the current version's text and its near-duplicate group (`rf_dup`); optional. */
  readonly fingerprint?: string;
  readonly duplicateGroup?: string;
  readonly validators?: FetchValidators;
  readonly timestamps: DocumentTimestamps;
  /** Last time a fetch was attempted, whatever its outcome. */
  readonly lastAttemptAt?: IsoTime;
  /** Last good observation (what readers are told when the copy is stale). */
  readonly lastGoodAt?: IsoTime;
  /** Raw snapshot digest of the last good body. */
  readonly rawDigest?: string;
  /** Consecutive gone (404/410) observations, with the time of the first. */
  readonly goneCount?: number;
  readonly goneSince?: IsoTime;
  /** Epoch at which the current version became visible. */
  readonly publishedEpoch?: number;
  /** Groups that may read the current version (its `rf_access`); absent: public. */
  readonly access?: readonly string[];
  readonly history?: readonly VersionHistoryEntry[];
}

export interface VersionHistoryEntry {
  readonly at: IsoTime;
  readonly versionId?: string;
  readonly event: string;
  readonly reasons: readonly string[];
  /**
   * The epoch the event took effect at: a `published`/`replaced` version is current from it, a
   * `removed` one left the view at it. Optional (entries written before it was recorded lack it).
   */
  readonly epoch?: number;
}

export type JournalStep =
  | 'manifest'
  | 'staging'
  | 'staged'
  | 'verified'
  | 'promoting'
  | 'promoted'
  | 'flagged'
  | 'retired'
  | 'confirmed';

export const JOURNAL_STEPS: readonly JournalStep[] = [
  'manifest',
  'staging',
  'staged',
  'verified',
  'promoting',
  'promoted',
  'flagged',
  'retired',
  'confirmed',
];

/** The in-flight publication, written before each step runs. */
export interface JournalEntry {
  readonly batchId: string;
  readonly step: JournalStep;
  /** Published epoch when the batch began, and the epoch it targets. */
  readonly baseEpoch: number;
  readonly targetEpoch: number;
  readonly startedAt: IsoTime;
  readonly fence: number;
  readonly documents: readonly JournalDocument[];
  /**
   * The store namespace the batch was staged in when it is not the configured one (a space
   * migration to other dimensions, `Connector.forNamespace`): only a publisher on that
   * namespace may recover it.
   */
  readonly namespace?: string;
  /**
   * A space migration's batch: the embedding space (`EmbeddingSpace.id`) the index is in once
   * the epoch moved; rolling the batch forward records it as the active space.
   */
  readonly space?: string;
}

export interface JournalDocument {
  readonly documentId: string;
  readonly sourceId: string;
  readonly versionId: string;
  readonly chunkIds: readonly string[];
  readonly previousVersionId?: string;
  /** `publish` stages a new version; `remove` retires the current one without replacement. */
  readonly action: 'publish' | 'remove';
  /** A repair re-writes the version the state already calls current (see Publisher.publish). */
  readonly repair?: boolean;
  /**
   * A space migration re-embedded the current version (same content, `versionId` with the new
   * space's suffix): the lifecycle stays, as for a repair, and it replaces `previousVersionId`.
   */
  readonly respace?: boolean;
  /**
   * A republish in place wrote the current content again under another stored version id (its
   * chunks gained reserved keys): the lifecycle stays, and it replaces `previousVersionId`.
   */
  readonly republish?: boolean;
  /** Facts recorded on the document when the batch is rolled forward (publish only). */
  readonly url?: string;
  readonly contentHash?: string;
  readonly textChars?: number;
  readonly chunkHashes?: readonly string[];
  readonly fingerprint?: string;
  readonly duplicateGroup?: string;
  readonly retrievedAt?: IsoTime;
  readonly sourceModifiedAt?: IsoTime;
  /** Validators and raw digest of the observation, recorded with the version (publish only). */
  readonly validators?: FetchValidators;
  readonly rawDigest?: string;
  readonly reason?: string;
  /** Groups that may read the new version (publish only; absent: public). */
  readonly access?: readonly string[];
  /**
   * The new version takes read access away from someone (`accessNarrows`): the replaced version
   * is withdrawn from every view before the epoch moves, so no reader, even one still holding
   * the previous epoch, reads the wider scope (see `Publisher.publish`, step 5).
   */
  readonly narrows?: boolean;
}

/** A version whose chunks left the view at `epoch`; deleted once the grace period passed. */
export interface Retirement {
  readonly documentId: string;
  readonly versionId: string;
  readonly epoch: number;
  readonly at: IsoTime;
}

/**
 * When an epoch came into force (the publisher writes one per epoch move): the history an
 * as-of query reads to find the epoch current at a past time.
 */
export interface EpochRecord {
  readonly epoch: number;
  readonly at: IsoTime;
}

export interface RobotsVerdict {
  readonly host: string;
  readonly fetchedAt: IsoTime;
  readonly expiresAt: IsoTime;
  readonly status: number;
  readonly body: string;
}

export interface RunSummary {
  readonly runId: string;
  readonly sourceId: string;
  readonly startedAt: IsoTime;
  readonly finishedAt: IsoTime;
  readonly complete: boolean;
  readonly counts: Readonly<Record<string, number>>;
  readonly alerts: readonly string[];
  /** Publication canaries the run's batches ran (staged and current), in order. Optional. */
  readonly canaries?: readonly CanaryResult[];
}

export interface Lease {
  readonly name: string;
  readonly holder: string;
  /** Strictly increasing across every grant of this lease name. */
  readonly fence: number;
  readonly expiresAt: number;
}

/**
 * Durable state. Each method that writes one record writes it atomically. Implementations:
 * SQLite file (embedded default), Redis, Postgres.
 */
export interface StateStore {
  readonly kind: string;

  getDocument(documentId: string): Promise<DocumentRecord | undefined>;
  putDocument(record: DocumentRecord): Promise<void>;
  deleteDocument(documentId: string): Promise<void>;
  listDocuments(filter?: { readonly sourceId?: string }): AsyncIterable<DocumentRecord>;
  /**
   * Several records in one transaction (a batch of observations: one commit, not one per page).
   * Optional: callers fall back to one `putDocument` each.
   */
  putDocuments?(records: readonly DocumentRecord[]): Promise<void>;
  /**
   * Read-modify-write of several records in one transaction: `update` maps each stored record
   * (undefined: none) to the one to write (undefined: leave it), and runs again on fresh records
   * when another writer changed one meanwhile. Optional: the ledger then writes one at a time.
   */
  updateDocuments?(
    documentIds: readonly string[],
    update: (stored: DocumentRecord | undefined, documentId: string) => DocumentRecord | undefined,
  ): Promise<void>;
  /**
   * The per-source aggregates kept with the records (`state/aggregates.ts`), read O(sources);
   * undefined when this store keeps none or they were never built (callers recount).
   */
  aggregates?(sourceIds: readonly string[]): Promise<StateAggregates | undefined>;
  /** Whether the kept aggregates are complete (false: `rebuildAggregates` has not run yet). */
  hasAggregates?(): Promise<boolean>;
  /** Recounts the aggregates from every record and review item (`recover`, a state's first publisher). */
  rebuildAggregates?(): Promise<void>;

  getJournal(): Promise<JournalEntry | undefined>;
  /** Writes the journal if `entry.fence` is still the current publisher lease's fence, else LEASE_LOST. */
  putJournal(entry: JournalEntry): Promise<void>;
  clearJournal(batchId: string): Promise<void>;

  putRetirement(r: Retirement): Promise<void>;
  listRetirements(): Promise<Retirement[]>;
  deleteRetirement(documentId: string, versionId: string): Promise<void>;

  putReviewItem(item: ReviewItem): Promise<void>;
  getReviewItem(id: string): Promise<ReviewItem | undefined>;
  listReviewItems(filter?: { readonly status?: ReviewStatus }): Promise<ReviewItem[]>;
  /** Removes an item (a removal request purges the items of the documents it removed). */
  deleteReviewItem(id: string): Promise<void>;

  putTombstone(t: Tombstone): Promise<void>;
  getTombstone(documentId: string): Promise<Tombstone | undefined>;
  listTombstones(): Promise<Tombstone[]>;
  deleteTombstone(documentId: string): Promise<void>;

  getRobots(host: string): Promise<RobotsVerdict | undefined>;
  putRobots(verdict: RobotsVerdict): Promise<void>;

  /** Records an epoch move (idempotent per epoch: the first time recorded stays). */
  putEpochRecord(record: EpochRecord): Promise<void>;
  /** Every recorded epoch move, oldest epoch first. */
  listEpochRecords(): Promise<EpochRecord[]>;

  appendRun(run: RunSummary): Promise<void>;
  /** Newest first. */
  listRuns(sourceId: string, limit: number): Promise<RunSummary[]>;

  /**
   * Grants the lease if free or expired (or already held by `holder`), with a new higher fence:
   * at least `options.minFence` when given (the publisher passes one above the vector store's
   * fence after a state reset). An implementation written before `minFence` ignores it; the
   * publisher then refuses to open with LEASE_LOST instead of writing under a stale fence.
   */
  acquireLease(
    name: string,
    holder: string,
    ttlMs: number,
    options?: { readonly minFence?: number },
  ): Promise<Lease | undefined>;
  /** Extends a held lease; LEASE_LOST when someone else holds it now. */
  renewLease(lease: Lease, ttlMs: number): Promise<Lease>;
  releaseLease(lease: Lease): Promise<void>;
  /** The fence of the current holder, if any unexpired lease exists. */
  currentFence(name: string): Promise<number | undefined>;

  /**
   * Learned data one engine feature owns (the per-host boilerplate model, per-document facts),
   * an opaque JSON value per `(kind, id)`, one key each. Optional: a store without them keeps
   * learning in the engine's memory only (it is relearned after a restart).
   */
  getLearned?(kind: string, id: string): Promise<unknown>;
  /** Writes (replaces) one learned value; `undefined` deletes it. */
  putLearned?(kind: string, id: string, value: unknown): Promise<void>;

  close(): Promise<void>;
}

export const PUBLISHER_LEASE = 'publisher';

// --- per-source aggregates (what they count: state/aggregates.ts) -------------------------

/** Documents a source holds, by what status reports. */
export interface SourceAggregate {
  readonly sourceId: string;
  /** Every record of the source. */
  readonly documents: number;
  /** Records with a published version (or tombstoned / quarantined), by status. */
  readonly counts: Readonly<Record<DocumentStatus, number>>;
  /** Known URLs (not tombstoned, not quarantined) with no version ever published. */
  readonly unpublished: number;
  /**
   * The live records status judges (not tombstoned; a healthy one only with a version), by
   * status: the source's worst state comes from these.
   */
  readonly live: Readonly<Record<'healthy' | 'degraded' | 'quarantined', number>>;
  /** Highest `publishedEpoch` of any record (0 when none). */
  readonly publishedEpoch: number;
  /** Oldest last good observation (`lastGoodAt`, else `retrievedAt`) among the live records. */
  readonly oldestObservedAt?: string;
  readonly latestSourceModifiedAt?: string;
  readonly latestQueryableAt?: string;
  /**
   * The live record with the latest `contentChangedAt` (ties: the first document id): its change
   * and the time that change became queryable.
   */
  readonly latestChange?: { readonly contentChangedAt: string; readonly queryableAt?: string };
  /** Pending review items of this source by `kind/reason`. */
  readonly pendingReview: Readonly<Record<string, number>>;
  /**
   * Records that need a line of their own (live and degraded or quarantined, or with gone
   * evidence), in document id order: few, unless the source is in trouble.
   */
  readonly attention: readonly DocumentRecord[];
}

export interface StateAggregates {
  readonly sources: ReadonlyMap<string, SourceAggregate>;
  /** Documents (of any source) with at least one pending review item. */
  readonly pendingDocuments: ReadonlySet<string>;
}

/**
 * One write of a transaction, beside plain key sets and deletes: ordered indexes (a member with a
 * numeric score, ordered by score then member) and counters (an index whose scores are counts).
 */
export type StateOp =
  | { readonly op: 'set'; readonly key: string; readonly value: string }
  | { readonly op: 'del'; readonly key: string }
  | { readonly op: 'zadd'; readonly key: string; readonly member: string; readonly score: number }
  | { readonly op: 'zrem'; readonly key: string; readonly member: string }
  | { readonly op: 'zincr'; readonly key: string; readonly member: string; readonly by: number };
