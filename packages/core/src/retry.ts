import { RagfreshError } from './errors.js';

/** Bounded exponential backoff for idempotent store calls. */
export interface RetryPolicy {
  /** Total attempts including the first (default 6). */
  readonly attempts?: number;
  /** First backoff in ms (default 100), doubled per attempt with jitter. */
  readonly baseDelayMs?: number;
  /** Largest single backoff in ms (default 10 000). */
  readonly maxDelayMs?: number;
  /** Largest wait a server may ask for with Retry-After, ms (default 60 000). */
  readonly maxRetryAfterMs?: number;
}

/** How one failure should be handled. */
export type FailureClass =
  | { readonly retry: true; readonly afterMs?: number; readonly reason: string }
  | { readonly retry: false };

/**
 * A seedable PRNG (mulberry32) returning [0, 1): reproducible backoff jitter in tests, and fault
 * runs of the emulators replayed from their seed. The one copy (fetch and the emulators re-export it).
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `op` until it succeeds, a failure is not retryable, or attempts run out. Every
 * operation passed here must be idempotent: it may have been applied before its answer was lost.
 */
export async function withRetry<T>(
  store: string,
  what: string,
  policy: RetryPolicy,
  classify: (err: unknown) => FailureClass,
  op: () => Promise<T>,
): Promise<T> {
  const attempts = Math.max(1, policy.attempts ?? 6);
  const base = policy.baseDelayMs ?? 100;
  const max = policy.maxDelayMs ?? 10_000;
  let last = '';
  for (let attempt = 1; ; attempt++) {
    try {
      return await op();
    } catch (err) {
      const c = classify(err);
      if (!c.retry) throw err;
      last = c.reason;
      if (attempt >= attempts) {
        throw new RagfreshError(
          'STORE_UNREACHABLE',
          `${what} failed ${attempts} times (last: ${last}); check that the store is up and not rate-limiting, then rerun.`,
          { scope: store, cause: err },
        );
      }
      const backoff = Math.min(max, base * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5));
      const asked = Math.min(policy.maxRetryAfterMs ?? 60_000, c.afterMs ?? 0);
      await sleep(Math.max(asked, backoff));
    }
  }
}

/** True for errors of a connection that died without an HTTP answer. */
export function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const codes = [
    'ECONNRESET',
    'ECONNREFUSED',
    'EPIPE',
    'ETIMEDOUT',
    'UND_ERR_SOCKET',
    'UND_ERR_CLOSED',
    'UND_ERR_CONNECT_TIMEOUT',
  ];
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && codes.includes(code)) return true;
    if (e.name === 'AbortError' || e.name === 'TimeoutError') return true;
    if (e instanceof TypeError && /fetch failed|terminated|other side closed/i.test(e.message))
      return true;
  }
  return false;
}

/** Parses a Retry-After header (seconds or HTTP date) into ms. */
export function retryAfterMs(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
