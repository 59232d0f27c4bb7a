import type { KeyvStoreAdapter } from 'keyv';
import { RagfreshError } from '../errors.js';
import type { Lease, StateOp } from './types.js';

/**
 * What one backend adds to its keyv store adapter: the few operations keyv cannot make
 * atomic (lease grants and fenced writes), and a prefix scan that throws instead of stopping
 * early. Keys are full keys (already namespaced); values are JSON text.
 */
export interface StateBackend {
  readonly kind: 'sqlite' | 'redis' | 'postgres';
  /** The keyv adapter holding every record. */
  readonly adapter: KeyvStoreAdapter;
  /** True when a scan may return one key twice (Redis SCAN); the store then de-duplicates. */
  readonly scanMayRepeat: boolean;
  /**
   * True when every key of a namespace must carry the namespace as a `{hash tag}` (a Redis
   * Cluster: one slot per namespace, so multi-key transactions and batch reads stay legal).
   */
  readonly hashTagged?: boolean;

  get(key: string): Promise<string | undefined>;
  /**
   * Several keys in one round trip, values in the order of `keys` (undefined when absent).
   * Optional: listings fall back to one `get` per key.
   */
  getMany?(keys: readonly string[]): Promise<(string | undefined)[]>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every `[key, value]` whose key starts with `prefix + ':'`, in pages (bounded memory). */
  scan(prefix: string): AsyncIterable<readonly [string, string]>;

  /** Grants `name` to `holder` when free, expired or already held by `holder`; fence + 1. */
  acquireLease(
    key: string,
    name: string,
    holder: string,
    ttlMs: number,
    /** The granted fence is at least this (and always above the previous grant's). Default 0. */
    minFence?: number,
  ): Promise<Lease | undefined>;
  /**
   * Extends the lease when `lease.fence` and `lease.holder` are still the stored ones — also
   * after expiry, as long as nobody was granted it since (the fence would have moved).
   */
  renewLease(key: string, lease: Lease, ttlMs: number): Promise<Lease | undefined>;
  /** Expires the lease now when still held with this fence; the fence is kept for the next grant. */
  releaseLease(key: string, lease: Lease): Promise<void>;
  currentFence(key: string): Promise<number | undefined>;
  /** Writes `key` only if the lease at `leaseKey` is unexpired with exactly `fence`, atomically. */
  putFenced(leaseKey: string, fence: number, key: string, value: string): Promise<boolean>;
  /** Deletes `key` only if it still holds exactly `value`, atomically. */
  deleteIfEquals(key: string, value: string): Promise<boolean>;

  /**
   * Applies `ops` in one transaction when every guard still holds (the key's stored value is
   * `value`, or absent when `value` is undefined), else changes nothing and returns false.
   * Optional, with the index reads below: a backend without them keeps no aggregates (status
   * then reads every record).
   */
  commit?(guards: readonly StateGuard[], ops: readonly StateOp[]): Promise<boolean>;
  /**
   * The first `limit` members of an ordered index from its `low` end (lowest score, then
   * smallest member) or its `high` end (highest score, then smallest member).
   */
  zrange?(key: string, end: 'low' | 'high', limit: number): Promise<IndexEntry[]>;
  /** Every member of an ordered index, by score then member. */
  zall?(key: string): Promise<IndexEntry[]>;
  /** Drops every ordered index whose key starts with `prefix + ':'` (an aggregate rebuild). */
  zclear?(prefix: string): Promise<void>;

  close(): Promise<void>;
}

/** A transaction's precondition: `key` holds `value` (undefined: the key is absent). */
export interface StateGuard {
  readonly key: string;
  readonly value: string | undefined;
}

/**
 * A transaction op as the server-side commit scripts read it (Postgres function, Redis Lua):
 * `[op, key, ...operands]`, numbers as strings.
 */
export function encodeStateOp(x: StateOp): string[] {
  switch (x.op) {
    case 'set':
      return [x.op, x.key, x.value];
    case 'del':
      return [x.op, x.key];
    case 'zrem':
      return [x.op, x.key, x.member];
    default:
      return [x.op, x.key, x.member, String(x.op === 'zadd' ? x.score : x.by)];
  }
}

export interface IndexEntry {
  readonly member: string;
  readonly score: number;
}

/** Parses a stored lease record; STATE_CORRUPT when it is not one. */
export function parseLease(raw: string, key: string): Lease {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (cause) {
    throw corrupt(key, 'is not JSON', cause);
  }
  const v = value as Partial<Lease> | null;
  if (
    typeof v !== 'object' ||
    v === null ||
    typeof v.name !== 'string' ||
    typeof v.holder !== 'string' ||
    !Number.isSafeInteger(v.fence) ||
    typeof v.expiresAt !== 'number'
  ) {
    throw corrupt(key, 'is not a lease record');
  }
  return { name: v.name, holder: v.holder, fence: v.fence as number, expiresAt: v.expiresAt };
}

export function corrupt(key: string, what: string, cause?: unknown): RagfreshError {
  return new RagfreshError(
    'STATE_CORRUPT',
    `stored value at ${JSON.stringify(key)} ${what}; restore it from a backup or delete that key.`,
    { scope: 'state', cause, details: { key } },
  );
}

export function leaseJson(lease: Lease): string {
  return JSON.stringify({
    name: lease.name,
    holder: lease.holder,
    fence: lease.fence,
    expiresAt: lease.expiresAt,
  });
}

/** The URL for a message, with any password masked. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}

/** Short reason of a connection failure: the errno code when there is one. */
export function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0)
    return describeError(error.errors[0]);
  if (error instanceof Error) return (error as NodeJS.ErrnoException).code ?? error.message;
  return String(error);
}
