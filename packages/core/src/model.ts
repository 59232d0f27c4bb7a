/** ISO-8601 UTC timestamp string, e.g. `2026-11-30T03:18:35.000Z`. */
export type IsoTime = string;

/** `export`: the body came from a crawler's export (`ragfresh import`), not from ragfresh's own fetch. */
export type AcquisitionMode = 'raw' | 'rendered' | 'markdown-twin' | 'export';
export type DocumentStatus = 'healthy' | 'degraded' | 'quarantined' | 'tombstoned';

/**
 * The four timestamps every document keeps, never collapsed into one `updated_at`.
 * - `sourceModifiedAt`: the publisher's claim (Last-Modified, sitemap lastmod), if trusted.
 * - `retrievedAt`: the last valid observation (a 200 that passed validation, or a 304).
 * - `contentChangedAt`: the last time the normalised content hash changed.
 * - `queryableAt`: when the current version was verified searchable.
 */
export interface DocumentTimestamps {
  readonly sourceModifiedAt?: IsoTime;
  readonly retrievedAt?: IsoTime;
  readonly contentChangedAt?: IsoTime;
  readonly queryableAt?: IsoTime;
}

/** Per-source publish contract: what a candidate must satisfy before it may replace a version. */
export interface PublishContract {
  /** Minimum characters of extracted text. */
  readonly minChars?: number;
  /** Phrases that must all appear (case-insensitive) in the extracted text. */
  readonly requiredPhrases?: readonly string[];
  /** Largest allowed shrink against the current version, as a share (0.5 = may lose half). */
  readonly maxShrink?: number;
  /** Largest allowed relative change in chunk count (1 = may double or halve to 0.5x... see docs). */
  readonly maxChunkCountChange?: number;
}

/** Provenance carried by every chunk (flattened into store metadata). */
export interface ChunkProvenance {
  readonly url: string;
  readonly finalUrl: string;
  /** The page's canonical, when the source's `canonical` policy accepted it (see `canonical.ts`). */
  readonly canonicalUrl?: string;
  /** A canonical the page claimed that the policy did not accept: never cited (additive). */
  readonly canonicalClaim?: string;
  readonly title: string;
  readonly retrievedAt: IsoTime;
  readonly contentChangedAt: IsoTime;
  readonly sourceModifiedAt?: IsoTime;
  readonly acquisition: AcquisitionMode;
  /** Exit/region label of the proxy that fetched the page, if any. */
  readonly region?: string;
  /** Authority of the source (e.g. `official`, `community`). */
  readonly authority?: string;
  /**
   * Groups that may read the document (its source's `access`); empty or absent: public. Part of
   * the versionId when non-empty, so a change of scope is a new version (stored as `rf_access`).
   */
  readonly access?: readonly string[];
}

/** A chunk of one document version, before it is embedded. */
export interface Chunk {
  readonly chunkId: string;
  readonly documentId: string;
  readonly versionId: string;
  readonly sourceId: string;
  readonly ordinal: number;
  /** Markdown text of the chunk, NFC-normalised. */
  readonly text: string;
  readonly headingPath: readonly string[];
  readonly tokenCount: number;
  /** sha256 of the chunk text. */
  readonly contentHash: string;
  readonly provenance: ChunkProvenance;
  /**
   * Near-duplicate group of the chunk's document (stored as `rf_dup`): documents whose SimHash
   * fingerprints are within the engine's measured distance share it, so readers can collapse
   * copies of one page served under several URLs. Optional (additive): absent on chunks
   * published before it existed and on chunks written outside the engine.
   */
  readonly duplicateGroup?: string;
}

export interface EmbeddedChunk extends Chunk {
  readonly embedding: readonly number[];
}

/** A candidate new version of one document, ready to publish. */
export interface DocumentVersion {
  readonly documentId: string;
  readonly versionId: string;
  readonly sourceId: string;
  readonly url: string;
  /** Hash of the whole normalised text: decides whether the content changed. */
  readonly contentHash: string;
  /** Characters of the normalised text (for shrink checks). */
  readonly textChars: number;
  readonly text?: string;
  /** 64-bit SimHash of the text (16 hex digits), kept on the document record for near-duplicate grouping. */
  readonly fingerprint?: string;
  /** The near-duplicate group the chunks carry (see `Chunk.duplicateGroup`), kept on the record. */
  readonly duplicateGroup?: string;
  readonly chunks: readonly EmbeddedChunk[];
}

export interface Tombstone {
  readonly documentId: string;
  readonly sourceId: string;
  /** Empty on a removal request's tombstone: the URL is kept only as `urlHash`. */
  readonly url: string;
  readonly reason: string;
  readonly evidence: readonly string[];
  readonly createdAt: IsoTime;
  /** Who approved: a user name or `auto-policy:<name>`. */
  readonly approvedBy: string;
  /**
   * Set on the minimal tombstone a removal request leaves (`ragfresh remove`): the URL is
   * neither fetched nor imported again until the removal is undone. Optional (additive).
   */
  readonly removal?: {
    /** sha256 hex of the URL's canonical key (the URL itself is not kept). */
    readonly urlHash: string;
  };
}

/**
 * Why a page, a row or a candidate is not what it should be: a stable code (what a setting such
 * as `classify.ignore`, a count or a metric label keys on) and one line of detail with the numbers.
 * Code travels as data, never parsed back from the printed line (`reasonLine`).
 */
export interface Reason {
  readonly code: string;
  readonly detail: string;
}

/** A reason as it is printed, stored in a record's history and shown: `code: detail`. */
export function reasonLine(reason: Reason): string {
  return reason.detail === '' ? reason.code : `${reason.code}: ${reason.detail}`;
}

export type ReviewKind = 'deletion' | 'ingestion';
/** `withdrawn`: the engine re-evaluated the proposal and its evidence no longer holds (the page answered, or was listed again). */
export type ReviewStatus = 'pending' | 'approved' | 'rejected' | 'withdrawn';

export interface ReviewItem {
  readonly id: string;
  readonly kind: ReviewKind;
  readonly documentId: string;
  readonly sourceId: string;
  readonly url: string;
  readonly reason: string;
  readonly evidence: readonly string[];
  readonly createdAt: IsoTime;
  readonly status: ReviewStatus;
  readonly decidedAt?: IsoTime;
  readonly decidedBy?: string;
  /** The held version an ingestion item proposes (a contract-quarantined candidate). */
  readonly versionId?: string;
  /** Raw snapshot digest of the held candidate's body: approval re-extracts it, no refetch. */
  readonly rawDigest?: string;
}

export type DocumentOutcome =
  | 'published'
  | 'unchanged'
  | 'rejected-by-gate'
  | 'verify-failed'
  | 'removed'
  | 'skipped'
  /** Verified, but not promoted because another document of its batch failed verification. */
  | 'held'
  /** Staged and verified, but a publication canary could not retrieve its expected passage. */
  | 'canary-failed';

export interface DocumentPublishResult {
  readonly documentId: string;
  readonly versionId: string;
  readonly previousVersionId?: string;
  readonly outcome: DocumentOutcome;
  /**
   * Why, typed; `reasonLine` prints one (`shrink: 62.0% > allowed 50.0%`). Codes: the contract
   * gates of a `rejected-by-gate` (`empty`, `too-small`, `missing-phrase`, `shrink`,
   * `chunk-count`) or the retire gate (`retire-share`), `verify-failed`, `canary-failed`,
   * `batch-held`, `tombstoned`, `not-current`, and `removed` (the removal's reason as detail).
   */
  readonly reasons: readonly Reason[];
  readonly chunks: number;
}

export interface PublishReport {
  readonly batchId: string;
  /** Epoch the batch targeted; equals the published epoch after success. */
  readonly targetEpoch: number;
  /** Published epoch after the batch (unchanged when nothing was promoted). */
  readonly epoch: number;
  readonly documents: readonly DocumentPublishResult[];
  readonly stagedChunks: number;
  readonly retiredChunks: number;
  readonly timingsMs: Readonly<Record<string, number>>;
  /** Publication canaries that ran for this batch (staged, then current), if any. */
  readonly canaries?: readonly CanaryResult[];
}

/**
 * A publication canary: a real question whose answer must stay retrievable. Before a batch is
 * promoted, every canary whose expected document is in the batch runs against the view the
 * batch would publish; if the expected passage is not in the top `k`, the document is held
 * (quarantined `canary-failed`) and the old version stays current. After promotion it runs
 * again against the current view, and the result is reported with the epoch.
 */
export interface Canary {
  readonly query: string;
  readonly expect: {
    /** A phrase the retrieved chunk must contain (case and whitespace insensitive). */
    readonly phrase?: string;
    /** The page the retrieved chunk must come from (its identity URL). */
    readonly url?: string;
    /** A heading the retrieved chunk must sit under (case insensitive, any level). */
    readonly section?: string;
  };
  /** The document the canary guards; without it the canary runs for any document of its source. */
  readonly documentId?: string;
  /** How deep the expected passage may be. Default 5. */
  readonly k?: number;
}

export interface CanaryResult {
  readonly sourceId: string;
  readonly query: string;
  readonly phase: 'staged' | 'current';
  readonly ok: boolean;
  /** 1-based rank of the first chunk meeting the expectation, if any. */
  readonly rank?: number;
  /** Epoch of the view it ran against (the target epoch for `staged`). */
  readonly epoch: number;
  readonly at: IsoTime;
  /** Document and version of the chunk that met it, if any. */
  readonly documentId?: string;
  readonly versionId?: string;
  /** Why it failed, one line. */
  readonly reason?: string;
}
