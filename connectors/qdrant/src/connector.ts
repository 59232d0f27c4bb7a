import { QdrantClient, type Schemas } from '@qdrant/js-client-rest';
import {
  Connector,
  type ConnectorCapabilities,
  chunkUuid,
  type FailureClass,
  FIELDS,
  type FlatMetadata,
  isNetworkError,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  RAGFRESH_UUID_NAMESPACE,
  RagfreshError,
  type RetryPolicy,
  retryAfterMs,
  type StoredChunk,
  uuidV5,
  type ValidityPatch,
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
}

const meta = (field: string) => `${METADATA_KEY}.${field}`;

/** Indexed payload fields and their index types. */
export const PAYLOAD_INDEXES: ReadonlyArray<readonly [string, 'keyword' | 'integer' | 'bool']> = [
  [meta(FIELDS.documentId), 'keyword'],
  [meta(FIELDS.versionId), 'keyword'],
  [meta(FIELDS.sourceId), 'keyword'],
  [meta(FIELDS.from), 'integer'],
  [meta(FIELDS.to), 'integer'],
  [meta(FIELDS.current), 'bool'],
];

type Condition = Schemas['Condition'];
type Filter = Schemas['Filter'];

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
  const status = statusOf(err);
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
  readonly #retry: RetryPolicy;
  readonly #initialEpoch: number;

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
    this.#retry = options.retry ?? {};
    this.#initialEpoch = options.initialEpoch ?? 0;
    this.client = new QdrantClient({
      url: options.url,
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
      timeout: options.timeoutMs ?? 30_000,
      checkCompatibility: false,
    });
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

  protected async _open(options: OpenOptions): Promise<void> {
    const { exists } = await this.call('check collection', (c) =>
      c.collectionExists(this.collection),
    );
    if (!exists) {
      try {
        await this.call('create collection', (c) =>
          c.createCollection(this.collection, {
            vectors: { size: options.dimensions, distance: 'Cosine' },
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
      await this.call(`create payload index ${field}`, (c) =>
        c.createPayloadIndex(this.collection, {
          field_name: field,
          field_schema: schema,
          wait: true,
        }),
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
    await this.call('create epoch pointer', (c) =>
      c.upsert(this.collection, {
        wait: true,
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
    await this.call(`upsert ${points.length} points`, (c) =>
      c.upsert(this.collection, { wait: true, points }),
    );
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
  ): Promise<void> {
    const payload: Record<string, number | boolean> = {};
    if (patch.to !== undefined) payload[FIELDS.to] = patch.to;
    if (patch.current !== undefined) payload[FIELDS.current] = patch.current;
    // key: 'metadata' merges into the nested object, so no other metadata field is touched.
    await this.call('patch validity', (c) =>
      c.setPayload(this.collection, {
        wait: true,
        key: METADATA_KEY,
        payload,
        filter: scopeFilter({ documentId, versionId }),
      }),
    );
  }

  protected async _readEpoch(): Promise<number> {
    const [point] = await this.call('read epoch', (c) =>
      c.retrieve(this.collection, {
        ids: [EPOCH_POINT_ID],
        with_payload: true,
        with_vector: false,
      }),
    );
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

  protected async _advanceEpoch(expected: number, next: number): Promise<void> {
    // Conditional write: only a pointer still holding `expected` is changed. A retry after a
    // lost answer matches nothing and the read-back below still sees `next`.
    await this.call('advance epoch', (c) =>
      c.setPayload(this.collection, {
        wait: true,
        payload: { [EPOCH_VALUE_KEY]: next },
        filter: {
          must: [
            { has_id: [EPOCH_POINT_ID] },
            { key: EPOCH_VALUE_KEY, match: { value: expected } },
          ],
        },
      }),
    );
    const now = await this._readEpoch();
    if (now !== next) {
      throw this.error(
        'EPOCH_CONFLICT',
        `expected epoch ${expected} to move to ${next}, but the store holds ${now}; another publisher moved it.`,
      );
    }
  }

  protected async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    await this.call('delete version', (c) =>
      c.delete(this.collection, { wait: true, filter: scopeFilter({ documentId, versionId }) }),
    );
  }

  protected async _deleteDocuments(documentIds: readonly string[]): Promise<void> {
    for (let i = 0; i < documentIds.length; i += 100) {
      const any = documentIds.slice(i, i + 100);
      await this.call('delete documents', (c) =>
        c.delete(this.collection, {
          wait: true,
          filter: { must: [{ key: meta(FIELDS.documentId), match: { any } }] },
        }),
      );
    }
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const filter = scopeFilter({ documentId, ...(versionId === undefined ? {} : { versionId }) });
    const out: ListedChunk[] = [];
    let offset: Schemas['ExtendedPointId'] | undefined;
    for (;;) {
      const page = await this.call('list chunks', (c) =>
        c.scroll(this.collection, {
          filter,
          limit: 256,
          with_payload: true,
          with_vector: withEmbeddings,
          ...(offset === undefined ? {} : { offset }),
        }),
      );
      for (const p of page.points) out.push(toListed(p.id, p.payload as Payload, p.vector));
      const next = page.next_page_offset;
      if (
        next === undefined ||
        next === null ||
        (typeof next !== 'string' && typeof next !== 'number')
      )
        break;
      offset = next;
    }
    return out;
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

  protected async _close(): Promise<void> {}
}

export function createQdrantConnector(options: QdrantConnectorOptions): QdrantConnector {
  return new QdrantConnector(options);
}
