import { accessAdmits, normalizeAccess } from './access.js';
import { RagfreshError } from './errors.js';
import {
  assertFlatMetadata,
  FIELDS,
  type FlatMetadata,
  readValidity,
  type StoredChunk,
} from './metadata.js';

/**
 * Promotion guarantees, each with a tested meaning (see the conformance suite):
 * - `snapshot`: a reader that filters on one published epoch never sees two versions of a
 *   document nor none, per document and across a batch.
 * - `atomic`: the store flips a document natively in one commit (a transaction).
 * - `overlap`: during promotion a reader may briefly see both versions, never neither.
 * - `gap`: during promotion a reader may briefly see neither version, never both.
 */
export type PromotionGuarantee = 'snapshot' | 'atomic' | 'overlap' | 'gap';

export type Visibility =
  | { readonly mode: 'immediate' }
  | { readonly mode: 'eventual'; readonly maxLagMs: number };

/**
 * The frozen capability manifest, as `connector.capabilities` holds it: every default filled in
 * (see `ConnectorCapabilitiesInput` for what a connector declares and `CAPABILITY_DEFAULTS`).
 * It alone decides which conformance cases run and what they expect; there are no suite-side
 * switches.
 */
export interface ConnectorCapabilities {
  /** Store name used in messages and reports: `memory`, `chroma`, `pgvector`, ... */
  readonly store: string;
  /** Guarantee for readers that filter on the published epoch (`rf_from <= E < rf_to`). */
  readonly promotion: PromotionGuarantee;
  /** Guarantee for readers that only filter `rf_current = true`. */
  readonly flagPromotion: Exclude<PromotionGuarantee, 'snapshot'>;
  readonly visibility: Visibility;
  /** Largest number of chunks core sends in one `_upsert` call. */
  readonly maxWriteBatch: number;
  /** Largest JSON size of one chunk's metadata (+ text where the store keeps text in metadata). */
  readonly maxMetadataBytes?: number;
  /** Whether the published epoch is kept inside the store itself (readers need nothing else). */
  readonly epochInStore: boolean;
  /** Form of the primary key in the store: the readable chunkId, or its UUID v5. */
  readonly idForm: 'chunk-id' | 'uuid';
  /**
   * Whether `advanceEpoch` is an exclusive claim on its own: of two publishers that race the
   * same move with the publisher lease bypassed, exactly one succeeds and the other gets
   * EPOCH_CONFLICT (`exclusive`, the default when absent). `lease-only`: the store offers no
   * conditional write the connector can prove, so only the fenced publisher lease keeps two
   * publishers from both "winning" — run one publisher per namespace. The conformance case
   * `epoch-race` holds `exclusive` connectors to it and reports what `lease-only` ones did.
   */
  readonly epochClaim?: 'exclusive' | 'lease-only';
  /**
   * Whether the connector can enumerate every stored chunk page by page (`_scan`, behind
   * `scanChunks`). `verify` looks for orphans and `recover` rebuilds a lost state only on a
   * connector that declares it; without it `scanChunks` throws NOT_SUPPORTED and `verify` says
   * orphans were not checked. Filled in as `false` when absent.
   */
  readonly scan?: boolean;
  /**
   * The LangChain vector store class that reads this connector's stored layout, when there is
   * one (absent by default: no claim). Declaring it makes the conformance case
   * `langchain-reader` run: the fixture's target must then supply `langchainReader(namespace)`
   * (see `@ragfresh/conformance`), and the case counts how many current chunks the class
   * finds by their own vector, with retired duplicates of those vectors stored and after they
   * were deleted.
   */
  readonly langchain?: LangChainReaderCapability;
  /**
   * Where the publisher lease's fence is enforced (see `raiseFence`); always filled in by the
   * base class, optional here only so manifests written before it keep compiling.
   */
  readonly fencing?: FencingGuarantee;
  /**
   * Whether `forNamespace` opens a second namespace of the store (a table, collection or
   * namespace beside this one): what a migration to an embedding space of other dimensions
   * needs. Always filled in by the base class from whether the connector implements
   * `_forNamespace` (an instance may declare it `false`); the conformance case
   * `embedding-migration-new-dimensions` applies then.
   */
  readonly namespaces?: boolean;
  /**
   * Whether the store's epoch record names the embedding space of the move that set it
   * (`advanceEpoch(…, { space })`, read back by `readEpochSpace`), so a reader with nothing but
   * the store knows which space the published view is in. Always filled in by the base class
   * from whether the connector implements `_readEpochSpace`; the conformance case
   * `epoch-space` applies then.
   */
  readonly epochSpace?: boolean;
  /**
   * Whether `dropNamespace` removes this namespace from the store (its tables, collections or
   * files, epoch record included): what a migration to other dimensions does with the
   * namespace it retired, once empty. Always filled in by the base class from whether the
   * connector implements `_dropNamespace`; the conformance case `drop-namespace` applies then.
   */
  readonly dropNamespace?: boolean;
}

/**
 * How far the publisher lease's fencing token reaches into the store. Every fenced write
 * (`upsert`, `patchValidity*`, `delete*`, `advanceEpoch` given `{ fence }`) is refused with
 * LEASE_LOST once the store holds a newer fence (`raiseFence`, called by each publisher when it
 * takes over), so a publisher paused past its lease cannot stage, patch, retire or move the
 * epoch after its successor took over.
 * - `store`: the store itself refuses a stale write, in the same transaction or conditional
 *   write as the write (SQL stores; the in-process memory store).
 * - `client`: the base class reads the store's fence before each fenced write and refuses a
 *   stale one (check-then-write). A write that already passed its check when the process was
 *   paused can still land: name this window in the connector's docs.
 * - `none`: the store never sees the fence; only the lease in the state store separates
 *   publishers (the conformance case `paused-publisher` does not apply).
 */
export type FencingGuarantee = 'store' | 'client' | 'none';

/** The fence a write is made under (the publisher lease's token). Absent: an unfenced write. */
export interface FencedWrite {
  readonly fence?: number;
  /**
   * Called between the requests of a write split into several (before each batch of
   * `maxWriteBatch` after the first). The publisher renews its lease there: a write that keeps
   * making progress keeps the lease however long it runs, one stuck in a request loses it
   * after its time to live. An error it throws stops the write.
   */
  readonly progress?: () => Promise<void>;
}

/** How the LangChain class of the same store reads what the connector wrote. */
export interface LangChainReaderCapability {
  /** The class and where it comes from, e.g. `LibSQLVectorStore (@langchain/community/vectorstores/libsql)`. */
  readonly class: string;
  /**
   * `complete`: a current-view read through the class returns every current chunk asked for by
   * its own vector (exact search, or an index that keeps duplicate vectors). `lossy`: the
   * class's search is known to miss current chunks (an approximate index that drops or hides
   * duplicate vectors); the case then reports the recall it measured instead of failing on it.
   * Either way a read must never return a chunk outside the current view.
   */
  readonly recall: 'complete' | 'lossy';
}

/**
 * What a connector passes to `super(...)`: the manifest with every field that has an honest
 * default optional. Fields added to the manifest later are always optional here with a
 * documented default, so adding one never breaks an existing connector (Kysely's habit).
 * `store`, `promotion` and `flagPromotion` have no honest default and stay required.
 */
export interface ConnectorCapabilitiesInput {
  readonly store: string;
  readonly promotion: PromotionGuarantee;
  readonly flagPromotion: Exclude<PromotionGuarantee, 'snapshot'>;
  /** Default `{ mode: 'immediate' }` (the suite's `verify-within-lag` holds a store to it). */
  readonly visibility?: Visibility;
  /** Default 100 chunks per `_upsert` call. */
  readonly maxWriteBatch?: number;
  /** Default: no limit. */
  readonly maxMetadataBytes?: number;
  /** Default `false`: readers are not promised an epoch they can read from the store alone. */
  readonly epochInStore?: boolean;
  /** Default `chunk-id`. */
  readonly idForm?: 'chunk-id' | 'uuid';
  /** Default `exclusive` (`epoch-race` holds the connector to it when `epochInStore`). */
  readonly epochClaim?: 'exclusive' | 'lease-only';
  /** Default `false`: declare `true` together with a `_scan` hook. */
  readonly scan?: boolean;
  /** Default: absent (no LangChain class is claimed; `langchain-reader` does not apply). */
  readonly langchain?: LangChainReaderCapability;
  /**
   * Default `client` when the connector implements `_readFence` and `_raiseFence`, else
   * `none`. Declare `store` only when the write hooks themselves refuse a stale fence.
   */
  readonly fencing?: FencingGuarantee;
  /**
   * Default: whether the connector implements `_readEpochSpace`. Declare `false` for an instance
   * whose epoch record cannot keep the space (a connector over a pluggable epoch record that
   * does not offer it); `true` without the hook is INVALID_ARGUMENT.
   */
  readonly epochSpace?: boolean;
  /**
   * Default: whether the connector implements `_forNamespace`. Declare `false` for an instance
   * that cannot open another namespace (the LangChain tier without its `namespaceStore`
   * option); `true` without the hook is INVALID_ARGUMENT.
   */
  readonly namespaces?: boolean;
}

/** The defaults `Connector` fills in for fields a connector leaves out of its manifest. */
export const CAPABILITY_DEFAULTS: Readonly<{
  visibility: Visibility;
  maxWriteBatch: number;
  epochInStore: boolean;
  idForm: 'chunk-id' | 'uuid';
  epochClaim: 'exclusive' | 'lease-only';
  scan: boolean;
}> = Object.freeze({
  visibility: Object.freeze({ mode: 'immediate' as const }),
  maxWriteBatch: 100,
  epochInStore: false,
  idForm: 'chunk-id' as const,
  epochClaim: 'exclusive' as const,
  scan: false,
});

/** Which chunks a query may return. */
export type ViewSelector =
  /** `rf_from <= epoch < rf_to`: the snapshot view of one published epoch. */
  | { readonly kind: 'epoch'; readonly epoch: number }
  /** `rf_current = true`. */
  | { readonly kind: 'flag' }
  /** Every stored chunk, staged and retired included (verification and maintenance only). */
  | { readonly kind: 'all' };

export interface QueryFilter {
  readonly view: ViewSelector;
  readonly documentId?: string;
  readonly versionId?: string;
  readonly sourceId?: string;
  /**
   * The reader's groups: only chunks whose `rf_access` list holds `*` (public) or one of them
   * match (`readerAccessTokens`); `[]` is public only. Applied by the store's filter like every
   * other condition, never to results afterwards. Absent: no access condition, for the
   * publisher's verification and maintenance only; every reading surface passes it.
   */
  readonly access?: readonly string[];
}

export interface QueryHit {
  readonly id: string;
  readonly text: string;
  readonly metadata: FlatMetadata;
  /** Higher is more similar; only the order is meaningful across stores. */
  readonly score: number;
}

/** A stored chunk as listed: no vector unless asked for. */
export interface ListedChunk {
  readonly id: string;
  readonly text: string;
  readonly metadata: FlatMetadata;
  readonly embedding?: readonly number[];
}

/** What `Connector.compact` did to the bytes the store keeps (docs/governance.md). */
export interface CompactReport {
  /**
   * True when, after it, deleted chunks are gone from the store's own files (old table
   * versions, free pages); false when the store gives a client no such control.
   */
  readonly reclaimed: boolean;
  /** One line: what was done, or what the service keeps and for how long. */
  readonly note: string;
}

export interface ValidityPatch {
  /** New upper bound of the validity interval. */
  readonly to?: number;
  readonly current?: boolean;
}

/** One document version. */
export interface VersionRef {
  readonly documentId: string;
  readonly versionId: string;
}

/** A validity patch for every chunk of one document version (the batch form of `patchValidity`). */
export interface VersionPatch extends VersionRef {
  readonly patch: ValidityPatch;
}

/**
 * Largest number of document versions core passes to one batch hook call (`_patchValidityMany`,
 * `_countMany`, `_listMany`, `_deleteVersions`). Core slices longer lists, so a hook can build
 * one `IN (...)` / `$in` filter per call without meeting a store's filter-size limit.
 */
export const MAX_BATCH_REFS = 100;

export interface OpenOptions {
  /** Vector dimensions; a mismatch with an existing index is DIMENSION_MISMATCH. */
  readonly dimensions: number;
}

const PROMOTIONS: readonly PromotionGuarantee[] = ['snapshot', 'atomic', 'overlap', 'gap'];

const FENCING: readonly FencingGuarantee[] = ['store', 'client', 'none'];

function freezeCapabilities(
  input: ConnectorCapabilitiesInput,
  implemented: {
    readonly fence: boolean;
    readonly scan: boolean;
    readonly namespaces: boolean;
    readonly epochSpace: boolean;
    readonly dropNamespace: boolean;
  },
): ConnectorCapabilities {
  const c: ConnectorCapabilities = {
    ...input,
    namespaces: input.namespaces ?? implemented.namespaces,
    epochSpace: input.epochSpace ?? implemented.epochSpace,
    dropNamespace: implemented.dropNamespace,
    fencing: input.fencing ?? (implemented.fence ? 'client' : 'none'),
    visibility: input.visibility ?? CAPABILITY_DEFAULTS.visibility,
    maxWriteBatch: input.maxWriteBatch ?? CAPABILITY_DEFAULTS.maxWriteBatch,
    epochInStore: input.epochInStore ?? CAPABILITY_DEFAULTS.epochInStore,
    idForm: input.idForm ?? CAPABILITY_DEFAULTS.idForm,
    epochClaim: input.epochClaim ?? CAPABILITY_DEFAULTS.epochClaim,
    scan: input.scan ?? CAPABILITY_DEFAULTS.scan,
  };
  if (
    !PROMOTIONS.includes(c.promotion) ||
    !PROMOTIONS.includes(c.flagPromotion) ||
    (c.flagPromotion as string) === 'snapshot'
  ) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `connector ${c.store} declares an unknown promotion guarantee.`,
    );
  }
  if (!Number.isSafeInteger(c.maxWriteBatch) || c.maxWriteBatch < 1) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `connector ${c.store} declares maxWriteBatch ${c.maxWriteBatch}.`,
    );
  }
  if (c.visibility.mode === 'eventual' && !(c.visibility.maxLagMs > 0)) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `connector ${c.store} declares eventual visibility without maxLagMs.`,
    );
  }
  if (!FENCING.includes(c.fencing!) || (c.fencing !== 'none' && !implemented.fence)) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `connector ${c.store} declares fencing ${String(c.fencing)}: use store | client | none, and implement _readFence and _raiseFence for store or client.`,
    );
  }
  if (c.epochSpace === true && !implemented.epochSpace) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `connector ${c.store} declares epochSpace without implementing _readEpochSpace.`,
    );
  }
  if (c.namespaces === true && !implemented.namespaces) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `connector ${c.store} declares namespaces without implementing _forNamespace.`,
    );
  }
  if (c.scan === true && !implemented.scan) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `connector ${c.store} declares scan without implementing _scan.`,
    );
  }
  if (
    c.langchain !== undefined &&
    (typeof c.langchain.class !== 'string' ||
      c.langchain.class === '' ||
      !['complete', 'lossy'].includes(c.langchain.recall))
  ) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `connector ${c.store} declares langchain without a class name or with an unknown recall (complete | lossy).`,
    );
  }
  return Object.freeze({
    ...c,
    visibility: Object.freeze({ ...c.visibility }),
    ...(c.langchain === undefined ? {} : { langchain: Object.freeze({ ...c.langchain }) }),
  });
}

/**
 * Base class of every connector. Public methods validate and normalise their arguments and
 * enforce sequencing (open before use); subclasses implement the narrow protected `_hooks`,
 * which receive already-checked arguments. Core's Publisher drives connectors only through
 * this public API.
 *
 * Idempotency rules every hook must keep:
 * - `_upsert` of an id that exists overwrites it (re-staging a version is a no-op in effect).
 * - `_deleteVersion` / `_deleteDocuments` of something absent succeeds.
 * - `_patchValidity` changes only `rf_to` / `rf_current`; every other metadata field stays.
 */
export abstract class Connector {
  readonly capabilities: ConnectorCapabilities;
  #dimensions: number | undefined;
  #closed = false;

  /**
   * `capabilities` is frozen after the defaults of `CAPABILITY_DEFAULTS` are filled in for the
   * fields left out; an unknown guarantee, a bad `maxWriteBatch` or an eventual visibility
   * without `maxLagMs` is INVALID_ARGUMENT.
   */
  constructor(capabilities: ConnectorCapabilitiesInput) {
    const base = Connector.prototype;
    this.capabilities = freezeCapabilities(capabilities, {
      fence: this._readFence !== base._readFence && this._raiseFence !== base._raiseFence,
      scan: this._scan !== base._scan,
      namespaces: this._forNamespace !== base._forNamespace,
      epochSpace: this._readEpochSpace !== base._readEpochSpace,
      dropNamespace: this._dropNamespace !== base._dropNamespace,
    });
  }

  get store(): string {
    return this.capabilities.store;
  }

  /** Dimensions given to `open`, or undefined before it. */
  get dimensions(): number | undefined {
    return this.#dimensions;
  }

  protected error(
    code: ConstructorParameters<typeof RagfreshError>[0],
    message: string,
    cause?: unknown,
  ): RagfreshError {
    return new RagfreshError(code, message, { scope: this.store, cause });
  }

  private ensureOpen(): number {
    if (this.#closed) throw this.error('NOT_OPEN', 'connector is closed; create a new one.');
    if (this.#dimensions === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    return this.#dimensions;
  }

  /** Opens the store and ensures its schema (collection/table, indexes, epoch pointer). Idempotent. */
  async open(options: OpenOptions): Promise<void> {
    if (!Number.isSafeInteger(options.dimensions) || options.dimensions < 1) {
      throw this.error(
        'INVALID_ARGUMENT',
        `dimensions must be a positive integer, got ${options.dimensions}.`,
      );
    }
    if (this.#dimensions !== undefined) {
      if (this.#dimensions !== options.dimensions) {
        throw this.error(
          'DIMENSION_MISMATCH',
          `already open with ${this.#dimensions} dimensions, asked for ${options.dimensions}.`,
        );
      }
      return;
    }
    await this._open(options);
    this.#dimensions = options.dimensions;
  }

  /**
   * Checks a write's fence: a positive integer or absent. Under `client` fencing, reads the
   * store's fence and refuses a stale one here; under `store` fencing the hook refuses it.
   */
  async #fenced(options: FencedWrite): Promise<number | undefined> {
    const { fence } = options;
    if (fence === undefined) return undefined;
    if (!Number.isSafeInteger(fence) || fence < 1)
      throw this.error('INVALID_ARGUMENT', `fence must be a positive integer, got ${fence}.`);
    if (this.capabilities.fencing === 'client') {
      const held = await this._readFence();
      if (held > fence) throw this.staleFence(fence, held);
    }
    return fence;
  }

  /** The LEASE_LOST error for a write under `fence` when the store holds `held`. Hooks throw it. */
  protected staleFence(fence: number, held: number): RagfreshError {
    return this.error(
      'LEASE_LOST',
      `write under fence ${fence} refused: the store holds fence ${held}, a newer publisher took over; stop this publisher (reopen it to take the lease again).`,
    );
  }

  /**
   * Writes chunks (staged or otherwise; validity is in their metadata). Splits into batches
   * of `maxWriteBatch`. Every chunk must carry ragfresh fields and a vector of the opened size.
   * With `{ fence }`, each batch is refused (LEASE_LOST) once the store holds a newer fence.
   */
  async upsert(chunks: readonly StoredChunk[], options: FencedWrite = {}): Promise<void> {
    const dims = this.ensureOpen();
    const seen = new Set<string>();
    for (const c of chunks) {
      if (typeof c.id !== 'string' || c.id === '')
        throw this.error('INVALID_ARGUMENT', 'chunk id must be a non-empty string.');
      if (seen.has(c.id))
        throw this.error('INVALID_ARGUMENT', `chunk id ${c.id} appears twice in one write.`);
      seen.add(c.id);
      if (c.embedding.length !== dims) {
        throw this.error(
          'DIMENSION_MISMATCH',
          `chunk ${c.id} has a ${c.embedding.length}-dimension vector; the index holds ${dims}. Use the embeddings the index was built with, or a new index.`,
        );
      }
      for (const x of c.embedding) {
        if (!Number.isFinite(x))
          throw this.error('INVALID_ARGUMENT', `chunk ${c.id} has a non-finite vector component.`);
      }
      assertFlatMetadata(c.metadata, this.store, this.capabilities.maxMetadataBytes);
      readValidity(c.metadata);
      if (
        typeof c.metadata[FIELDS.documentId] !== 'string' ||
        typeof c.metadata[FIELDS.versionId] !== 'string'
      ) {
        throw this.error(
          'INVALID_METADATA',
          `chunk ${c.id} lacks ${FIELDS.documentId}/${FIELDS.versionId}.`,
        );
      }
    }
    const size = this.capabilities.maxWriteBatch;
    for (let i = 0; i < chunks.length; i += size) {
      if (i > 0) await options.progress?.();
      await this._upsert(chunks.slice(i, i + size), await this.#fenced(options));
    }
  }

  /** Sets `rf_to` and/or `rf_current` on every chunk of one document version. */
  async patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
    options: FencedWrite = {},
  ): Promise<void> {
    this.ensureOpen();
    if (patch.to !== undefined && (!Number.isSafeInteger(patch.to) || patch.to < 0)) {
      throw this.error(
        'INVALID_ARGUMENT',
        `validity bound must be a non-negative integer, got ${patch.to}.`,
      );
    }
    if (patch.to === undefined && patch.current === undefined) return;
    await this._patchValidity(documentId, versionId, patch, await this.#fenced(options));
  }

  /**
   * Batch form of `patchValidity`: one call for many document versions. Each (document,
   * version) may appear once. Core slices the list into calls of at most `MAX_BATCH_REFS`.
   */
  async patchValidityMany(
    patches: readonly VersionPatch[],
    options: FencedWrite = {},
  ): Promise<void> {
    this.ensureOpen();
    const seen = new Set<string>();
    const effective: VersionPatch[] = [];
    for (const p of patches) {
      const key = refKey(p);
      if (seen.has(key)) {
        throw this.error(
          'INVALID_ARGUMENT',
          `version ${p.versionId} of ${p.documentId} appears twice in one validity patch.`,
        );
      }
      seen.add(key);
      const { to, current } = p.patch;
      if (to !== undefined && (!Number.isSafeInteger(to) || to < 0)) {
        throw this.error(
          'INVALID_ARGUMENT',
          `validity bound must be a non-negative integer, got ${to}.`,
        );
      }
      if (to === undefined && current === undefined) continue;
      effective.push(p);
    }
    for (const slice of patchSlices(effective))
      await this._patchValidityMany(slice, await this.#fenced(options));
  }

  /** The published epoch held by the store (0 for a fresh store). */
  async readEpoch(): Promise<number> {
    this.ensureOpen();
    return this._readEpoch();
  }

  /**
   * Compare-and-set of the published epoch: succeeds only when the store holds `expected`,
   * else throws EPOCH_CONFLICT (another publisher moved it). With `{ fence }`, also refused
   * (LEASE_LOST) when the store holds a newer fence; the epoch record keeps the fence that
   * moved it.
   */
  async advanceEpoch(
    expected: number,
    next: number,
    options: FencedWrite & {
      /**
       * The embedding space id of the view the move publishes: kept in the epoch record, in the
       * same write, by a connector with `epochSpace` (others ignore it).
       */
      readonly space?: string;
    } = {},
  ): Promise<void> {
    this.ensureOpen();
    if (!Number.isSafeInteger(next) || next <= expected) {
      throw this.error('INVALID_ARGUMENT', `epoch must move forward: ${expected} -> ${next}.`);
    }
    if (options.space !== undefined && !/^[A-Za-z0-9_.:-]{1,200}$/.test(options.space))
      throw this.error(
        'INVALID_ARGUMENT',
        `space must be a space id (letters, digits, _ . : -), got ${JSON.stringify(options.space)}.`,
      );
    const fence = await this.#fenced(options);
    await this._advanceEpoch(expected, next, fence, options.space);
  }

  /**
   * The embedding space the store's epoch record names: the `space` of the last move that gave
   * one. Undefined when no move named one, or when the connector does not keep it
   * (`capabilities.epochSpace` false).
   */
  async readEpochSpace(): Promise<string | undefined> {
    this.ensureOpen();
    return this.capabilities.epochSpace === true ? this._readEpochSpace() : undefined;
  }

  /**
   * The newest fence the store holds (0 when none was ever raised, and always 0 under
   * `fencing: 'none'`).
   */
  async readFence(): Promise<number> {
    this.ensureOpen();
    return this.capabilities.fencing === 'none' ? 0 : this._readFence();
  }

  /**
   * Records `fence` as the newest in the store: from then on every write under an older fence
   * is refused. A publisher calls it when it takes the lease, before recovering. LEASE_LOST
   * when the store already holds a newer fence; raising the held fence again is a no-op. A
   * no-op under `fencing: 'none'`.
   */
  async raiseFence(fence: number): Promise<void> {
    this.ensureOpen();
    if (!Number.isSafeInteger(fence) || fence < 1)
      throw this.error('INVALID_ARGUMENT', `fence must be a positive integer, got ${fence}.`);
    if (this.capabilities.fencing === 'none') return;
    await this._raiseFence(fence);
  }

  /** Deletes every chunk of one document version. Absent version: no-op. */
  async deleteVersion(
    documentId: string,
    versionId: string,
    options: FencedWrite = {},
  ): Promise<void> {
    this.ensureOpen();
    await this._deleteVersion(documentId, versionId, await this.#fenced(options));
  }

  /** Deletes every chunk of the given documents. Absent documents: no-op. */
  async deleteDocuments(documentIds: readonly string[], options: FencedWrite = {}): Promise<void> {
    this.ensureOpen();
    if (documentIds.length === 0) return;
    await this._deleteDocuments([...new Set(documentIds)], await this.#fenced(options));
  }

  /** Batch form of `deleteVersion`. Absent versions: no-op. */
  async deleteVersions(refs: readonly VersionRef[], options: FencedWrite = {}): Promise<void> {
    this.ensureOpen();
    for (const slice of slices(uniqueRefs(refs)))
      await this._deleteVersions(slice, await this.#fenced(options));
  }

  /**
   * Every stored chunk (any validity, no vectors), page by page: what reconciliation and
   * state recovery read. Optional verb: a connector whose manifest does not declare `scan`
   * throws NOT_SUPPORTED (before any hook runs).
   */
  async *scanChunks(options: { pageSize?: number } = {}): AsyncGenerator<ListedChunk[]> {
    this.ensureOpen();
    if (this.capabilities.scan !== true)
      throw this.error(
        'NOT_SUPPORTED',
        `${this.store} cannot enumerate its chunks (its manifest does not declare scan); reconciliation cannot look for orphans and recovery needs another way to list documents.`,
      );
    const pageSize = options.pageSize ?? 1_000;
    if (!Number.isSafeInteger(pageSize) || pageSize < 1)
      throw this.error('INVALID_ARGUMENT', `pageSize must be a positive integer, got ${pageSize}.`);
    let cursor: string | undefined;
    for (;;) {
      const page = await this._scan(cursor, pageSize);
      if (page.chunks.length > 0) yield page.chunks;
      if (page.next === undefined) return;
      if (page.next === cursor)
        throw this.error('INTERNAL', '_scan returned the same cursor twice; it must advance.');
      cursor = page.next;
    }
  }

  /** Lists the chunks of one document (one version when given), sorted by ordinal. */
  async listChunks(
    documentId: string,
    versionId?: string,
    options: { withEmbeddings?: boolean } = {},
  ): Promise<ListedChunk[]> {
    this.ensureOpen();
    const rows = await this._list(documentId, versionId, options.withEmbeddings === true);
    return rows.sort(
      (a, b) => Number(a.metadata[FIELDS.ordinal]) - Number(b.metadata[FIELDS.ordinal]),
    );
  }

  /**
   * Batch form of `listChunks` over whole documents (every version): chunks grouped by
   * documentId, each group sorted by version then ordinal. Documents with no chunks map to [].
   */
  async listChunksMany(
    documentIds: readonly string[],
    options: { withEmbeddings?: boolean } = {},
  ): Promise<Map<string, ListedChunk[]>> {
    this.ensureOpen();
    const ids = [...new Set(documentIds)];
    const out = new Map<string, ListedChunk[]>(ids.map((id) => [id, []]));
    for (const slice of slices(ids)) {
      for (const c of await this._listMany(slice, options.withEmbeddings === true)) {
        const group = out.get(String(c.metadata[FIELDS.documentId]));
        // A hook that returns chunks of documents it was not asked for is ignored, not trusted.
        if (group !== undefined) group.push(c);
      }
    }
    for (const group of out.values()) {
      group.sort(
        (a, b) =>
          String(a.metadata[FIELDS.versionId]).localeCompare(
            String(b.metadata[FIELDS.versionId]),
          ) || Number(a.metadata[FIELDS.ordinal]) - Number(b.metadata[FIELDS.ordinal]),
      );
    }
    return out;
  }

  /** Batch form of `countChunks`: exact counts, in the order of `refs`. */
  async countChunksMany(refs: readonly VersionRef[]): Promise<number[]> {
    this.ensureOpen();
    const unique = uniqueRefs(refs);
    const counts = new Map<string, number>();
    for (const slice of slices(unique)) {
      const got = await this._countMany(slice);
      if (got.length !== slice.length) {
        throw this.error(
          'INTERNAL',
          `_countMany returned ${got.length} counts for ${slice.length} versions; return one count per ref, in order.`,
        );
      }
      slice.forEach((r, i) => {
        counts.set(refKey(r), got[i]!);
      });
    }
    return refs.map((r) => counts.get(refKey(r)) ?? 0);
  }

  /** Exact number of chunks stored for a document version (any validity). */
  async countChunks(documentId: string, versionId: string): Promise<number> {
    this.ensureOpen();
    return this._count(documentId, versionId);
  }

  /** Nearest chunks to `vector` within `filter`. */
  async query(vector: readonly number[], k: number, filter: QueryFilter): Promise<QueryHit[]> {
    const dims = this.ensureOpen();
    if (vector.length !== dims) {
      throw this.error(
        'DIMENSION_MISMATCH',
        `query vector has ${vector.length} dimensions; the index holds ${dims}.`,
      );
    }
    if (!Number.isSafeInteger(k) || k < 1)
      throw this.error('INVALID_ARGUMENT', `k must be a positive integer, got ${k}.`);
    if (filter.access === undefined) return this._query(vector, k, filter);
    return this._query(vector, k, { ...filter, access: normalizeAccess(filter.access, 'reader') });
  }

  /**
   * Reads the published epoch, then queries its snapshot view. What a reader does: a reader that
   * names no groups sees public chunks only.
   */
  async searchCurrent(
    vector: readonly number[],
    k: number,
    scope: Omit<QueryFilter, 'view'> = {},
  ): Promise<QueryHit[]> {
    const epoch = await this.readEpoch();
    return this.query(vector, k, {
      ...scope,
      access: scope.access ?? [],
      view: { kind: 'epoch', epoch },
    });
  }

  /**
   * Makes earlier deletes physical where the store keeps deleted rows or old versions on disk
   * (LanceDB table versions, SQLite free pages, Postgres dead tuples). A removal request calls
   * it after deleting a document's chunks. Idempotent; the default (remote stores, where a
   * delete by id is all a client can do) does nothing and says so.
   */
  async compact(): Promise<CompactReport> {
    this.ensureOpen();
    return this._compact();
  }

  /**
   * A new, unopened connector of the same store and options whose collection / table /
   * namespace is this one's name suffixed with `__<suffix>`: where a migration to an embedding
   * space of other dimensions stages its chunks (docs/embeddings.md). `suffix` is lower-case
   * letters, digits and `_`. Optional verb: NOT_SUPPORTED by default.
   */
  forNamespace(suffix: string): Connector {
    if (!/^[a-z0-9_]{1,40}$/.test(suffix))
      throw this.error(
        'INVALID_ARGUMENT',
        `namespace suffix ${JSON.stringify(suffix)} must be 1-40 lower-case letters, digits or _.`,
      );
    return this._forNamespace(suffix);
  }

  /**
   * Drops what holds this namespace in the store (tables / collections / files, the epoch
   * record's included); absent parts are a no-op. Implementing it declares `dropNamespace`.
   * `close` runs after it.
   */
  protected async _dropNamespace(): Promise<void> {
    throw this.error('NOT_SUPPORTED', `${this.store} cannot drop a namespace.`);
  }

  /** Builds the connector of `forNamespace` (same options, name + `__<suffix>`). */
  protected _forNamespace(_suffix: string): Connector {
    throw this.error(
      'NOT_SUPPORTED',
      `${this.store} cannot open a second namespace beside this one, so a migration to embeddings of other dimensions is not possible here; keep the dimensions or use another store.`,
    );
  }

  /**
   * Removes this namespace from the store — every chunk, the epoch record and the tables,
   * collections or files that hold them — then closes the connector. Only for a namespace no
   * role reads or writes any more: `migrate embeddings` calls it on the namespace a migration
   * to other dimensions retired, after deleting its chunks and finding it empty (a process
   * that still has it open then gets store errors, not an empty answer). Opening the name
   * again starts a fresh namespace at epoch 0. Optional verb: NOT_SUPPORTED without
   * `capabilities.dropNamespace`.
   */
  async dropNamespace(): Promise<void> {
    this.ensureOpen();
    if (this.capabilities.dropNamespace !== true)
      throw this.error(
        'NOT_SUPPORTED',
        `${this.store} cannot drop a namespace; delete it by hand.`,
      );
    await this._dropNamespace();
    await this.close();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this._close();
  }

  /*
   * The hooks. Core calls them only through the public methods above, which have already
   * checked sequencing (open, not closed) and arguments. The Publisher's call order per batch:
   *   stage      -> `_upsert` (chunks with rf_from = T, rf_to = OPEN_EPOCH, rf_current = false)
   *   verify     -> `_countMany`, `_listMany`, `_query` (view `all`, scoped to one version), polled
   *   promote    -> `_patchValidityMany` ({ to: T } on replaced versions), `_advanceEpoch(E, T)`
   *   flag       -> `_patchValidityMany` (new { current: true }, previous { current: false })
   *   retire     -> `_countMany`, `_deleteVersions` (versions past their grace epochs)
   *   confirm    -> `_listMany` (the batch's documents), polled
   * Recovery after a crash replays the same hooks (`_patchValidityMany` with { to: OPEN_EPOCH },
   * `_deleteVersions`), so every hook must be idempotent. Every write hook receives the fence
   * of the write last (undefined: unfenced); under `fencing: 'store'` it must refuse a fence
   * older than the store's (`throw this.staleFence(fence, held)`) in the same transaction or
   * conditional write as the write; under `client` the base class checked it already. Errors:
   * throw `this.error(code, ...)`
   * with STORE_UNREACHABLE (network, 5xx, timeouts after retries), STORE_REJECTED (the store
   * refused the request: 4xx, constraint), DIMENSION_MISMATCH, EPOCH_CONFLICT (only from
   * `_advanceEpoch`), NOT_SUPPORTED (an optional verb the store cannot do), FOREIGN_DATA (the
   * target holds data ragfresh did not write). Never swallow an error into an empty result.
   */

  /**
   * Ensures the schema: collection/table, vector index of `dimensions`, the scalar indexes the
   * filters need (document, version, rf_from/rf_to/rf_current), and the epoch pointer (created
   * at 0 when absent, never reset when present). Idempotent; an existing index with another
   * dimension is DIMENSION_MISMATCH; a target holding foreign data is FOREIGN_DATA.
   */
  protected abstract _open(options: OpenOptions): Promise<void>;
  /**
   * Writes chunks: insert or overwrite by id (re-adding an id replaces it, text, vector and
   * metadata). Receives at most `maxWriteBatch` chunks, already validated (unique ids, vector
   * size, flat metadata with ragfresh fields). Must store metadata types as given (a boolean
   * stays a boolean, an integer an integer) and must not make the chunks visible in any view
   * their validity excludes. May touch only the listed ids.
   */
  protected abstract _upsert(chunks: readonly StoredChunk[], fence?: number): Promise<void>;
  /**
   * Sets `rf_to` and/or `rf_current` (only the fields present in `patch`) on every chunk of
   * exactly one document version; every other field, and every other version, stays as it is.
   * A version with no chunks is a no-op. See `_patchValidityMany` for the batch form, which is
   * where a store with transactions makes a flag flip atomic.
   */
  protected abstract _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
    fence?: number,
  ): Promise<void>;
  /** The published epoch held by the store; 0 for a store `_open` just created. */
  protected abstract _readEpoch(): Promise<number>;
  /**
   * Exclusive compare-and-set of the published epoch from `expected` to `next` (> expected).
   * When the store does not hold `expected`, throw EPOCH_CONFLICT and change nothing. Two
   * racers with the same `expected` must never both succeed: prove the winner (rows affected,
   * a claim token read back), not just that the value now equals `next`. With a `fence`, keep
   * it in the epoch record beside the epoch (it is the fence `_readFence` returns from then on).
   */
  protected abstract _advanceEpoch(
    expected: number,
    next: number,
    fence?: number,
    /** Keep it in the epoch record in the same write, when the connector implements `_readEpochSpace`. */
    space?: string,
  ): Promise<void>;
  /** Deletes every chunk of one document version (any validity). Absent: no-op. */
  protected abstract _deleteVersion(
    documentId: string,
    versionId: string,
    fence?: number,
  ): Promise<void>;
  /** Deletes every chunk of the given documents (any version). Absent: no-op. */
  protected abstract _deleteDocuments(
    documentIds: readonly string[],
    fence?: number,
  ): Promise<void>;
  /**
   * Every stored chunk of one document (one version when given), any validity, complete (page
   * through store limits), with text and metadata as written; vectors only when asked. Order
   * does not matter: the public method sorts by ordinal.
   */
  protected abstract _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]>;
  /**
   * The `k` nearest chunks to `vector` inside `filter`: its view (`epoch`: rf_from <= E < rf_to;
   * `flag`: rf_current = true; `all`: no validity filter), its optional document / version /
   * source scope and its optional `access` (already normalised: `rf_access` holds any of
   * `readerAccessTokens(access)`, a list-membership condition), applied by the store before
   * ranking (never post-filter a top-k). Higher
   * `score` is more similar. Exact or approximate search; approximate search must still return
   * a version's chunk for its own vector during verification.
   */
  protected abstract _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]>;
  /** Releases clients and handles. Called once. */
  protected abstract _close(): Promise<void>;

  /** Default: counts a listing. Override when the store counts natively. */
  protected async _count(documentId: string, versionId: string): Promise<number> {
    return (await this._list(documentId, versionId, false)).length;
  }

  /*
   * Batch hooks. Each receives at most MAX_BATCH_REFS already-validated, de-duplicated refs.
   * The defaults loop over the single-version hooks, so a connector that does not override
   * them stays correct; override them to make a batch of documents cost one store operation.
   */

  /**
   * `_patchValidity` for several document versions in one call. Core never splits one
   * document's patches across calls, and sends a batch's whole flag flip (new versions
   * `current: true`, the versions they replace `current: false`) in as few calls as the
   * MAX_BATCH_REFS slices allow: a store that applies one call in one transaction gives flag
   * readers `atomic` promotion. Default: one `_patchValidity` per version.
   */
  protected async _patchValidityMany(
    patches: readonly VersionPatch[],
    fence?: number,
  ): Promise<void> {
    for (const p of patches) await this._patchValidity(p.documentId, p.versionId, p.patch, fence);
  }

  /** Default: one `_count` per version. Must return one exact count per ref, in order. */
  protected async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const out: number[] = [];
    for (const r of refs) out.push(await this._count(r.documentId, r.versionId));
    return out;
  }

  /** Default: one `_list` per document. Returns every chunk (any version) of those documents. */
  protected async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const out: ListedChunk[] = [];
    for (const id of documentIds) out.push(...(await this._list(id, undefined, withEmbeddings)));
    return out;
  }

  /**
   * One page of every stored chunk (any validity, vectors omitted), from `cursor` (undefined
   * for the first page); `next` undefined on the last page. Cursors are opaque strings the
   * connector chooses (an offset, the last id); pages may be shorter than `pageSize`. Chunks
   * written during a scan may or may not appear. Default: NOT_SUPPORTED (then reconciliation
   * finds no orphans and state recovery is impossible; say so in the connector's docs).
   */
  protected async _scan(
    _cursor: string | undefined,
    _pageSize: number,
  ): Promise<{ readonly chunks: ListedChunk[]; readonly next?: string }> {
    throw this.error(
      'NOT_SUPPORTED',
      `${this.store} cannot enumerate its chunks (no _scan hook); reconciliation and recovery need it.`,
    );
  }

  /** Default: nothing to compact from the client; see `compact`. */
  protected async _compact(): Promise<CompactReport> {
    return {
      reclaimed: false,
      note: `${this.store}: deleted by id; the service reclaims the space on its own schedule`,
    };
  }

  /** Default: one `_deleteVersion` per version. Absent versions are a no-op. */
  protected async _deleteVersions(refs: readonly VersionRef[], fence?: number): Promise<void> {
    for (const r of refs) await this._deleteVersion(r.documentId, r.versionId, fence);
  }

  /*
   * Fence hooks (optional; implement both to declare `fencing: 'client'` or `'store'`). The
   * fence lives in the store beside the epoch (the epoch record), never only in this process.
   */

  /** The newest fence the store holds; 0 when none was raised. */
  protected async _readFence(): Promise<number> {
    return 0;
  }

  /**
   * Epoch-space hook (optional): the space the epoch record names (`_advanceEpoch`'s `space`
   * of the last move that gave one), undefined when none did. Implementing it declares
   * `epochSpace`; `_advanceEpoch` must then write the space in the same conditional write as
   * the epoch, so the record never names a space its epoch was not published in.
   */
  protected async _readEpochSpace(): Promise<string | undefined> {
    return undefined;
  }

  /**
   * Stores `fence` as the newest unless the store holds a newer one (then throw
   * `this.staleFence(fence, held)`); the same fence again is a no-op. Must be a conditional
   * write where the store has one, so two publishers raising at once cannot both end below
   * the other's fence.
   */
  protected async _raiseFence(_fence: number): Promise<void> {
    throw this.error('NOT_SUPPORTED', `${this.store} does not keep a fence.`);
  }
}

function refKey(r: VersionRef): string {
  return `${r.documentId}\u0000${r.versionId}`;
}

function uniqueRefs(refs: readonly VersionRef[]): VersionRef[] {
  const seen = new Map<string, VersionRef>();
  for (const r of refs) {
    if (!seen.has(refKey(r)))
      seen.set(refKey(r), { documentId: r.documentId, versionId: r.versionId });
  }
  return [...seen.values()];
}

function* slices<T>(items: readonly T[]): Generator<readonly T[]> {
  for (let i = 0; i < items.length; i += MAX_BATCH_REFS) yield items.slice(i, i + MAX_BATCH_REFS);
}

/**
 * Slices of at most MAX_BATCH_REFS patches that never split one document's patches: a flag
 * flip (new version on, previous off) reaches the hook in one call, so a store that applies a
 * call in one transaction flips every document of the call atomically.
 */
function* patchSlices(patches: readonly VersionPatch[]): Generator<readonly VersionPatch[]> {
  const byDocument = new Map<string, VersionPatch[]>();
  for (const p of patches) {
    const group = byDocument.get(p.documentId) ?? [];
    group.push(p);
    byDocument.set(p.documentId, group);
  }
  let slice: VersionPatch[] = [];
  for (const group of byDocument.values()) {
    if (slice.length > 0 && slice.length + group.length > MAX_BATCH_REFS) {
      yield slice;
      slice = [];
    }
    slice.push(...group);
  }
  if (slice.length > 0) yield slice;
}

/**
 * Patches grouped by value (the same `to` and `current`), groups in first-seen order, for a
 * store whose update writes one value to many records at once (an id list or a filter). A
 * connector that applies each group in order keeps core's patch order within a slice.
 */
export function groupPatchesByValue(
  patches: readonly VersionPatch[],
): Array<{ readonly patch: ValidityPatch; readonly refs: VersionRef[] }> {
  const groups = new Map<string, { patch: ValidityPatch; refs: VersionRef[] }>();
  for (const p of patches) {
    const key = `${p.patch.to ?? ''}|${p.patch.current ?? ''}`;
    let g = groups.get(key);
    if (g === undefined) {
      g = { patch: p.patch, refs: [] };
      groups.set(key, g);
    }
    g.refs.push({ documentId: p.documentId, versionId: p.versionId });
  }
  return [...groups.values()];
}

/** True when chunk metadata falls in `view`. Reference semantics for every connector's filter. */
export function inView(metadata: FlatMetadata, view: ViewSelector): boolean {
  if (view.kind === 'all') return true;
  const v = readValidity(metadata);
  if (view.kind === 'flag') return v.current;
  return v.from <= view.epoch && view.epoch < v.to;
}

export function matchesFilter(metadata: FlatMetadata, filter: QueryFilter): boolean {
  if (filter.documentId !== undefined && metadata[FIELDS.documentId] !== filter.documentId)
    return false;
  if (filter.versionId !== undefined && metadata[FIELDS.versionId] !== filter.versionId)
    return false;
  if (filter.sourceId !== undefined && metadata[FIELDS.sourceId] !== filter.sourceId) return false;
  if (filter.access !== undefined && !accessAdmits(metadata[FIELDS.access], filter.access))
    return false;
  return inView(metadata, filter.view);
}
