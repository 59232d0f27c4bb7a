import { randomUUID } from 'node:crypto';
import { QdrantClient, type Schemas } from '@qdrant/js-client-rest';
import {
  buildConnector,
  Connector,
  type ConnectorCapabilities,
  type ConnectorFactoryContext,
  checkConnectorOptions,
  chunkUuid,
  type FailureClass,
  FIELDS,
  type FlatMetadata,
  groupPatchesByValue,
  isNetworkError,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  RAGFRESH_UUID_NAMESPACE,
  RagfreshError,
  type RetryPolicy,
  readerAccessTokens,
  retryAfterMs,
  type StoredChunk,
  uuidV5,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
  type ViewSelector,
  withRetry,
} from '@ragfresh/core';

/** Payload key holding the chunk text (LangChain `QdrantVectorStore` default `contentPayloadKey`). */
export const CONTENT_KEY = 'content';
/** Payload key holding flat chunk metadata (LangChain default `metadataPayloadKey`). */
export const METADATA_KEY = 'metadata';

/**
 * Reserved point holding the published epoch. Its payload has no `metadata` object, so every
 * view filter (`metadata.rf_from` / `metadata.rf_to` ranges, `metadata.rf_current`) excludes it.
 */
export const EPOCH_POINT_ID = uuidV5('ragfresh:epoch-pointer', RAGFRESH_UUID_NAMESPACE);
/** Payload key of the sentinel that marks it (`rf_sentinel: 'epoch'`). */
export const EPOCH_SENTINEL_KEY = 'rf_sentinel';
export const EPOCH_VALUE_KEY = 'rf_epoch';
/** Payload key of the claim token the winning compare-and-set writes beside the epoch. */
export const EPOCH_TOKEN_KEY = 'rf_epoch_token';
/** Pointer payload key of the newest publisher fence (absent: none raised yet). */
export const EPOCH_FENCE_KEY = 'rf_fence';
/** Payload key of the embedding space the last move that named one published in. */
export const EPOCH_SPACE_KEY = 'rf_space';
/**
 * Oldest server this connector runs against: `update_mode` (the insert-only pointer creation)
 * exists from 1.17; an older server ignores the unknown field and overwrites (see
 * docs/connectors/qdrant.md).
 */
export const MIN_SERVER_VERSION = '1.17.0';

export interface QdrantConnectorOptions {
  /** Base URL of the Qdrant REST API, e.g. `http://127.0.0.1:6333`. */
  readonly url: string;
  /** Collection (or alias) name. */
  readonly collection: string;
  readonly apiKey?: string;
  /** Client-side timeout per request, ms (default 30 000). */
  readonly timeoutMs?: number;
  readonly retry?: RetryPolicy;
  /** Points per upsert request (default 256). */
  readonly maxWriteBatch?: number;
  /** Epoch the pointer starts at when this connector creates it (blue/green rebuilds). */
  readonly initialEpoch?: number;
  /**
   * Server-side wait per write, whole seconds (the `timeout` query parameter). With it, Qdrant may
   * answer `status: wait_timeout` (accepted, not yet applied); the connector then retries the
   * idempotent write until it reports `completed`. Default: none (the server then answers 408).
   */
  readonly writeTimeoutSeconds?: number;
  /**
   * Strict-mode settings for a collection `open` creates, as Qdrant Cloud sets them by
   * default (`{ enabled: true, unindexed_filtering_retrieve: false, unindexed_filtering_update: false }`).
   * Existing collections keep their own. Default: none.
   */
  readonly strictMode?: Schemas['StrictModeConfig'];
}

const meta = (field: string) => `${METADATA_KEY}.${field}`;

/** Indexed payload fields and their index types. */
export const PAYLOAD_INDEXES: ReadonlyArray<readonly [string, 'keyword' | 'integer' | 'bool']> = [
  [meta(FIELDS.documentId), 'keyword'],
  [meta(FIELDS.versionId), 'keyword'],
  [meta(FIELDS.sourceId), 'keyword'],
  // A keyword index on an array field indexes each entry: the access filter's `match.any`.
  [meta(FIELDS.access), 'keyword'],
  [meta(FIELDS.from), 'integer'],
  [meta(FIELDS.to), 'integer'],
  [meta(FIELDS.current), 'bool'],
  // The epoch compare-and-set filters on it: strict mode refuses unindexed filtered updates.
  [EPOCH_VALUE_KEY, 'integer'],
  // So do the fence raise and the fenced epoch move.
  [EPOCH_FENCE_KEY, 'integer'],
];

type Condition = Schemas['Condition'];
type Filter = Schemas['Filter'];

/** Matches a pointer that holds a fence newer than `fence` (absent: no fence yet). */
function newerFence(fence: number): Condition {
  return { key: EPOCH_FENCE_KEY, range: { gt: fence } };
}

/** Qdrant filter of a view: the documented reader filters (see docs/connectors/qdrant.md). */
export function qdrantViewFilter(view: ViewSelector): { must: Condition[]; must_not: Condition[] } {
  if (view.kind === 'epoch') {
    return {
      must: [
        { key: meta(FIELDS.from), range: { lte: view.epoch } },
        { key: meta(FIELDS.to), range: { gt: view.epoch } },
      ],
      must_not: [],
    };
  }
  if (view.kind === 'flag')
    return { must: [{ key: meta(FIELDS.current), match: { value: true } }], must_not: [] };
  return { must: [], must_not: [{ has_id: [EPOCH_POINT_ID] }] };
}

function scopeFilter(filter: Omit<QueryFilter, 'view'> & { view?: ViewSelector }): Filter {
  const view = qdrantViewFilter(filter.view ?? { kind: 'all' });
  const must: Condition[] = [...view.must];
  if (filter.documentId !== undefined)
    must.push({ key: meta(FIELDS.documentId), match: { value: filter.documentId } });
  if (filter.versionId !== undefined)
    must.push({ key: meta(FIELDS.versionId), match: { value: filter.versionId } });
  if (filter.sourceId !== undefined)
    must.push({ key: meta(FIELDS.sourceId), match: { value: filter.sourceId } });
  // On an array payload, `match.any` holds when any entry equals one of the values.
  if (filter.access !== undefined)
    must.push({ key: meta(FIELDS.access), match: { any: readerAccessTokens(filter.access) } });
  return view.must_not.length > 0 ? { must, must_not: view.must_not } : { must };
}

function statusOf(err: unknown): number | undefined {
  const s = (err as { status?: unknown } | null)?.status;
  return typeof s === 'number' ? s : undefined;
}

/** Retry classification for `@qdrant/js-client-rest` failures. */
export function classifyQdrantError(err: unknown): FailureClass {
  if (err instanceof Error && err.name === 'QdrantClientResourceExhaustedError') {
    const seconds = (err as { retry_after?: unknown }).retry_after;
    return {
      retry: true,
      reason: '429',
      ...(typeof seconds === 'number' ? { afterMs: seconds * 1000 } : {}),
    };
  }
  if (err instanceof Error && err.name === 'QdrantClientTimeoutError')
    return { retry: true, reason: 'timeout' };
  if (err instanceof WaitTimeout) return { retry: true, reason: 'wait_timeout' };
  const status = statusOf(err);
  // 408: the server gave up waiting for the operation (StorageError::Timeout); it is retried
  // like a client timeout, every ragfresh write being idempotent.
  if (status === 408) return { retry: true, reason: 'HTTP 408' };
  if (status === 429) {
    const h = (err as { headers?: Headers }).headers;
    const after = retryAfterMs(h?.get?.('retry-after'));
    return { retry: true, reason: '429', ...(after === undefined ? {} : { afterMs: after }) };
  }
  if (status !== undefined && status >= 500) return { retry: true, reason: `HTTP ${status}` };
  if (
    err instanceof Error &&
    err.name === 'QdrantClientUnexpectedResponseError' &&
    /Response: 5\d\d/.test(err.message)
  ) {
    return { retry: true, reason: 'HTTP 5xx' };
  }
  if (isNetworkError(err)) return { retry: true, reason: 'connection lost' };
  return { retry: false };
}

/** A write the server accepted but had not applied when its `timeout` ran out. */
class WaitTimeout extends Error {
  constructor(what: string) {
    super(`${what}: the server answered status wait_timeout (accepted, not yet applied)`);
    this.name = 'WaitTimeout';
  }
}

/** `major.minor.patch` ≥ `floor`. Unparseable versions are treated as too old. */
export function versionAtLeast(version: string, floor: string): boolean {
  const parse = (v: string) => /^v?(\d+)\.(\d+)\.(\d+)/.exec(v)?.slice(1).map(Number);
  const a = parse(version);
  const b = parse(floor)!;
  if (a === undefined) return false;
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! > b[i]!;
  return true;
}

/** One filter matching every chunk of any of the given versions (exact (document, version) pairs). */
export function versionsFilter(refs: readonly VersionRef[]): Filter {
  if (refs.length === 1) return scopeFilter(refs[0]!);
  return {
    should: refs.map((r) => ({
      must: [
        { key: meta(FIELDS.documentId), match: { value: r.documentId } },
        { key: meta(FIELDS.versionId), match: { value: r.versionId } },
      ],
    })),
  };
}

function errorText(err: unknown): string {
  const data = (err as { data?: { status?: { error?: unknown } } } | null)?.data;
  const detail = data?.status?.error;
  if (typeof detail === 'string') return detail;
  return err instanceof Error ? err.message : String(err);
}

type Payload = { [CONTENT_KEY]?: unknown; [METADATA_KEY]?: unknown; [key: string]: unknown };

/** A stored point as ragfresh lists it: `id` is the point id (UUID v5), `rf_chunk` the readable id. */
function toListed(
  pointId: unknown,
  payload: Payload | null | undefined,
  vector: unknown,
): ListedChunk {
  const metadata = (payload?.[METADATA_KEY] ?? {}) as FlatMetadata;
  const text = typeof payload?.[CONTENT_KEY] === 'string' ? (payload[CONTENT_KEY] as string) : '';
  if (typeof metadata[FIELDS.chunkId] !== 'string') {
    throw new RagfreshError(
      'FOREIGN_DATA',
      `point ${String(pointId)} lacks ${METADATA_KEY}.${FIELDS.chunkId}; the collection holds data not written by ragfresh.`,
      { scope: 'qdrant' },
    );
  }
  const out: ListedChunk = { id: String(pointId), text, metadata };
  return Array.isArray(vector) ? { ...out, embedding: vector as number[] } : out;
}

/**
 * Qdrant connector. Points are keyed by the UUID v5 of the chunk id (`chunkUuid`), with the
 * readable chunk id in `metadata.rf_chunk`; payload `{ content, metadata }` is what LangChain's
 * QdrantVectorStore reads. Every write passes `wait: true`, so an acknowledged write is
 * searchable (visibility `immediate`). The published epoch lives in a sentinel point; its
 * compare-and-set is a `set_payload` filtered on the expected value, read back.
 */
export class QdrantConnector extends Connector {
  readonly client: QdrantClient;
  readonly collection: string;
  readonly #options: QdrantConnectorOptions;
  readonly #retry: RetryPolicy;
  readonly #initialEpoch: number;
  readonly #writeTimeout: number | undefined;
  readonly #strictMode: Schemas['StrictModeConfig'] | undefined;
  /** Server version read at open (`GET /`). */
  serverVersion: string | undefined;

  constructor(options: QdrantConnectorOptions) {
    const batch = options.maxWriteBatch ?? 256;
    const capabilities: ConnectorCapabilities = {
      store: 'qdrant',
      promotion: 'snapshot',
      flagPromotion: 'overlap',
      visibility: { mode: 'immediate' },
      maxWriteBatch: batch,
      epochInStore: true,
      idForm: 'uuid',
      // The pointer keeps the fence (raised and moved by filtered writes); chunk writes have
      // no condition on it, so the base class checks it before each one.
      fencing: 'client',
      // A scroll by point id (a keyset cursor: writes during a scan never shift it).
      scan: true,
    };
    super(capabilities);
    if (typeof options.url !== 'string' || !/^https?:\/\//.test(options.url)) {
      throw this.error(
        'INVALID_CONFIG',
        `url must be an http(s) URL of the Qdrant REST API, got ${JSON.stringify(options.url)}.`,
      );
    }
    if (typeof options.collection !== 'string' || options.collection === '') {
      throw this.error('INVALID_CONFIG', 'collection must be a non-empty string.');
    }
    this.collection = options.collection;
    this.#options = options;
    this.#retry = options.retry ?? {};
    this.#initialEpoch = options.initialEpoch ?? 0;
    const wt = options.writeTimeoutSeconds;
    if (wt !== undefined && !(Number.isSafeInteger(wt) && wt >= 1)) {
      throw this.error(
        'INVALID_CONFIG',
        `writeTimeoutSeconds must be a whole number of seconds ≥ 1 (Qdrant's timeout parameter), got ${wt}.`,
      );
    }
    this.#writeTimeout = wt;
    this.#strictMode = options.strictMode;
    this.client = new QdrantClient({
      url: options.url,
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
      timeout: options.timeoutMs ?? 30_000,
      checkCompatibility: false,
    });
  }
  /** A collection of its own beside this one: `<collection>__<suffix>` on the same server. */
  protected override _forNamespace(suffix: string): QdrantConnector {
    return new QdrantConnector({ ...this.#options, collection: `${this.collection}__${suffix}` });
  }

  /** Runs one idempotent client call with retries; a refusal becomes STORE_REJECTED. */
  async call<T>(what: string, op: (client: QdrantClient) => Promise<T>): Promise<T> {
    try {
      return await withRetry(this.store, what, this.#retry, classifyQdrantError, () =>
        op(this.client),
      );
    } catch (err) {
      if (err instanceof RagfreshError) throw err;
      const status = statusOf(err);
      if (status === 404) throw this.error('NOT_FOUND', `${what}: ${errorText(err)}`, err);
      throw this.error(
        'STORE_REJECTED',
        `${what} was refused${status ? ` (HTTP ${status})` : ''}: ${errorText(err)}`,
        err,
      );
    }
  }

  /**
   * Runs one idempotent write. A `wait_timeout` answer (accepted, not applied yet) is retried
   * like a timeout: the write is not visible, so the call must not return yet.
   */
  async write(
    what: string,
    op: (
      client: QdrantClient,
      wait: { wait: true; timeout?: number },
    ) => Promise<{ status?: string }>,
  ): Promise<void> {
    const wait =
      this.#writeTimeout === undefined
        ? { wait: true as const }
        : { wait: true as const, timeout: this.#writeTimeout };
    await this.call(what, async (c) => {
      const r = await op(c, wait);
      if (r.status === 'wait_timeout') throw new WaitTimeout(what);
      return r;
    });
  }

  async #checkServerVersion(): Promise<void> {
    const info = await this.call('read server version', (c) => c.versionInfo());
    this.serverVersion = info.version;
    if (!versionAtLeast(info.version, MIN_SERVER_VERSION)) {
      throw this.error(
        'NOT_SUPPORTED',
        `Qdrant server ${info.version} is older than ${MIN_SERVER_VERSION}: it ignores update_mode, so creating the epoch pointer could overwrite one another process advanced. Upgrade the server to ${MIN_SERVER_VERSION} or later.`,
      );
    }
  }

  protected async _open(options: OpenOptions): Promise<void> {
    await this.#checkServerVersion();
    const { exists } = await this.call('check collection', (c) =>
      c.collectionExists(this.collection),
    );
    if (!exists) {
      try {
        await this.call('create collection', (c) =>
          c.createCollection(this.collection, {
            vectors: { size: options.dimensions, distance: 'Cosine' },
            ...(this.#strictMode === undefined ? {} : { strict_mode_config: this.#strictMode }),
          }),
        );
      } catch (err) {
        // Another process may have created it between the check and the create.
        const again = await this.call('check collection', (c) =>
          c.collectionExists(this.collection),
        );
        if (!again.exists) throw err;
      }
    }
    const info = await this.call('read collection', (c) => c.getCollection(this.collection));
    const vectors = info.config.params.vectors as { size?: number; distance?: string } | undefined;
    if (vectors?.size === undefined) {
      throw this.error(
        'FOREIGN_DATA',
        `collection ${this.collection} uses named vectors; ragfresh needs one unnamed vector.`,
      );
    }
    if (vectors.size !== options.dimensions) {
      throw this.error(
        'DIMENSION_MISMATCH',
        `collection ${this.collection} holds ${vectors.size}-dimension vectors, asked for ${options.dimensions}; use the embeddings it was built with or a new collection.`,
      );
    }
    for (const [field, schema] of PAYLOAD_INDEXES) {
      if (info.payload_schema?.[field] !== undefined) continue;
      await this.write(`create payload index ${field}`, (c, wait) =>
        c.createPayloadIndex(this.collection, { field_name: field, field_schema: schema, ...wait }),
      );
    }
    const [existing] = await this.call('read epoch pointer', (c) =>
      c.retrieve(this.collection, {
        ids: [EPOCH_POINT_ID],
        with_payload: false,
        with_vector: false,
      }),
    );
    if (existing !== undefined) return;
    // insert_only: a pointer another process created meanwhile (and maybe advanced) is kept.
    const pointer = new Array<number>(options.dimensions).fill(0);
    pointer[0] = 1;
    await this.write('create epoch pointer', (c, wait) =>
      c.upsert(this.collection, {
        ...wait,
        ordering: 'strong',
        update_mode: 'insert_only',
        points: [
          {
            id: EPOCH_POINT_ID,
            vector: pointer,
            payload: { [EPOCH_SENTINEL_KEY]: 'epoch', [EPOCH_VALUE_KEY]: this.#initialEpoch },
          },
        ],
      }),
    );
  }

  protected async _upsert(chunks: readonly StoredChunk[]): Promise<void> {
    const points = chunks.map((c) => ({
      id: chunkUuid(c.id),
      vector: [...c.embedding],
      payload: { [CONTENT_KEY]: c.text, [METADATA_KEY]: { ...c.metadata, [FIELDS.chunkId]: c.id } },
    }));
    await this.write(`upsert ${points.length} points`, (c, wait) =>
      c.upsert(this.collection, { ...wait, points }),
    );
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
  ): Promise<void> {
    await this.#patch([{ documentId, versionId }], patch);
  }

  /** One `set_payload` for every version given, all with the same patch. */
  async #patch(refs: readonly VersionRef[], patch: ValidityPatch): Promise<void> {
    const payload: Record<string, number | boolean> = {};
    if (patch.to !== undefined) payload[FIELDS.to] = patch.to;
    if (patch.current !== undefined) payload[FIELDS.current] = patch.current;
    // key: 'metadata' merges into the nested object, so no other metadata field is touched.
    await this.write(`patch validity of ${refs.length} version(s)`, (c, wait) =>
      c.setPayload(this.collection, {
        ...wait,
        key: METADATA_KEY,
        payload,
        filter: versionsFilter(refs),
      }),
    );
  }

  /** Versions sharing one patch value go out in one filtered `set_payload`. */
  protected override async _patchValidityMany(patches: readonly VersionPatch[]): Promise<void> {
    for (const g of groupPatchesByValue(patches)) await this.#patch(g.refs, g.patch);
  }

  protected async _readEpoch(): Promise<number> {
    return this.#epochOf(await this.#readPointer());
  }

  /**
   * Reads the pointer. `consistency: 'all'` asks every active replica and returns the point only
   * when all of them hold it equal (lib/collection/src/shards/resolve.rs).
   */
  async #readPointer(
    consistency?: 'all',
  ): Promise<{ payload?: Record<string, unknown> | null } | undefined> {
    const [point] = await this.call('read epoch', (c) =>
      c.retrieve(this.collection, {
        ids: [EPOCH_POINT_ID],
        with_payload: true,
        with_vector: false,
        ...(consistency === undefined ? {} : { consistency }),
      }),
    );
    return point as { payload?: Record<string, unknown> | null } | undefined;
  }

  #epochOf(point: { payload?: Record<string, unknown> | null } | undefined): number {
    const value = point?.payload?.[EPOCH_VALUE_KEY];
    if (point === undefined)
      throw this.error(
        'STATE_CORRUPT',
        'the epoch pointer point is missing; reopen the connector to recreate it.',
      );
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
      throw this.error(
        'STATE_CORRUPT',
        `the epoch pointer holds ${JSON.stringify(value)}, not an integer.`,
      );
    }
    return value;
  }

  /**
   * Exclusive compare-and-set. Both racers of one move write the same `next`, so reading the
   * value back proves nothing: the filtered `set_payload` also writes a token of this call, and
   * only the call whose write matched `rf_epoch == expected` can leave its token there (Qdrant
   * applies the filtered update of one point under the shard's update lock, in WAL order). A
   * retry after a lost answer matches nothing and still reads back its own token.
   *
   * With replicas, the default `weak` ordering lets each replica apply two racers' writes in
   * its own order, and each racer read back its own token from its own replica: both win.
   * `ordering: 'strong'` sends the write through the leader replica, which applies writes one at
   * a time to every replica in one order; the read-back asks every replica
   * (`consistency: 'all'`), so it cannot see a replica the other racer won on.
   */
  protected async _advanceEpoch(
    expected: number,
    next: number,
    fence?: number,
    space?: string,
  ): Promise<void> {
    const token = randomUUID();
    // The space rides in the same filtered set_payload as the epoch (set_payload merges, so a
    // move naming none leaves the stored one); the token read back proves both landed.
    await this.write('advance epoch', (c, wait) =>
      c.setPayload(this.collection, {
        ...wait,
        ordering: 'strong',
        payload: {
          [EPOCH_VALUE_KEY]: next,
          [EPOCH_TOKEN_KEY]: token,
          ...(fence === undefined ? {} : { [EPOCH_FENCE_KEY]: fence }),
          ...(space === undefined ? {} : { [EPOCH_SPACE_KEY]: space }),
        },
        filter: {
          must: [
            { has_id: [EPOCH_POINT_ID] },
            { key: EPOCH_VALUE_KEY, match: { value: expected } },
          ],
          ...(fence === undefined ? {} : { must_not: [newerFence(fence)] }),
        },
      }),
    );
    const pointer = await this.#readPointer('all');
    if (pointer === undefined) {
      this.#epochOf(await this.#readPointer()); // missing everywhere: STATE_CORRUPT
      throw this.error(
        'EPOCH_CONFLICT',
        `expected epoch ${expected} to move to ${next}, but the replicas do not hold the same epoch pointer; another publisher's weakly ordered write may have reached them in another order. Check the collection's replicas.`,
      );
    }
    const now = this.#epochOf(pointer);
    if (now !== next || pointer?.payload?.[EPOCH_TOKEN_KEY] !== token) {
      const held = this.#fenceOf(pointer);
      if (fence !== undefined && held > fence) throw this.staleFence(fence, held);
      throw this.error(
        'EPOCH_CONFLICT',
        `expected epoch ${expected} to move to ${next}, but the store holds ${now}${now === next ? ' written by another publisher' : ''}; another publisher moved it.`,
      );
    }
  }

  #fenceOf(point: { payload?: Record<string, unknown> | null } | undefined): number {
    const value = point?.payload?.[EPOCH_FENCE_KEY];
    return typeof value === 'number' ? value : 0;
  }

  protected override async _readFence(): Promise<number> {
    return this.#fenceOf(await this.#readPointer());
  }

  /** The pointer's `rf_space`, undefined until a move names one. */
  protected override async _readEpochSpace(): Promise<string | undefined> {
    const space = (await this.#readPointer())?.payload?.[EPOCH_SPACE_KEY];
    return typeof space === 'string' && space !== '' ? space : undefined;
  }

  /** A filtered write on the pointer (it matches only while no newer fence is there), read back. */
  protected override async _raiseFence(fence: number): Promise<void> {
    await this.write('raise fence', (c, wait) =>
      c.setPayload(this.collection, {
        ...wait,
        ordering: 'strong',
        payload: { [EPOCH_FENCE_KEY]: fence },
        filter: { must: [{ has_id: [EPOCH_POINT_ID] }], must_not: [newerFence(fence)] },
      }),
    );
    const held = this.#fenceOf(await this.#readPointer('all'));
    if (held > fence) throw this.staleFence(fence, held);
    if (held < fence)
      throw this.error(
        'STORE_REJECTED',
        `raising the fence to ${fence} did not reach every replica of the epoch pointer (it reads ${held}); check the collection's replicas and retry.`,
      );
  }

  protected async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    await this.#deleteWhere('delete version', scopeFilter({ documentId, versionId }));
  }

  protected async _deleteDocuments(documentIds: readonly string[]): Promise<void> {
    for (let i = 0; i < documentIds.length; i += 100) {
      const any = documentIds.slice(i, i + 100);
      await this.#deleteWhere('delete documents', {
        must: [{ key: meta(FIELDS.documentId), match: { any } }],
      });
    }
  }

  async #deleteWhere(what: string, filter: Filter): Promise<void> {
    await this.write(what, (c, wait) => c.delete(this.collection, { ...wait, filter }));
  }

  /** One filtered delete for up to MAX_BATCH_REFS versions. */
  protected override async _deleteVersions(refs: readonly VersionRef[]): Promise<void> {
    await this.#deleteWhere(`delete ${refs.length} version(s)`, versionsFilter(refs));
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    return this.#scroll(
      scopeFilter({ documentId, ...(versionId === undefined ? {} : { versionId }) }),
      withEmbeddings,
    );
  }

  /** One paged scroll over every chunk of the given documents (`match.any`). */
  protected override async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    return this.#scroll(
      { must: [{ key: meta(FIELDS.documentId), match: { any: [...documentIds] } }] },
      withEmbeddings,
    );
  }

  /** Exact counts of many versions from one paged scroll of their (document, version) keys. */
  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    if (refs.length === 1) return [await this._count(refs[0]!.documentId, refs[0]!.versionId)];
    const counts = new Map<string, number>();
    // Only the metadata object travels (no text, no vector): a count, not a listing.
    for (const c of await this.#scroll(versionsFilter(refs), false, [METADATA_KEY])) {
      const key = `${c.metadata[FIELDS.documentId]}\u0000${c.metadata[FIELDS.versionId]}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return refs.map((r) => counts.get(`${r.documentId}\u0000${r.versionId}`) ?? 0);
  }

  async #scroll(
    filter: Filter,
    withEmbeddings: boolean,
    withPayload: true | string[] = true,
  ): Promise<ListedChunk[]> {
    const out: ListedChunk[] = [];
    let offset: Schemas['ExtendedPointId'] | undefined;
    for (;;) {
      const page = await this.#scrollPage(filter, withEmbeddings, withPayload, 256, offset);
      out.push(...page.chunks);
      if (page.next === undefined) break;
      offset = page.next;
    }
    return out;
  }

  /** One scroll request: `limit` points from `offset` (a point id) in id order. */
  async #scrollPage(
    filter: Filter,
    withEmbeddings: boolean,
    withPayload: true | string[],
    limit: number,
    offset: Schemas['ExtendedPointId'] | undefined,
  ): Promise<{ chunks: ListedChunk[]; next?: Schemas['ExtendedPointId'] }> {
    const page = await this.call('list chunks', (c) =>
      c.scroll(this.collection, {
        filter,
        limit,
        with_payload: withPayload,
        with_vector: withEmbeddings,
        ...(offset === undefined ? {} : { offset }),
      }),
    );
    const chunks = page.points.map((p) => toListed(p.id, p.payload as Payload, p.vector));
    const next = page.next_page_offset;
    return typeof next === 'string' || typeof next === 'number' ? { chunks, next } : { chunks };
  }

  /** Every chunk (not the epoch pointer), page by page; the cursor is Qdrant's next point id. */
  protected override async _scan(
    cursor: string | undefined,
    pageSize: number,
  ): Promise<{ chunks: ListedChunk[]; next?: string }> {
    let offset: Schemas['ExtendedPointId'] | undefined;
    if (cursor !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(cursor);
      } catch {
        parsed = undefined;
      }
      if (typeof parsed !== 'string' && typeof parsed !== 'number')
        throw this.error('INVALID_ARGUMENT', `scan cursor must be a point id, got ${cursor}.`);
      offset = parsed;
    }
    const page = await this.#scrollPage(scopeFilter({}), false, true, pageSize, offset);
    return page.next === undefined
      ? { chunks: page.chunks }
      : { chunks: page.chunks, next: JSON.stringify(page.next) };
  }

  protected override async _count(documentId: string, versionId: string): Promise<number> {
    const r = await this.call('count chunks', (c) =>
      c.count(this.collection, { exact: true, filter: scopeFilter({ documentId, versionId }) }),
    );
    return r.count;
  }

  protected async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const r = await this.call('query', (c) =>
      c.query(this.collection, {
        query: [...vector],
        limit: k,
        filter: scopeFilter(filter),
        with_payload: true,
        with_vector: false,
      }),
    );
    return r.points.map((p) => {
      const l = toListed(p.id, p.payload as Payload, undefined);
      return { id: l.id, text: l.text, metadata: l.metadata, score: p.score };
    });
  }

  /** Deletes the collection (the epoch pointer is one of its points); an absent one is fine. */
  protected override async _dropNamespace(): Promise<void> {
    await this.call(`delete collection ${this.collection}`, (c) =>
      c.deleteCollection(this.collection),
    );
  }

  protected async _close(): Promise<void> {}
}

export function createQdrantConnector(options: QdrantConnectorOptions): QdrantConnector {
  return new QdrantConnector(options);
}

/**
 * The registry factory (`connector: { store: 'qdrant', ...options }` in a ragfresh config):
 * `url` is required, `collection` defaults to `ragfresh`. Unknown keys and wrong types are one
 * INVALID_CONFIG line naming `connector.<key>`.
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  _context: ConnectorFactoryContext,
): QdrantConnector {
  const spec = {
    url: 'string!',
    collection: 'string',
    apiKey: 'string',
    timeoutMs: 'integer',
    retry: 'object',
    maxWriteBatch: 'integer',
    initialEpoch: 'integer',
    writeTimeoutSeconds: 'integer',
    strictMode: 'object',
  } as const;
  const given = checkConnectorOptions<QdrantConnectorOptions>('qdrant', options, spec);
  return buildConnector(
    'qdrant',
    Object.keys(spec),
    () =>
      new QdrantConnector({
        ...given,
        url: given.url as string,
        collection: given.collection ?? 'ragfresh',
      }),
  );
}
