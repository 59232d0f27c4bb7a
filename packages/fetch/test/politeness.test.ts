import { afterEach, describe, expect, it } from 'vitest';
import { backoffDelay, type Fetcher, parseRetryAfter, seededRandom } from '../src/index.js';
import { html, startServer, type TestServer, testFetcher } from './helpers.js';

const servers: TestServer[] = [];
const fetchers: Fetcher[] = [];
afterEach(async () => {
  await Promise.all(fetchers.splice(0).map((f) => f.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function server(handler: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const s = await startServer(handler);
  servers.push(s);
  return s;
}
function fetcher(options: Parameters<typeof testFetcher>[0] = {}): Fetcher {
  const f = testFetcher(options);
  fetchers.push(f);
  return f;
}

function gaps(times: readonly number[]): number[] {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted.slice(1).map((t, i) => t - sorted[i]!);
}

describe('per-host minimum interval', () => {
  it('with 3 hosts and a 1 s interval, server-side arrival gaps per host are never below 1 s, and hosts run in parallel', async () => {
    const hosts = await Promise.all(
      [0, 1, 2].map(() => server((_q, res) => html(res, '<p>x</p>'))),
    );
    const f = fetcher({ minIntervalMs: 1000, perHostConcurrency: 4, globalConcurrency: 8 });
    const results = await Promise.all(
      hosts.flatMap((h) => [0, 1, 2, 3].map((i) => f.fetch(`${h.origin}/p${i}`))),
    );
    expect(results.map((r) => r.outcome)).toEqual(new Array(12).fill('ok'));
    for (const h of hosts) {
      expect(h.log).toHaveLength(4);
      for (const g of gaps(h.log.map((r) => r.at))) expect(g).toBeGreaterThanOrEqual(1000);
    }
    // In parallel, by order rather than by the clock: every host's first request arrives before
    // any host's second one (serialised hosts would answer one host's four first).
    const arrivals = (n: number) =>
      hosts.map((h) => [...h.log.map((r) => r.at)].sort((a, b) => a - b)[n]!);
    expect(Math.max(...arrivals(0))).toBeLessThan(Math.min(...arrivals(1)));
  });

  it('caps requests in flight per host and globally', async () => {
    let inFlight = 0;
    let peak = 0;
    const perHostPeak = new Map<string, number>();
    const perHostNow = new Map<string, number>();
    const handler =
      (port: () => number) => async (_q: unknown, res: import('node:http').ServerResponse) => {
        const key = String(port());
        inFlight++;
        perHostNow.set(key, (perHostNow.get(key) ?? 0) + 1);
        peak = Math.max(peak, inFlight);
        perHostPeak.set(key, Math.max(perHostPeak.get(key) ?? 0, perHostNow.get(key)!));
        await new Promise((r) => setTimeout(r, 60));
        inFlight--;
        perHostNow.set(key, perHostNow.get(key)! - 1);
        html(res, 'ok');
      };
    const a: { s?: TestServer } = {};
    const b: { s?: TestServer } = {};
    a.s = await server(handler(() => a.s!.port));
    b.s = await server(handler(() => b.s!.port));
    const f = fetcher({ perHostConcurrency: 2, globalConcurrency: 3 });
    await Promise.all([
      ...[0, 1, 2, 3, 4, 5].map((i) => f.fetch(`${a.s!.origin}/${i}`)),
      ...[0, 1, 2, 3, 4, 5].map((i) => f.fetch(`${b.s!.origin}/${i}`)),
    ]);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThanOrEqual(2);
    for (const v of perHostPeak.values()) expect(v).toBeLessThanOrEqual(2);
  });
});

describe('Retry-After', () => {
  it('a 429 with Retry-After: 2 delays that host >= 2 s and not the others', async () => {
    let limited = false;
    const slow = await server((req, res) => {
      if (req.url === '/first' && !limited) {
        limited = true;
        res.writeHead(429, { 'retry-after': '2', 'content-type': 'text/plain' });
        res.end('slow down');
        return;
      }
      html(res, 'ok');
    });
    const other = await server((_q, res) => html(res, 'ok'));
    const f = fetcher();
    const t0 = Date.now();
    const first = f.fetch(`${slow.origin}/first`);
    await new Promise((r) => setTimeout(r, 100));
    const second = f.fetch(`${slow.origin}/second`);
    const others = await Promise.all([0, 1, 2, 3].map((i) => f.fetch(`${other.origin}/${i}`)));
    const othersDone = Date.now() - t0;
    const [r1, r2] = await Promise.all([first, second]);
    expect(r1.outcome).toBe('ok');
    expect(r1.attempts).toBe(2);
    expect(r2.outcome).toBe('ok');
    expect(others.every((r) => r.outcome === 'ok')).toBe(true);
    const [limitedAt, ...after] = slow.log.map((r) => r.at);
    expect(after).toHaveLength(2);
    for (const t of after) expect(t - limitedAt!).toBeGreaterThanOrEqual(2000);
    // The other host was not held back: all its requests were answered before the limited
    // host's retries went out (order, not a wall-clock bound).
    const firstRetry = Math.min(...after);
    expect(t0 + othersDone).toBeLessThanOrEqual(firstRetry);
    for (const r of other.log) expect(r.at).toBeLessThan(firstRetry);
  });

  it('honours Retry-After as an HTTP-date', async () => {
    let limited = false;
    const s = await server((_q, res) => {
      if (!limited) {
        limited = true;
        // HTTP-dates have 1 s resolution: ask for 3 s from now, so at least 2 s remain.
        res.writeHead(503, { 'retry-after': new Date(Date.now() + 3000).toUTCString() });
        res.end();
        return;
      }
      html(res, 'ok');
    });
    const f = fetcher();
    const r = await f.fetch(`${s.origin}/x`);
    expect(r.outcome).toBe('ok');
    expect(s.log[1]!.at - s.log[0]!.at).toBeGreaterThanOrEqual(2000);
  });

  it('returns rate-limited without waiting when Retry-After exceeds maxRetryAfterMs, and keeps the host blocked', async () => {
    const s = await server((_q, res) => {
      res.writeHead(429, { 'retry-after': '3600' });
      res.end();
    });
    const f = fetcher({ retry: { maxRetryAfterMs: 1000 } });
    // Waiting would take the hour of Retry-After: the answer arriving at all is the proof.
    const r = await f.fetch(`${s.origin}/x`);
    expect(r.outcome).toBe('rate-limited');
    expect(r.attempts).toBe(1);
    if (r.outcome === 'rate-limited') expect(r.retryAfterMs).toBe(3_600_000);
    expect(r.status).toBe(429);
    expect(f.hostState(s.host).blockedUntil).toBeGreaterThan(Date.now() + 3_000_000);
    // Later requests to the blocked host are answered at once, without touching it.
    const later = await f.fetch(`${s.origin}/y`);
    expect(later.outcome).toBe('rate-limited');
    expect(later.status).toBe(0);
    expect(later.attempts).toBe(0);
    if (later.outcome === 'rate-limited') expect(later.retryAfterMs).toBeGreaterThan(3_000_000);
    expect(s.log).toHaveLength(1);
  });

  it('parses delta-seconds and HTTP-dates', () => {
    const now = Date.parse('2026-11-30T00:00:00Z');
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter('Mon, 30 Nov 2026 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Sun, 29 Nov 2026 00:00:05 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('backoff and circuit breaker', () => {
  it('backoff is exponential, capped and reproducible with a seeded random', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const policy = { baseDelayMs: 100, maxDelayMs: 1000 };
    const seqA = [0, 1, 2, 3, 4, 5].map((i) => backoffDelay(i, policy, a));
    const seqB = [0, 1, 2, 3, 4, 5].map((i) => backoffDelay(i, policy, b));
    expect(seqA).toEqual(seqB);
    [100, 200, 400, 800, 1000, 1000].forEach((exp, i) => {
      expect(seqA[i]).toBeGreaterThanOrEqual(exp / 2);
      expect(seqA[i]).toBeLessThanOrEqual(exp);
    });
    expect(backoffDelay(3, { baseDelayMs: 100, jitter: 'none' }, Math.random)).toBe(800);
  });

  it('retries a 502 with backoff and then succeeds', async () => {
    let n = 0;
    const s = await server((_q, res) => {
      n++;
      if (n < 3) {
        res.writeHead(502);
        res.end();
        return;
      }
      html(res, 'ok');
    });
    const f = fetcher({ retry: { baseDelayMs: 100, jitter: 'none', maxAttempts: 3 } });
    const r = await f.fetch(`${s.origin}/x`);
    expect(r.outcome).toBe('ok');
    expect(r.attempts).toBe(3);
    const [g1, g2] = gaps(s.log.map((l) => l.at));
    expect(g1).toBeGreaterThanOrEqual(100);
    expect(g2).toBeGreaterThanOrEqual(200);
  });

  it('opens the circuit of a failing host after the threshold, without touching other hosts', async () => {
    const bad = await server((_q, res) => {
      res.writeHead(500);
      res.end('boom');
    });
    const good = await server((_q, res) => html(res, 'ok'));
    const f = fetcher({
      retry: { maxAttempts: 1 },
      circuitBreaker: { failureThreshold: 3, cooldownMs: 300 },
    });
    const outcomes: string[] = [];
    for (let i = 0; i < 5; i++) outcomes.push((await f.fetch(`${bad.origin}/${i}`)).outcome);
    expect(outcomes).toEqual([
      'server-error',
      'server-error',
      'server-error',
      'circuit-open',
      'circuit-open',
    ]);
    expect(bad.log).toHaveLength(3);
    expect((await f.fetch(`${good.origin}/`)).outcome).toBe('ok');
    await new Promise((r) => setTimeout(r, 350));
    // Half-open: one trial request goes through, fails, and the circuit opens again.
    expect((await f.fetch(`${bad.origin}/trial`)).outcome).toBe('server-error');
    expect((await f.fetch(`${bad.origin}/after`)).outcome).toBe('circuit-open');
    expect(bad.log).toHaveLength(4);
  });

  it('an aborted half-open trial does not leave the circuit shut', async () => {
    let hang = false;
    const s2 = await server((_q, res) => {
      if (hang) return; // never answers
      res.writeHead(500);
      res.end();
    });
    const f = fetcher({
      retry: { maxAttempts: 1 },
      circuitBreaker: { failureThreshold: 1, cooldownMs: 100 },
    });
    expect((await f.fetch(`${s2.origin}/a`)).outcome).toBe('server-error');
    await new Promise((r) => setTimeout(r, 150));
    hang = true;
    const ac = new AbortController();
    const trial = f.fetch(`${s2.origin}/trial`, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('cancel trial')), 50);
    await expect(trial).rejects.toThrow('cancel trial');
    hang = false;
    // The trial slot was given back: the next request is the new trial and reaches the server.
    expect((await f.fetch(`${s2.origin}/next`)).outcome).toBe('server-error');
    expect(s2.log.map((l) => l.path)).toEqual(['/a', '/trial', '/next']);
  });
});
