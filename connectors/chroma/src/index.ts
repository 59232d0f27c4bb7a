import { randomUUID } from 'node:crypto';
import {
  accessAsKeys,
  accessFromKeys,
  accessKey,
  buildConnector,
  Connector,
  type ConnectorCapabilities,
  type ConnectorFactoryContext,
  checkConnectorOptions,
  FIELDS,
  type FlatMetadata,
  isRagfreshError,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  RagfreshError,
  readerAccessTokens,
  type StoredChunk,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
} from '@ragfresh/core';
import {
  ChromaClient,
  type Collection,
  type EmbeddingFunction,
  type Metadata,
  type Where,
} from 'chromadb';

export interface ChromaConnectorOptions {
  /** Base URL of the Chroma server, e.g. `http://127.0.0.1:8000`. */
  readonly url: string;
  /** Collection holding the chunks (3-512 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends). */
  readonly collection: string;
  readonly tenant?: string;
  readonly database?: string;
  /** Extra HTTP headers (e.g. `x-chroma-token`). */
  readonly headers?: { readonly [name: string]: string };
  /** Chunks core sends per `_upsert` call; the hook splits further at the server's max batch size. */
  readonly maxWriteBatch?: number;
}

/** Marks a collection as written by ragfresh (collection metadata `rf_schema`). */
export const CHROMA_SCHEMA_MARK = 'ragfresh/1';
/** Suffix of the tiny collection that holds the published epoch. */
export const EPOCH_COLLECTION_SUFFIX = '__rf_epoch';
/** Claims kept in the epoch collection; older ones are pruned after each advance. */
const EPOCH_CLAIMS_KEPT = 64;
/** Upper bound of one HTTP write body, well below the server's payload limit. */
const MAX_REQUEST_BYTES = 8 * 1024 * 1024;
const PAGE = 1000;
/** Page of the metadata-only reads of the batch hooks: a batch of 100 documents in one `get`. */
const BATCH_PAGE = 10_000;

const COLLECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function chromaCapabilities(maxWriteBatch = 5000): ConnectorCapabilities {
  return {
    store: 'chroma',
    promotion: 'snapshot',
    flagPromotion: 'overlap',
    visibility: { mode: 'immediate' },
    maxWriteBatch,
    epochInStore: true,
    idForm: 'chunk-id',
    // Chroma has no conditional write: the base class reads the fence records before each
    // fenced write (check-then-write; see docs/connectors/chroma.md for the window).
    fencing: 'client',
    // Offset pages of a plain get (see _scan for what a concurrent delete can do to them).
    scan: true,
  };
}

/**
 * Stands in for an embedding function so the client never loads `@chroma-core/default-embed`
 * for a collection whose configuration names one; ragfresh always passes embeddings.
 */
const NO_EMBEDDING_FUNCTION: EmbeddingFunction = {
  name: 'ragfresh-explicit-embeddings',
  async generate(): Promise<number[][]> {
    throw new RagfreshError(
      'NOT_SUPPORTED',
      'ragfresh passes embeddings explicitly; Chroma must not embed text.',
      {
        scope: 'chroma',
      },
    );
  },
};

/**
 * Chroma metadata of a stored chunk. Chroma 1.0 servers refuse list values, so `rf_access` is
 * spelled as one boolean key per token (`accessAsKeys`) and gathered back on read.
 */
function chromaMetadata(meta: FlatMetadata): Metadata {
  return accessAsKeys(meta) as Metadata;
}

function fromChroma(meta: Metadata | null | undefined): FlatMetadata {
  return accessFromKeys(meta ?? {}) as FlatMetadata;
}

/** Chroma `where` for a ragfresh filter: clauses joined with `$and` (a single clause stands alone). */
export function chromaWhere(
  filter: QueryFilter | { documentId?: string; versionId?: string },
): Where | undefined {
  const clauses: Where[] = [];
  if ('view' in filter) {
    const view = filter.view;
    if (view.kind === 'epoch') {
      clauses.push({ [FIELDS.from]: { $lte: view.epoch } }, { [FIELDS.to]: { $gt: view.epoch } });
    } else if (view.kind === 'flag') {
      clauses.push({ [FIELDS.current]: { $eq: true } });
    }
    if (filter.sourceId !== undefined)
      clauses.push({ [FIELDS.sourceId]: { $eq: filter.sourceId } });
    if (filter.access !== undefined) {
      // One boolean key per token: any of the reader's keys set to true.
      const any = readerAccessTokens(filter.access).map(
        (t): Where => ({ [accessKey(t)]: { $eq: true } }),
      );
      clauses.push(any.length === 1 ? any[0]! : { $or: any });
    }
  }
  if (filter.documentId !== undefined)
    clauses.push({ [FIELDS.documentId]: { $eq: filter.documentId } });
  if (filter.versionId !== undefined)
    clauses.push({ [FIELDS.versionId]: { $eq: filter.versionId } });
  if (clauses.length === 0) return undefined;
  if (clauses.length === 1) return clauses[0];
  return { $and: clauses };
}

/**
 * Chroma `where` selecting exactly the listed (document, version) pairs. Not
 * `rf_doc $in docs AND rf_version $in versions`: that is the cross product, and a versionId is
 * a content hash, so two documents with the same text share one and would match each other's
 * pairs. One `$and` per document (`rf_version $in` its versions), joined by `$or`; Chroma wants
 * at least two entries in `$and`/`$or`, so a single document stands alone.
 */
export function chromaVersionsWhere(refs: readonly VersionRef[]): Where {
  const byDocument = new Map<string, string[]>();
  for (const r of refs) {
    const versions = byDocument.get(r.documentId) ?? [];
    versions.push(r.versionId);
    byDocument.set(r.documentId, versions);
  }
  const groups = [...byDocument].map(([documentId, versions]): Where => {
    const doc: Where = { [FIELDS.documentId]: { $eq: documentId } };
    const version: Where =
      versions.length === 1
        ? { [FIELDS.versionId]: { $eq: versions[0]! } }
        : { [FIELDS.versionId]: { $in: versions } };
    return { $and: [doc, version] };
  });
  if (groups.length === 0) throw new RangeError('chromaVersionsWhere needs at least one ref');
  return groups.length === 1 ? groups[0]! : { $or: groups };
}

function errorName(err: unknown): string {
  return typeof err === 'object' && err !== null && 'name' in err
    ? String((err as { name: unknown }).name)
    : '';
}

function versionKey(documentId: string, versionId: string): string {
  return `${documentId}\u0000${versionId}`;
}

function chunkBytes(c: StoredChunk): number {
  return (
    Buffer.byteLength(c.text, 'utf8') +
    Buffer.byteLength(JSON.stringify(c.metadata), 'utf8') +
    c.embedding.length * 12 +
    64
  );
}

/**
 * Chroma connector. Chunks live in one collection as ids + embeddings + documents + flat
 * metadatas (what LangChain's `Chroma` class reads); the published epoch lives in the
 * collection `<collection>__rf_epoch` as first-writer-wins claim records.
 */
export class ChromaConnector extends Connector {
  readonly #options: ChromaConnectorOptions;
  readonly #client: ChromaClient;
  #collection: Collection | undefined;
  #epochCollection: Collection | undefined;
  #serverMaxBatch = 1000;

  constructor(options: ChromaConnectorOptions) {
    super(chromaCapabilities(options.maxWriteBatch));
    if (
      typeof options.collection !== 'string' ||
      !COLLECTION_NAME.test(options.collection) ||
      options.collection.includes('..')
    ) {
      throw new RagfreshError(
        'INVALID_CONFIG',
        `collection name ${JSON.stringify(options.collection)} is invalid; use 3-512 characters of letters, digits, '.', '_', '-', starting and ending with a letter or digit.`,
        { scope: 'chroma' },
      );
    }
    let url: URL;
    try {
      url = new URL(options.url);
    } catch (cause) {
      throw new RagfreshError(
        'INVALID_CONFIG',
        `url ${JSON.stringify(options.url)} is not a URL; give e.g. http://127.0.0.1:8000.`,
        {
          scope: 'chroma',
          cause,
        },
      );
    }
    this.#options = options;
    const ssl = url.protocol === 'https:';
    this.#client = new ChromaClient({
      host: url.hostname,
      port: url.port === '' ? (ssl ? 443 : 80) : Number(url.port),
      ssl,
      ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
      ...(options.database === undefined ? {} : { database: options.database }),
      ...(options.headers === undefined ? {} : { headers: { ...options.headers } }),
    });
  }

  protected override _forNamespace(suffix: string): ChromaConnector {
    return new ChromaConnector({
      ...this.#options,
      collection: `${this.#options.collection}__${suffix}`,
    });
  }

  get collectionName(): string {
    return this.#options.collection;
  }

  get epochCollectionName(): string {
    return `${this.#options.collection}${EPOCH_COLLECTION_SUFFIX}`;
  }

  /** Runs one Chroma call, turning client errors into coded ones that name the store and the fix. */
  async #call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isRagfreshError(err)) throw err;
      if (errorName(err) === 'ChromaConnectionError') {
        throw this.error(
          'STORE_UNREACHABLE',
          `cannot reach the Chroma server at ${this.#options.url} (${what}); start it (chroma run --path DIR --port N) or fix the url option.`,
          err,
        );
      }
      const message = err instanceof Error ? err.message : String(err);
      throw this.error('STORE_REJECTED', `Chroma rejected ${what}: ${message.slice(0, 300)}`, err);
    }
  }

  #main(): Collection {
    if (this.#collection === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    return this.#collection;
  }

  #epochs(): Collection {
    if (this.#epochCollection === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    return this.#epochCollection;
  }

  async #getOrCreate(
    name: string,
    metadata: Metadata,
    space: boolean,
  ): Promise<{ collection: Collection; created: boolean }> {
    const get = () =>
      this.#client.getCollection({ name, embeddingFunction: NO_EMBEDDING_FUNCTION });
    try {
      return { collection: await this.#call(`opening collection ${name}`, get), created: false };
    } catch (err) {
      if (errorName((err as { cause?: unknown }).cause) !== 'ChromaNotFoundError') throw err;
    }
    try {
      const collection = await this.#call(`creating collection ${name}`, () =>
        this.#client.createCollection({
          name,
          // null: no server-side embedding function, and no attempt to load @chroma-core/default-embed.
          embeddingFunction: null,
          metadata: metadata as Record<string, string | number | boolean>,
          ...(space ? { configuration: { hnsw: { space: 'cosine' as const } } } : {}),
        }),
      );
      return { collection, created: true };
    } catch (err) {
      // Another process created it between our get and create.
      if (errorName((err as { cause?: unknown }).cause) !== 'ChromaUniqueError') throw err;
      return { collection: await this.#call(`opening collection ${name}`, get), created: false };
    }
  }

  protected async _open(options: OpenOptions): Promise<void> {
    const dims = options.dimensions;
    try {
      await this.#client.heartbeat();
    } catch (err) {
      // Nothing answers, or something that is not Chroma answers: either way no usable server.
      throw this.error(
        'STORE_UNREACHABLE',
        `no Chroma server answers the heartbeat at ${this.#options.url} (${errorName(err) || 'error'}); start it (chroma run --path DIR --port N) or fix the url option.`,
        err,
      );
    }
    try {
      this.#serverMaxBatch = await this.#client.getMaxBatchSize();
    } catch {
      // Servers without /pre-flight-checks: a batch size every Chroma release accepts.
      this.#serverMaxBatch = 1000;
    }
    const name = this.#options.collection;
    const { collection } = await this.#getOrCreate(
      name,
      { rf_schema: CHROMA_SCHEMA_MARK, rf_dimensions: dims },
      true,
    );
    const meta = collection.metadata ?? {};
    if (meta.rf_schema !== CHROMA_SCHEMA_MARK) {
      const count = await this.#call(`counting ${name}`, () => collection.count());
      if (count > 0) {
        throw this.error(
          'FOREIGN_DATA',
          `collection ${name} holds ${count} records not written by ragfresh (no rf_schema mark); choose another collection name, or delete it if it is disposable.`,
        );
      }
      // An empty collection someone created first (e.g. a LangChain reader): adopt it, keeping its metadata.
      await this.#call(`marking ${name}`, () =>
        collection.modify({
          metadata: {
            ...(meta as Record<string, string | number | boolean>),
            rf_schema: CHROMA_SCHEMA_MARK,
            rf_dimensions: dims,
          },
        }),
      );
    } else if (meta.rf_dimensions !== dims) {
      throw this.error(
        'DIMENSION_MISMATCH',
        `collection ${name} holds ${String(meta.rf_dimensions)}-dimension vectors, asked for ${dims}; use the embeddings the collection was built with, or a new collection.`,
      );
    }
    const sample = await this.#call(`reading ${name}`, () =>
      collection.get({ limit: 1, include: ['embeddings'] }),
    );
    const stored = sample.embeddings[0];
    if (stored !== undefined && stored.length !== dims) {
      throw this.error(
        'DIMENSION_MISMATCH',
        `collection ${name} holds ${stored.length}-dimension vectors, asked for ${dims}; use the embeddings the collection was built with, or a new collection.`,
      );
    }
    const epochName = this.epochCollectionName;
    const epochs = await this.#getOrCreate(epochName, { rf_epoch_of: name }, false);
    if (!epochs.created && epochs.collection.metadata?.rf_epoch_of !== name) {
      const count = await this.#call(`counting ${epochName}`, () => epochs.collection.count());
      if (count > 0) {
        throw this.error(
          'FOREIGN_DATA',
          `collection ${epochName} exists with ${count} records not written by ragfresh; ragfresh keeps the published epoch there. Rename or delete it, or choose another collection name.`,
        );
      }
      await this.#call(`marking ${epochName}`, () =>
        epochs.collection.modify({ metadata: { rf_epoch_of: name } }),
      );
    }
    this.#collection = collection;
    this.#epochCollection = epochs.collection;
  }

  #checkWellFormed(chunks: readonly StoredChunk[]): void {
    for (const c of chunks) {
      if (LONE_SURROGATE.test(c.id) || LONE_SURROGATE.test(c.text)) {
        throw this.error(
          'INVALID_METADATA',
          `chunk ${JSON.stringify(c.id)} has text with an unpaired UTF-16 surrogate, which Chroma cannot store; fix the text encoding upstream.`,
        );
      }
      for (const [key, value] of Object.entries(c.metadata)) {
        if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
          throw this.error(
            'INVALID_METADATA',
            `chunk ${c.id} metadata field ${JSON.stringify(key)} has an unpaired UTF-16 surrogate, which Chroma cannot store; fix the text encoding upstream.`,
          );
        }
      }
    }
  }

  protected async _upsert(chunks: readonly StoredChunk[]): Promise<void> {
    this.#checkWellFormed(chunks);
    const collection = this.#main();
    let batch: StoredChunk[] = [];
    let bytes = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const b = batch;
      batch = [];
      bytes = 0;
      await this.#call(`upserting ${b.length} chunks into ${this.#options.collection}`, () =>
        collection.upsert({
          ids: b.map((c) => c.id),
          embeddings: b.map((c) => [...c.embedding]),
          metadatas: b.map((c) => chromaMetadata(c.metadata)),
          documents: b.map((c) => c.text),
        }),
      );
    };
    for (const c of chunks) {
      const size = chunkBytes(c);
      if (
        batch.length >= this.#serverMaxBatch ||
        (batch.length > 0 && bytes + size > MAX_REQUEST_BYTES)
      )
        await flush();
      batch.push(c);
      bytes += size;
    }
    await flush();
  }

  async #ids(where: Where | undefined): Promise<string[]> {
    const collection = this.#main();
    const ids: string[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const page = await this.#call('listing ids', () =>
        collection.get({
          ...(where === undefined ? {} : { where }),
          include: [],
          limit: PAGE,
          offset,
        }),
      );
      ids.push(...page.ids);
      if (page.ids.length < PAGE) return ids;
    }
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
  ): Promise<void> {
    const collection = this.#main();
    const ids = await this.#ids(chromaWhere({ documentId, versionId }));
    const change: Record<string, number | boolean> = {};
    if (patch.to !== undefined) change[FIELDS.to] = patch.to;
    if (patch.current !== undefined) change[FIELDS.current] = patch.current;
    // Chroma's update merges metadata keys, so every other field stays as written.
    for (let i = 0; i < ids.length; i += this.#serverMaxBatch) {
      const part = ids.slice(i, i + this.#serverMaxBatch);
      await this.#call(`patching validity of ${documentId} ${versionId}`, () =>
        collection.update({ ids: part, metadatas: part.map(() => ({ ...change })) }),
      );
    }
  }

  /** Ids and metadata of every chunk `where` selects: one `get` per page of BATCH_PAGE. */
  async #metadataOf(
    what: string,
    where: Where,
  ): Promise<Array<{ id: string; metadata: Metadata }>> {
    const collection = this.#main();
    const out: Array<{ id: string; metadata: Metadata }> = [];
    for (let offset = 0; ; offset += BATCH_PAGE) {
      const page = await this.#call(what, () =>
        collection.get({ where, include: ['metadatas'], limit: BATCH_PAGE, offset }),
      );
      page.ids.forEach((id, i) => {
        out.push({ id, metadata: page.metadatas[i] ?? {} });
      });
      if (page.ids.length < BATCH_PAGE) return out;
    }
  }

  /**
   * One `get` of the versions' ids (exact pairs), then one `update` carrying each id's own
   * change (split only at the server's max batch size). Chroma's update merges metadata keys,
   * so, as in `_patchValidity`, nothing but rf_to / rf_current is rewritten.
   */
  protected override async _patchValidityMany(patches: readonly VersionPatch[]): Promise<void> {
    const collection = this.#main();
    const change = new Map<string, { order: number; metadata: Record<string, number | boolean> }>();
    patches.forEach((p, order) => {
      const c: Record<string, number | boolean> = {};
      if (p.patch.to !== undefined) c[FIELDS.to] = p.patch.to;
      if (p.patch.current !== undefined) c[FIELDS.current] = p.patch.current;
      change.set(versionKey(p.documentId, p.versionId), { order, metadata: c });
    });
    const rows = await this.#metadataOf(
      `listing ${patches.length} versions to patch`,
      chromaVersionsWhere(patches),
    );
    // In patch order, so the new version's `current: true` precedes the old one's `false`
    // even if the server applied one request record by record (flag readers: overlap).
    const updates = rows
      .map((r) => ({
        id: r.id,
        change: change.get(
          versionKey(String(r.metadata[FIELDS.documentId]), String(r.metadata[FIELDS.versionId])),
        ),
      }))
      .filter((u) => u.change !== undefined)
      .sort((a, b) => a.change!.order - b.change!.order);
    const ids = updates.map((u) => u.id);
    const metadatas = updates.map((u) => ({ ...u.change!.metadata }));
    for (let i = 0; i < ids.length; i += this.#serverMaxBatch) {
      const part = ids.slice(i, i + this.#serverMaxBatch);
      const partMetadatas = metadatas.slice(i, i + this.#serverMaxBatch);
      await this.#call(`patching validity of ${patches.length} versions`, () =>
        collection.update({ ids: part, metadatas: partMetadatas }),
      );
    }
  }

  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const counts = new Map<string, number>(
      refs.map((r) => [versionKey(r.documentId, r.versionId), 0]),
    );
    for (const r of await this.#metadataOf(
      `counting ${refs.length} versions`,
      chromaVersionsWhere(refs),
    )) {
      const key = versionKey(
        String(r.metadata[FIELDS.documentId]),
        String(r.metadata[FIELDS.versionId]),
      );
      const n = counts.get(key);
      if (n !== undefined) counts.set(key, n + 1);
    }
    return refs.map((r) => counts.get(versionKey(r.documentId, r.versionId)) ?? 0);
  }

  protected override async _deleteVersions(refs: readonly VersionRef[]): Promise<void> {
    await this.#call(`deleting ${refs.length} versions`, () =>
      this.#main().delete({ where: chromaVersionsWhere(refs) }),
    );
  }

  protected override async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    return this.#listWhere(
      `listing ${documentIds.length} documents`,
      documentIds.length === 1
        ? { [FIELDS.documentId]: { $eq: documentIds[0]! } }
        : { [FIELDS.documentId]: { $in: [...documentIds] } },
      withEmbeddings,
    );
  }

  /**
   * The claim that holds the published epoch (the largest `rf_epoch`), undefined while none
   * does (epoch 0). Its `rf_space` is the space the epoch record names.
   */
  async #head(): Promise<EpochClaim | undefined> {
    return headClaim(await this.#epochRecords('reading the published epoch'));
  }

  async #epochRecords(doing: string): Promise<Array<{ id: string; m: Metadata }>> {
    const got = await this.#call(doing, () => this.#epochs().get({ include: ['metadatas'] }));
    const out: Array<{ id: string; m: Metadata }> = [];
    got.ids.forEach((id, i) => {
      const m = got.metadatas[i];
      if (m) out.push({ id, m });
    });
    return out;
  }

  /** The newest fence: kept by `fence:<f>` records and by the claim that moved the epoch. */
  protected override async _readFence(): Promise<number> {
    let max = 0;
    for (const { m } of await this.#epochRecords('reading the fence')) {
      if (typeof m.rf_fence === 'number' && m.rf_fence > max) max = m.rf_fence;
    }
    return max;
  }

  /** Adds the record `fence:<f>` (fences are unique per grant), then drops older fence records. */
  protected override async _raiseFence(fence: number): Promise<void> {
    const held = await this._readFence();
    if (held > fence) throw this.staleFence(fence, held);
    await this.#call('raising the fence', () =>
      this.#epochs().add({
        ids: [`fence:${fence}`],
        embeddings: [[0]],
        metadatas: [{ rf_kind: 'fence', rf_fence: fence, rf_fenced_at: new Date().toISOString() }],
        documents: [`ragfresh publisher fence ${fence}`],
      }),
    );
    await this.#call('pruning old fences', () =>
      this.#epochs().delete({
        where: { $and: [{ rf_kind: { $eq: 'fence' } }, { rf_fence: { $lt: fence } }] },
      }),
    );
  }

  protected async _readEpoch(): Promise<number> {
    return (await this.#head())?.epoch ?? 0;
  }

  /** The `rf_space` of the claim that holds the published epoch. */
  protected override async _readEpochSpace(): Promise<string | undefined> {
    return (await this.#head())?.space;
  }

  /**
   * Compare-and-set via a claim record `claim:<expected>` written with `add`, which Chroma
   * ignores when the id exists: the first publisher to claim a given epoch wins, and reading
   * the claim back says who did. See docs/connectors/chroma.md for the residual window. The
   * claim carries the space (`rf_space`): the one given, else the one of the claim it
   * replaces, so the record that moves the epoch is the record that names its space.
   */
  protected async _advanceEpoch(
    expected: number,
    next: number,
    fence?: number,
    space?: string,
  ): Promise<void> {
    const epochs = this.#epochs();
    const head = await this.#head();
    const current = head?.epoch ?? 0;
    if (current !== expected) throw this.#conflict(current, expected);
    const named = space ?? head?.space;
    const id = `claim:${expected}`;
    const token = randomUUID();
    await this.#call('claiming the next epoch', () =>
      epochs.add({
        ids: [id],
        embeddings: [[0]],
        metadatas: [
          {
            rf_epoch_from: expected,
            rf_epoch: next,
            rf_token: token,
            rf_claimed_at: new Date().toISOString(),
            ...(fence === undefined ? {} : { rf_fence: fence }),
            ...(named === undefined ? {} : { rf_space: named }),
          },
        ],
        documents: [`ragfresh published epoch ${next}`],
      }),
    );
    const back = await this.#call('reading the epoch claim', () =>
      epochs.get({ ids: [id], include: ['metadatas'] }),
    );
    if (back.metadatas[0]?.rf_token !== token)
      throw this.#conflict(await this._readEpoch(), expected);
    const after = await this._readEpoch();
    // A claim on a long-pruned epoch can be accepted; it never becomes the maximum.
    if (after !== next) throw this.#conflict(after, expected);
    if (next > EPOCH_CLAIMS_KEPT) {
      await this.#call('pruning old epoch claims', () =>
        epochs.delete({ where: { rf_epoch: { $lt: next - EPOCH_CLAIMS_KEPT } } }),
      );
    }
  }

  #conflict(current: number, expected: number): RagfreshError {
    return this.error(
      'EPOCH_CONFLICT',
      `published epoch is ${current}, expected ${expected}; another publisher moved it. Re-read the epoch and retry.`,
    );
  }

  protected async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    const where = chromaWhere({ documentId, versionId });
    await this.#call(`deleting ${documentId} ${versionId}`, () =>
      this.#main().delete({ ...(where === undefined ? {} : { where }) }),
    );
  }

  protected async _deleteDocuments(documentIds: readonly string[]): Promise<void> {
    for (let i = 0; i < documentIds.length; i += 500) {
      const part = documentIds.slice(i, i + 500);
      await this.#call(`deleting ${part.length} documents`, () =>
        this.#main().delete({ where: { [FIELDS.documentId]: { $in: part } } }),
      );
    }
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const where = chromaWhere(versionId === undefined ? { documentId } : { documentId, versionId });
    return this.#listWhere(`listing ${documentId}`, where, withEmbeddings);
  }

  async #listWhere(
    what: string,
    where: Where | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const out: ListedChunk[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const page = await this.#page(what, where, withEmbeddings, offset, PAGE);
      out.push(...page);
      if (page.length < PAGE) return out;
    }
  }

  /** One `get` of `limit` chunks from `offset` (Chroma orders a get by its internal row id). */
  async #page(
    what: string,
    where: Where | undefined,
    withEmbeddings: boolean,
    offset: number,
    limit: number,
  ): Promise<ListedChunk[]> {
    const collection = this.#main();
    const page = await this.#call(what, () =>
      collection.get({
        ...(where === undefined ? {} : { where }),
        include: withEmbeddings
          ? ['documents', 'metadatas', 'embeddings']
          : ['documents', 'metadatas'],
        limit,
        offset,
      }),
    );
    return page.ids.map((id, i) => {
      const base = {
        id,
        text: page.documents[i] ?? '',
        metadata: fromChroma(page.metadatas[i]),
      };
      const embedding = page.embeddings[i];
      return withEmbeddings && embedding !== undefined
        ? { ...base, embedding: [...embedding] }
        : base;
    });
  }

  /**
   * Every chunk, page by page, by offset (the epoch record lives in its own collection). Chroma
   * has no keyset cursor: a chunk deleted during a scan shifts the later ones, so one may be
   * missed; `verify` and `recover` scan while no publisher writes (they hold the lease).
   */
  protected override async _scan(
    cursor: string | undefined,
    pageSize: number,
  ): Promise<{ chunks: ListedChunk[]; next?: string }> {
    const offset = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isSafeInteger(offset) || offset < 0)
      throw this.error('INVALID_ARGUMENT', `scan cursor must be an offset, got ${cursor}.`);
    const chunks = await this.#page('scanning the chunks', undefined, false, offset, pageSize);
    return chunks.length < pageSize ? { chunks } : { chunks, next: String(offset + pageSize) };
  }

  protected override async _count(documentId: string, versionId: string): Promise<number> {
    return (await this.#ids(chromaWhere({ documentId, versionId }))).length;
  }

  protected async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const where = chromaWhere(filter);
    const result = await this.#call('querying', () =>
      this.#main().query({
        queryEmbeddings: [[...vector]],
        nResults: k,
        ...(where === undefined ? {} : { where }),
        include: ['documents', 'metadatas', 'distances'],
      }),
    );
    const ids = result.ids[0] ?? [];
    return ids.map((id, i) => ({
      id,
      text: result.documents[0]?.[i] ?? '',
      metadata: fromChroma(result.metadatas[0]?.[i]),
      // Cosine distance is 1 - similarity; any Chroma distance grows with dissimilarity.
      score: 1 - (result.distances[0]?.[i] ?? Number.POSITIVE_INFINITY),
    }));
  }

  /** Deletes the collection and `<collection>__rf_epoch` (a collection already gone is fine). */
  protected override async _dropNamespace(): Promise<void> {
    for (const name of [this.collectionName, this.epochCollectionName])
      await this.#call(`deleting collection ${name}`, async () => {
        try {
          await this.#client.deleteCollection({ name });
        } catch (err) {
          if (errorName(err) !== 'ChromaNotFoundError') throw err;
        }
      });
  }

  protected async _close(): Promise<void> {
    this.#collection = undefined;
    this.#epochCollection = undefined;
  }
}

/** JSON-options factory used by `ConnectorSpec` (child processes). */
export function createChromaConnector(options: ChromaConnectorOptions): ChromaConnector {
  return new ChromaConnector(options);
}

/**
 * The `where` filter a plain Chroma reader (e.g. LangChain's `Chroma` class) passes to see the
 * snapshot view of published epoch `epoch`: `rf_from <= epoch AND rf_to > epoch`.
 */
export function epochViewWhere(epoch: number): Where {
  return chromaWhere({ view: { kind: 'epoch', epoch } })!;
}

/** The `where` filter for readers that can only add a fixed filter (`overlap` guarantee). */
export const CURRENT_FLAG_WHERE: Where = Object.freeze({
  [FIELDS.current]: { $eq: true },
}) as Where;

/**
 * Reads the published epoch of `collection` the way any reader can: the largest `rf_epoch`
 * among the records of `<collection>__rf_epoch` (0 when there are none).
 */
export async function readChromaEpoch(client: ChromaClient, collection: string): Promise<number> {
  let epochs: Collection;
  try {
    epochs = await client.getCollection({
      name: `${collection}${EPOCH_COLLECTION_SUFFIX}`,
      embeddingFunction: NO_EMBEDDING_FUNCTION,
    });
  } catch (err) {
    if (errorName(err) === 'ChromaNotFoundError') return 0;
    throw err;
  }
  const got = await epochs.get({ include: ['metadatas'] });
  return headClaim(got.metadatas.map((m) => ({ m })))?.epoch ?? 0;
}

interface EpochClaim {
  readonly epoch: number;
  readonly space?: string;
}

/**
 * Of the records of an epoch collection, the claim with the largest `rf_epoch` (fence records
 * have none); undefined when there is none. The first one wins a tie, which no accepted claim
 * makes (a stray claim on a pruned epoch stays below the maximum).
 */
function headClaim(records: ReadonlyArray<{ m: Metadata | null }>): EpochClaim | undefined {
  let head: EpochClaim | undefined;
  for (const { m } of records) {
    const epoch = m?.rf_epoch;
    if (typeof epoch !== 'number' || (head !== undefined && epoch <= head.epoch)) continue;
    const space = m?.rf_space;
    head = { epoch, ...(typeof space === 'string' && space !== '' ? { space } : {}) };
  }
  return head;
}

/**
 * The registry factory (`connector: { store: 'chroma', ...options }` in a ragfresh config):
 * `url` is required, `collection` defaults to `ragfresh`. Unknown keys and wrong types are one
 * INVALID_CONFIG line naming `connector.<key>`.
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  _context: ConnectorFactoryContext,
): ChromaConnector {
  const spec = {
    url: 'string!',
    collection: 'string',
    tenant: 'string',
    database: 'string',
    headers: 'object',
    maxWriteBatch: 'integer',
  } as const;
  const given = checkConnectorOptions<ChromaConnectorOptions>('chroma', options, spec);
  return buildConnector(
    'chroma',
    Object.keys(spec),
    () =>
      new ChromaConnector({
        ...given,
        url: given.url as string,
        collection: given.collection ?? 'ragfresh',
      }),
  );
}
