// Shapes, limits, errors and field checks of the Pinecone emulator (API 2026-07 data plane,
// gRPC-gateway error bodies; 2025-01 for Local mode).
import { type Faults, HttpError, type RunningServer } from '../server.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
export type MetaValue = string | number | boolean | string[];
export type Metadata = Record<string, MetaValue>;

export interface Vector {
  id: string;
  values: number[];
  metadata?: Metadata;
}

export interface Index {
  name: string;
  dimension: number;
  metric: 'cosine' | 'euclidean' | 'dotproduct';
  cloud: string;
  region: string;
  /** User tags of the index (`tags` of the create body). */
  tags: Record<string, string>;
  deletionProtection: 'enabled' | 'disabled';
  /** When describe starts answering `Ready` (Date.now() ms; `indexReadyAfterMs` after create). */
  readyAt: number;
  namespaces: Map<string, Namespace>;
  server: RunningServer;
}

/** What a create request gives an index (`ControlPlane.addIndex`). */
export type IndexSpec = Pick<
  Index,
  'name' | 'dimension' | 'metric' | 'cloud' | 'region' | 'tags' | 'deletionProtection'
>;

export type Store = Map<string, Vector>;
export type ReadPath = 'fetch' | 'list' | 'query';

/**
 * One namespace: a write log with one LSN counter (Pinecone's "check data freshness" page: a
 * monotonically increasing LSN per namespace) and one materialised view per read path, each
 * catching up with the log after its own lag, in log order.
 */
export interface Namespace {
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
  /**
   * How long a created index describes itself as `Initializing` (`status.ready: false`) before
   * `Ready`, ms. Default 0. Pinecone documents no figure; clients poll describe until ready.
   */
  readonly indexReadyAfterMs?: number;
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
export const rpc = (status: number, code: number, message: string) =>
  new HttpError(status, { code, message, details: [] });
export const invalid = (message: string) => rpc(400, 3, message);
/** Control-plane errors: `{ error: { code, message }, status }`. */
export const control = (status: number, code: string, message: string) =>
  new HttpError(status, { error: { code, message }, status });

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function fields(v: unknown, allowed: readonly string[], message: string): JsonObject {
  if (!isObject(v)) throw invalid(`invalid ${message}: expected a JSON object`);
  for (const k of Object.keys(v)) {
    if (!allowed.includes(k)) throw invalid(`unknown field "${k}" in ${message}`);
  }
  return v;
}

export function checkMetadata(meta: unknown, where: string): Metadata {
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

export function checkMetadataSize(meta: Metadata, id: string): void {
  const size = Buffer.byteLength(JSON.stringify(meta), 'utf8');
  if (size > PINECONE_LIMITS.metadataBytes) {
    throw invalid(
      `Metadata size is ${size} bytes, which exceeds the limit of ${PINECONE_LIMITS.metadataBytes} bytes per vector (id '${id}')`,
    );
  }
}
