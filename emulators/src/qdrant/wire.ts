// Shapes, options, errors and field checks of the Qdrant emulator (Qdrant 1.19 REST, error body
// `{ status: { error }, time }`).

import type { ReplicaSet } from '../qdrant-replicas.js';
import type { Faults, LaggedLog } from '../server.js';
import { HttpError } from '../server.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
export type PointId = number | string;

export interface Point {
  id: PointId;
  vector: number[];
  payload: JsonObject;
}

export type Distance = 'Cosine' | 'Euclid' | 'Dot' | 'Manhattan';

export interface Collection {
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

export const UUID =
  /^(?:urn:uuid:)?\{?([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})\}?$/;
export const DISTANCES: readonly Distance[] = ['Cosine', 'Euclid', 'Dot', 'Manhattan'];
export const INDEX_TYPES = [
  'keyword',
  'integer',
  'float',
  'geo',
  'text',
  'bool',
  'datetime',
  'uuid',
];

export function body(error: string): { status: { error: string }; time: number } {
  return { status: { error }, time: 0 };
}
export const format = (msg: string) =>
  new HttpError(400, body(`Format error in JSON body: ${msg}`));
export const validation = (msg: string) =>
  new HttpError(422, body(`Validation error in JSON body: [${msg}]`));
export const wrongInput = (msg: string) => new HttpError(400, body(`Wrong input: ${msg}`));
export const notFound = (msg: string) => new HttpError(404, body(`Not found: ${msg}`));

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Unknown fields the emulator ignored while serving the current request (see `fields`). */
let ignoredSink: string[] = [];

/** Records an ignored field or query parameter of the current request. */
export function ignore(field: string): void {
  ignoredSink.push(field);
}

/** The fields ignored since the last call (one request's worth). */
export function takeIgnored(): string[] {
  const taken = ignoredSink;
  ignoredSink = [];
  return taken;
}

/**
 * Serde's default for a struct: unknown fields are ignored (recorded in `ignoredFields`). In
 * Qdrant 1.19 only `Filter` and the payload selectors deny unknown fields
 * (lib/segment/src/types.rs, `#[serde(deny_unknown_fields)]`); use `denyFields` for those.
 */
export function fields(v: unknown, allowed: readonly string[], what: string): JsonObject {
  if (!isObject(v)) throw format(`invalid type: expected struct ${what}`);
  for (const key of Object.keys(v)) if (!allowed.includes(key)) ignoredSink.push(`${what}.${key}`);
  return v;
}

/** Serde's `deny_unknown_fields`: the object must have only `allowed` keys. */
export function denyFields(v: unknown, allowed: readonly string[], what: string): JsonObject {
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

export const idKey = (id: PointId) => (typeof id === 'number' ? `n:${id}` : `u:${id}`);
