/**
 * A wire-level Pinecone emulator: node:http on 127.0.0.1 with a control plane (create /
 * describe / list / delete index, API 2026-07 shapes as in `@pinecone-database/pinecone@9`'s
 * generated `db_control` models) and one data-plane server per index (`/vectors/upsert`,
 * `/vectors/update`, `/vectors/delete`, `/vectors/fetch`, `/vectors/list`, `/query`,
 * `/describe_index_stats`, shapes of the generated `db_data` models). Limits are Pinecone's
 * published ones: 40 KB of metadata per record, 1000 vectors and 2 MB per upsert, 1000 ids per
 * fetch/delete, topK <= 10000, list limit <= 100; metadata values are strings, numbers,
 * booleans or lists of strings, never null. Writes become readable after the injected
 * visibility lag (eventual consistency). It is a test double, not Pinecone.
 */
import {
  type EmulatorRequest,
  Faults,
  HttpError,
  Reply,
  type RunningServer,
  startJsonServer,
} from './server.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
type MetaValue = string | number | boolean | string[];
type Metadata = Record<string, MetaValue>;

interface Vector {
  id: string;
  values: number[];
  metadata?: Metadata;
}

interface Index {
  name: string;
  dimension: number;
  metric: 'cosine' | 'euclidean' | 'dotproduct';
  cloud: string;
  region: string;
  namespaces: Map<string, Namespace>;
  server: RunningServer;
}

type Store = Map<string, Vector>;
type ReadPath = 'fetch' | 'list' | 'query';

/**
 * One namespace: a write log with one LSN counter (Pinecone's "check data freshness" page: a
 * monotonically increasing LSN per namespace) and one materialised view per read path, each
 * catching up with the log after its own lag, in log order.
 */
interface Namespace {
  lsn: number;
  log: Array<{ lsn: number; at: number; apply: (m: Store) => void }>;
  views: Record<ReadPath, { store: Store; applied: number }>;
}

/** Lags of the read paths of one namespace, ms after a write was acknowledged. */
export interface PineconeLags {
  readonly fetchMs?: number;
  readonly listMs?: number;
  readonly queryMs?: number;
}

export interface PineconeEmulatorOptions {
  readonly port?: number;
  readonly seed?: number;
  /**
   * Update by metadata filter: `true` (default; serverless on API 2025-04 and later), or the
   * HTTP status an index without it answers (`400`, `404`, `501`); `false` = 400.
   */
  readonly updateByFilter?: boolean | 400 | 404 | 501;
  /**
   * Lags per read path, for every namespace or per namespace name. Default: every path lags by
   * the fault layer's `visibilityLagMs`. `queryMs` > `fetchMs` models an index whose query path
   * trails fetch (nothing in Pinecone's docs says they become fresh together).
   */
  readonly lags?: PineconeLags | ((namespace: string) => PineconeLags);
  /** Send the LSN headers (`x-pinecone-request-lsn` on writes, `x-pinecone-max-indexed-lsn` on queries). Default true; false in Local mode. */
  readonly lsnHeaders?: boolean;
  /**
   * Namespaces per index (100 on the Starter plan); a write that would create one more is
   * refused with 403 QUOTA_EXCEEDED. Default unlimited.
   */
  readonly maxNamespaces?: number;
  /**
   * `local-2025-01`: behave like Pinecone Local, which speaks API 2025-01 — the control plane
   * refuses the 2026-07 schema-only create body (it needs `dimension`, `metric`, `spec`) and
   * answers with 2025-01 index models; no LSN headers; writes visible at once;
   * update by filter refused (with `updateByFilter`'s status, default 501).
   */
  readonly mode?: 'serverless' | 'local-2025-01';
}

export interface PineconeEmulator {
  /** Control-plane URL (`controllerHostUrl`). */
  readonly url: string;
  readonly faults: Faults;
  readonly requests: Map<string, number>;
  /** Creates an index directly (tests); returns its data-plane host URL. */
  createIndex(name: string, dimension: number): Promise<string>;
  close(): Promise<void>;
}

export const PINECONE_LIMITS = Object.freeze({
  /** Largest query response (Pinecone's query-data docs: "Max result size 4MB"). */
  queryResultBytes: 4 * 1024 * 1024,
  metadataBytes: 40_960,
  upsertVectors: 1_000,
  requestBytes: 2 * 1024 * 1024,
  fetchIds: 1_000,
  deleteIds: 1_000,
  topK: 10_000,
  listLimit: 100,
  idLength: 512,
  maxDimension: 20_000,
});

/** Data-plane errors are gRPC-gateway statuses: `{ code, message, details }`. */
const rpc = (status: number, code: number, message: string) =>
  new HttpError(status, { code, message, details: [] });
const invalid = (message: string) => rpc(400, 3, message);
/** Control-plane errors: `{ error: { code, message }, status }`. */
const control = (status: number, code: string, message: string) =>
  new HttpError(status, { error: { code, message }, status });

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fields(v: unknown, allowed: readonly string[], message: string): JsonObject {
  if (!isObject(v)) throw invalid(`invalid ${message}: expected a JSON object`);
  for (const k of Object.keys(v)) {
    if (!allowed.includes(k)) throw invalid(`unknown field "${k}" in ${message}`);
  }
  return v;
}

function checkMetadata(meta: unknown, where: string): Metadata {
  if (!isObject(meta)) throw invalid(`Metadata must be a JSON object (${where})`);
  for (const [k, v] of Object.entries(meta)) {
    const ok =
      typeof v === 'string' ||
      typeof v === 'boolean' ||
      (typeof v === 'number' && Number.isFinite(v)) ||
      (Array.isArray(v) && v.every((x) => typeof x === 'string'));
    if (!ok) {
      throw invalid(
        `Metadata value must be a string, number, boolean or list of strings, got '${v === null ? 'null' : JSON.stringify(v)}' for field '${k}'`,
      );
    }
  }
  return meta as Metadata;
}

function checkMetadataSize(meta: Metadata, id: string): void {
  const size = Buffer.byteLength(JSON.stringify(meta), 'utf8');
  if (size > PINECONE_LIMITS.metadataBytes) {
    throw invalid(
      `Metadata size is ${size} bytes, which exceeds the limit of ${PINECONE_LIMITS.metadataBytes} bytes per vector (id '${id}')`,
    );
  }
}

const SCALAR_OPS = ['$eq', '$ne'];
const NUMBER_OPS = ['$gt', '$gte', '$lt', '$lte'];
const LIST_OPS = ['$in', '$nin'];

function isScalar(v: unknown): v is string | number | boolean {
  return (
    typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))
  );
}

/** Validates a metadata filter the way the service does; throws 400 on anything malformed. */
export function validatePineconeFilter(f: unknown): void {
  if (!isObject(f)) throw invalid('Invalid filter: filter must be a JSON object');
  for (const [key, value] of Object.entries(f)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0)
        throw invalid(`Invalid filter: ${key} must be a non-empty array`);
      value.forEach(validatePineconeFilter);
      continue;
    }
    if (key.startsWith('$')) throw invalid(`Invalid filter: unknown operator ${key}`);
    if (value === null) throw invalid(`Invalid filter: null value for field '${key}'`);
    if (!isObject(value)) {
      if (!isScalar(value)) throw invalid(`Invalid filter: unsupported value for field '${key}'`);
      continue;
    }
    const ops = Object.entries(value);
    if (ops.length === 0) throw invalid(`Invalid filter: empty operator object for field '${key}'`);
    for (const [op, arg] of ops) {
      if (SCALAR_OPS.includes(op)) {
        if (!isScalar(arg))
          throw invalid(
            `Invalid filter: ${op} for field '${key}' needs a string, number or boolean`,
          );
      } else if (NUMBER_OPS.includes(op)) {
        if (typeof arg !== 'number' || !Number.isFinite(arg))
          throw invalid(`Invalid filter: ${op} for field '${key}' needs a number`);
      } else if (LIST_OPS.includes(op)) {
        if (!Array.isArray(arg))
          throw invalid(`Invalid filter: ${op} for field '${key}' needs an array`);
        if (arg.length === 0)
          throw invalid(`Invalid filter: ${op} for field '${key}' must have at least one value`);
        if (arg.length > 10_000)
          throw invalid(`Invalid filter: ${op} for field '${key}' has more than 10000 values`);
        if (!arg.every(isScalar))
          throw invalid(
            `Invalid filter: ${op} for field '${key}' needs strings, numbers or booleans`,
          );
      } else if (op === '$exists') {
        if (typeof arg !== 'boolean')
          throw invalid(`Invalid filter: $exists for field '${key}' needs a boolean`);
      } else {
        throw invalid(`Invalid filter: unknown operator ${op} for field '${key}'`);
      }
    }
  }
}

function eq(field: MetaValue | undefined, v: Json): boolean {
  if (field === undefined) return false;
  return Array.isArray(field) ? field.includes(v as string) : field === v;
}

export function matchPineconeFilter(meta: Metadata | undefined, f: JsonObject): boolean {
  const m = meta ?? {};
  for (const [key, value] of Object.entries(f)) {
    if (key === '$and') {
      if (!(value as JsonObject[]).every((x) => matchPineconeFilter(m, x))) return false;
      continue;
    }
    if (key === '$or') {
      if (!(value as JsonObject[]).some((x) => matchPineconeFilter(m, x))) return false;
      continue;
    }
    const field = m[key];
    const ops: JsonObject = isObject(value) ? value : { $eq: value };
    for (const [op, arg] of Object.entries(ops)) {
      const n = typeof field === 'number' ? field : undefined;
      const ok =
        op === '$eq'
          ? eq(field, arg)
          : op === '$ne'
            ? !eq(field, arg)
            : op === '$in'
              ? (arg as Json[]).some((x) => eq(field, x))
              : op === '$nin'
                ? !(arg as Json[]).some((x) => eq(field, x))
                : op === '$exists'
                  ? (field !== undefined) === arg
                  : n !== undefined &&
                    (op === '$gt'
                      ? n > (arg as number)
                      : op === '$gte'
                        ? n >= (arg as number)
                        : op === '$lt'
                          ? n < (arg as number)
                          : n <= (arg as number));
      if (!ok) return false;
    }
  }
  return true;
}

function similarity(metric: Index['metric'], a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let l2 = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
    l2 += (x - y) ** 2;
  }
  if (metric === 'dotproduct') return dot;
  if (metric === 'euclidean') return l2;
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

const INDEX_NAME = /^[a-z0-9]([a-z0-9-]{0,43}[a-z0-9])?$/;

export async function startPineconeEmulator(
  options: PineconeEmulatorOptions = {},
): Promise<PineconeEmulator> {
  const faults = new Faults(options.seed ?? 1);
  const indexes = new Map<string, Index>();
  const requests = new Map<string, number>();
  const local = options.mode === 'local-2025-01';
  const updateByFilter = options.updateByFilter ?? (local ? 501 : true);
  const lsnHeaders = options.lsnHeaders ?? !local;
  const count = (key: string) => requests.set(key, (requests.get(key) ?? 0) + 1);

  function requireKey(req: EmulatorRequest, plane: 'control' | 'data'): void {
    const key = req.headers['api-key'];
    if (typeof key !== 'string' || key === '') {
      if (plane === 'control') throw control(401, 'UNAUTHENTICATED', 'Invalid API Key');
      throw rpc(401, 16, 'Request unauthenticated: missing Api-Key header');
    }
  }

  function model(ix: Index) {
    if (local) {
      // API 2025-01 IndexModel: dimension / metric / spec at the top level.
      return {
        name: ix.name,
        dimension: ix.dimension,
        metric: ix.metric,
        host: ix.server.url.replace(/^https?:\/\//, ''),
        spec: { serverless: { cloud: ix.cloud, region: ix.region } },
        status: { ready: true, state: 'Ready' },
        deletion_protection: 'disabled',
        vector_type: 'dense',
      };
    }
    return {
      name: ix.name,
      host: ix.server.url,
      status: { ready: true, state: 'Ready' },
      deployment: {
        deployment_type: 'managed',
        cloud: ix.cloud,
        region: ix.region,
        environment: `${ix.region}-${ix.cloud}`,
      },
      schema: {
        fields: { _values: { type: 'dense_vector', dimension: ix.dimension, metric: ix.metric } },
      },
      deletion_protection: 'disabled',
    };
  }

  async function addIndex(
    name: string,
    dimension: number,
    metric: Index['metric'],
    cloud: string,
    region: string,
  ): Promise<Index> {
    const ix: Index = {
      name,
      dimension,
      metric,
      cloud,
      region,
      namespaces: new Map(),
      server: undefined as unknown as RunningServer,
    };
    ix.server = await startJsonServer(dataHandlers(ix), faults);
    indexes.set(name, ix);
    return ix;
  }

  /** Pinecone Local's create: the API 2025-01 body `{ name, dimension, metric, spec }`. */
  async function createLocalIndex(b: JsonObject): Promise<unknown> {
    for (const k of Object.keys(b)) {
      if (
        ![
          'name',
          'dimension',
          'metric',
          'spec',
          'deletion_protection',
          'tags',
          'vector_type',
        ].includes(k)
      )
        throw control(400, 'INVALID_ARGUMENT', `Bad request: unknown field \`${k}\` (API 2025-01)`);
    }
    const name = b.name;
    if (typeof name !== 'string' || !INDEX_NAME.test(name))
      throw control(400, 'INVALID_ARGUMENT', 'Bad request: invalid index name');
    const dimension = b.dimension;
    if (typeof dimension !== 'number' || !Number.isInteger(dimension) || dimension < 1)
      throw control(400, 'INVALID_ARGUMENT', 'Bad request: missing field `dimension`');
    const serverless =
      isObject(b.spec) && isObject(b.spec.serverless) ? b.spec.serverless : undefined;
    if (serverless === undefined)
      throw control(400, 'INVALID_ARGUMENT', 'Bad request: missing field `spec`');
    const metric = b.metric ?? 'cosine';
    if (metric !== 'cosine' && metric !== 'euclidean' && metric !== 'dotproduct')
      throw control(400, 'INVALID_ARGUMENT', `Invalid metric ${String(metric)}`);
    if (indexes.has(name)) throw control(409, 'ALREADY_EXISTS', `Resource ${name} already exists`);
    const ix = await addIndex(
      name,
      dimension,
      metric,
      String(serverless.cloud),
      String(serverless.region),
    );
    return new Reply(201, model(ix));
  }

  async function controlRoute(req: EmulatorRequest): Promise<unknown> {
    requireKey(req, 'control');
    const parts = req.path.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== 'indexes') throw control(404, 'NOT_FOUND', `Resource ${req.path} not found`);
    if (parts.length === 1 && req.method === 'GET') {
      count('GET /indexes');
      return { indexes: [...indexes.values()].map(model) };
    }
    if (parts.length === 1 && req.method === 'POST') {
      count('POST /indexes');
      const b = req.body;
      if (!isObject(b))
        throw control(400, 'INVALID_ARGUMENT', 'Bad request: body must be a JSON object');
      if (local) return createLocalIndex(b);
      for (const k of Object.keys(b)) {
        // The control plane speaks snake_case on the wire (see the generated *ToJSON mappers).
        if (
          ![
            'name',
            'deployment',
            'schema',
            'cmek_id',
            'read_capacity',
            'tags',
            'deletion_protection',
          ].includes(k)
        ) {
          throw control(400, 'INVALID_ARGUMENT', `Bad request: unknown field \`${k}\``);
        }
      }
      const name = b.name;
      if (typeof name !== 'string' || !INDEX_NAME.test(name)) {
        throw control(
          400,
          'INVALID_ARGUMENT',
          "Name must consist of lower case alphanumeric characters or '-', and be 1-45 characters long",
        );
      }
      const values =
        isObject(b.schema) && isObject(b.schema.fields) ? b.schema.fields._values : undefined;
      if (!isObject(values) || values.type !== 'dense_vector') {
        throw control(
          400,
          'INVALID_ARGUMENT',
          'The ragfresh emulator creates dense vector indexes only: schema.fields._values must be a dense_vector field',
        );
      }
      const dimension = values.dimension;
      if (
        typeof dimension !== 'number' ||
        !Number.isInteger(dimension) ||
        dimension < 1 ||
        dimension > PINECONE_LIMITS.maxDimension
      ) {
        throw control(
          400,
          'INVALID_ARGUMENT',
          `Dimension must be an integer between 1 and ${PINECONE_LIMITS.maxDimension}`,
        );
      }
      const metric = values.metric ?? 'cosine';
      if (metric !== 'cosine' && metric !== 'euclidean' && metric !== 'dotproduct') {
        throw control(400, 'INVALID_ARGUMENT', `Invalid metric ${String(metric)}`);
      }
      const d = isObject(b.deployment)
        ? b.deployment
        : { deployment_type: 'managed', cloud: 'aws', region: 'us-east-1' };
      if (
        d.deployment_type !== 'managed' ||
        typeof d.cloud !== 'string' ||
        typeof d.region !== 'string'
      ) {
        throw control(
          400,
          'INVALID_ARGUMENT',
          'The ragfresh emulator creates managed (serverless) indexes only',
        );
      }
      if (indexes.has(name))
        throw control(409, 'ALREADY_EXISTS', `Resource ${name} already exists`);
      return new Reply(201, model(await addIndex(name, dimension, metric, d.cloud, d.region)));
    }
    const ix = indexes.get(parts[1] ?? '');
    if (parts.length === 2 && req.method === 'GET') {
      count('GET /indexes/{name}');
      if (!ix) throw control(404, 'NOT_FOUND', `Resource ${parts[1]} not found`);
      return model(ix);
    }
    if (parts.length === 2 && req.method === 'DELETE') {
      count('DELETE /indexes/{name}');
      if (!ix) throw control(404, 'NOT_FOUND', `Resource ${parts[1]} not found`);
      indexes.delete(ix.name);
      await ix.server.close();
      return new Reply(202, {});
    }
    throw control(404, 'NOT_FOUND', `Resource ${req.path} not found`);
  }

  function dataHandlers(ix: Index) {
    const nsName = (name: unknown) =>
      typeof name === 'string' && name !== '' ? name : '__default__';
    const lagsOf = (name: string): Required<PineconeLags> => {
      const base = faults.visibilityLagMs;
      if (local) return { fetchMs: 0, listMs: 0, queryMs: 0 };
      const l = typeof options.lags === 'function' ? options.lags(name) : (options.lags ?? {});
      return {
        fetchMs: l.fetchMs ?? base,
        listMs: l.listMs ?? base,
        queryMs: l.queryMs ?? base,
      };
    };
    const space = (name: unknown, create: boolean): Namespace => {
      const key = nsName(name);
      let n = ix.namespaces.get(key);
      if (!n) {
        if (
          create &&
          options.maxNamespaces !== undefined &&
          ix.namespaces.size >= options.maxNamespaces
        ) {
          // Object limits page: "API operations return a 403 - QUOTA_EXCEEDED".
          throw rpc(
            403,
            7,
            `QUOTA_EXCEEDED: Namespace quota exceeded: the index already has ${ix.namespaces.size} namespaces, the limit is ${options.maxNamespaces}`,
          );
        }
        n = {
          lsn: 0,
          log: [],
          views: {
            fetch: { store: new Map(), applied: 0 },
            list: { store: new Map(), applied: 0 },
            query: { store: new Map(), applied: 0 },
          },
        };
        if (create) ix.namespaces.set(key, n);
      }
      return n;
    };
    /** The namespace as one read path sees it now: its view caught up to what its lag allows. */
    const view = (name: unknown, path: ReadPath): { store: Store; applied: number } => {
      const n = space(name, false);
      const lag = lagsOf(nsName(name))[`${path}Ms`];
      const v = n.views[path];
      const now = Date.now();
      for (const op of n.log) {
        if (op.lsn <= v.applied) continue;
        if (op.at + lag > now) break;
        op.apply(v.store);
        v.applied = op.lsn;
      }
      const done = Math.min(n.views.fetch.applied, n.views.list.applied, n.views.query.applied);
      while (n.log.length > 0 && n.log[0]!.lsn <= done) n.log.shift();
      return v;
    };
    /** Appends a write to the namespace's log; returns its LSN. */
    const write = (name: unknown, apply: (m: Store) => void): number => {
      const n = space(name, true);
      n.lsn += 1;
      n.log.push({ lsn: n.lsn, at: Date.now(), apply });
      for (const path of ['fetch', 'list', 'query'] as const) view(name, path);
      return n.lsn;
    };
    const written = (body: unknown, lsn: number) =>
      new Reply(200, body, lsnHeaders ? { 'x-pinecone-request-lsn': String(lsn) } : {});

    function checkValues(v: unknown, id: string): number[] {
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        throw invalid(`Vector values must be an array of finite numbers (id '${id}')`);
      }
      if (v.length !== ix.dimension) {
        throw invalid(
          `Vector dimension ${v.length} does not match the dimension of the index ${ix.dimension}`,
        );
      }
      if (ix.metric === 'cosine' && v.every((x) => x === 0)) {
        throw invalid(`Dense vectors must contain at least one non-zero value (id '${id}')`);
      }
      return (v as number[]).map((x) => Math.fround(x));
    }

    function checkId(id: unknown): string {
      if (typeof id !== 'string' || id === '')
        throw invalid('Vector id must be a non-empty string');
      if (Buffer.byteLength(id) > PINECONE_LIMITS.idLength)
        throw invalid(`Vector id must be at most ${PINECONE_LIMITS.idLength} bytes`);
      return id;
    }

    function route(req: EmulatorRequest): unknown {
      requireKey(req, 'data');
      const key = `${req.method} ${req.path}`;
      count(key);
      switch (key) {
        case 'POST /vectors/upsert': {
          const b = fields(req.body, ['vectors', 'namespace'], 'UpsertRequest');
          if (!Array.isArray(b.vectors) || b.vectors.length === 0)
            throw invalid('Invalid request: no vectors provided');
          if (b.vectors.length > PINECONE_LIMITS.upsertVectors) {
            throw invalid(
              `Invalid request: upsert of ${b.vectors.length} vectors exceeds the limit of ${PINECONE_LIMITS.upsertVectors} vectors per request`,
            );
          }
          // No duplicate-id refusal: the service takes the batch (the last record of an id wins).
          const vectors: Vector[] = b.vectors.map((raw) => {
            const v = fields(raw, ['id', 'values', 'sparseValues', 'metadata'], 'Vector');
            const id = checkId(v.id);
            if (v.sparseValues !== undefined)
              throw invalid(
                'Sparse values are not supported by this dense index in the ragfresh emulator',
              );
            const values = checkValues(v.values, id);
            if (v.metadata === undefined) return { id, values };
            const metadata = checkMetadata(v.metadata, `id '${id}'`);
            checkMetadataSize(metadata, id);
            return { id, values, metadata: structuredClone(metadata) };
          });
          const lsn = write(b.namespace, (m) => {
            for (const v of vectors) m.set(v.id, v);
          });
          return written({ upsertedCount: vectors.length }, lsn);
        }
        case 'POST /vectors/update': {
          const b = fields(
            req.body,
            ['id', 'values', 'sparseValues', 'setMetadata', 'namespace', 'filter', 'dryRun'],
            'UpdateRequest',
          );
          const hasId = b.id !== undefined;
          const hasFilter = b.filter !== undefined;
          if (hasId === hasFilter)
            throw invalid('Invalid request: exactly one of id or filter must be provided');
          if (b.sparseValues !== undefined)
            throw invalid(
              'Sparse values are not supported by this dense index in the ragfresh emulator',
            );
          const values = b.values === undefined ? undefined : checkValues(b.values, String(b.id));
          const set =
            b.setMetadata === undefined ? undefined : checkMetadata(b.setMetadata, 'setMetadata');
          if (hasId) {
            const id = checkId(b.id);
            const existing = view(b.namespace, 'fetch').store.get(id);
            if (existing && set) checkMetadataSize({ ...existing.metadata, ...set }, id);
            const lsn = write(b.namespace, (m) => {
              const v = m.get(id);
              if (!v) return;
              m.set(id, {
                ...v,
                ...(values ? { values } : {}),
                ...(set ? { metadata: { ...v.metadata, ...structuredClone(set) } } : {}),
              });
            });
            return written({}, lsn);
          }
          if (updateByFilter !== true) {
            const status = updateByFilter === false ? 400 : updateByFilter;
            if (status === 501) throw rpc(501, 12, 'Not implemented: update by metadata filter');
            if (status === 404) throw rpc(404, 5, 'Not Found: POST /vectors/update with filter');
            throw invalid('Update by metadata filter is not supported for this index');
          }
          if (values !== undefined)
            throw invalid('Invalid request: values cannot be updated by filter');
          validatePineconeFilter(b.filter);
          const filter = b.filter as JsonObject;
          // Evaluated against the namespace as its (lagging) metadata index sees it now: records
          // written but not yet indexed are not matched, and `matchedRecords` says so.
          const matched = [...view(b.namespace, 'query').store.values()].filter((v) =>
            matchPineconeFilter(v.metadata, filter),
          );
          if (set) for (const v of matched) checkMetadataSize({ ...v.metadata, ...set }, v.id);
          const ids = matched.map((v) => v.id);
          if (b.dryRun !== true && set) {
            const lsn = write(b.namespace, (m) => {
              for (const id of ids) {
                const v = m.get(id);
                if (v) m.set(id, { ...v, metadata: { ...v.metadata, ...structuredClone(set) } });
              }
            });
            return written({ matchedRecords: matched.length }, lsn);
          }
          return { matchedRecords: matched.length };
        }
        case 'POST /vectors/delete': {
          const b = fields(req.body, ['ids', 'deleteAll', 'namespace', 'filter'], 'DeleteRequest');
          const modes = [b.ids !== undefined, b.deleteAll === true, b.filter !== undefined].filter(
            Boolean,
          ).length;
          if (modes !== 1)
            throw invalid(
              'Invalid request: exactly one of ids, deleteAll or filter must be provided',
            );
          let lsn: number;
          if (b.ids !== undefined) {
            if (!Array.isArray(b.ids) || b.ids.length === 0)
              throw invalid('Invalid request: ids must be a non-empty array');
            if (b.ids.length > PINECONE_LIMITS.deleteIds)
              throw invalid(
                `Invalid request: delete of ${b.ids.length} ids exceeds the limit of ${PINECONE_LIMITS.deleteIds}`,
              );
            const ids = b.ids.map(checkId);
            lsn = write(b.namespace, (m) => {
              for (const id of ids) m.delete(id);
            });
          } else if (b.deleteAll === true) {
            lsn = write(b.namespace, (m) => m.clear());
          } else {
            validatePineconeFilter(b.filter);
            const filter = b.filter as JsonObject;
            // Applied in log order to whatever the record holds then.
            lsn = write(b.namespace, (m) => {
              for (const v of [...m.values()])
                if (matchPineconeFilter(v.metadata, filter)) m.delete(v.id);
            });
          }
          return written({}, lsn);
        }
        case 'GET /vectors/fetch': {
          for (const k of new Set(req.query.keys()))
            if (!['ids', 'namespace'].includes(k)) throw invalid(`unknown query parameter "${k}"`);
          const ids = req.query.getAll('ids');
          if (ids.length === 0) throw invalid('Invalid request: ids must be provided');
          if (ids.length > PINECONE_LIMITS.fetchIds)
            throw invalid(
              `Invalid request: fetch of ${ids.length} ids exceeds the limit of ${PINECONE_LIMITS.fetchIds}`,
            );
          const target = view(req.query.get('namespace'), 'fetch').store;
          const vectors: Record<string, Json> = {};
          for (const id of ids) {
            const v = target.get(id);
            if (v)
              vectors[id] = {
                id: v.id,
                values: [...v.values],
                ...(v.metadata ? { metadata: structuredClone(v.metadata) } : {}),
              };
          }
          return {
            vectors,
            namespace: nsName(req.query.get('namespace')),
            usage: { readUnits: 1 },
          };
        }
        case 'GET /vectors/list': {
          for (const k of req.query.keys()) {
            if (!['prefix', 'limit', 'paginationToken', 'namespace'].includes(k))
              throw invalid(`unknown query parameter "${k}"`);
          }
          const limitRaw = req.query.get('limit');
          const limit = limitRaw === null ? PINECONE_LIMITS.listLimit : Number(limitRaw);
          if (!Number.isInteger(limit) || limit < 1 || limit > PINECONE_LIMITS.listLimit) {
            throw invalid(
              `Invalid request: limit must be between 1 and ${PINECONE_LIMITS.listLimit}`,
            );
          }
          const prefix = req.query.get('prefix') ?? '';
          const token = req.query.get('paginationToken');
          let after: string | undefined;
          if (token !== null) {
            try {
              const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
                after?: unknown;
              };
              if (typeof decoded.after !== 'string') throw new Error('bad token');
              after = decoded.after;
            } catch {
              throw invalid('Invalid request: paginationToken is malformed');
            }
          }
          const ids = [...view(req.query.get('namespace'), 'list').store.keys()]
            .filter((id) => id.startsWith(prefix) && (after === undefined || id > after))
            .sort();
          const page = ids.slice(0, limit);
          const more = ids.length > limit;
          return {
            vectors: page.map((id) => ({ id })),
            ...(more
              ? {
                  pagination: {
                    next: Buffer.from(JSON.stringify({ after: page.at(-1) })).toString('base64url'),
                  },
                }
              : {}),
            namespace: nsName(req.query.get('namespace')),
            usage: { readUnits: 1 },
          };
        }
        case 'POST /query': {
          const b = fields(
            req.body,
            [
              'namespace',
              'topK',
              'filter',
              'includeValues',
              'includeMetadata',
              'vector',
              'sparseVector',
              'id',
              'scanFactor',
              'maxCandidates',
            ],
            'QueryRequest',
          );
          if (
            typeof b.topK !== 'number' ||
            !Number.isInteger(b.topK) ||
            b.topK < 1 ||
            b.topK > PINECONE_LIMITS.topK
          ) {
            throw invalid(`Invalid request: topK must be between 1 and ${PINECONE_LIMITS.topK}`);
          }
          if ((b.vector === undefined) === (b.id === undefined))
            throw invalid('Invalid request: exactly one of vector or id must be provided');
          if (b.sparseVector !== undefined)
            throw invalid(
              'Sparse queries are not supported by this dense index in the ragfresh emulator',
            );
          if (b.filter !== undefined) validatePineconeFilter(b.filter);
          const indexed = view(b.namespace, 'query');
          const target = indexed.store;
          const freshness: Record<string, string> = lsnHeaders
            ? { 'x-pinecone-max-indexed-lsn': String(indexed.applied) }
            : {};
          let q: number[];
          if (b.id !== undefined) {
            const v = target.get(checkId(b.id));
            if (!v)
              return new Reply(
                200,
                { matches: [], namespace: nsName(b.namespace), usage: { readUnits: 1 } },
                freshness,
              );
            q = v.values;
          } else {
            q = checkValues(b.vector, 'query');
          }
          const filter = b.filter as JsonObject | undefined;
          const better =
            ix.metric === 'euclidean'
              ? (a: number, c: number) => a - c
              : (a: number, c: number) => c - a;
          const scored = [...target.values()]
            .filter((v) => filter === undefined || matchPineconeFilter(v.metadata, filter))
            .map((v) => ({ v, s: similarity(ix.metric, q, v.values) }))
            .sort((x, y) => better(x.s, y.s) || (x.v.id < y.v.id ? -1 : 1))
            .slice(0, b.topK);
          const result = {
            matches: scored.map(({ v, s }) => ({
              id: v.id,
              score: Math.fround(s),
              values: b.includeValues === true ? [...v.values] : [],
              ...(b.includeMetadata === true && v.metadata
                ? { metadata: structuredClone(v.metadata) }
                : {}),
            })),
            namespace: nsName(b.namespace),
            usage: { readUnits: 5 },
          };
          const bytes = Buffer.byteLength(JSON.stringify(result), 'utf8');
          if (bytes > PINECONE_LIMITS.queryResultBytes) {
            throw invalid(
              `Query result size ${bytes} bytes exceeds the 4MB limit; lower topK or leave out values or metadata`,
            );
          }
          return new Reply(200, result, freshness);
        }
        case 'POST /describe_index_stats': {
          const b = fields(req.body ?? {}, ['filter'], 'DescribeIndexStatsRequest');
          if (b.filter !== undefined)
            throw invalid(
              'Invalid request: describe_index_stats does not support filtering on serverless indexes',
            );
          const namespaces: Record<string, Json> = {};
          let total = 0;
          for (const name of ix.namespaces.keys()) {
            const m = view(name, 'list').store;
            if (m.size === 0) continue;
            namespaces[name] = { vectorCount: m.size };
            total += m.size;
          }
          return {
            namespaces,
            dimension: ix.dimension,
            indexFullness: 0,
            totalVectorCount: total,
            metric: ix.metric,
            vectorType: 'dense',
          };
        }
        default:
          throw rpc(404, 5, `Not Found: ${req.method} ${req.path}`);
      }
    }

    return {
      maxBodyBytes: PINECONE_LIMITS.requestBytes,
      parseError: (msg: string) => invalid(`Invalid request: malformed JSON body: ${msg}`),
      tooLarge: (size: number) =>
        invalid(
          `Request size ${(size / 1024 / 1024).toFixed(2)}MB exceeds the maximum supported size of 2MB`,
        ),
      faultBody: (status: number) =>
        status === 429
          ? {
              code: 8,
              message:
                'Request failed. You have exceeded the request rate limit (injected by the ragfresh emulator).',
              details: [],
            }
          : {
              code: 14,
              message: 'Service unavailable (injected by the ragfresh emulator).',
              details: [],
            },
      handle: route,
    };
  }

  const controlServer = await startJsonServer(
    {
      maxBodyBytes: PINECONE_LIMITS.requestBytes,
      parseError: (msg) =>
        control(400, 'INVALID_ARGUMENT', `Bad request: malformed JSON body: ${msg}`),
      tooLarge: () => control(413, 'INVALID_ARGUMENT', 'Request too large'),
      faultBody: (status) =>
        status === 429
          ? {
              error: {
                code: 'RESOURCE_EXHAUSTED',
                message: 'Too many requests (injected by the ragfresh emulator)',
              },
              status,
            }
          : {
              error: {
                code: 'UNAVAILABLE',
                message: 'Service unavailable (injected by the ragfresh emulator)',
              },
              status,
            },
      handle: controlRoute,
    },
    faults,
    options.port,
  );

  return {
    url: controlServer.url,
    faults,
    requests,
    async createIndex(name, dimension) {
      const existing = indexes.get(name);
      if (existing) return existing.server.url;
      return (await addIndex(name, dimension, 'cosine', 'aws', 'us-east-1')).server.url;
    },
    async close() {
      for (const ix of indexes.values()) await ix.server.close();
      indexes.clear();
      await controlServer.close();
    },
  };
}
