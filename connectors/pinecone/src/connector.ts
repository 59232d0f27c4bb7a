import { type Index, Pinecone, type RecordMetadata } from '@pinecone-database/pinecone';
import {
  Connector,
  type ConnectorCapabilities,
  chunkIdPrefix,
  type FailureClass,
  FIELDS,
  type FlatMetadata,
  type FlatValue,
  isNetworkError,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  RagfreshError,
  type RetryPolicy,
  retryAfterMs,
  type StoredChunk,
  type ValidityPatch,
  type ViewSelector,
  withRetry,
} from '@ragfresh/core';

/** Metadata key holding the chunk text (LangChain `PineconeStore` default `textKey`). */
export const TEXT_KEY = 'text';
/** Pinecone's published per-record metadata limit. */
export const PINECONE_MAX_METADATA_BYTES = 40_960;
/** Pinecone's published upsert limits: vectors and bytes per request. */
export const PINECONE_MAX_UPSERT_VECTORS = 1_000;
export const PINECONE_MAX_REQUEST_BYTES = 2 * 1024 * 1024;
/** Reserved id of the epoch pointer vector, in the reserved epoch namespace. */
export const EPOCH_VECTOR_ID = 'ragfresh-epoch-pointer';
export const EPOCH_SENTINEL_KEY = 'rf_sentinel';
export const EPOCH_VALUE_KEY = 'rf_epoch';
/**
 * Default declared visibility lag. Pinecone serverless is eventually consistent; this is a
 * policy, not a measurement of any real index: measure yours with `measureVisibilityLag` and
 * pass `maxLagMs` (docs/connectors/pinecone.md).
 */
export const DEFAULT_MAX_LAG_MS = 10_000;

/** Namespace holding the epoch pointer of `namespace`; readers of `namespace` never see it. */
export function epochNamespace(namespace: string): string {
  return `${namespace === '' ? '__default__' : namespace}.ragfresh-epoch`;
}

export interface PineconeConnectorOptions {
  readonly apiKey: string;
  /** Index name, resolved to its host through the control plane... */
  readonly indexName?: string;
  /** ...or the index host URL directly (no control-plane call). */
  readonly host?: string;
  /** Namespace of the chunks ('' = the default namespace). */
  readonly namespace: string;
  /** Control plane URL (Pinecone Local: `http://localhost:5080`). */
  readonly controllerHostUrl?: string;
  /**
   * With `indexName`: create a missing serverless index (cosine, opened dimensions) on open.
   * Off by default: production indexes are provisioned deliberately.
   */
  readonly createIndex?: { readonly cloud: string; readonly region: string };
  /**
   * Rewrites index hosts the control plane reports (`localhost:5081`) to reachable addresses
   * (`127.0.0.1:49153`): Pinecone Local in a container with remapped ports.
   */
  readonly hostAliases?: { readonly [reported: string]: string };
  /** Declared visibility lag (default DEFAULT_MAX_LAG_MS). */
  readonly maxLagMs?: number;
  /** Client-side timeout per HTTP request, ms (default 30 000). */
  readonly timeoutMs?: number;
  readonly retry?: RetryPolicy;
}

type Filter = Record<string, unknown>;

/** Pinecone filter of a view, with explicit operators (documented reader filters). */
export function pineconeViewFilter(view: ViewSelector): Filter[] {
  if (view.kind === 'epoch')
    return [{ [FIELDS.from]: { $lte: view.epoch } }, { [FIELDS.to]: { $gt: view.epoch } }];
  if (view.kind === 'flag') return [{ [FIELDS.current]: { $eq: true } }];
  return [];
}

function filterOf(filter: Omit<QueryFilter, 'view'> & { view?: ViewSelector }): Filter | undefined {
  const parts = pineconeViewFilter(filter.view ?? { kind: 'all' });
  if (filter.documentId !== undefined)
    parts.push({ [FIELDS.documentId]: { $eq: filter.documentId } });
  if (filter.versionId !== undefined) parts.push({ [FIELDS.versionId]: { $eq: filter.versionId } });
  if (filter.sourceId !== undefined) parts.push({ [FIELDS.sourceId]: { $eq: filter.sourceId } });
  if (parts.length === 0) return undefined;
  return parts.length === 1 ? parts[0] : { $and: parts };
}

class RetryableStatus extends Error {
  constructor(
    readonly response: Response,
    readonly afterMs: number | undefined,
  ) {
    super(`HTTP ${response.status}`);
  }
}

function classify(err: unknown): FailureClass {
  if (err instanceof RetryableStatus) {
    return {
      retry: true,
      reason: err.message,
      ...(err.afterMs === undefined ? {} : { afterMs: err.afterMs }),
    };
  }
  if (isNetworkError(err)) return { retry: true, reason: 'connection lost or timed out' };
  return { retry: false };
}

/**
 * A fetch for the Pinecone client: per-attempt timeout, and bounded retries of 429 (honouring
 * Retry-After), 5xx, timeouts and dropped connections. Every request ragfresh sends is
 * idempotent (upserts of fixed ids, metadata sets to fixed values, deletes, reads). When the
 * retries run out on a status, the last response goes back to the client, which maps it.
 */
export function retryingFetch(timeoutMs: number, policy: RetryPolicy): typeof fetch {
  return async (input, init) => {
    try {
      return await withRetry('pinecone', 'request', policy, classify, async () => {
        const signal = init?.signal
          ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)])
          : AbortSignal.timeout(timeoutMs);
        const res = await fetch(input, { ...init, signal });
        if (res.status === 429 || res.status >= 500) {
          const after = retryAfterMs(res.headers.get('retry-after'));
          await res.arrayBuffer().catch(() => undefined);
          throw new RetryableStatus(
            new Response(null, {
              status: res.status,
              statusText: res.statusText,
              headers: res.headers,
            }),
            after,
          );
        }
        return res;
      });
    } catch (err) {
      const cause = (err as { cause?: unknown }).cause;
      if (cause instanceof RetryableStatus) return cause.response;
      throw err;
    }
  };
}

const UNREACHABLE_ERRORS = new Set([
  'PineconeInternalServerError',
  'PineconeUnavailableError',
  'PineconeConnectionError',
  'PineconeMaxRetriesExceededError',
  'PineconeUnmappedHttpError',
  'PineconeRequestError',
]);

function errorStatus(err: unknown): number | undefined {
  const m = err instanceof Error ? /status (\d{3})/i.exec(err.message) : null;
  return m ? Number(m[1]) : undefined;
}

/**
 * Pinecone connector (client v9, serverless). Chunk ids are `doc#version#ordinal`, so a
 * version or a document is found by listing its id prefix. Metadata is flat with the chunk
 * text under `text`, size-checked against the 40 KB limit before sending. Visibility is
 * `eventual`: every validity patch and epoch move is written, then read back until visible,
 * before the call returns, so epoch readers see whole snapshots.
 */
export class PineconeConnector extends Connector {
  readonly options: PineconeConnectorOptions;
  readonly pinecone: Pinecone;
  #index: Index | undefined;
  #epochIndex: Index | undefined;
  #filterUpdate = true;
  #filterDelete = true;
  readonly #maxLagMs: number;

  constructor(options: PineconeConnectorOptions) {
    const maxLagMs = options.maxLagMs ?? DEFAULT_MAX_LAG_MS;
    const capabilities: ConnectorCapabilities = {
      store: 'pinecone',
      promotion: 'snapshot',
      flagPromotion: 'overlap',
      visibility: { mode: 'eventual', maxLagMs },
      maxWriteBatch: PINECONE_MAX_UPSERT_VECTORS,
      maxMetadataBytes: PINECONE_MAX_METADATA_BYTES,
      epochInStore: true,
      idForm: 'chunk-id',
    };
    super(capabilities);
    if (typeof options.apiKey !== 'string' || options.apiKey === '')
      throw this.error('INVALID_CONFIG', 'apiKey is required.');
    if ((options.indexName === undefined) === (options.host === undefined)) {
      throw this.error('INVALID_CONFIG', 'give exactly one of indexName or host.');
    }
    if (typeof options.namespace !== 'string')
      throw this.error(
        'INVALID_CONFIG',
        "namespace must be a string ('' for the default namespace).",
      );
    this.options = options;
    this.#maxLagMs = maxLagMs;
    this.pinecone = new Pinecone({
      apiKey: options.apiKey,
      ...(options.controllerHostUrl === undefined
        ? {}
        : { controllerHostUrl: options.controllerHostUrl }),
      fetchApi: retryingFetch(options.timeoutMs ?? 30_000, options.retry ?? {}),
      maxRetries: 0,
      sourceTag: 'ragfresh',
    });
  }

  get index(): Index {
    if (this.#index === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    return this.#index;
  }

  /** Runs a client call; failures become STORE_UNREACHABLE / STORE_REJECTED / NOT_FOUND. */
  async call<T>(what: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (err instanceof RagfreshError) throw err;
      const name = err instanceof Error ? err.name : '';
      const message = err instanceof Error ? err.message : String(err);
      if (name === 'PineconeNotFoundError')
        throw this.error('NOT_FOUND', `${what}: ${message}`, err);
      const status = errorStatus(err);
      if (
        UNREACHABLE_ERRORS.has(name) ||
        isNetworkError(err) ||
        status === 429 ||
        (status !== undefined && status >= 500)
      ) {
        throw this.error('STORE_UNREACHABLE', `${what} failed after retries: ${message}`, err);
      }
      throw this.error('STORE_REJECTED', `${what} was refused: ${message}`, err);
    }
  }

  async #resolveHost(dimensions: number): Promise<string> {
    if (this.options.host !== undefined) return this.options.host;
    const name = this.options.indexName!;
    let host: string | undefined;
    try {
      host = (await this.call('describe index', () => this.pinecone.describeIndex(name))).host;
    } catch (err) {
      if (!(err instanceof RagfreshError && err.code === 'NOT_FOUND' && this.options.createIndex))
        throw err;
      const { cloud, region } = this.options.createIndex;
      await this.call('create index', () =>
        this.pinecone.createIndex({
          name,
          dimension: dimensions,
          metric: 'cosine',
          spec: { serverless: { cloud: cloud as 'aws', region } },
          waitUntilReady: true,
          suppressConflicts: true,
        }),
      );
      host = (await this.call('describe index', () => this.pinecone.describeIndex(name))).host;
    }
    const bare = host.replace(/^https?:\/\//, '');
    const alias = this.options.hostAliases?.[bare];
    if (alias !== undefined) host = host.replace(bare, alias);
    // Pinecone Local answers with host:port and serves plain HTTP, like its control plane.
    if (!/^https?:\/\//.test(host)) {
      host = `${this.options.controllerHostUrl?.startsWith('http://') ? 'http' : 'https'}://${host}`;
    }
    return host;
  }

  protected async _open(options: OpenOptions): Promise<void> {
    const host = await this.#resolveHost(options.dimensions);
    this.#index = this.pinecone.index({ host, namespace: this.options.namespace });
    this.#epochIndex = this.pinecone.index({
      host,
      namespace: epochNamespace(this.options.namespace),
    });
    const stats = await this.call('describe index stats', () => this.index.describeIndexStats());
    if (stats.dimension !== undefined && stats.dimension !== options.dimensions) {
      throw this.error(
        'DIMENSION_MISMATCH',
        `index holds ${stats.dimension}-dimension vectors, asked for ${options.dimensions}; use the embeddings it was built with or a new index.`,
      );
    }
    const existing = await this.#fetchEpoch();
    if (existing === undefined) {
      // Pinecone has no insert-if-absent; the pointer is only written when no pointer is visible.
      const values = new Array<number>(options.dimensions).fill(0);
      values[0] = 1;
      await this.call('create epoch pointer', () =>
        this.#epochIndex!.upsert({
          records: [
            {
              id: EPOCH_VECTOR_ID,
              values,
              metadata: { [EPOCH_SENTINEL_KEY]: 'epoch', [EPOCH_VALUE_KEY]: 0 },
            },
          ],
        }),
      );
      await this.#waitFor(
        'epoch pointer to become visible',
        async () => (await this.#fetchEpoch()) !== undefined,
      );
    }
  }

  async #waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + this.#maxLagMs * 2 + 1_000;
    for (let delay = 25; ; delay = Math.min(delay * 2, 1_000)) {
      if (await check()) return;
      if (Date.now() + delay > deadline) {
        throw this.error(
          'VERIFY_FAILED',
          `waited ${this.#maxLagMs * 2 + 1_000} ms for ${what}; raise maxLagMs if the index lags more.`,
        );
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  async #fetchEpoch(): Promise<number | undefined> {
    const r = await this.call('read epoch', () =>
      this.#epochIndex!.fetch({ ids: [EPOCH_VECTOR_ID] }),
    );
    const v = r.records?.[EPOCH_VECTOR_ID]?.metadata?.[EPOCH_VALUE_KEY];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) {
      throw this.error(
        'STATE_CORRUPT',
        `the epoch pointer holds ${JSON.stringify(v)}, not an integer.`,
      );
    }
    return v;
  }

  protected async _upsert(chunks: readonly StoredChunk[]): Promise<void> {
    const records = chunks.map((c) => {
      const metadata: Record<string, FlatValue> = {
        ...c.metadata,
        [FIELDS.chunkId]: c.id,
        [TEXT_KEY]: c.text,
      };
      const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
      if (bytes > PINECONE_MAX_METADATA_BYTES) {
        throw this.error(
          'INVALID_METADATA',
          `chunk ${c.id}: metadata with its text is ${bytes} bytes, over Pinecone's ${PINECONE_MAX_METADATA_BYTES}-byte limit; lower the chunk token budget.`,
        );
      }
      return { id: c.id, values: [...c.embedding], metadata };
    });
    // Split by bytes too: one request must stay under 2 MB (with room for the envelope).
    const budget = PINECONE_MAX_REQUEST_BYTES - 16 * 1024;
    let batch: typeof records = [];
    let size = 0;
    for (const r of records) {
      const bytes = Buffer.byteLength(JSON.stringify(r), 'utf8') + 1;
      if (
        batch.length > 0 &&
        (size + bytes > budget || batch.length >= PINECONE_MAX_UPSERT_VECTORS)
      ) {
        const send = batch;
        await this.call(`upsert ${send.length} vectors`, () =>
          this.index.upsert({ records: send }),
        );
        batch = [];
        size = 0;
      }
      batch.push(r);
      size += bytes;
    }
    if (batch.length > 0)
      await this.call(`upsert ${batch.length} vectors`, () =>
        this.index.upsert({ records: batch }),
      );
    // Acknowledged is not readable: return once every record reads back as written, so a
    // crash after this call can never leave writes that a rollback's listing does not see.
    await this.#waitFor(`${records.length} upserted vectors to become readable`, async () => {
      const got = await this.#fetch(records.map((r) => r.id));
      return records.every((r) => {
        const m = got.get(r.id)?.metadata;
        return m !== undefined && Object.entries(r.metadata).every(([k, v]) => m[k] === v);
      });
    });
  }

  async #listIds(prefix: string): Promise<string[]> {
    const ids: string[] = [];
    let paginationToken: string | undefined;
    do {
      const page = await this.call('list ids', () =>
        this.index.listPaginated({
          prefix,
          limit: 100,
          ...(paginationToken === undefined ? {} : { paginationToken }),
        }),
      );
      for (const v of page.vectors ?? []) if (v.id !== undefined) ids.push(v.id);
      paginationToken = page.pagination?.next;
    } while (paginationToken !== undefined && paginationToken !== '');
    return ids;
  }

  async #fetch(
    ids: readonly string[],
  ): Promise<Map<string, { values: number[]; metadata: RecordMetadata | undefined }>> {
    const out = new Map<string, { values: number[]; metadata: RecordMetadata | undefined }>();
    // Ids travel in the query string; 100 per request keeps URLs short.
    for (let i = 0; i < ids.length; i += 100) {
      const part = ids.slice(i, i + 100);
      const r = await this.call('fetch vectors', () => this.index.fetch({ ids: part }));
      for (const [id, rec] of Object.entries(r.records ?? {}))
        out.set(id, { values: rec.values ?? [], metadata: rec.metadata });
    }
    return out;
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
  ): Promise<void> {
    const set: Record<string, number | boolean> = {};
    if (patch.to !== undefined) set[FIELDS.to] = patch.to;
    if (patch.current !== undefined) set[FIELDS.current] = patch.current;
    const ids = await this.#listIds(chunkIdPrefix(documentId, versionId));
    if (ids.length === 0) return;
    let done = false;
    if (this.#filterUpdate) {
      try {
        await this.call('update metadata by filter', () =>
          this.index.update({
            filter: {
              $and: [
                { [FIELDS.documentId]: { $eq: documentId } },
                { [FIELDS.versionId]: { $eq: versionId } },
              ],
            },
            metadata: set,
          }),
        );
        done = true;
      } catch (err) {
        if (!(err instanceof RagfreshError && err.code === 'STORE_REJECTED')) throw err;
        // Indexes without update-by-metadata (pod-based, older API versions): per-id updates.
        this.#filterUpdate = false;
      }
    }
    if (!done) {
      for (const id of ids)
        await this.call('update metadata', () => this.index.update({ id, metadata: set }));
    }
    // Acknowledged is not visible: return only once every chunk reads back patched, so the
    // epoch can never move ahead of the validity it depends on.
    await this.#waitFor(
      `validity patch of ${documentId} ${versionId} to become visible`,
      async () => {
        const got = await this.#fetch(ids);
        return ids.every((id) => {
          const m = got.get(id)?.metadata;
          return m !== undefined && Object.entries(set).every(([k, v]) => m[k] === v);
        });
      },
    );
  }

  protected async _readEpoch(): Promise<number> {
    const v = await this.#fetchEpoch();
    if (v === undefined)
      throw this.error(
        'STATE_CORRUPT',
        'the epoch pointer vector is missing; reopen the connector to recreate it.',
      );
    return v;
  }

  protected async _advanceEpoch(expected: number, next: number): Promise<void> {
    const now = await this._readEpoch();
    if (now === next) return; // an earlier attempt of this same move landed
    if (now !== expected) {
      throw this.error(
        'EPOCH_CONFLICT',
        `expected epoch ${expected}, the store holds ${now}; another publisher moved it.`,
      );
    }
    let done = false;
    if (this.#filterUpdate) {
      try {
        // Conditional: only a pointer still holding `expected` is changed.
        await this.call('advance epoch', () =>
          this.#epochIndex!.update({
            filter: {
              $and: [
                { [EPOCH_SENTINEL_KEY]: { $eq: 'epoch' } },
                { [EPOCH_VALUE_KEY]: { $eq: expected } },
              ],
            },
            metadata: { [EPOCH_VALUE_KEY]: next },
          }),
        );
        done = true;
      } catch (err) {
        if (!(err instanceof RagfreshError && err.code === 'STORE_REJECTED')) throw err;
        this.#filterUpdate = false;
      }
    }
    if (!done) {
      await this.call('advance epoch', () =>
        this.#epochIndex!.update({ id: EPOCH_VECTOR_ID, metadata: { [EPOCH_VALUE_KEY]: next } }),
      );
    }
    let seen = expected;
    await this.#waitFor(`epoch ${next} to become visible`, async () => {
      seen = (await this.#fetchEpoch()) ?? expected;
      return seen !== expected;
    });
    if (seen !== next) {
      throw this.error(
        'EPOCH_CONFLICT',
        `expected epoch ${expected} to move to ${next}, but the store holds ${seen}; another publisher moved it.`,
      );
    }
  }

  /**
   * Deletes every vector whose id starts with `prefix` and returns once a listing shows none.
   * Listing can lag behind writes, so the delete also goes out as a metadata-filter delete
   * where the index supports it (ordered after every write acknowledged before it), and the
   * list-and-delete repeats until the prefix lists empty.
   */
  async #deletePrefix(prefix: string, filter: Filter): Promise<void> {
    if (this.#filterDelete) {
      try {
        await this.call('delete by filter', () => this.index.deleteMany({ filter }));
      } catch (err) {
        if (!(err instanceof RagfreshError && err.code === 'STORE_REJECTED')) throw err;
        this.#filterDelete = false; // pod-based indexes and older API versions
      }
    }
    await this.#waitFor(`vectors under ${prefix} to be deleted`, async () => {
      const ids = await this.#listIds(prefix);
      for (let i = 0; i < ids.length; i += 1_000) {
        const part = ids.slice(i, i + 1_000);
        await this.call('delete vectors', () => this.index.deleteMany({ ids: part }));
      }
      return ids.length === 0;
    });
  }

  protected async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    await this.#deletePrefix(chunkIdPrefix(documentId, versionId), {
      $and: [
        { [FIELDS.documentId]: { $eq: documentId } },
        { [FIELDS.versionId]: { $eq: versionId } },
      ],
    });
  }

  protected async _deleteDocuments(documentIds: readonly string[]): Promise<void> {
    for (const d of documentIds)
      await this.#deletePrefix(chunkIdPrefix(d), { [FIELDS.documentId]: { $eq: d } });
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const ids = await this.#listIds(chunkIdPrefix(documentId, versionId));
    const got = await this.#fetch(ids);
    const out: ListedChunk[] = [];
    for (const id of ids) {
      const rec = got.get(id);
      if (rec === undefined) continue; // listed, then deleted before the fetch
      const l = this.#toListed(id, rec.metadata);
      out.push(withEmbeddings ? { ...l, embedding: rec.values } : l);
    }
    return out;
  }

  #toListed(id: string, metadata: RecordMetadata | undefined): ListedChunk {
    const { [TEXT_KEY]: text, ...rest } = (metadata ?? {}) as Record<string, unknown>;
    if (typeof rest[FIELDS.chunkId] !== 'string') {
      throw this.error(
        'FOREIGN_DATA',
        `vector ${id} lacks ${FIELDS.chunkId}; the namespace holds data not written by ragfresh.`,
      );
    }
    return { id, text: typeof text === 'string' ? text : '', metadata: rest as FlatMetadata };
  }

  protected override async _count(documentId: string, versionId: string): Promise<number> {
    return (await this.#listIds(chunkIdPrefix(documentId, versionId))).length;
  }

  protected async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const f = filterOf(filter);
    const r = await this.call('query', () =>
      this.index.query({
        vector: [...vector],
        topK: Math.min(k, 10_000),
        includeMetadata: true,
        includeValues: false,
        ...(f === undefined ? {} : { filter: f }),
      }),
    );
    return r.matches.map((m) => {
      const l = this.#toListed(m.id, m.metadata);
      return { ...l, score: m.score ?? 0 };
    });
  }

  protected async _close(): Promise<void> {}
}

export function createPineconeConnector(options: PineconeConnectorOptions): PineconeConnector {
  return new PineconeConnector(options);
}
