import type { PolitenessGate, SharedHostTurn } from './politeness-shared.js';

/** Sleeps `ms`, rejecting with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A counting semaphore whose waiters leave the queue when their signal aborts. */
export class Semaphore {
  #free: number;
  readonly #waiters: Array<{
    resolve: () => void;
    reject: (e: unknown) => void;
    signal?: AbortSignal;
  }> = [];

  constructor(readonly size: number) {
    this.#free = size;
  }

  get inUse(): number {
    return this.size - this.#free;
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) throw signal.reason;
    if (this.#free > 0 && this.#waiters.length === 0) {
      this.#free--;
      return this.#releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const waiter = { resolve, reject, ...(signal === undefined ? {} : { signal }) };
      const onAbort = (): void => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(signal?.reason);
      };
      waiter.resolve = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
    return this.#releaser();
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next !== undefined) next.resolve();
      else this.#free++;
    };
  }
}

/** Exponential backoff with jitter. */
export interface BackoffPolicy {
  /** Delay before the first retry, before jitter. Default 500 ms. */
  readonly baseDelayMs?: number;
  /** Upper bound of any backoff delay. Default 30 s. */
  readonly maxDelayMs?: number;
  /**
   * `equal` (default): half the exponential delay plus a random share of the other half;
   * `full`: a random share of the whole delay; `none`: the exponential delay itself.
   */
  readonly jitter?: 'equal' | 'full' | 'none';
}

/** Delay before retry number `retry` (0 = first retry). `random` returns [0, 1). */
export function backoffDelay(retry: number, policy: BackoffPolicy, random: () => number): number {
  const base = policy.baseDelayMs ?? 500;
  const max = policy.maxDelayMs ?? 30_000;
  const exp = Math.min(max, base * 2 ** Math.max(0, retry));
  switch (policy.jitter ?? 'equal') {
    case 'none':
      return exp;
    case 'full':
      return Math.floor(exp * random());
    default:
      return Math.floor(exp / 2 + (exp / 2) * random());
  }
}

/**
 * Retry-After as a delay in ms: delta-seconds or an HTTP-date (relative to `now`).
 * Undefined when absent or unparseable; 0 for a date in the past.
 */
export function parseRetryAfter(
  value: string | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Circuit breaker settings, per host. */
export interface CircuitBreakerOptions {
  /** Consecutive failures (5xx, timeout, network error) that open the circuit. Default 5. */
  readonly failureThreshold?: number;
  /** How long an open circuit refuses requests before one trial request. Default 60 s. */
  readonly cooldownMs?: number;
}

/** Per-host politeness state. */
export interface HostState {
  readonly host: string;
  /** Floor from the fetcher's configuration. */
  baseIntervalMs: number;
  /** Raised by robots.txt Crawl-delay. */
  crawlDelayMs: number;
  /** Earliest time the next request may start (from the previous one's answer + interval). */
  nextStartAt: number;
  /** Set by Retry-After / 429 / 503 backoff; no request to this host starts before it. */
  blockedUntil: number;
  readonly slots: Semaphore;
  readonly startLock: Semaphore;
  failures: number;
  openUntil: number;
  halfOpenTrial: boolean;
  /** Requests started to this host. */
  requests: number;
}

export interface HostGateOptions {
  readonly globalConcurrency: number;
  readonly perHostConcurrency: number;
  readonly minIntervalMs: number;
  readonly breaker: Required<CircuitBreakerOptions>;
  /** Politeness shared with other fetchers (Redis), consulted on top of this gate. */
  readonly shared?: PolitenessGate;
  /** How long a shared turn may stay unanswered before it expires (above the request timeout). */
  readonly sharedMaxHoldMs?: number;
}

/** A granted request slot; `answered` marks when the server's answer (or failure) arrived. */
export interface Permit {
  readonly startedAt: number;
  readonly queuedMs: number;
  /** Call once response headers arrived or the request failed: re-opens the host to the next start. */
  answered(): void;
  /** Call when the whole exchange (body included) is over. */
  release(): void;
}

export type BreakerDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly until: number };

/**
 * Global and per-host concurrency, per-host minimum interval between request starts, host-level
 * blocks (Retry-After) and a per-host circuit breaker.
 *
 * The interval is counted from when the previous request to the host was answered (its headers
 * arrived or it failed) — never earlier than when the server received it — so the gaps a server
 * observes between request arrivals are never shorter than the interval.
 */
export class HostGate {
  readonly #global: Semaphore;
  readonly #hosts = new Map<string, HostState>();

  constructor(readonly options: HostGateOptions) {
    this.#global = new Semaphore(options.globalConcurrency);
  }

  host(host: string): HostState {
    let s = this.#hosts.get(host);
    if (s === undefined) {
      s = {
        host,
        baseIntervalMs: this.options.minIntervalMs,
        crawlDelayMs: 0,
        nextStartAt: 0,
        blockedUntil: 0,
        slots: new Semaphore(this.options.perHostConcurrency),
        startLock: new Semaphore(1),
        failures: 0,
        openUntil: 0,
        halfOpenTrial: false,
        requests: 0,
      };
      this.#hosts.set(host, s);
    }
    return s;
  }

  intervalOf(host: string): number {
    const s = this.host(host);
    return Math.max(s.baseIntervalMs, s.crawlDelayMs);
  }

  setCrawlDelay(host: string, ms: number): void {
    this.host(host).crawlDelayMs = ms;
  }

  /** Delays every later request to `host` until `until` (epoch ms); never shortens a block. */
  block(host: string, until: number): void {
    const s = this.host(host);
    s.blockedUntil = Math.max(s.blockedUntil, until);
  }

  /** Waits for a per-host slot, the host's start time and a global slot, in that order. */
  async acquire(host: string, signal?: AbortSignal): Promise<Permit> {
    const queuedAt = Date.now();
    const s = this.host(host);
    const releaseHost = await s.slots.acquire(signal);
    let releaseGlobal: (() => void) | undefined;
    let releaseStart: (() => void) | undefined;
    let sharedTurn: SharedHostTurn | undefined;
    try {
      const interval = this.intervalOf(host);
      const serialise = interval > 0 || s.blockedUntil > Date.now();
      if (serialise) releaseStart = await s.startLock.acquire(signal);
      // The shared turn comes after this process's own host slot, so each process has at most
      // one waiter per host in the shared gate.
      sharedTurn = await this.options.shared?.acquire(
        host,
        {
          intervalMs: interval,
          perHostConcurrency: this.options.perHostConcurrency,
          maxHoldMs: this.options.sharedMaxHoldMs ?? 300_000,
        },
        signal,
      );
      for (;;) {
        // Unserialised starts (no interval, no block when we arrived) ignore nextStartAt, which
        // holds +Infinity while a serialised request to this host is unanswered.
        const startAt = () =>
          serialise ? Math.max(s.nextStartAt, s.blockedUntil) : s.blockedUntil;
        const wait = startAt() - Date.now();
        if (wait > 0) await sleep(wait, signal);
        releaseGlobal = await this.#global.acquire(signal);
        // A 429 may have blocked the host while we waited for the global slot.
        if (startAt() <= Date.now()) break;
        releaseGlobal();
        releaseGlobal = undefined;
      }
    } catch (err) {
      void sharedTurn?.answered().catch(() => {});
      releaseStart?.();
      releaseHost();
      throw err;
    }
    const startedAt = Date.now();
    s.requests++;
    // While this request is unanswered, a concurrent one may start only if no interval applies.
    if (releaseStart !== undefined) s.nextStartAt = Number.POSITIVE_INFINITY;
    let answeredOnce = false;
    const answered = (): void => {
      if (answeredOnce) return;
      answeredOnce = true;
      const interval = this.intervalOf(host);
      s.nextStartAt = interval > 0 ? Date.now() + interval : 0;
      // Commands on one Redis connection run in order, so this process's next acquire for the
      // host sees the answer; a failure here only lets the turn expire (its renewal has stopped).
      void sharedTurn?.answered().catch(() => {});
      releaseStart?.();
    };
    let releasedOnce = false;
    return {
      startedAt,
      queuedMs: startedAt - queuedAt,
      answered,
      release: () => {
        if (releasedOnce) return;
        releasedOnce = true;
        answered();
        releaseGlobal?.();
        releaseHost();
      },
    };
  }

  /** Whether the circuit of `host` lets a request through now (claims the half-open trial). */
  breakerAllows(host: string): BreakerDecision {
    const s = this.host(host);
    const now = Date.now();
    if (s.failures < this.options.breaker.failureThreshold) return { allowed: true };
    if (now < s.openUntil) return { allowed: false, until: s.openUntil };
    if (s.halfOpenTrial) return { allowed: false, until: now + this.options.breaker.cooldownMs };
    s.halfOpenTrial = true;
    return { allowed: true };
  }

  /** Gives back a claimed half-open trial that never produced an answer (the caller aborted). */
  releaseTrial(host: string): void {
    this.host(host).halfOpenTrial = false;
  }

  recordSuccess(host: string): void {
    const s = this.host(host);
    s.failures = 0;
    s.openUntil = 0;
    s.halfOpenTrial = false;
  }

  recordFailure(host: string): void {
    const s = this.host(host);
    s.failures++;
    if (s.failures >= this.options.breaker.failureThreshold) {
      s.openUntil = Date.now() + this.options.breaker.cooldownMs;
      s.halfOpenTrial = false;
    }
  }
}
