import { resolve as resolvePath } from 'node:path';
import { Document } from '@langchain/core/documents';
import type { VectorStoreInterface } from '@langchain/core/vectorstores';
import {
  buildConnector,
  Connector,
  type ConnectorCapabilities,
  type ConnectorFactoryContext,
  checkConnectorOptions,
  chunkUuid,
  cosineSimilarity,
  FIELDS,
  type FlatMetadata,
  type FlatValue,
  isRagfreshError,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  type RagfreshError,
  readerAccessTokens,
  resolveOptionPath,
  type StoredChunk,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
  type Visibility,
} from '@ragfresh/core';
import { type EpochStore, fileEpochStore, keepsFence, keepsSpace } from './epoch.js';
import {
  type Condition,
  FILTER_DIALECTS,
  type FilterDialect,
  type FilterDialectName,
} from './filters.js';

export { type EpochStore, fileEpochStore, keepsFence, keepsSpace } from './epoch.js';
export {
  type Condition,
  chromaFilters,
  FILTER_DIALECTS,
  type FilterDialect,
  type FilterDialectName,
  memoryFilters,
} from './filters.js';

/** Metadata key holding a copy of the chunk's vector (base64 float32, little-endian). */
export const VECTOR_FIELD = 'rf_vec';

export interface LangChainConnectorOptions {
  /** The LangChain vector store, or a factory called once by `open`. */
  readonly store:
    | VectorStoreInterface
    | (() => VectorStoreInterface | Promise<VectorStoreInterface>);
  /** How this store's class takes a metadata filter: a built-in dialect name or your own. */
  readonly filters: FilterDialectName | FilterDialect;
  /** Where the published epoch lives: a file path (see `fileEpochStore`) or your own EpochStore. */
  readonly epoch: string | EpochStore;
  /**
   * What the store's `addVectors(vectors, docs, { ids })` does with an id it already holds:
   * `replaces` it in place (Chroma, Qdrant, Pinecone, PGVectorStore...), or `appends` a second
   * copy (MemoryVectorStore). Default `appends`: the connector deletes the ids first, which is
   * correct for both but makes every rewrite briefly remove the chunk (promotion `gap`).
   */
  readonly upsert?: 'replaces' | 'appends';
  /** What the store guarantees after a write. Default `{ mode: 'eventual', maxLagMs: 5000 }`. */
  readonly visibility?: Visibility;
  /** Chunks per `addVectors` call. Default 100. */
  readonly maxWriteBatch?: number;
  /** `k` used to list a document's chunks by a filtered similarity search. Default 10 000. */
  readonly listLimit?: number;
  /** Ids handed to the store: the readable chunk id (default) or its UUID v5 (stores that require UUIDs). */
  readonly idForm?: 'chunk-id' | 'uuid';
  /**
   * How to open the store of another namespace, given its suffix: what `forNamespace(suffix)`
   * opens (a migration to embeddings of other dimensions stages there), called by that
   * connector's `open`. It must return a store of its own: for LangChain's `Chroma` a collection
   * `<name>__<suffix>`, for a `MemoryVectorStore` a new instance. Without it, `forNamespace` is
   * NOT_SUPPORTED (`namespaces: false`).
   */
  readonly namespaceStore?: (
    suffix: string,
  ) => VectorStoreInterface | Promise<VectorStoreInterface>;
  /**
   * Where the epoch of another namespace lives, given its suffix: a file path or an EpochStore,
   * its own (as `epoch`). Default with a file `epoch`: the file `<epoch>__<suffix>`; required
   * with your own EpochStore. Only with `namespaceStore`.
   */
  readonly namespaceEpoch?: (suffix: string) => string | EpochStore;
}

/** Manifest for a set of options: the guarantees follow from the store's declared behaviour. */
export function langchainCapabilities(
  options: Pick<LangChainConnectorOptions, 'upsert' | 'visibility' | 'maxWriteBatch' | 'idForm'>,
): ConnectorCapabilities {
  return {
    store: 'langchain',
    // In-place replacement never hides a chunk while its rf_to is patched, so epoch readers see
    // old or new; delete-then-add hides it for a moment: never both, sometimes neither.
    promotion: options.upsert === 'replaces' ? 'snapshot' : 'gap',
    // Flags are rewritten in two store calls. In place: every `current: true` before any
    // `current: false` (briefly both, never neither). Delete-then-add hides a flagged chunk while
    // it is rewritten anyway, so there the order is reversed (briefly neither, never both).
    flagPromotion: options.upsert === 'replaces' ? 'overlap' : 'gap',
    visibility: options.visibility ?? { mode: 'eventual', maxLagMs: 5000 },
    maxWriteBatch: options.maxWriteBatch ?? 100,
    epochInStore: false,
    idForm: options.idForm ?? 'chunk-id',
    epochClaim: 'exclusive',
  };
}

function encodeVector(v: readonly number[]): string {
  return Buffer.from(new Float32Array(v).buffer).toString('base64');
}

function decodeVector(s: unknown): number[] | undefined {
  if (typeof s !== 'string') return undefined;
  const bytes = Buffer.from(s, 'base64');
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, Math.floor(bytes.length / 4)));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Held {
  readonly listed: ListedChunk;
  readonly embedding: number[];
}

/**
 * Basic-tier connector over any LangChain `VectorStore`: it needs only `addVectors`,
 * `delete({ ids })` and a filtered `similaritySearchVectorWithScore`. What that costs compared
 * to a native connector is in the README.
 */
export class LangChainConnector extends Connector {
  readonly #options: LangChainConnectorOptions;
  readonly #filters: FilterDialect;
  readonly #epoch: EpochStore;
  readonly #listLimit: number;
  #store: VectorStoreInterface | undefined;

  constructor(options: LangChainConnectorOptions) {
    // The fence lives in the EpochStore, the chunks in the vector store: no write spans both,
    // so fencing is checked before each write (`client`), and only if the EpochStore keeps it.
    // The space rides in the EpochStore's record too, when it keeps one (the file does).
    const given = typeof options.epoch === 'object' && options.epoch !== null;
    const fenced = typeof options.epoch === 'string' || (given && keepsFence(options.epoch));
    const spaced = typeof options.epoch === 'string' || (given && keepsSpace(options.epoch));
    super({
      ...langchainCapabilities(options),
      fencing: fenced ? 'client' : 'none',
      epochSpace: spaced,
      // `_forNamespace` opens another namespace only through the user's `namespaceStore`.
      namespaces: options.namespaceStore !== undefined,
    });
    if (options.store === undefined || options.store === null) {
      throw this.error(
        'INVALID_CONFIG',
        'store is required: a LangChain VectorStore or a factory returning one.',
      );
    }
    const filters =
      typeof options.filters === 'string' ? FILTER_DIALECTS[options.filters] : options.filters;
    if (filters === undefined || typeof filters.build !== 'function') {
      throw this.error(
        'INVALID_CONFIG',
        `filters ${JSON.stringify(options.filters)} is unknown; use ${Object.keys(FILTER_DIALECTS).join(' or ')}, or pass { name, build(conditions) } for your store's filter language.`,
      );
    }
    if (
      options.upsert !== undefined &&
      options.upsert !== 'replaces' &&
      options.upsert !== 'appends'
    ) {
      throw this.error(
        'INVALID_CONFIG',
        `upsert must be 'replaces' or 'appends', got ${JSON.stringify(options.upsert)}.`,
      );
    }
    if (typeof options.epoch !== 'string' && typeof options.epoch?.compareAndSet !== 'function') {
      throw this.error(
        'INVALID_CONFIG',
        'epoch is required: a file path for the published epoch (the store cannot hold it), or an EpochStore.',
      );
    }
    if (options.namespaceStore !== undefined && typeof options.namespaceStore !== 'function') {
      throw this.error(
        'INVALID_CONFIG',
        'namespaceStore must be a function (suffix) => the VectorStore of that namespace (e.g. a collection <name>__<suffix>).',
      );
    }
    if (options.namespaceEpoch !== undefined && typeof options.namespaceEpoch !== 'function') {
      throw this.error(
        'INVALID_CONFIG',
        "namespaceEpoch must be a function (suffix) => that namespace's epoch file path or EpochStore.",
      );
    }
    if (options.namespaceEpoch !== undefined && options.namespaceStore === undefined) {
      throw this.error(
        'INVALID_CONFIG',
        'namespaceEpoch is set without namespaceStore; add namespaceStore: (suffix) => the VectorStore of that namespace, or remove namespaceEpoch.',
      );
    }
    if (
      options.namespaceStore !== undefined &&
      options.namespaceEpoch === undefined &&
      typeof options.epoch !== 'string'
    ) {
      throw this.error(
        'INVALID_CONFIG',
        "namespaceStore with your own EpochStore needs namespaceEpoch: (suffix) => that namespace's EpochStore (only a file epoch has a default, <epoch>__<suffix>).",
      );
    }
    const listLimit = options.listLimit ?? 10_000;
    if (!Number.isSafeInteger(listLimit) || listLimit < 1) {
      throw this.error('INVALID_CONFIG', `listLimit must be a positive integer, got ${listLimit}.`);
    }
    this.#options = options;
    this.#filters = filters;
    this.#epoch = typeof options.epoch === 'string' ? fileEpochStore(options.epoch) : options.epoch;
    this.#listLimit = listLimit;
  }

  /**
   * The connector of namespace `<this one>__<suffix>`: the same options over the store
   * `namespaceStore(suffix)` and the epoch `namespaceEpoch(suffix)` (default: the epoch file
   * `<epoch>__<suffix>`). Its own `forNamespace` nests the suffixes, as the native connectors'
   * names do.
   */
  protected override _forNamespace(suffix: string): LangChainConnector {
    const { namespaceStore, namespaceEpoch, epoch: ownEpoch } = this.#options;
    if (namespaceStore === undefined) {
      throw this.error(
        'NOT_SUPPORTED',
        'the LangChain tier opens another namespace (a migration to embeddings of other dimensions) only with the namespaceStore option: (suffix) => the VectorStore of that namespace (e.g. a collection <name>__<suffix>); pass it, or keep the dimensions.',
      );
    }
    const epoch = namespaceEpoch?.(suffix) ?? `${ownEpoch as string}__${suffix}`;
    if (typeof epoch !== 'string' && typeof epoch?.compareAndSet !== 'function') {
      throw this.error(
        'INVALID_CONFIG',
        `namespaceEpoch(${JSON.stringify(suffix)}) returned neither a file path nor an EpochStore; return one of them.`,
      );
    }
    if (epoch === ownEpoch || epoch === this.#epoch) {
      throw this.error(
        'INVALID_CONFIG',
        `namespaceEpoch(${JSON.stringify(suffix)}) returned this namespace's own epoch; give each namespace its own file or EpochStore.`,
      );
    }
    const store = async (): Promise<VectorStoreInterface> => {
      const opened = await namespaceStore(suffix);
      if (opened === this.#store || opened === this.#options.store) {
        throw this.error(
          'INVALID_CONFIG',
          `namespaceStore(${JSON.stringify(suffix)}) returned this namespace's own store; return the store of another collection (e.g. <name>__${suffix}) or a new instance.`,
        );
      }
      return opened;
    };
    const nested = (inner: string) => `${suffix}__${inner}`;
    return new LangChainConnector({
      ...this.#options,
      store,
      epoch,
      namespaceStore: (inner) => namespaceStore(nested(inner)),
      ...(namespaceEpoch === undefined
        ? {}
        : { namespaceEpoch: (inner: string) => namespaceEpoch(nested(inner)) }),
    });
  }

  /** The store, once `open` resolved it. */
  get vectorStore(): VectorStoreInterface | undefined {
    return this.#store;
  }

  get epochStore(): EpochStore {
    return this.#epoch;
  }

  #translate(err: unknown, doing: string): RagfreshError {
    if (isRagfreshError(err)) return err;
    const message = err instanceof Error ? err.message : String(err);
    const code = String(
      (err as { code?: unknown; cause?: { code?: unknown } } | null)?.code ??
        (err as { cause?: { code?: unknown } })?.cause?.code ??
        '',
    );
    if (
      /ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EAI_AGAIN/.test(code) ||
      /fetch failed|ECONNREFUSED|Failed to connect/i.test(message)
    ) {
      return this.error(
        'STORE_UNREACHABLE',
        `cannot reach the ${this.#filters.name} store while ${doing} (${message}); start it or fix its address.`,
        err,
      );
    }
    if (/not implemented/i.test(message) && doing.startsWith('deleting')) {
      return this.error(
        'NOT_SUPPORTED',
        `the store's class does not implement delete({ ids }) (${message}); the LangChain tier needs it to replace and retire chunks.`,
        err,
      );
    }
    return this.error(
      'STORE_REJECTED',
      `the ${this.#filters.name} store rejected ${doing} (${message}).`,
      err,
    );
  }

  async #call<T>(doing: string, fn: (store: VectorStoreInterface) => Promise<T>): Promise<T> {
    const store = this.#store;
    if (store === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    try {
      return await fn(store);
    } catch (err) {
      throw this.#translate(err, doing);
    }
  }

  #storeId(chunkId: string): string {
    return this.capabilities.idForm === 'uuid' ? chunkUuid(chunkId) : chunkId;
  }

  protected async _open(_options: OpenOptions): Promise<void> {
    const s = this.#options.store;
    try {
      this.#store = typeof s === 'function' ? await s() : s;
    } catch (err) {
      throw this.#translate(err, 'creating the store');
    }
    for (const method of ['addVectors', 'delete', 'similaritySearchVectorWithScore'] as const) {
      if (typeof (this.#store as unknown as Record<string, unknown>)[method] !== 'function') {
        throw this.error(
          'INVALID_CONFIG',
          `store has no ${method}(); pass a LangChain VectorStore.`,
        );
      }
    }
    await this.#epochRead();
  }

  async #epochRead(): Promise<number> {
    try {
      return await this.#epoch.read();
    } catch (err) {
      throw this.#translate(err, `reading the epoch from ${this.#epoch.description}`);
    }
  }

  /** Writes whole chunks; with `appends` stores, deletes their ids first. */
  async #write(chunks: readonly StoredChunk[]): Promise<void> {
    if (chunks.length === 0) return;
    const ids = chunks.map((c) => this.#storeId(c.id));
    if (this.#options.upsert !== 'replaces') {
      await this.#call('deleting chunks before rewriting them', (s) => s.delete({ ids }));
    }
    const docs = chunks.map(
      (c, i) =>
        new Document({
          id: ids[i]!,
          pageContent: c.text,
          metadata: {
            [FIELDS.chunkId]: c.id,
            ...(this.#filters.encodeMetadata?.(c.metadata) ?? c.metadata),
            [VECTOR_FIELD]: encodeVector(c.embedding),
          },
        }),
    );
    await this.#call('writing chunks', (s) =>
      s.addVectors(
        chunks.map((c) => [...c.embedding]),
        docs,
        { ids },
      ),
    );
  }

  protected async _upsert(chunks: readonly StoredChunk[]): Promise<void> {
    for (const c of chunks) {
      const readable = c.metadata[FIELDS.chunkId];
      if (readable !== undefined && readable !== c.id) {
        throw this.error(
          'INVALID_METADATA',
          `chunk ${c.id} carries ${FIELDS.chunkId}=${JSON.stringify(readable)}; they must agree.`,
        );
      }
      if (VECTOR_FIELD in c.metadata) {
        throw this.error(
          'INVALID_METADATA',
          `chunk ${c.id} carries ${VECTOR_FIELD}, which this connector reserves for the vector copy.`,
        );
      }
    }
    await this.#write(chunks);
  }

  /** Every stored chunk matching `conditions`, by a filtered search with k = listLimit. */
  async #find(conditions: readonly Condition[]): Promise<Held[]> {
    const probe = new Array<number>(this.dimensions ?? 1).fill(0);
    probe[0] = 1;
    const filter = this.#filters.build(conditions);
    const results = await this.#call('listing chunks', (s) =>
      s.similaritySearchVectorWithScore(probe, this.#listLimit, filter as never),
    );
    if (results.length >= this.#listLimit) {
      throw this.error(
        'STORE_REJECTED',
        `a listing reached listLimit (${this.#listLimit} chunks), so it may be incomplete; raise listLimit.`,
      );
    }
    const seen = new Map<string, Held>();
    for (const [doc] of results) {
      const held = this.#held(doc.metadata, doc.pageContent);
      seen.set(held.listed.id, held);
    }
    return [...seen.values()];
  }

  #held(stored: Record<string, unknown>, text: string): Held {
    const raw = this.#filters.decodeMetadata?.(stored) ?? stored;
    const metadata: Record<string, FlatValue> = {};
    for (const [k, v] of Object.entries(raw)) {
      if (k === VECTOR_FIELD) continue;
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') metadata[k] = v;
      // A list of strings (rf_access) is kept: a patch rewrites the chunk with what is read here.
      else if (Array.isArray(v) && v.every((e) => typeof e === 'string')) metadata[k] = v;
    }
    const chunkId = String(metadata[FIELDS.chunkId] ?? '');
    return {
      listed: { id: this.#storeId(chunkId), text, metadata: metadata as FlatMetadata },
      embedding: decodeVector(raw[VECTOR_FIELD]) ?? [],
    };
  }

  #out(h: Held, withEmbeddings: boolean): ListedChunk {
    return withEmbeddings ? { ...h.listed, embedding: h.embedding } : h.listed;
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const conditions: Condition[] = [{ field: FIELDS.documentId, op: 'eq', value: documentId }];
    if (versionId !== undefined)
      conditions.push({ field: FIELDS.versionId, op: 'eq', value: versionId });
    return (await this.#find(conditions)).map((h) => this.#out(h, withEmbeddings));
  }

  async #findDocuments(documentIds: readonly string[]): Promise<Held[]> {
    return this.#find([{ field: FIELDS.documentId, op: 'in', value: [...new Set(documentIds)] }]);
  }

  protected override async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    return (await this.#findDocuments(documentIds)).map((h) => this.#out(h, withEmbeddings));
  }

  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const counts = new Map<string, number>();
    for (const h of await this.#findDocuments(refs.map((r) => r.documentId))) {
      const key = `${h.listed.metadata[FIELDS.documentId]}\u0000${h.listed.metadata[FIELDS.versionId]}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return refs.map((r) => counts.get(`${r.documentId}\u0000${r.versionId}`) ?? 0);
  }

  protected override async _count(documentId: string, versionId: string): Promise<number> {
    return (await this._countMany([{ documentId, versionId }]))[0] ?? 0;
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
  ): Promise<void> {
    await this._patchValidityMany([{ documentId, versionId, patch }]);
  }

  /**
   * LangChain has no metadata update: a patch rewrites each chunk with its stored vector copy,
   * in two store calls ordered by the declared flagPromotion (see langchainCapabilities).
   */
  protected override async _patchValidityMany(patches: readonly VersionPatch[]): Promise<void> {
    const held = await this.#findDocuments(patches.map((p) => p.documentId));
    const byVersion = new Map(patches.map((p) => [`${p.documentId}\u0000${p.versionId}`, p.patch]));
    const first: StoredChunk[] = [];
    const second: StoredChunk[] = [];
    for (const h of held) {
      const m = h.listed.metadata;
      const patch = byVersion.get(`${m[FIELDS.documentId]}\u0000${m[FIELDS.versionId]}`);
      if (patch === undefined) continue;
      const metadata: Record<string, FlatValue> = { ...m };
      if (patch.to !== undefined) metadata[FIELDS.to] = patch.to;
      if (patch.current !== undefined) metadata[FIELDS.current] = patch.current;
      const chunk: StoredChunk = {
        id: String(m[FIELDS.chunkId]),
        text: h.listed.text,
        embedding: h.embedding,
        metadata,
      };
      const early =
        this.capabilities.flagPromotion === 'overlap'
          ? patch.current !== false
          : patch.current !== true;
      (early ? first : second).push(chunk);
    }
    for (const phase of [first, second]) {
      for (let i = 0; i < phase.length; i += this.capabilities.maxWriteBatch) {
        await this.#write(phase.slice(i, i + this.capabilities.maxWriteBatch));
      }
      await this.#awaitVisible(phase);
    }
  }

  /** On eventual stores, waits until a listing shows what was just written (read your writes). */
  async #awaitVisible(chunks: readonly StoredChunk[]): Promise<void> {
    const v = this.capabilities.visibility;
    if (v.mode === 'immediate' || chunks.length === 0) return;
    const want = new Map(chunks.map((c) => [this.#storeId(c.id), c.metadata]));
    const deadline = Date.now() + v.maxLagMs * 2 + 1000;
    for (let wait = 25; ; wait = Math.min(wait * 2, 250)) {
      const seen = await this.#findDocuments([
        ...new Set(chunks.map((c) => String(c.metadata[FIELDS.documentId]))),
      ]);
      const ok = [...want].every(([id, m]) => {
        const got = seen.find((h) => h.listed.id === id)?.listed.metadata;
        return (
          got !== undefined &&
          got[FIELDS.to] === m[FIELDS.to] &&
          got[FIELDS.current] === m[FIELDS.current]
        );
      });
      if (ok) return;
      if (Date.now() > deadline) {
        throw this.error(
          'STORE_REJECTED',
          `rewritten chunks were not visible within ${v.maxLagMs * 2 + 1000} ms; raise visibility.maxLagMs to what the store really needs.`,
        );
      }
      await sleep(wait);
    }
  }

  protected async _readEpoch(): Promise<number> {
    return this.#epochRead();
  }

  protected async _advanceEpoch(
    expected: number,
    next: number,
    fence?: number,
    space?: string,
  ): Promise<void> {
    let moved: boolean;
    // Each only to a store that keeps it (an EpochStore without them gets two arguments).
    const fenced = this.capabilities.fencing === 'none' ? undefined : fence;
    const spaced = this.capabilities.epochSpace === true ? space : undefined;
    try {
      moved = await (spaced !== undefined
        ? this.#epoch.compareAndSet(expected, next, fenced, spaced)
        : fenced !== undefined
          ? this.#epoch.compareAndSet(expected, next, fenced)
          : this.#epoch.compareAndSet(expected, next));
    } catch (err) {
      throw this.#translate(err, `advancing the epoch in ${this.#epoch.description}`);
    }
    if (!moved) {
      if (fence !== undefined && this.capabilities.fencing !== 'none') {
        const held = await this._readFence();
        if (held > fence) throw this.staleFence(fence, held);
      }
      const now = await this.#epochRead();
      throw this.error(
        'EPOCH_CONFLICT',
        `published epoch is ${now}, expected ${expected}; another publisher moved it. Reload state and retry.`,
      );
    }
  }

  protected override async _readFence(): Promise<number> {
    const epoch = this.#epoch;
    if (!keepsFence(epoch)) return 0;
    try {
      return await epoch.readFence();
    } catch (err) {
      throw this.#translate(err, `reading the fence from ${epoch.description}`);
    }
  }

  /** The space the EpochStore's record names (`readSpace`; the file's `space`). */
  protected override async _readEpochSpace(): Promise<string | undefined> {
    const epoch = this.#epoch;
    if (!keepsSpace(epoch)) return undefined;
    try {
      const space = await epoch.readSpace();
      return typeof space === 'string' && space !== '' ? space : undefined;
    } catch (err) {
      throw this.#translate(err, `reading the space from ${epoch.description}`);
    }
  }

  protected override async _raiseFence(fence: number): Promise<void> {
    const epoch = this.#epoch;
    if (!keepsFence(epoch)) return;
    let raised: boolean;
    try {
      raised = await epoch.raiseFence(fence);
    } catch (err) {
      throw this.#translate(err, `raising the fence in ${epoch.description}`);
    }
    if (!raised) throw this.staleFence(fence, await this._readFence());
  }

  async #deleteHeld(held: readonly Held[]): Promise<void> {
    if (held.length === 0) return;
    const ids = held.map((h) => h.listed.id);
    await this.#call('deleting chunks', (s) => s.delete({ ids }));
  }

  protected async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    await this._deleteVersions([{ documentId, versionId }]);
  }

  protected override async _deleteVersions(refs: readonly VersionRef[]): Promise<void> {
    const wanted = new Set(refs.map((r) => `${r.documentId}\u0000${r.versionId}`));
    const held = await this.#findDocuments(refs.map((r) => r.documentId));
    await this.#deleteHeld(
      held.filter((h) =>
        wanted.has(
          `${h.listed.metadata[FIELDS.documentId]}\u0000${h.listed.metadata[FIELDS.versionId]}`,
        ),
      ),
    );
  }

  protected async _deleteDocuments(documentIds: readonly string[]): Promise<void> {
    await this.#deleteHeld(await this.#findDocuments(documentIds));
  }

  protected async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const conditions: Condition[] = [];
    if (filter.view.kind === 'epoch') {
      conditions.push({ field: FIELDS.from, op: 'lte', value: filter.view.epoch });
      conditions.push({ field: FIELDS.to, op: 'gt', value: filter.view.epoch });
    } else if (filter.view.kind === 'flag') {
      conditions.push({ field: FIELDS.current, op: 'eq', value: true });
    }
    for (const [field, value] of [
      [FIELDS.documentId, filter.documentId],
      [FIELDS.versionId, filter.versionId],
      [FIELDS.sourceId, filter.sourceId],
    ] as const) {
      if (value !== undefined) conditions.push({ field, op: 'eq', value });
    }
    if (filter.access !== undefined)
      conditions.push({
        field: FIELDS.access,
        op: 'any',
        value: readerAccessTokens(filter.access),
      });
    const built = this.#filters.build(conditions);
    const results = await this.#call('querying', (s) =>
      s.similaritySearchVectorWithScore([...vector], k, built as never),
    );
    // Stores disagree on what their score means (similarity, distance); the vector copy gives
    // one cosine score for all of them.
    const hits = results.map(([doc]) => {
      const h = this.#held(doc.metadata, doc.pageContent);
      return { ...h.listed, score: cosineSimilarity(vector, h.embedding) };
    });
    return hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  protected async _close(): Promise<void> {
    this.#store = undefined;
  }
}

export function createLangChainConnector(options: LangChainConnectorOptions): LangChainConnector {
  return new LangChainConnector(options);
}

/**
 * The registry factory (`connector: { store: 'langchain', vectorStore, filters }` in a `.ts` /
 * `.mjs` ragfresh config; `store` names the package there, so the VectorStore, or a factory
 * returning one, is passed as `vectorStore`). `epoch` defaults to the file
 * `<dataDir>/langchain.epoch.json` (a relative path is relative to the config file's folder).
 * `namespaceStore` / `namespaceEpoch` are functions, as in the connector's options (a path
 * `namespaceEpoch` returns is relative to the config file's folder too). Unknown keys and wrong types are one INVALID_CONFIG line naming `connector.<key>`.
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  context: ConnectorFactoryContext,
): LangChainConnector {
  type Registry = Omit<LangChainConnectorOptions, 'store'> & {
    vectorStore: LangChainConnectorOptions['store'];
  };
  const spec = {
    vectorStore: 'any!',
    filters: 'any!',
    epoch: 'any',
    upsert: 'string',
    visibility: 'object',
    maxWriteBatch: 'integer',
    listLimit: 'integer',
    idForm: 'string',
    namespaceStore: 'any',
    namespaceEpoch: 'any',
  } as const;
  const { vectorStore, epoch, namespaceEpoch, ...given } = checkConnectorOptions<Registry>(
    'langchain',
    options,
    spec,
  );
  // A path `namespaceEpoch` returns is relative to the config's folder, as `epoch` is; a value
  // that is no function reaches the constructor, which refuses it.
  const relativeToConfig = (
    f: NonNullable<Registry['namespaceEpoch']>,
  ): NonNullable<Registry['namespaceEpoch']> =>
    typeof f !== 'function'
      ? f
      : (suffix) => {
          const e = f(suffix);
          return typeof e === 'string' ? resolveOptionPath(context, e) : e;
        };
  return buildConnector(
    'langchain',
    Object.keys(spec),
    () =>
      new LangChainConnector({
        ...given,
        store: vectorStore as LangChainConnectorOptions['store'],
        filters: given.filters as LangChainConnectorOptions['filters'],
        epoch:
          epoch === undefined
            ? resolvePath(context.dataDir, 'langchain.epoch.json')
            : typeof epoch === 'string'
              ? resolveOptionPath(context, epoch)
              : epoch,
        ...(namespaceEpoch === undefined
          ? {}
          : { namespaceEpoch: relativeToConfig(namespaceEpoch) }),
      }),
  );
}
