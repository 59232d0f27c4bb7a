import { type Index, Pinecone, type RecordMetadata } from '@pinecone-database/pinecone';
import {
  buildConnector,
  Connector,
  type ConnectorCapabilities,
  type ConnectorFactoryContext,
  checkConnectorOptions,
  chunkIdPrefix,
  type FailureClass,
  FIELDS,
  type FlatMetadata,
  groupPatchesByValue,
  isNetworkError,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  RagfreshError,
  type RetryPolicy,
  readerAccessTokens,
  retryAfterMs,
  type StoredChunk,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
  type ViewSelector,
  withRetry,
} from '@ragfresh/core';
import {
  defaultClaimExpiryMs,
  EPOCH_INDEX_KEY,
  EPOCH_SENTINEL_KEY,
  EPOCH_SPACE_KEY,
  EPOCH_VALUE_KEY,
  EPOCH_VECTOR_ID,
  EpochClaims,
  type PointerExtras,
} from './claim.js';
import {
  ControlPlane,
  INDEX_READY_TIMEOUT_MS,
  type IndexInfo,
  OWNER_TAG,
  SPACE_INDEX_TAG_VALUE,
  spaceIndexName,
} from './control-plane.js';

/** Pointer metadata key of the newest publisher fence. */
export const EPOCH_FENCE_KEY = 'rf_fence';

import { DataPlane, DataPlaneError, isUnsupported } from './data-plane.js';

/** Metadata key holding the chunk text (LangChain `PineconeStore` default `textKey`). */
export const TEXT_KEY = 'text';
/** Pinecone's published per-record metadata limit. */
export const PINECONE_MAX_METADATA_BYTES = 40_960;
/** Pinecone's published upsert limits: vectors and bytes per request. */
export const PINECONE_MAX_UPSERT_VECTORS = 1_000;
export const PINECONE_MAX_REQUEST_BYTES = 2 * 1024 * 1024;
/** Most ids one `list` request returns. */
const PINECONE_LIST_LIMIT = 100;

export {
  CLAIM_FROM_KEY,
  CLAIM_LSN_KEY,
  CLAIM_TOKEN_KEY,
  defaultClaimExpiryMs,
  EPOCH_CLAIM_PREFIX,
  EPOCH_INDEX_KEY,
  EPOCH_SENTINEL_KEY,
  EPOCH_SPACE_KEY,
  EPOCH_TOKEN_KEY,
  EPOCH_VALUE_KEY,
  EPOCH_VECTOR_ID,
} from './claim.js';
export {
  type IndexInfo,
  OWNER_TAG,
  SPACE_INDEX_TAG_VALUE,
  spaceIndexName,
} from './control-plane.js';
export { isUnsupported } from './data-plane.js';
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
  /**
   * `exclusive` (default): the epoch compare-and-set is an LSN-ordered claim (see
   * docs/connectors/pinecone.md) and needs the index to send `x-pinecone-request-lsn`
   * (serverless indexes do); `advanceEpoch` fails with NOT_SUPPORTED where it does not.
   * `lease-only`: for indexes without LSN headers (Pinecone Local, pod-based): a
   * check-then-set that only the publisher lease makes safe, declared in the manifest.
   */
  readonly epochClaim?: 'exclusive' | 'lease-only';
  /**
   * How long a rival's epoch claim may stay visible without the pointer moving before the next
   * publisher treats it as dead, deletes it and claims over it (ms; default
   * `2 × (2 × maxLagMs + 1000)`, 42 s at the default lag). A claimant abandons its own claim
   * after half of it. At least `2 × maxLagMs`.
   */
  readonly claimExpiryMs?: number;
  /**
   * Set by `forNamespace` (a migration to embeddings of other dimensions), not a user option:
   * this connector opens the index ragfresh keeps for that namespace suffix beside the
   * configured one (`spaceIndexName(<configured index>, spaceIndex)`), creating it on open
   * when missing: serverless, the configured index's metric, cloud, region and deletion
   * protection, the opened dimensions, tagged `ragfresh: space-index`.
   */
  readonly spaceIndex?: string;
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
  // On a list field, `$in` matches a record when any of its entries is one of the values.
  if (filter.access !== undefined)
    parts.push({ [FIELDS.access]: { $in: readerAccessTokens(filter.access) } });
  if (parts.length === 0) return undefined;
  return parts.length === 1 ? parts[0] : { $and: parts };
}

/** Every record of any of the given versions: exact (document, version) pairs. */
export function versionsFilter(refs: readonly VersionRef[]): Filter {
  const pair = (r: VersionRef): Filter => ({
    $and: [
      { [FIELDS.documentId]: { $eq: r.documentId } },
      { [FIELDS.versionId]: { $eq: r.versionId } },
    ],
  });
  return refs.length === 1 ? pair(refs[0]!) : { $or: refs.map(pair) };
}

class RetryableStatus extends Error {
  constructor(
    readonly response: Response,
    readonly afterMs: number | undefined,
  ) {
    super(`HTTP ${response.status}`);
  }
}

/** The caller aborted the request (not a per-attempt timeout): never retried. */
class DeadlinePassed extends Error {
  constructor() {
    super('the caller aborted the request (deadline passed)');
    this.name = 'DeadlinePassed';
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
        // The caller's own signal (the epoch claim's deadline) ends the retries too.
        if (init?.signal?.aborted) throw new DeadlinePassed();
        const signal = init?.signal
          ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)])
          : AbortSignal.timeout(timeoutMs);
        const res = await fetch(input, { ...init, signal }).catch((err: unknown) => {
          throw init?.signal?.aborted ? new DeadlinePassed() : err;
        });
        // 501 Not Implemented is an answer, not a failure: the caller falls back.
        if (res.status === 429 || (res.status >= 500 && res.status !== 501)) {
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
 * `eventual`: writes record the LSN Pinecone assigns them, and every validity patch and epoch
 * move returns only once the query path reflects it (`x-pinecone-max-indexed-lsn` ≥ the write's
 * LSN) and it reads back by fetch, so epoch readers see whole snapshots.
 */
export class PineconeConnector extends Connector {
  readonly options: PineconeConnectorOptions;
  readonly pinecone: Pinecone;
  #index: Index | undefined;
  #epochIndex: Index | undefined;
  #data: DataPlane | undefined;
  #filterUpdate = true;
  #filterDelete = true;
  /** Name of the opened index (undefined when configured by host and never resolved). */
  #indexName: string | undefined;
  readonly #control: ControlPlane;
  /** Highest LSN of this connector's writes, per namespace. */
  readonly #lsn = new Map<string, number>();
  /** Whether the index sends LSN headers (learned from the first write). */
  #lsnHeaders: boolean | undefined;
  readonly #maxLagMs: number;
  readonly #fetch: typeof fetch;
  readonly #claims: EpochClaims;

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
      epochClaim: options.epochClaim ?? 'exclusive',
      // The pointer keeps the fence; Pinecone has no conditional write, so the base class
      // checks it before each fenced write (docs/connectors/pinecone.md).
      fencing: 'client',
      // list (ids by keyset page) + fetch; serverless indexes only, like every listing here.
      scan: true,
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
    if (options.spaceIndex !== undefined && !/^[a-z0-9_]{1,40}$/.test(options.spaceIndex))
      throw this.error(
        'INVALID_CONFIG',
        `spaceIndex must be a namespace suffix (1-40 lower-case letters, digits or _), got ${JSON.stringify(options.spaceIndex)}.`,
      );
    const claimExpiryMs = options.claimExpiryMs ?? defaultClaimExpiryMs(maxLagMs);
    if (!Number.isSafeInteger(claimExpiryMs) || claimExpiryMs < 2 * maxLagMs)
      throw this.error(
        'INVALID_CONFIG',
        `claimExpiryMs must be an integer of at least 2 × maxLagMs (${2 * maxLagMs}), got ${claimExpiryMs}.`,
      );
    this.options = options;
    this.#maxLagMs = maxLagMs;
    this.#claims = new EpochClaims(
      {
        dataPlane: () => this.#dp,
        namespace: epochNamespace(options.namespace),
        maxLagMs,
        probe: () => this.#probe(),
        call: (what, op) => this.call(what, op),
        noteLsn: (lsn) => this.#noteLsn(this.#epochNs, lsn),
        waitIndexed: (lsn, what) => this.#waitIndexed(this.#epochNs, lsn, what),
        waitFor: (what, check) => this.#waitFor(what, check),
        fetchPointer: () => this.#fetchPointer(),
        conflict: (expected, detail) => this.#conflict(expected, detail),
        notSupported: (detail) => this.error('NOT_SUPPORTED', detail),
      },
      claimExpiryMs,
    );
    this.#fetch = retryingFetch(options.timeoutMs ?? 30_000, options.retry ?? {});
    this.pinecone = new Pinecone({
      apiKey: options.apiKey,
      ...(options.controllerHostUrl === undefined
        ? {}
        : { controllerHostUrl: options.controllerHostUrl }),
      fetchApi: this.#fetch,
      maxRetries: 0,
      sourceTag: 'ragfresh',
    });
    this.#control = new ControlPlane(
      this.pinecone,
      options.controllerHostUrl,
      options.apiKey,
      this.#fetch,
    );
  }

  /** Name of the index this connector opened, when known (configured by name, or a space's). */
  get indexName(): string | undefined {
    return this.#indexName;
  }

  get index(): Index {
    if (this.#index === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    return this.#index;
  }

  get #dp(): DataPlane {
    if (this.#data === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    return this.#data;
  }

  get #ns(): string {
    return this.options.namespace;
  }

  get #epochNs(): string {
    return epochNamespace(this.options.namespace);
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
      const status = err instanceof DataPlaneError ? err.status : errorStatus(err);
      if (
        UNREACHABLE_ERRORS.has(name) ||
        isNetworkError(err) ||
        status === 429 ||
        (status !== undefined && status >= 500 && status !== 501)
      ) {
        throw this.error('STORE_UNREACHABLE', `${what} failed after retries: ${message}`, err);
      }
      throw this.error('STORE_REJECTED', `${what} was refused: ${message}`, err);
    }
  }

  #noteLsn(namespace: string, lsn: number | undefined): number | undefined {
    if (lsn === undefined) {
      this.#lsnHeaders ??= false;
      return undefined;
    }
    this.#lsnHeaders = true;
    this.#lsn.set(namespace, Math.max(this.#lsn.get(namespace) ?? 0, lsn));
    return lsn;
  }

  #probe(): number[] {
    const v = new Array<number>(this.dimensions ?? 1).fill(0);
    v[0] = 1;
    return v;
  }

  /**
   * Pinecone's freshness barrier: polls a query of `namespace` until its
   * `x-pinecone-max-indexed-lsn` is at least `lsn`, i.e. queries reflect that write and every
   * write before it. Returns false (nothing waited) where the index sends no LSN headers.
   */
  async #waitIndexed(namespace: string, lsn: number | undefined, what: string): Promise<boolean> {
    if (lsn === undefined || this.#lsnHeaders === false) return false;
    let supported = true;
    await this.#waitFor(`${what} to reach the query path (LSN ${lsn})`, async () => {
      const r = await this.call('query for the indexed LSN', () =>
        this.#dp.query({ namespace, vector: this.#probe(), topK: 1 }),
      );
      if (r.maxIndexedLsn === undefined) {
        supported = false;
        return true;
      }
      return r.maxIndexedLsn >= lsn;
    });
    return supported;
  }

  /**
   * The index's model, created first when missing and `create` says how; then waited for until
   * it is ready (a create that met its own earlier attempt does not wait).
   */
  async #describeOrCreate(
    name: string,
    create: (() => Promise<void>) | undefined,
  ): Promise<IndexInfo> {
    try {
      return await this.call('describe index', () => this.#control.describe(name));
    } catch (err) {
      if (!(err instanceof RagfreshError && err.code === 'NOT_FOUND' && create)) throw err;
    }
    await create();
    const ready = await this.call('describe index', () => this.#control.waitReady(name));
    if (ready === undefined)
      throw this.error(
        'STORE_UNREACHABLE',
        `index ${name} was created but did not report ready within ${INDEX_READY_TIMEOUT_MS} ms; open again once describe shows it ready.`,
      );
    return ready;
  }

  /**
   * The index of the embedding space `suffix` (forNamespace): found by its derived name, or
   * created like the configured one (metric, cloud, region, deletion protection) at the opened
   * dimensions and tagged as ragfresh's. An index of that name without the tag is refused.
   */
  async #openSpaceIndex(suffix: string, dimensions: number): Promise<IndexInfo> {
    const configured =
      this.options.indexName ??
      (await this.call('list indexes', () => this.#control.nameOfHost(this.options.host!)));
    if (configured === undefined)
      throw this.error(
        'NOT_SUPPORTED',
        `no index of this project is served at ${this.options.host}, so the index of embedding space ${suffix} cannot be named; configure indexName instead of host.`,
      );
    const name = spaceIndexName(configured, suffix);
    const info = await this.#describeOrCreate(name, async () => {
      const base = await this.call('describe index', () => this.#control.describe(configured));
      await this.call(`create index ${name}`, () =>
        this.#control.create({
          name,
          dimension: dimensions,
          metric: base.metric,
          cloud: base.cloud,
          region: base.region,
          deletionProtection: base.deletionProtection,
          tags: {
            [OWNER_TAG]: SPACE_INDEX_TAG_VALUE,
            ragfresh_index: configured,
            ragfresh_space: suffix,
          },
        }),
      );
    });
    if (info.tags[OWNER_TAG] !== SPACE_INDEX_TAG_VALUE)
      throw this.error(
        'FOREIGN_DATA',
        `index ${name} exists but ragfresh did not create it (no tag ${OWNER_TAG}=${SPACE_INDEX_TAG_VALUE}); delete or rename it, or migrate to other embeddings.`,
      );
    return info;
  }

  async #resolveHost(dimensions: number): Promise<string> {
    let host: string;
    if (this.options.spaceIndex !== undefined) {
      const info = await this.#openSpaceIndex(this.options.spaceIndex, dimensions);
      this.#indexName = info.name;
      host = info.host;
    } else if (this.options.host !== undefined) {
      return this.options.host;
    } else {
      const name = this.options.indexName!;
      const create = this.options.createIndex;
      this.#indexName = name;
      host = (
        await this.#describeOrCreate(
          name,
          create &&
            (() =>
              this.call('create index', () =>
                this.#control.create({
                  name,
                  dimension: dimensions,
                  metric: 'cosine',
                  cloud: create.cloud,
                  region: create.region,
                  deletionProtection: 'disabled',
                  tags: {},
                }),
              )),
        )
      ).host;
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
    this.#index = this.pinecone.index({ host, namespace: this.#ns });
    this.#epochIndex = this.pinecone.index({ host, namespace: this.#epochNs });
    this.#data = new DataPlane(host, this.options.apiKey, this.#fetch);
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
      const lsn = await this.call('create epoch pointer', () =>
        this.#dp.upsert({
          namespace: this.#epochNs,
          vectors: [
            {
              id: EPOCH_VECTOR_ID,
              values,
              metadata: {
                [EPOCH_SENTINEL_KEY]: 'epoch',
                [EPOCH_VALUE_KEY]: 0,
                ...(this.#indexName === undefined ? {} : { [EPOCH_INDEX_KEY]: this.#indexName }),
              },
            },
          ],
        }),
      );
      this.#noteLsn(this.#epochNs, lsn);
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

  async #fetchPointer(): Promise<RecordMetadata | undefined> {
    const r = await this.call('read epoch', () =>
      this.#epochIndex!.fetch({ ids: [EPOCH_VECTOR_ID] }),
    );
    return r.records?.[EPOCH_VECTOR_ID]?.metadata;
  }

  async #fetchEpoch(): Promise<number | undefined> {
    const v = (await this.#fetchPointer())?.[EPOCH_VALUE_KEY];
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
      const metadata: Record<string, string | number | boolean | string[]> = {
        [FIELDS.chunkId]: c.id,
        [TEXT_KEY]: c.text,
      };
      // Pinecone list metadata (`rf_access`) is a list of strings, matched by `$in`.
      for (const [k, v] of Object.entries(c.metadata))
        if (k !== FIELDS.chunkId && k !== TEXT_KEY)
          metadata[k] = typeof v === 'object' ? [...v] : v;
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
    const send = async (batch: typeof records) => {
      const lsn = await this.call(`upsert ${batch.length} vectors`, () =>
        this.#dp.upsert({ namespace: this.#ns, vectors: batch }),
      );
      this.#noteLsn(this.#ns, lsn);
    };
    let batch: typeof records = [];
    let size = 0;
    for (const r of records) {
      const bytes = Buffer.byteLength(JSON.stringify(r), 'utf8') + 1;
      if (
        batch.length > 0 &&
        (size + bytes > budget || batch.length >= PINECONE_MAX_UPSERT_VECTORS)
      ) {
        await send(batch);
        batch = [];
        size = 0;
      }
      batch.push(r);
      size += bytes;
    }
    if (batch.length > 0) await send(batch);
    // Acknowledged is not readable: return once every record fetches back as written and every
    // id lists, so a crash after this call never leaves writes that a rollback's listing (or a
    // count, or delete-until-empty) does not see. Fetch and list lag separately.
    await this.#waitFor(`${records.length} upserted vectors to become readable`, async () => {
      const got = await this.#fetchRecords(records.map((r) => r.id));
      return records.every((r) => {
        const m = got.get(r.id)?.metadata;
        return (
          m !== undefined &&
          Object.entries(r.metadata).every(([k, v]) =>
            Array.isArray(v) ? JSON.stringify(m[k]) === JSON.stringify(v) : m[k] === v,
          )
        );
      });
    });
    const prefixes = new Map<string, Set<string>>();
    for (const r of records) {
      const prefix = r.id.slice(0, r.id.lastIndexOf('#') + 1);
      let ids = prefixes.get(prefix);
      if (ids === undefined) {
        ids = new Set();
        prefixes.set(prefix, ids);
      }
      ids.add(r.id);
    }
    await this.#waitFor(`${records.length} upserted vectors to list`, async () => {
      for (const [prefix, ids] of prefixes) {
        const listed = new Set(await this.#listIds(prefix));
        for (const id of ids) if (!listed.has(id)) return false;
      }
      return true;
    });
  }

  async #listIds(prefix: string, namespaceIndex = this.index): Promise<string[]> {
    const ids: string[] = [];
    let paginationToken: string | undefined;
    do {
      const page = await this.call('list ids', () =>
        namespaceIndex.listPaginated({
          prefix,
          limit: PINECONE_LIST_LIMIT,
          ...(paginationToken === undefined ? {} : { paginationToken }),
        }),
      );
      for (const v of page.vectors ?? []) if (v.id !== undefined) ids.push(v.id);
      paginationToken = page.pagination?.next;
    } while (paginationToken !== undefined && paginationToken !== '');
    return ids;
  }

  async #fetchRecords(
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
    await this.#patch([{ documentId, versionId }], patch);
  }

  /** Versions sharing one patch value go out in one update by filter. */
  protected override async _patchValidityMany(patches: readonly VersionPatch[]): Promise<void> {
    for (const g of groupPatchesByValue(patches)) await this.#patch(g.refs, g.patch);
  }

  async #patch(refs: readonly VersionRef[], patch: ValidityPatch): Promise<void> {
    const set: Record<string, number | boolean> = {};
    if (patch.to !== undefined) set[FIELDS.to] = patch.to;
    if (patch.current !== undefined) set[FIELDS.current] = patch.current;
    const ids: string[] = [];
    for (const r of refs)
      ids.push(...(await this.#listIds(chunkIdPrefix(r.documentId, r.versionId))));
    if (ids.length === 0) return;
    let done = false;
    if (this.#filterUpdate) {
      // The filter is evaluated on the index as the query path sees it: let it catch up with
      // every write of ours first, or staged records are not matched.
      await this.#waitIndexed(this.#ns, this.#lsn.get(this.#ns), 'earlier writes');
      try {
        const r = await this.call('update metadata by filter', () =>
          this.#dp.update({ namespace: this.#ns, filter: versionsFilter(refs), setMetadata: set }),
        );
        this.#noteLsn(this.#ns, r.lsn);
        // Fewer matches than listed records: evaluated on stale state; the per-id path below
        // sets the rest (idempotent for the ones that matched).
        done = r.matchedRecords === undefined || r.matchedRecords >= ids.length;
      } catch (err) {
        if (!isUnsupported(err)) throw err;
        // Indexes without update by metadata (pod-based, Pinecone Local, older API versions).
        this.#filterUpdate = false;
      }
    }
    if (!done) {
      for (const id of ids) {
        const r = await this.call('update metadata', () =>
          this.#dp.update({ namespace: this.#ns, id, setMetadata: set }),
        );
        this.#noteLsn(this.#ns, r.lsn);
      }
    }
    // Acknowledged is not visible: return only once queries reflect the patch (LSN barrier) and
    // every chunk fetches back patched, so the epoch can never move ahead of the validity.
    await this.#waitIndexed(this.#ns, this.#lsn.get(this.#ns), 'the validity patch');
    await this.#waitFor(
      `validity patch of ${refs.length} version(s) to become visible`,
      async () => {
        const got = await this.#fetchRecords(ids);
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

  /** The newest fence: `rf_fence` in the pointer's metadata (absent: none raised yet). */
  protected override async _readFence(): Promise<number> {
    const v = (await this.#fetchPointer())?.[EPOCH_FENCE_KEY];
    return typeof v === 'number' ? v : 0;
  }

  /**
   * Sets `rf_fence` on the pointer (a metadata update: the claims' pointer writes keep it) and
   * waits until a fetch shows it. No conditional write: a raise that a slower, older one
   * overwrote reads back lower, and writes again.
   */
  protected override async _raiseFence(fence: number): Promise<void> {
    await this.#waitFor(`fence ${fence} to reach the epoch pointer`, async () => {
      const held = await this._readFence();
      if (held > fence) throw this.staleFence(fence, held);
      if (held === fence) return true;
      const lsn = await this.call('raise fence', () =>
        this.#dp.update({
          namespace: this.#epochNs,
          id: EPOCH_VECTOR_ID,
          setMetadata: { [EPOCH_FENCE_KEY]: fence },
        }),
      );
      this.#noteLsn(this.#epochNs, lsn.lsn);
      return false;
    });
  }

  #conflict(expected: number, detail: string): RagfreshError {
    return this.error(
      'EPOCH_CONFLICT',
      `expected epoch ${expected}: ${detail}; another publisher moved it or claimed the move.`,
    );
  }

  /**
   * Exclusive compare-and-set without a conditional write: an LSN-ordered claim that expires
   * (EpochClaims, docs/connectors/pinecone.md). Two racers never both win; a claimant that dies
   * anywhere in the move delays the next one by at most the claim expiry.
   */
  protected async _advanceEpoch(
    expected: number,
    next: number,
    _fence?: number,
    space?: string,
  ): Promise<void> {
    const now = await this._readEpoch();
    if (now !== expected) throw this.#conflict(expected, `the store holds ${now}`);
    // Written in the same pointer update as the epoch; a key left out keeps its stored value.
    const extras: PointerExtras = {
      ...(space === undefined ? {} : { [EPOCH_SPACE_KEY]: space }),
      ...(this.#indexName === undefined ? {} : { [EPOCH_INDEX_KEY]: this.#indexName }),
    };
    if (this.capabilities.epochClaim === 'lease-only')
      await this.#claims.moveUnclaimed(next, extras);
    else await this.#claims.advance(expected, next, extras);
  }

  /** `rf_epoch_space` of the pointer: the space of the last move that named one. */
  protected override async _readEpochSpace(): Promise<string | undefined> {
    const v = (await this.#fetchPointer())?.[EPOCH_SPACE_KEY];
    return typeof v === 'string' && v !== '' ? v : undefined;
  }

  /**
   * The connector of the same options on the index ragfresh keeps for embedding space `suffix`
   * beside the configured one (a namespace of this index cannot hold other dimensions): same
   * chunk namespace, its own epoch pointer and fence, created on open when missing.
   */
  protected override _forNamespace(suffix: string): PineconeConnector {
    return new PineconeConnector({ ...this.options, spaceIndex: suffix });
  }

  /**
   * Deletes every vector whose id starts with one of `prefixes` and returns once a listing shows
   * none. Listing can lag behind writes, so the delete also goes out as one metadata-filter
   * delete where the index supports it (ordered after every write acknowledged before it), and
   * the list-and-delete repeats until every prefix lists empty.
   */
  async #deletePrefixes(prefixes: readonly string[], filter: Filter): Promise<void> {
    if (this.#filterDelete) {
      try {
        const lsn = await this.call('delete by filter', () =>
          this.#dp.delete({ namespace: this.#ns, filter }),
        );
        this.#noteLsn(this.#ns, lsn);
      } catch (err) {
        if (!isUnsupported(err)) throw err;
        this.#filterDelete = false; // pod-based indexes and older API versions
      }
    }
    await this.#waitFor(`vectors under ${prefixes.length} prefix(es) to be deleted`, async () => {
      let left = 0;
      for (const prefix of prefixes) {
        const ids = await this.#listIds(prefix);
        left += ids.length;
        for (let i = 0; i < ids.length; i += 1_000) {
          const part = ids.slice(i, i + 1_000);
          const lsn = await this.call('delete vectors', () =>
            this.#dp.delete({ namespace: this.#ns, ids: part }),
          );
          this.#noteLsn(this.#ns, lsn);
        }
      }
      return left === 0;
    });
  }

  protected async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    await this._deleteVersions([{ documentId, versionId }]);
  }

  /** One filtered delete for the batch, then list-and-delete per version prefix until empty. */
  protected override async _deleteVersions(refs: readonly VersionRef[]): Promise<void> {
    await this.#deletePrefixes(
      refs.map((r) => chunkIdPrefix(r.documentId, r.versionId)),
      versionsFilter(refs),
    );
  }

  protected async _deleteDocuments(documentIds: readonly string[]): Promise<void> {
    for (let i = 0; i < documentIds.length; i += 100) {
      const part = documentIds.slice(i, i + 100);
      await this.#deletePrefixes(
        part.map((d) => chunkIdPrefix(d)),
        { [FIELDS.documentId]: { $in: part } },
      );
    }
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const ids = await this.#listIds(chunkIdPrefix(documentId, versionId));
    const got = await this.#fetchRecords(ids);
    const out: ListedChunk[] = [];
    for (const id of ids) {
      const rec = got.get(id);
      if (rec === undefined) continue; // listed, then deleted before the fetch
      const l = this.#toListed(id, rec.metadata);
      out.push(withEmbeddings ? { ...l, embedding: rec.values } : l);
    }
    return out;
  }

  /**
   * Every chunk, page by page: one list of ids (the whole namespace, id order; epoch records
   * live in their own namespace) and one fetch of their records. The cursor is Pinecone's
   * pagination token, so pages are keyset pages; list trails writes like every read here, so
   * chunks written during a scan may be missed (verify and recover scan under the lease).
   */
  protected override async _scan(
    cursor: string | undefined,
    pageSize: number,
  ): Promise<{ chunks: ListedChunk[]; next?: string }> {
    const page = await this.call('list ids', () =>
      this.index.listPaginated({
        limit: Math.min(pageSize, PINECONE_LIST_LIMIT),
        ...(cursor === undefined ? {} : { paginationToken: cursor }),
      }),
    );
    const ids: string[] = [];
    for (const v of page.vectors ?? []) if (v.id !== undefined) ids.push(v.id);
    const got = await this.#fetchRecords(ids);
    const chunks: ListedChunk[] = [];
    for (const id of ids) {
      const rec = got.get(id);
      if (rec !== undefined) chunks.push(this.#toListed(id, rec.metadata));
    }
    const next = page.pagination?.next;
    return next === undefined || next === '' ? { chunks } : { chunks, next };
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

/**
 * The registry factory (`connector: { store: 'pinecone', ...options }` in a ragfresh config):
 * `apiKey` and `namespace` are required (no default: `''` is Pinecone's default namespace, say
 * so), and exactly one of `indexName` or `host`. Unknown keys and wrong types are one
 * INVALID_CONFIG line naming `connector.<key>`.
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  _context: ConnectorFactoryContext,
): PineconeConnector {
  const spec = {
    apiKey: 'string!',
    indexName: 'string',
    host: 'string',
    namespace: 'string!',
    controllerHostUrl: 'string',
    createIndex: 'object',
    hostAliases: 'object',
    maxLagMs: 'integer',
    timeoutMs: 'integer',
    retry: 'object',
    epochClaim: 'string',
    claimExpiryMs: 'integer',
    spaceIndex: 'string',
  } as const;
  const given = checkConnectorOptions<PineconeConnectorOptions>('pinecone', options, spec);
  return buildConnector(
    'pinecone',
    Object.keys(spec),
    () => new PineconeConnector(given as PineconeConnectorOptions),
  );
}
