import { randomUUID } from 'node:crypto';
import { RagfreshError } from '@ragfresh/core';
import { sleep } from './politeness.js';
import type { HostTurnPolicy, PolitenessGate, SharedHostTurn } from './politeness-shared.js';

/**
 * The one method of a Redis client this gate uses (ioredis' `eval`), so `@ragfresh/fetch`
 * needs no Redis client of its own: pass the client your queue already has.
 */
export interface RedisEvalClient {
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
}

export interface RedisPolitenessGateOptions {
  readonly redis: RedisEvalClient;
  /**
   * Key prefix; one per deployment (or test). Default `ragfresh:polite`. A host's keys are
   * `<prefix>:{<host>}:holders` and `<prefix>:{<host>}:host`, so on a Redis Cluster both sit in
   * one slot (the prefix's own `{hash tag}`, if it has one, else the host's).
   */
  readonly prefix?: string;
  /** Re-check period while another fetcher's request to the host is unanswered. Default 10 ms. */
  readonly pollMs?: number;
  /**
   * How long a granted turn lives unless its holder renews it. The holder renews every third of
   * this while its request is unanswered, so a fetcher that died holding a turn (SIGKILL, a lost
   * machine) keeps the host from every other fetcher for at most this long. Default
   * `DEFAULT_TURN_TTL_MS` (20 s).
   */
  readonly turnTtlMs?: number;
}

/** A dead holder's turn ends at most this long after its last renewal (20 s, under 30 s). */
export const DEFAULT_TURN_TTL_MS = 20_000;

// Every time below is Redis' own clock (TIME), so fetchers on machines with skewed clocks
// still agree on when a host may be asked again.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

const KEEP = `local function keep(key, untilMs)
  local ttl = math.max(untilMs - now, 0) + 60000
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end`;

/**
 * KEYS: holders (zset token -> expiry), host (hash nextAt, blockedUntil). ARGV: token, intervalMs,
 * perHostConcurrency, ttlMs. Returns 0 = granted, >0 = wait ms, -1 = held.
 */
const ACQUIRE = `${NOW}
${KEEP}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
-- A replay of a granted acquire (its reply was lost when Redis went away and the client sent it
-- again) is granted again, instead of waiting maxHoldMs behind its own token.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local blocked = tonumber(redis.call('HGET', KEYS[2], 'blockedUntil') or '0')
local nextAt = tonumber(redis.call('HGET', KEYS[2], 'nextAt') or '0')
local interval = tonumber(ARGV[2])
local holders = redis.call('ZCARD', KEYS[1])
local wait = blocked - now
if interval > 0 and nextAt - now > wait then wait = nextAt - now end
if wait > 0 then return wait end
if interval > 0 and holders > 0 then return -1 end
if interval <= 0 and holders >= tonumber(ARGV[3]) then return -1 end
local expiry = now + tonumber(ARGV[4])
redis.call('ZADD', KEYS[1], expiry, ARGV[1])
keep(KEYS[1], expiry)
return 0`;

/** KEYS: holders. ARGV: token, ttlMs. Returns 1 = renewed, 0 = the turn had expired. */
const RENEW = `${NOW}
${KEEP}
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local expiry = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[1])
keep(KEYS[1], expiry)
return 1`;

/** KEYS: holders, host. ARGV: token, intervalMs. */
const ANSWERED = `${NOW}
${KEEP}
redis.call('ZREM', KEYS[1], ARGV[1])
local interval = tonumber(ARGV[2])
if interval > 0 then
  local n = now + interval
  if n > tonumber(redis.call('HGET', KEYS[2], 'nextAt') or '0') then
    redis.call('HSET', KEYS[2], 'nextAt', n)
    keep(KEYS[2], n)
  end
end
return 0`;

/** KEYS: host. ARGV: ms. */
const BLOCK = `${NOW}
${KEEP}
local u = now + tonumber(ARGV[1])
if u > tonumber(redis.call('HGET', KEYS[1], 'blockedUntil') or '0') then
  redis.call('HSET', KEYS[1], 'blockedUntil', u)
  keep(KEYS[1], u)
end
return 0`;

const BLOCKED_FOR = `${NOW}
return math.max(0, tonumber(redis.call('HGET', KEYS[1], 'blockedUntil') or '0') - now)`;

/**
 * Per-host politeness in Redis, shared by every fetcher given the same prefix: one Lua script
 * per decision, so checking and taking a turn is one atomic step (two fetchers never both start).
 * The interval counts from the previous request's answer, as the in-process gate does, so the
 * server sees gaps of at least the interval between arrivals from all fetchers together.
 */
export class RedisPolitenessGate implements PolitenessGate {
  readonly #redis: RedisEvalClient;
  readonly #prefix: string;
  readonly #pollMs: number;
  readonly #turnTtlMs: number;
  /** Time spent waiting for shared turns, ms (for metrics). */
  waitedMs = 0;
  /** The same, per host. */
  readonly waitedMsByHost = new Map<string, number>();

  constructor(options: RedisPolitenessGateOptions) {
    this.#redis = options.redis;
    this.#prefix = options.prefix ?? 'ragfresh:polite';
    this.#pollMs = options.pollMs ?? 10;
    this.#turnTtlMs = options.turnTtlMs ?? DEFAULT_TURN_TTL_MS;
    if (!Number.isFinite(this.#turnTtlMs) || this.#turnTtlMs < 30)
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `turnTtlMs must be a number of milliseconds >= 30, got ${String(options.turnTtlMs)}.`,
        { scope: 'fetch' },
      );
  }

  // Both keys of a host carry one hash tag (encodeURIComponent escapes braces in the host), so
  // each script's keys share a Redis Cluster slot.
  #keys(host: string): [string, string] {
    const tag = `${this.#prefix}:{${encodeURIComponent(host)}}`;
    return [`${tag}:holders`, `${tag}:host`];
  }

  async acquire(
    host: string,
    policy: HostTurnPolicy,
    signal?: AbortSignal,
  ): Promise<SharedHostTurn> {
    const [holders, state] = this.#keys(host);
    const token = randomUUID();
    const started = Date.now();
    const ttl = Math.min(this.#turnTtlMs, policy.maxHoldMs);
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      const r = Number(
        await this.#redis.eval(
          ACQUIRE,
          2,
          holders,
          state,
          token,
          policy.intervalMs,
          policy.perHostConcurrency,
          ttl,
        ),
      );
      if (r === 0) break;
      await sleep(r > 0 ? r : this.#pollMs, signal);
    }
    const granted = Date.now();
    const waited = granted - started;
    this.waitedMs += waited;
    this.waitedMsByHost.set(host, (this.waitedMsByHost.get(host) ?? 0) + waited);
    let done = false;
    // Renewed while this process lives and the request is unanswered, never past maxHoldMs: a
    // killed holder stops renewing and its turn ends one TTL after the last renewal.
    const renewal = setInterval(
      () => {
        const left = policy.maxHoldMs - (Date.now() - granted);
        if (left <= 0) clearInterval(renewal);
        else
          this.#redis
            .eval(RENEW, 1, holders, token, Math.min(ttl, left))
            .then((renewed) => {
              if (Number(renewed) !== 1) clearInterval(renewal);
            })
            // A renewal lost to an outage is tried again at the next tick, until the turn expires.
            .catch(() => {});
      },
      Math.max(10, Math.floor(ttl / 3)),
    );
    renewal.unref();
    return {
      answered: async () => {
        if (done) return;
        done = true;
        clearInterval(renewal);
        await this.#redis.eval(ANSWERED, 2, holders, state, token, policy.intervalMs);
      },
    };
  }

  async block(host: string, ms: number): Promise<void> {
    await this.#redis.eval(BLOCK, 1, this.#keys(host)[1], Math.max(0, Math.ceil(ms)));
  }

  async blockedFor(host: string): Promise<number> {
    return Number(await this.#redis.eval(BLOCKED_FOR, 1, this.#keys(host)[1]));
  }
}
