/**
 * A wire-level Qdrant emulator: node:http on 127.0.0.1 implementing the REST endpoints the
 * ragfresh Qdrant connector and `@langchain/qdrant` call, following the request/response
 * schemas of Qdrant's published OpenAPI document (as shipped in `@qdrant/js-client-rest`'s
 * generated types). Requests are validated strictly: unknown body fields, non-UUID /
 * non-unsigned-integer point ids and wrong vector sizes are refused with Qdrant's error body
 * `{ status: { error }, time }`. It is a test double, not Qdrant: no HNSW, no persistence,
 * exact cosine scoring.
 */

import { parseOrdering, ReplicaSet } from './qdrant-replicas.js';
import {
  type EmulatorHandlers,
  type EmulatorRequest,
  Faults,
  HttpError,
  LaggedLog,
  type RunningServer,
  startJsonServer,
} from './server.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
type PointId = number | string;

interface Point {
  id: PointId;
  vector: number[];
  payload: JsonObject;
}

type Distance = 'Cosine' | 'Euclid' | 'Dot' | 'Manhattan';

interface Collection {
  name: string;
  size: number;
  distance: Distance;
  /** The points of the replica serving the current request (or applying a write). */
  readonly points: Map<string, Point>;
  readonly replicas: ReplicaSet<Point>;
  indexes: Map<string, Json>;
  log: LaggedLog;
  strict: StrictMode | undefined;
}

/** The strict-mode settings the emulator enforces (a subset of Qdrant's `StrictModeConfig`). */
export interface StrictMode {
  readonly enabled?: boolean;
  readonly unindexed_filtering_retrieve?: boolean;
  readonly unindexed_filtering_update?: boolean;
}

/** Qdrant Cloud's default for new collections (cloud/configure-cluster docs page). */
export const CLOUD_STRICT_MODE: StrictMode = Object.freeze({
  enabled: true,
  unindexed_filtering_retrieve: false,
  unindexed_filtering_update: false,
});

export interface QdrantEmulatorOptions {
  readonly port?: number;
  /** Seed of the fault PRNG. */
  readonly seed?: number;
  /**
   * Version reported by `GET /` (default 1.19.0). Below 1.17.0 the emulator behaves like those
   * servers: `update_mode` is an unknown field, ignored, so an `insert_only` upsert overwrites.
   */
  readonly version?: string;
  /**
   * Strict mode given to every collection created without its own `strict_mode_config`, as
   * Qdrant Cloud does (`CLOUD_STRICT_MODE`). Default: none (a self-hosted server's default).
   */
  readonly strictMode?: StrictMode;
  /**
   * Replicas of every collection's one shard (a cluster with `replication_factor` = this), one
   * node (URL in `nodes`) per replica, each node holding one replica. Default 1. With more, a
   * write's `ordering` decides in which order replicas apply it and a read's `consistency` how
   * many replicas answer (see `qdrant-replicas.ts`); the visibility lag of `faults` is not
   * applied.
   */
  readonly replicas?: number;
  /** How long a write takes to reach a replica other than the first to apply it (default 20). */
  readonly replicaDelayMs?: number;
}

/** A scripted answer for the next matching requests (`inject`). */
export type QdrantInjection =
  | {
      /** 408 (server timeout), 403 (forbidden / write lock) or 429 (rate limit). */
      readonly status: 408 | 403 | 429;
      /** 429 only: send `Retry-After: <seconds>`; absent = no header, as Qdrant may answer. */
      readonly retryAfterSeconds?: number;
      readonly times?: number;
      /** `METHOD /path/template` as counted in `requests`; absent = any request. */
      readonly route?: string;
    }
  | {
      /**
       * The next waited writes take `delayMs` to apply. With a `timeout` query parameter shorter
       * than that, the answer is 200 `status: wait_timeout`; without one, 408. Either way the
       * write is applied once the delay passed (it was accepted into the WAL).
       */
      readonly slowWriteMs: number;
      readonly times?: number;
      readonly route?: string;
    };

export interface QdrantEmulator {
  /** URL of node 0. */
  readonly url: string;
  /** URL of every node; node i serves reads from replica i (one node without `replicas`). */
  readonly nodes: readonly string[];
  readonly faults: Faults;
  /** Number of requests served per `METHOD path-template`, for tests. */
  readonly requests: Map<string, number>;
  /** Unknown body fields and query parameters ignored so far, as `Struct.field`. */
  readonly ignoredFields: string[];
  /** Scripts the answer of the next matching requests. */
  inject(injection: QdrantInjection): void;
  close(): Promise<void>;
}

const UUID =
  /^(?:urn:uuid:)?\{?([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})\}?$/;
const DISTANCES: readonly Distance[] = ['Cosine', 'Euclid', 'Dot', 'Manhattan'];
const INDEX_TYPES = ['keyword', 'integer', 'float', 'geo', 'text', 'bool', 'datetime', 'uuid'];

function body(error: string): { status: { error: string }; time: number } {
  return { status: { error }, time: 0 };
}
const format = (msg: string) => new HttpError(400, body(`Format error in JSON body: ${msg}`));
const validation = (msg: string) =>
  new HttpError(422, body(`Validation error in JSON body: [${msg}]`));
const wrongInput = (msg: string) => new HttpError(400, body(`Wrong input: ${msg}`));
const notFound = (msg: string) => new HttpError(404, body(`Not found: ${msg}`));

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Unknown fields the emulator ignored while serving the current request (see `fields`). */
let ignoredSink: string[] = [];

/**
 * Serde's default for a struct: unknown fields are ignored (recorded in `ignoredFields`). In
 * Qdrant 1.19 only `Filter` and the payload selectors deny unknown fields
 * (lib/segment/src/types.rs, `#[serde(deny_unknown_fields)]`); use `denyFields` for those.
 */
function fields(v: unknown, allowed: readonly string[], what: string): JsonObject {
  if (!isObject(v)) throw format(`invalid type: expected struct ${what}`);
  for (const key of Object.keys(v)) if (!allowed.includes(key)) ignoredSink.push(`${what}.${key}`);
  return v;
}

/** Serde's `deny_unknown_fields`: the object must have only `allowed` keys. */
function denyFields(v: unknown, allowed: readonly string[], what: string): JsonObject {
  if (!isObject(v)) throw format(`invalid type: expected struct ${what}`);
  for (const key of Object.keys(v)) {
    if (!allowed.includes(key)) {
      throw format(
        `unknown field \`${key}\`, expected one of ${allowed.map((a) => `\`${a}\``).join(', ')}`,
      );
    }
  }
  return v;
}

/** Parses an ExtendedPointId: an unsigned 64-bit integer or a UUID (normalised to hyphenated lower case). */
export function parsePointId(v: unknown): PointId {
  if (typeof v === 'number') {
    if (Number.isSafeInteger(v) && v >= 0) return v;
  } else if (typeof v === 'string') {
    const m = UUID.exec(v);
    if (m) return m.slice(1, 6).join('-').toLowerCase();
  }
  throw format(
    `value ${JSON.stringify(v)} is not a valid point ID, valid values are either an unsigned integer or a UUID`,
  );
}

const idKey = (id: PointId) => (typeof id === 'number' ? `n:${id}` : `u:${id}`);

function compareIds(a: PointId, b: PointId): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function conditionList(v: Json | undefined): Json[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}

/** Values at a dotted payload path; arrays on the way are flattened like Qdrant does. */
function valuesAt(payload: Json, key: string): Json[] {
  let current: Json[] = [payload];
  for (const part of key.split('.')) {
    const next: Json[] = [];
    for (const c of current) {
      const items = Array.isArray(c) ? c : [c];
      for (const item of items) {
        if (isObject(item) && part in item) next.push(item[part] as Json);
      }
    }
    current = next;
  }
  return current.flatMap((v) => (Array.isArray(v) ? v : [v]));
}

function validateFilter(v: unknown): void {
  if (v === null || v === undefined) return;
  const f = denyFields(v, ['must', 'should', 'must_not', 'min_should'], 'Filter');
  for (const k of ['must', 'should', 'must_not'] as const) {
    for (const c of conditionList(f[k])) validateCondition(c);
  }
  if (f.min_should !== undefined && f.min_should !== null) {
    const m = fields(f.min_should, ['conditions', 'min_count'], 'MinShould');
    for (const c of conditionList(m.conditions)) validateCondition(c);
    if (typeof m.min_count !== 'number') throw format('missing field `min_count`');
  }
}

const FIELD_CONDITIONS = [
  'match',
  'range',
  'geo_bounding_box',
  'geo_radius',
  'geo_polygon',
  'values_count',
  'is_empty',
  'is_null',
];

function validateCondition(c: unknown): void {
  if (!isObject(c)) throw format('data did not match any variant of untagged enum Condition');
  if ('key' in c) {
    const fc = fields(
      c,
      [
        'key',
        'match',
        'range',
        'geo_bounding_box',
        'geo_radius',
        'geo_polygon',
        'values_count',
        'is_empty',
        'is_null',
      ],
      'FieldCondition',
    );
    if (typeof fc.key !== 'string') throw format('invalid type for `key`, expected a string');
    const present = FIELD_CONDITIONS.filter((k) => fc[k] !== null && fc[k] !== undefined);
    if (present.length === 0) throw validation('At least one field condition must be specified');
    if (fc.match !== undefined && fc.match !== null) validateMatch(fc.match);
    if (fc.range !== undefined && fc.range !== null) {
      const r = fields(fc.range, ['lt', 'gt', 'gte', 'lte'], 'Range');
      for (const [k, x] of Object.entries(r)) {
        if (x !== null && typeof x !== 'number')
          throw format(`invalid type for range \`${k}\`, expected a number`);
      }
    }
    if (fc.geo_bounding_box || fc.geo_radius || fc.geo_polygon || fc.values_count) {
      throw wrongInput(
        'geo and values_count conditions are not supported by the ragfresh emulator',
      );
    }
    return;
  }
  if ('is_empty' in c || 'is_null' in c) {
    const k = 'is_empty' in c ? 'is_empty' : 'is_null';
    const inner = fields(c, [k], 'IsEmptyCondition')[k];
    if (typeof fields(inner, ['key'], 'PayloadField').key !== 'string')
      throw format('missing field `key`');
    return;
  }
  if ('has_id' in c) {
    const ids = fields(c, ['has_id'], 'HasIdCondition').has_id;
    if (!Array.isArray(ids)) throw format('invalid type for `has_id`, expected a sequence');
    ids.forEach(parsePointId);
    return;
  }
  if ('must' in c || 'should' in c || 'must_not' in c || 'min_should' in c) {
    validateFilter(c);
    return;
  }
  if ('nested' in c || 'has_vector' in c || 'slice' in c) {
    throw wrongInput(
      'nested, has_vector and slice conditions are not supported by the ragfresh emulator',
    );
  }
  throw format('data did not match any variant of untagged enum Condition');
}

function validateMatch(m: unknown): void {
  if (!isObject(m)) throw format('data did not match any variant of untagged enum Match');
  const keys = Object.keys(m);
  if (keys.length !== 1) throw format('data did not match any variant of untagged enum Match');
  const [k] = keys as [string];
  const v = m[k];
  if (k === 'value') {
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
      throw format('data did not match any variant of untagged enum ValueVariants');
    }
    if (typeof v === 'number' && !Number.isInteger(v)) {
      throw format('data did not match any variant of untagged enum ValueVariants');
    }
  } else if (k === 'any' || k === 'except') {
    if (
      !Array.isArray(v) ||
      !(v.every((x) => typeof x === 'string') || v.every((x) => Number.isInteger(x)))
    ) {
      throw format('data did not match any variant of untagged enum AnyVariants');
    }
  } else if (['text', 'text_any', 'phrase', 'prefix'].includes(k)) {
    if (typeof v !== 'string') throw format(`invalid type for \`${k}\`, expected a string`);
  } else {
    throw format('data did not match any variant of untagged enum Match');
  }
}

function matchFilter(p: Point, f: Json | undefined): boolean {
  if (f === undefined || f === null) return true;
  const filter = f as JsonObject;
  const must = conditionList(filter.must);
  const should = conditionList(filter.should);
  const mustNot = conditionList(filter.must_not);
  if (!must.every((c) => matchCondition(p, c))) return false;
  if (mustNot.some((c) => matchCondition(p, c))) return false;
  if (should.length > 0 && !should.some((c) => matchCondition(p, c))) return false;
  if (isObject(filter.min_should)) {
    const conds = conditionList(filter.min_should.conditions);
    const n = conds.filter((c) => matchCondition(p, c)).length;
    if (n < Number(filter.min_should.min_count)) return false;
  }
  return true;
}

function matchCondition(p: Point, c: Json): boolean {
  const cond = c as JsonObject;
  if ('key' in cond) {
    const values = valuesAt(p.payload, cond.key as string);
    if (cond.is_empty === true && values.some((v) => v !== null)) return false;
    if (cond.is_empty === false && !values.some((v) => v !== null)) return false;
    if (cond.is_null === true && !values.some((v) => v === null)) return false;
    if (isObject(cond.match)) {
      const m = cond.match;
      if ('value' in m && !values.some((v) => v === m.value)) return false;
      if ('any' in m && !values.some((v) => (m.any as Json[]).includes(v))) return false;
      if ('except' in m && values.some((v) => (m.except as Json[]).includes(v))) return false;
      if ('text' in m && !values.some((v) => typeof v === 'string' && v.includes(m.text as string)))
        return false;
      if (
        'prefix' in m &&
        !values.some((v) => typeof v === 'string' && v.startsWith(m.prefix as string))
      )
        return false;
    }
    if (isObject(cond.range)) {
      const r = cond.range;
      const ok = values.some(
        (v) =>
          typeof v === 'number' &&
          (r.lt == null || v < (r.lt as number)) &&
          (r.gt == null || v > (r.gt as number)) &&
          (r.lte == null || v <= (r.lte as number)) &&
          (r.gte == null || v >= (r.gte as number)),
      );
      if (!ok) return false;
    }
    return true;
  }
  if ('is_empty' in cond) {
    const values = valuesAt(p.payload, (cond.is_empty as JsonObject).key as string);
    return !values.some((v) => v !== null);
  }
  if ('is_null' in cond) {
    return valuesAt(p.payload, (cond.is_null as JsonObject).key as string).some((v) => v === null);
  }
  if ('has_id' in cond) {
    const key = idKey(p.id);
    return (cond.has_id as Json[]).some((id) => idKey(parsePointId(id)) === key);
  }
  return matchFilter(p, cond);
}

const INDEX_FOR_VALUE = (v: Json): string[] =>
  typeof v === 'string' ? ['keyword', 'uuid'] : typeof v === 'boolean' ? ['bool'] : ['integer'];

/**
 * The first filter key without a payload index able to serve its condition, with the index
 * types that would (Qdrant's `one_unindexed_key`, lib/collection/src/operations/verification/mod.rs).
 */
function oneUnindexedKey(
  c: Collection,
  f: Json | undefined,
): readonly [string, readonly string[]] | undefined {
  if (!isObject(f)) return undefined;
  const conds = [
    ...conditionList(f.must),
    ...conditionList(f.should),
    ...conditionList(f.must_not),
    ...(isObject(f.min_should) ? conditionList(f.min_should.conditions) : []),
  ];
  for (const cond of conds) {
    if (!isObject(cond)) continue;
    if ('must' in cond || 'should' in cond || 'must_not' in cond || 'min_should' in cond) {
      const inner = oneUnindexedKey(c, cond);
      if (inner) return inner;
      continue;
    }
    if (typeof cond.key !== 'string') continue;
    let types: string[] = [];
    if (isObject(cond.match)) {
      const m = cond.match;
      const v =
        'value' in m
          ? m.value
          : Array.isArray(m.any)
            ? m.any[0]
            : Array.isArray(m.except)
              ? m.except[0]
              : undefined;
      types =
        'text' in m || 'phrase' in m
          ? ['text']
          : v === undefined
            ? ['keyword']
            : INDEX_FOR_VALUE(v);
    } else if (isObject(cond.range)) types = ['integer', 'float', 'datetime'];
    else continue;
    const schema = c.indexes.get(cond.key);
    const type = isObject(schema) ? schema.type : schema;
    if (!types.includes(type as string)) return [cond.key, types];
  }
  return undefined;
}

/** Strict mode: 400 on a filter key without a usable payload index. */
function checkStrict(c: Collection, filter: Json | undefined, use: 'retrieve' | 'update'): void {
  const strict = c.strict;
  if (strict?.enabled !== true) return;
  const allowed =
    use === 'update' ? strict.unindexed_filtering_update : strict.unindexed_filtering_retrieve;
  if (allowed !== false) return;
  const missing = oneUnindexedKey(c, filter);
  if (missing === undefined) return;
  throw new HttpError(
    400,
    body(
      `Bad request: Index required but not found for "${missing[0]}" of one of the following types: [${[...missing[1]].sort().join(', ')}]. Help: Create an index for this key or use a different filter.`,
    ),
  );
}

function selectPayload(
  p: Point,
  withPayload: Json | undefined,
  dflt: boolean,
): JsonObject | undefined {
  const w = withPayload ?? dflt;
  if (w === false || w === null) return undefined;
  if (w === true) return structuredClone(p.payload);
  if (Array.isArray(w)) return pick(p.payload, w as string[]);
  if (isObject(w) && Array.isArray(w.include)) return pick(p.payload, w.include as string[]);
  if (isObject(w) && Array.isArray(w.exclude)) {
    const out = structuredClone(p.payload);
    for (const k of w.exclude as string[]) delete out[k];
    return out;
  }
  return structuredClone(p.payload);
}

function pick(payload: JsonObject, keys: readonly string[]): JsonObject {
  const out: JsonObject = {};
  for (const k of keys) {
    const [head, ...rest] = k.split('.');
    const v = payload[head!];
    if (v === undefined) continue;
    if (rest.length === 0 || !isObject(v)) out[head!] = structuredClone(v);
    else out[head!] = { ...((out[head!] as JsonObject) ?? {}), ...pick(v, [rest.join('.')]) };
  }
  return out;
}

function validateWithPayload(v: unknown): void {
  if (v === undefined || v === null || typeof v === 'boolean') return;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return;
  if (isObject(v) && Array.isArray(v.include)) {
    denyFields(v, ['include'], 'PayloadSelectorInclude');
    return;
  }
  if (isObject(v) && Array.isArray(v.exclude)) {
    denyFields(v, ['exclude'], 'PayloadSelectorExclude');
    return;
  }
  throw format('data did not match any variant of untagged enum WithPayloadInterface');
}

function validateWithVector(v: unknown): void {
  if (v === undefined || v === null || typeof v === 'boolean') return;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return;
  throw format('data did not match any variant of untagged enum WithVector');
}

function toF32(v: readonly number[]): number[] {
  return v.map((x) => Math.fround(x));
}

function normalise(v: readonly number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return n === 0 ? toF32(v) : toF32(v.map((x) => x / n));
}

function score(distance: Distance, a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let l2 = 0;
  let l1 = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    l2 += (x - y) ** 2;
    l1 += Math.abs(x - y);
  }
  if (distance === 'Euclid') return Math.sqrt(l2);
  if (distance === 'Manhattan') return l1;
  return dot;
}

function vectorOf(v: unknown, size: number, what = 'vector'): number[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    throw format(`invalid type for \`${what}\`, expected a sequence of numbers`);
  }
  if (v.length !== size)
    throw wrongInput(`Vector dimension error: expected dim: ${size}, got ${v.length}`);
  return v as number[];
}

function setAtPath(target: JsonObject, path: string | null | undefined, value: JsonObject): void {
  let obj = target;
  if (path) {
    for (const part of path.split('.')) {
      const next = obj[part];
      if (!isObject(next)) obj[part] = {};
      obj = obj[part] as JsonObject;
    }
  }
  for (const [k, v] of Object.entries(value)) obj[k] = structuredClone(v);
}

class QdrantState {
  readonly collections = new Map<string, Collection>();
  readonly aliases = new Map<string, string>();
  /** Node serving the current request. */
  node = 0;

  resolve(name: string): Collection {
    const c = this.collections.get(this.aliases.get(name) ?? name);
    if (!c) throw notFound(`Collection \`${name}\` doesn't exist!`);
    c.log.settle();
    c.replicas.active = this.node % c.replicas.count;
    return c;
  }
}

const WRITE_QUERY = ['wait', 'ordering', 'timeout'];
const READ_QUERY = ['consistency', 'timeout'];

function checkQuery(req: EmulatorRequest, allowed: readonly string[]): void {
  // actix's Query extractor ignores unknown parameters like any serde struct without deny.
  for (const key of req.query.keys()) if (!allowed.includes(key)) ignoredSink.push(`query.${key}`);
  const wait = req.query.get('wait');
  if (wait !== null && wait !== 'true' && wait !== 'false') {
    throw new HttpError(
      400,
      body('Query deserialize error: provided string was not `true` or `false`'),
    );
  }
}

function atLeast(version: string, floor: readonly [number, number, number]): boolean {
  const v = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version)?.slice(1).map(Number) ?? [0, 0, 0];
  for (let i = 0; i < 3; i++) if (v[i] !== floor[i]) return v[i]! > floor[i]!;
  return true;
}

function updateResult(operationId: number, waited: boolean) {
  return { operation_id: operationId, status: waited ? 'completed' : 'acknowledged' };
}

export async function startQdrantEmulator(
  options: QdrantEmulatorOptions = {},
): Promise<QdrantEmulator> {
  const faults = new Faults(options.seed ?? 1);
  const state = new QdrantState();
  const requests = new Map<string, number>();
  let operationId = 0;
  const version = options.version ?? '1.19.0';
  // `update_mode` arrived in 1.17 (lib/api/src/rest/schema.rs, PointsList.update_mode).
  const knowsUpdateMode = atLeast(version, [1, 17, 0]);
  const ignoredFields: string[] = [];
  const injections: Array<QdrantInjection & { left: number }> = [];
  let currentRoute = '';

  function takeInjection(kind: 'status' | 'slow'): QdrantInjection | undefined {
    const i = injections.findIndex(
      (x) =>
        ('status' in x ? kind === 'status' : kind === 'slow') &&
        (x.route === undefined || x.route === currentRoute),
    );
    if (i < 0) return undefined;
    const x = injections[i]!;
    x.left -= 1;
    if (x.left <= 0) injections.splice(i, 1);
    return x;
  }

  /** Applies a write now when `wait=true`, else after the injected visibility lag. */
  function write(c: Collection, req: EmulatorRequest, run: () => void): unknown {
    const waited = req.query.get('wait') === 'true';
    const ordering = parseOrdering(req.query.get('ordering'));
    if (c.replicas.count > 1) {
      operationId += 1;
      const id = operationId;
      const applied = c.replicas.write(state.node, ordering, run);
      return waited ? applied.then(() => updateResult(id, true)) : updateResult(id, false);
    }
    const slow = waited ? takeInjection('slow') : undefined;
    operationId += 1;
    if (waited && (slow !== undefined || c.log.pending > 0)) {
      // Accepted into the WAL, applied once the delay passed (and after every write before it,
      // in WAL order); the wait gives up first.
      const delayMs = slow !== undefined && 'slowWriteMs' in slow ? slow.slowWriteMs : 0;
      c.log.apply(delayMs, run);
      c.log.settle();
      if (c.log.pending === 0) return updateResult(operationId, true);
      const timeout = req.query.get('timeout');
      if (timeout !== null) {
        // The server waits up to `timeout` seconds: long enough, and it answers completed (the
        // emulator answers at once, as if it had waited); too short, and wait_timeout.
        if (Number(timeout) * 1000 >= c.log.lastDueAt - Date.now()) {
          c.log.flush();
          return updateResult(operationId, true);
        }
        return { operation_id: operationId, status: 'wait_timeout' };
      }
      throw new HttpError(
        408,
        body('Timeout error: Update operation timed out on 1 out of 1 shards.'),
      );
    }
    c.log.apply(waited ? 0 : faults.visibilityLagMs, run);
    if (waited) c.log.settle();
    return updateResult(operationId, waited);
  }

  function handle(req: EmulatorRequest): unknown {
    ignoredSink = [];
    try {
      return route(req);
    } finally {
      ignoredFields.push(...ignoredSink);
    }
  }

  function injectedStatus(): void {
    const x = takeInjection('status');
    if (x === undefined || !('status' in x)) return;
    if (x.status === 408) throw new HttpError(408, body('Timeout error: operation timed out'));
    if (x.status === 403)
      throw new HttpError(403, body('Forbidden: write operations are forbidden (locked)'));
    throw new HttpError(
      429,
      body('Rate limiting exceeded: Write rate limit exceeded, retry later'),
      x.retryAfterSeconds === undefined ? {} : { 'retry-after': String(x.retryAfterSeconds) },
    );
  }

  function ok(result: unknown, t0: number): unknown {
    if (result instanceof Promise) return result.then((r: unknown) => ok(r, t0));
    return { result, status: 'ok', time: (Date.now() - t0) / 1000 };
  }

  /** Reads other than retrieve answer from the serving node's replica only. */
  function localRead(c: Collection, req: EmulatorRequest): void {
    if (c.replicas.count > 1 && req.query.get('consistency') !== null)
      throw wrongInput('the ragfresh emulator resolves read consistency for retrieve only');
  }

  function route(req: EmulatorRequest): unknown {
    const t0 = Date.now();
    const parts = req.path.split('/').filter(Boolean).map(decodeURIComponent);
    const m = req.method;
    const count = (template: string) => {
      currentRoute = `${m} ${template}`;
      requests.set(currentRoute, (requests.get(currentRoute) ?? 0) + 1);
      injectedStatus();
    };

    if (parts.length === 0 && m === 'GET') {
      count('/');
      return { title: 'qdrant - vector search engine (ragfresh emulator)', version };
    }
    if (parts[0] === 'aliases' && parts.length === 1 && m === 'GET') {
      count('/aliases');
      return ok(
        { aliases: [...state.aliases].map(([a, c]) => ({ alias_name: a, collection_name: c })) },
        t0,
      );
    }
    if (parts[0] !== 'collections') throw new HttpError(404, body(`Not found: ${req.path}`));
    if (parts.length === 1 && m === 'GET') {
      count('/collections');
      return ok({ collections: [...state.collections.keys()].map((name) => ({ name })) }, t0);
    }
    if (parts[1] === 'aliases' && parts.length === 2 && m === 'POST') {
      count('/collections/aliases');
      checkQuery(req, ['timeout']);
      return ok(changeAliases(req.body), t0);
    }
    const name = parts[1]!;
    if (parts.length === 2) {
      if (m === 'GET') {
        count('/collections/{name}');
        return ok(collectionInfo(state.resolve(name)), t0);
      }
      if (m === 'PUT') {
        count('/collections/{name}');
        checkQuery(req, ['timeout']);
        return ok(createCollection(name, req.body), t0);
      }
      if (m === 'DELETE') {
        count('/collections/{name}');
        checkQuery(req, ['timeout']);
        const existed = state.collections.delete(name);
        for (const [a, c] of [...state.aliases]) if (c === name) state.aliases.delete(a);
        return ok(existed, t0);
      }
    }
    if (parts.length === 3 && parts[2] === 'exists' && m === 'GET') {
      count('/collections/{name}/exists');
      return ok({ exists: state.collections.has(state.aliases.get(name) ?? name) }, t0);
    }
    if (parts.length === 3 && parts[2] === 'aliases' && m === 'GET') {
      count('/collections/{name}/aliases');
      const c = state.resolve(name);
      return ok(
        {
          aliases: [...state.aliases]
            .filter(([, t]) => t === c.name)
            .map(([a, t]) => ({ alias_name: a, collection_name: t })),
        },
        t0,
      );
    }
    if (parts.length === 3 && parts[2] === 'index' && m === 'PUT') {
      count('/collections/{name}/index');
      checkQuery(req, WRITE_QUERY);
      const c = state.resolve(name);
      const b = fields(req.body, ['field_name', 'field_schema'], 'CreateFieldIndex');
      if (typeof b.field_name !== 'string' || b.field_name === '')
        throw format('missing field `field_name`');
      const schema = b.field_schema;
      const type = isObject(schema) ? schema.type : schema;
      if (typeof type !== 'string' || !INDEX_TYPES.includes(type)) {
        throw format('data did not match any variant of untagged enum PayloadFieldSchema');
      }
      return ok(
        write(c, req, () => c.indexes.set(b.field_name as string, schema as Json)),
        t0,
      );
    }
    if (parts[2] !== 'points') throw new HttpError(404, body(`Not found: ${req.path}`));
    const c = state.resolve(name);
    const sub = parts.slice(3).join('/');
    if (sub === '' && m === 'PUT') {
      count('/collections/{name}/points');
      checkQuery(req, WRITE_QUERY);
      return ok(upsert(c, req), t0);
    }
    if (sub === '' && m === 'POST') {
      count('/collections/{name}/points');
      checkQuery(req, READ_QUERY);
      const b = fields(
        req.body,
        ['shard_key', 'ids', 'with_payload', 'with_vector'],
        'PointRequest',
      );
      if (!Array.isArray(b.ids)) throw format('missing field `ids`');
      validateWithPayload(b.with_payload);
      validateWithVector(b.with_vector);
      const ids = b.ids.map(parsePointId);
      const plan = c.replicas.plan(state.node, req.query.get('consistency'));
      const out = c.replicas.resolve(
        plan,
        () =>
          ids
            .map((id) => c.points.get(idKey(id)))
            .filter((p): p is Point => p !== undefined)
            .map((p) => record(p, b.with_payload, b.with_vector, true)),
        (r) => JSON.stringify(r.id),
      );
      return ok(out, t0);
    }
    if (sub === 'payload' && m === 'POST') {
      count('/collections/{name}/points/payload');
      checkQuery(req, WRITE_QUERY);
      return ok(setPayload(c, req), t0);
    }
    if (sub === 'delete' && m === 'POST') {
      count('/collections/{name}/points/delete');
      checkQuery(req, WRITE_QUERY);
      const b = fields(req.body, ['points', 'filter', 'shard_key'], 'PointsSelector');
      const targets = selectPoints(c, b, 'PointsSelector');
      return ok(
        write(c, req, () => {
          for (const p of targets()) c.points.delete(idKey(p.id));
        }),
        t0,
      );
    }
    if (sub === 'scroll' && m === 'POST') {
      count('/collections/{name}/points/scroll');
      checkQuery(req, READ_QUERY);
      localRead(c, req);
      return ok(scroll(c, req.body ?? {}), t0);
    }
    if (sub === 'count' && m === 'POST') {
      count('/collections/{name}/points/count');
      checkQuery(req, READ_QUERY);
      localRead(c, req);
      const b = fields(req.body ?? {}, ['shard_key', 'filter', 'exact'], 'CountRequest');
      validateFilter(b.filter);
      checkStrict(c, b.filter, 'retrieve');
      if (b.exact !== undefined && typeof b.exact !== 'boolean')
        throw format('invalid type for `exact`, expected a boolean');
      return ok(
        { count: [...c.points.values()].filter((p) => matchFilter(p, b.filter)).length },
        t0,
      );
    }
    if (sub === 'query' && m === 'POST') {
      count('/collections/{name}/points/query');
      checkQuery(req, READ_QUERY);
      localRead(c, req);
      return ok(query(c, req.body), t0);
    }
    throw new HttpError(404, body(`Not found: ${req.path}`));
  }

  function collectionInfo(c: Collection) {
    const payloadSchema: Record<string, Json> = {};
    for (const [field, schema] of c.indexes) {
      const type = isObject(schema) ? schema.type : schema;
      payloadSchema[field] = {
        data_type: type as Json,
        params: isObject(schema) ? schema : null,
        points: c.points.size,
      };
    }
    return {
      status: 'green',
      optimizer_status: 'ok',
      indexed_vectors_count: 0,
      points_count: c.points.size,
      segments_count: 1,
      config: {
        params: {
          vectors: { size: c.size, distance: c.distance },
          shard_number: 1,
          replication_factor: 1,
          write_consistency_factor: 1,
          on_disk_payload: true,
        },
        hnsw_config: {
          m: 16,
          ef_construct: 100,
          full_scan_threshold: 10000,
          max_indexing_threads: 0,
          on_disk: false,
        },
        optimizer_config: {
          deleted_threshold: 0.2,
          vacuum_min_vector_number: 1000,
          default_segment_number: 0,
          max_segment_size: null,
          memmap_threshold: null,
          indexing_threshold: 20000,
          flush_interval_sec: 5,
          max_optimization_threads: null,
        },
        wal_config: { wal_capacity_mb: 32, wal_segments_ahead: 0 },
        quantization_config: null,
        strict_mode_config: (c.strict ?? { enabled: false }) as Json,
      },
      payload_schema: payloadSchema,
    };
  }

  function createCollection(name: string, raw: unknown): boolean {
    const b = fields(
      raw ?? {},
      [
        'vectors',
        'shard_number',
        'sharding_method',
        'replication_factor',
        'write_consistency_factor',
        'on_disk_payload',
        'hnsw_config',
        'wal_config',
        'optimizers_config',
        'quantization_config',
        'sparse_vectors',
        'strict_mode_config',
        'metadata',
      ],
      'CreateCollection',
    );
    if (!/^[^/\\\0]{1,255}$/.test(name))
      throw validation(`collection_name: invalid collection name ${name}`);
    if (state.collections.has(name))
      throw new HttpError(409, body(`Wrong input: Collection \`${name}\` already exists!`));
    if (state.aliases.has(name))
      throw wrongInput(`Alias with the same name \`${name}\` already exists!`);
    const v = fields(
      b.vectors,
      [
        'size',
        'distance',
        'hnsw_config',
        'quantization_config',
        'on_disk',
        'datatype',
        'multivector_config',
      ],
      'VectorParams',
    );
    if (!Number.isSafeInteger(v.size) || (v.size as number) < 1)
      throw validation('vectors.size: value 0 invalid, must be 1 or larger');
    if (!DISTANCES.includes(v.distance as Distance)) {
      throw format(
        `unknown variant \`${String(v.distance)}\`, expected one of \`Cosine\`, \`Euclid\`, \`Dot\`, \`Manhattan\``,
      );
    }
    const replicas = new ReplicaSet<Point>(options.replicas ?? 1, options.replicaDelayMs ?? 20);
    state.collections.set(name, {
      name,
      size: v.size as number,
      distance: v.distance as Distance,
      replicas,
      get points() {
        return replicas.points;
      },
      indexes: new Map(),
      log: new LaggedLog(),
      strict: (isObject(b.strict_mode_config) ? b.strict_mode_config : options.strictMode) as
        | StrictMode
        | undefined,
    });
    return true;
  }

  function changeAliases(raw: unknown): boolean {
    const b = fields(raw, ['actions'], 'ChangeAliasesOperation');
    if (!Array.isArray(b.actions)) throw format('missing field `actions`');
    // All actions apply atomically: validate and run on a copy, then swap it in.
    const next = new Map(state.aliases);
    for (const action of b.actions) {
      if (isObject(action) && 'create_alias' in action) {
        const a = fields(
          fields(action, ['create_alias'], 'CreateAliasOperation').create_alias,
          ['collection_name', 'alias_name'],
          'CreateAlias',
        );
        if (typeof a.collection_name !== 'string' || typeof a.alias_name !== 'string')
          throw format('missing field `alias_name`');
        if (!state.collections.has(a.collection_name))
          throw notFound(`Collection \`${a.collection_name}\` doesn't exist!`);
        if (state.collections.has(a.alias_name))
          throw wrongInput(`Collection \`${a.alias_name}\` already exists!`);
        if (next.has(a.alias_name)) throw wrongInput(`Alias \`${a.alias_name}\` already exists!`);
        next.set(a.alias_name, a.collection_name);
      } else if (isObject(action) && 'delete_alias' in action) {
        const a = fields(
          fields(action, ['delete_alias'], 'DeleteAliasOperation').delete_alias,
          ['alias_name'],
          'DeleteAlias',
        );
        if (typeof a.alias_name !== 'string' || !next.has(a.alias_name))
          throw notFound(`Alias \`${String(a.alias_name)}\` doesn't exist!`);
        next.delete(a.alias_name);
      } else if (isObject(action) && 'rename_alias' in action) {
        const a = fields(
          fields(action, ['rename_alias'], 'RenameAliasOperation').rename_alias,
          ['old_alias_name', 'new_alias_name'],
          'RenameAlias',
        );
        const target = next.get(a.old_alias_name as string);
        if (target === undefined)
          throw notFound(`Alias \`${String(a.old_alias_name)}\` doesn't exist!`);
        next.delete(a.old_alias_name as string);
        next.set(a.new_alias_name as string, target);
      } else {
        throw format('data did not match any variant of untagged enum AliasOperations');
      }
    }
    state.aliases.clear();
    for (const [a, c] of next) state.aliases.set(a, c);
    return true;
  }

  function upsert(c: Collection, req: EmulatorRequest): unknown {
    if (isObject(req.body) && 'batch' in req.body) {
      throw wrongInput('the ragfresh emulator implements the PointsList form of upsert only');
    }
    const b = fields(
      req.body,
      ['points', 'shard_key', 'update_filter', 'update_mode'],
      'PointsList',
    );
    if (!Array.isArray(b.points)) throw format('missing field `points`');
    if (b.shard_key !== undefined && b.shard_key !== null)
      throw wrongInput('Shard key specified, but collection is not sharded');
    validateFilter(b.update_filter);
    checkStrict(c, b.update_filter, 'update');
    // Servers before 1.17 do not know update_mode: serde ignores it and the upsert overwrites.
    if (!knowsUpdateMode && 'update_mode' in b) ignoredSink.push('PointsList.update_mode');
    const mode = (knowsUpdateMode ? b.update_mode : undefined) ?? 'upsert';
    if (!['upsert', 'insert_only', 'update_only'].includes(mode as string)) {
      throw format(
        `unknown variant \`${String(mode)}\`, expected one of \`upsert\`, \`insert_only\`, \`update_only\``,
      );
    }
    const points: Point[] = b.points.map((raw) => {
      const p = fields(raw, ['id', 'vector', 'payload'], 'PointStruct');
      if (!('id' in p)) throw format('missing field `id`');
      if (!('vector' in p)) throw format('missing field `vector`');
      const id = parsePointId(p.id);
      const vector = vectorOf(p.vector, c.size);
      if (p.payload !== undefined && p.payload !== null && !isObject(p.payload))
        throw format('invalid type for `payload`, expected a map');
      return {
        id,
        vector: c.distance === 'Cosine' ? normalise(vector) : toF32(vector),
        payload: structuredClone((p.payload ?? {}) as JsonObject),
      };
    });
    return write(c, req, () => {
      for (const p of points) {
        const key = idKey(p.id);
        const existing = c.points.get(key);
        if (existing) {
          if (mode === 'insert_only') continue;
          if (b.update_filter && !matchFilter(existing, b.update_filter)) continue;
        } else if (mode === 'update_only') {
          continue;
        }
        // Each replica holds its own copy (payload updates mutate points in place).
        c.points.set(key, c.replicas.count > 1 ? structuredClone(p) : p);
      }
    });
  }

  function selectPoints(c: Collection, b: JsonObject, what: string): () => Point[] {
    const hasPoints = b.points !== undefined && b.points !== null;
    const hasFilter = b.filter !== undefined && b.filter !== null;
    if (hasPoints === hasFilter)
      throw format(`data did not match any variant of untagged enum ${what}`);
    if (hasPoints) {
      if (!Array.isArray(b.points)) throw format('invalid type for `points`, expected a sequence');
      const ids = b.points.map(parsePointId);
      return () =>
        ids.map((id) => c.points.get(idKey(id))).filter((p): p is Point => p !== undefined);
    }
    validateFilter(b.filter);
    checkStrict(c, b.filter, 'update');
    return () => [...c.points.values()].filter((p) => matchFilter(p, b.filter));
  }

  function setPayload(c: Collection, req: EmulatorRequest): unknown {
    const b = fields(req.body, ['payload', 'points', 'filter', 'shard_key', 'key'], 'SetPayload');
    if (!isObject(b.payload)) throw format('missing field `payload`');
    if (b.key !== undefined && b.key !== null && typeof b.key !== 'string')
      throw format('invalid type for `key`, expected a string');
    const hasPoints = b.points !== undefined && b.points !== null;
    const hasFilter = b.filter !== undefined && b.filter !== null;
    if (!hasPoints && !hasFilter)
      throw validation('Either list of point ids or filter must be provided');
    if (hasPoints && hasFilter)
      throw validation('Only one of list of point ids or filter must be provided');
    const targets = selectPoints(c, b, 'SetPayload');
    if (hasPoints) {
      for (const id of (b.points as Json[]).map(parsePointId)) {
        if (!c.points.has(idKey(id))) throw notFound(`No point with id ${id} found`);
      }
    }
    const payload = b.payload;
    const key = b.key as string | null | undefined;
    return write(c, req, () => {
      for (const p of targets()) setAtPath(p.payload, key, payload);
    });
  }

  function record(
    p: Point,
    withPayload: Json | undefined,
    withVector: Json | undefined,
    dfltPayload: boolean,
  ) {
    const out: JsonObject = { id: p.id };
    const payload = selectPayload(p, withPayload, dfltPayload);
    if (payload !== undefined) out.payload = payload;
    if (withVector === true) out.vector = [...p.vector];
    return out;
  }

  function scroll(c: Collection, raw: unknown) {
    const b = fields(
      raw,
      ['shard_key', 'offset', 'limit', 'filter', 'with_payload', 'with_vector', 'order_by'],
      'ScrollRequest',
    );
    validateFilter(b.filter);
    checkStrict(c, b.filter, 'retrieve');
    validateWithPayload(b.with_payload);
    validateWithVector(b.with_vector);
    if (b.order_by !== undefined && b.order_by !== null)
      throw wrongInput('order_by is not supported by the ragfresh emulator');
    const limit = b.limit ?? 10;
    if (!Number.isSafeInteger(limit) || (limit as number) < 1)
      throw validation('limit: value 0 invalid, must be 1 or larger');
    const offset = b.offset === undefined || b.offset === null ? undefined : parsePointId(b.offset);
    const matching = [...c.points.values()]
      .filter((p) => matchFilter(p, b.filter))
      .sort((x, y) => compareIds(x.id, y.id))
      .filter((p) => offset === undefined || compareIds(p.id, offset) >= 0);
    const page = matching.slice(0, limit as number);
    const next = matching[limit as number];
    return {
      points: page.map((p) => record(p, b.with_payload, b.with_vector, true)),
      next_page_offset: next === undefined ? null : next.id,
    };
  }

  function query(c: Collection, raw: unknown) {
    const b = fields(
      raw,
      [
        'shard_key',
        'prefetch',
        'query',
        'using',
        'filter',
        'params',
        'score_threshold',
        'limit',
        'offset',
        'with_vector',
        'with_payload',
        'lookup_from',
      ],
      'QueryRequest',
    );
    if (b.prefetch !== undefined && b.prefetch !== null)
      throw wrongInput('prefetch is not supported by the ragfresh emulator');
    if (b.using !== undefined && b.using !== null)
      throw wrongInput(`Vector with name ${String(b.using)} is not configured in this collection`);
    validateFilter(b.filter);
    checkStrict(c, b.filter, 'retrieve');
    validateWithPayload(b.with_payload);
    validateWithVector(b.with_vector);
    const limit = b.limit ?? 10;
    const offset = b.offset ?? 0;
    if (!Number.isSafeInteger(limit) || (limit as number) < 1)
      throw validation('limit: value 0 invalid, must be 1 or larger');
    if (!Number.isSafeInteger(offset) || (offset as number) < 0)
      throw format('invalid value for `offset`');
    let target: number[] | undefined;
    if (Array.isArray(b.query)) target = vectorOf(b.query, c.size, 'query');
    else if (isObject(b.query) && 'nearest' in b.query) {
      const q = fields(b.query, ['nearest', 'mmr'], 'NearestQuery');
      if (q.mmr !== undefined && q.mmr !== null)
        throw wrongInput('mmr is not supported by the ragfresh emulator');
      target = vectorOf(q.nearest, c.size, 'nearest');
    } else if (b.query !== undefined && b.query !== null) {
      throw wrongInput('only nearest-vector queries are supported by the ragfresh emulator');
    }
    const q = target && c.distance === 'Cosine' ? normalise(target) : target;
    const candidates = [...c.points.values()].filter((p) => matchFilter(p, b.filter));
    const higherIsBetter = c.distance === 'Cosine' || c.distance === 'Dot';
    const scored = candidates.map((p) => ({ p, s: q ? score(c.distance, q, p.vector) : 0 }));
    if (q)
      scored.sort((x, y) => (higherIsBetter ? y.s - x.s : x.s - y.s) || compareIds(x.p.id, y.p.id));
    else scored.sort((x, y) => compareIds(x.p.id, y.p.id));
    const threshold = b.score_threshold;
    const kept = scored.filter(
      (x) =>
        typeof threshold !== 'number' || (higherIsBetter ? x.s >= threshold : x.s <= threshold),
    );
    const page = kept.slice(offset as number, (offset as number) + (limit as number));
    return {
      points: page.map(({ p, s }) => ({
        ...record(p, b.with_payload, b.with_vector, false),
        version: 0,
        score: Math.fround(s),
      })),
    };
  }

  const handlers: EmulatorHandlers = {
    maxBodyBytes: 32 * 1024 * 1024,
    parseError: (msg) => format(msg),
    tooLarge: (size) =>
      new HttpError(413, body(`Payload too large: ${size} bytes, the limit is 33554432 bytes`)),
    faultBody: (status) =>
      body(
        status === 429
          ? 'Too many requests: rate limit exceeded'
          : 'Service internal error: injected by the ragfresh emulator',
      ),
    handle,
  };
  const nodes: RunningServer[] = [];
  for (let i = 0; i < Math.max(1, options.replicas ?? 1); i++) {
    nodes.push(
      await startJsonServer(
        {
          ...handlers,
          handle: (req: EmulatorRequest) => {
            state.node = i;
            return handle(req);
          },
        },
        faults,
        i === 0 ? options.port : 0,
      ),
    );
  }
  return {
    url: nodes[0]!.url,
    nodes: nodes.map((n) => n.url),
    faults,
    requests,
    ignoredFields,
    inject(injection) {
      injections.push({ ...injection, left: injection.times ?? 1 });
    },
    close: async () => {
      for (const n of nodes) await n.close();
    },
  };
}
