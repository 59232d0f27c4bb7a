import type { RobotsVerdict, StateStore } from '@ragfresh/core';
import robotsParserModule from 'robots-parser';

interface Robot {
  isAllowed(url: string, ua?: string): boolean | undefined;
  getCrawlDelay(ua?: string): number | undefined;
}

type RobotsParse = (url: string, contents: string) => Robot;

// robots-parser is CommonJS (`module.exports = fn`) while its typings declare a default export;
// under NodeNext the default import is `module.exports`, so unwrap whichever shape arrives.
const robotsParser: RobotsParse = (() => {
  const m = robotsParserModule as unknown as RobotsParse | { default: RobotsParse };
  return typeof m === 'function' ? m : m.default;
})();

/** Where robots.txt verdicts persist: any StateStore, or the in-memory default. */
export type RobotsStore = Pick<StateStore, 'getRobots' | 'putRobots'>;

/** Keeps verdicts in a Map; the default when no StateStore is given. */
export class MemoryRobotsStore implements RobotsStore {
  readonly #verdicts = new Map<string, RobotsVerdict>();

  async getRobots(host: string): Promise<RobotsVerdict | undefined> {
    return this.#verdicts.get(host);
  }

  async putRobots(verdict: RobotsVerdict): Promise<void> {
    this.#verdicts.set(verdict.host, verdict);
  }
}

export interface RobotsOptions {
  /** Where verdicts persist (e.g. a StateStore). Default: in memory. */
  readonly store?: RobotsStore;
  /** How long a fetched robots.txt is trusted. Default 24 h. */
  readonly ttlMs?: number;
  /** How long a 5xx / unreachable verdict (disallow all) is kept before trying again. Default 10 min. */
  readonly errorTtlMs?: number;
  /** Largest robots.txt read; the rest is ignored (RFC 9309 asks for at least 500 KiB). Default 512 KiB. */
  readonly maxBytes?: number;
  /** Honour Crawl-delay by raising the host's minimum interval. Default true. */
  readonly respectCrawlDelay?: boolean;
  /** Largest Crawl-delay honoured; a larger one is capped. Default 60 s. */
  readonly maxCrawlDelayMs?: number;
}

/** What robots.txt says about one URL. */
export interface RobotsDecision {
  readonly allowed: boolean;
  /** Why: `rules` (robots.txt rules applied), `unavailable` (4xx: allow all), `unreachable` (5xx/network: disallow all). */
  readonly basis: 'rules' | 'unavailable' | 'unreachable';
  readonly crawlDelayMs?: number;
  readonly verdict: RobotsVerdict;
}

interface Parsed {
  readonly verdict: RobotsVerdict;
  readonly robot: Robot | undefined;
}

/** 4xx (but 429) and too many redirects (3xx): robots.txt is unavailable, so everything is allowed. */
function isUnavailable(status: number): boolean {
  return status >= 300 && status < 500 && status !== 429;
}

/** Status 0 marks a robots.txt that could not be fetched at all (network error). */
export const ROBOTS_UNREACHABLE = 0;

export type RobotsFetch = (
  origin: string,
  signal?: AbortSignal,
) => Promise<{ status: number; body: string }>;

/**
 * robots.txt per origin: fetched at most once per TTL (concurrent callers share one fetch),
 * persisted through the store, and interpreted per RFC 9309: 2xx rules apply, 4xx allows
 * everything, 5xx or unreachable disallows everything until the (shorter) error TTL passes.
 */
export class RobotsCache {
  readonly #store: RobotsStore;
  readonly #ttlMs: number;
  readonly #errorTtlMs: number;
  readonly #parsed = new Map<string, Parsed>();
  readonly #inflight = new Map<string, Promise<Parsed>>();

  constructor(
    options: RobotsOptions,
    private readonly token: string,
  ) {
    this.#store = options.store ?? new MemoryRobotsStore();
    this.#ttlMs = options.ttlMs ?? 24 * 3600_000;
    this.#errorTtlMs = options.errorTtlMs ?? 10 * 60_000;
  }

  /** What robots.txt says about `url`; `fetchRobots` is called only when no fresh verdict exists. */
  async decide(url: URL, fetchRobots: RobotsFetch, signal?: AbortSignal): Promise<RobotsDecision> {
    const parsed = await this.#load(url.origin, fetchRobots, signal);
    const { verdict, robot } = parsed;
    if (verdict.status >= 200 && verdict.status < 300 && robot !== undefined) {
      const allowed = robot.isAllowed(url.href, this.token) !== false;
      const delay = robot.getCrawlDelay(this.token);
      return {
        allowed,
        basis: 'rules',
        verdict,
        ...(delay === undefined || !Number.isFinite(delay) || delay <= 0
          ? {}
          : { crawlDelayMs: delay * 1000 }),
      };
    }
    if (isUnavailable(verdict.status)) {
      return { allowed: true, basis: 'unavailable', verdict };
    }
    return { allowed: false, basis: 'unreachable', verdict };
  }

  async #load(origin: string, fetchRobots: RobotsFetch, signal?: AbortSignal): Promise<Parsed> {
    const now = Date.now();
    const cached = this.#parsed.get(origin);
    if (cached !== undefined && Date.parse(cached.verdict.expiresAt) > now) return cached;
    const running = this.#inflight.get(origin);
    if (running !== undefined) return running;
    const p = this.#refresh(origin, fetchRobots, signal).finally(() =>
      this.#inflight.delete(origin),
    );
    this.#inflight.set(origin, p);
    return p;
  }

  async #refresh(origin: string, fetchRobots: RobotsFetch, signal?: AbortSignal): Promise<Parsed> {
    const stored = await this.#store.getRobots(origin);
    if (stored !== undefined && Date.parse(stored.expiresAt) > Date.now())
      return this.#remember(stored);
    const { status, body } = await fetchRobots(origin, signal);
    const ok = status >= 200 && status < 300;
    const ttl = ok || isUnavailable(status) ? this.#ttlMs : this.#errorTtlMs;
    const fetchedAt = Date.now();
    const verdict: RobotsVerdict = {
      host: origin,
      fetchedAt: new Date(fetchedAt).toISOString(),
      expiresAt: new Date(fetchedAt + ttl).toISOString(),
      status,
      body: ok ? body : '',
    };
    await this.#store.putRobots(verdict);
    return this.#remember(verdict);
  }

  #remember(verdict: RobotsVerdict): Parsed {
    const ok = verdict.status >= 200 && verdict.status < 300;
    const parsed: Parsed = {
      verdict,
      robot: ok ? robotsParser(`${verdict.host}/robots.txt`, verdict.body) : undefined,
    };
    this.#parsed.set(verdict.host, parsed);
    return parsed;
  }
}
