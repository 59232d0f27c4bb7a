/**
 * Per-host politeness shared by several fetchers (processes, machines): the minimum interval,
 * the per-host concurrency and Retry-After blocks, kept where every fetcher sees them.
 *
 * The `Fetcher` always keeps its in-process `HostGate`; a `PolitenessGate` is consulted on top
 * of it, before every request to a host and whenever a host answers with Retry-After (or a
 * backoff block). Without one (the default) nothing changes for a single process.
 */
export interface HostTurnPolicy {
  /** Minimum time between the answer of one request to the host and the start of the next. */
  readonly intervalMs: number;
  /** Requests in flight to the host across all fetchers while no interval applies. */
  readonly perHostConcurrency: number;
  /**
   * Longest a live fetcher may hold a turn without its request being answered: after this the
   * turn expires and another fetcher may start. Keep it above the request timeout. A fetcher
   * that died holding a turn loses it sooner, when the gate's renewal lapses (the Redis gate's
   * `turnTtlMs`).
   */
  readonly maxHoldMs: number;
}

/** A granted turn; `answered` ends it once the host answered (or the request failed). */
export interface SharedHostTurn {
  answered(): Promise<void>;
}

export interface PolitenessGate {
  /**
   * Waits until this fetcher may start a request to `host`: no other fetcher's request to it is
   * unanswered (when an interval applies; else fewer than `perHostConcurrency` are), the
   * interval since the last answer has passed, and no block is in force.
   */
  acquire(host: string, policy: HostTurnPolicy, signal?: AbortSignal): Promise<SharedHostTurn>;
  /** Blocks `host` for every fetcher for `ms` from now (never shortens a block). */
  block(host: string, ms: number): Promise<void>;
  /** Milliseconds `host` stays blocked for every fetcher (0 when it is not blocked). */
  blockedFor(host: string): Promise<number>;
}
