import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Fetcher, MemoryRobotsStore } from '../src/index.js';
import { html, startServer, type TestServer, testFetcher, UA } from './helpers.js';

const servers: TestServer[] = [];
const fetchers: Fetcher[] = [];
afterEach(async () => {
  await Promise.all(fetchers.splice(0).map((f) => f.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function site(robots: { status: number; body?: string }): Promise<TestServer> {
  const s = await startServer((req, res) => {
    if (req.url === '/robots.txt') {
      res.writeHead(robots.status, { 'content-type': 'text/plain' });
      res.end(robots.body ?? '');
      return;
    }
    html(res, `<p>${req.url}</p>`);
  });
  servers.push(s);
  return s;
}

function fetcher(opts: Partial<ConstructorParameters<typeof Fetcher>[0]> = {}): Fetcher {
  const f = testFetcher({ robots: {}, ...opts });
  fetchers.push(f);
  return f;
}

const RULES = [
  'User-agent: *',
  'Disallow: /private',
  '',
  'User-agent: ragfresh-test',
  'Disallow: /no-ragfresh',
  'Allow: /',
].join('\n');

describe('robots.txt', () => {
  it('refuses disallowed paths before requesting them, and fetches robots.txt once for many pages', async () => {
    const s = await site({ status: 200, body: RULES });
    const f = fetcher();
    const results = await Promise.all(
      ['/a', '/b', '/no-ragfresh/x', '/c', '/private'].map((p) => f.fetch(`${s.origin}${p}`)),
    );
    expect(results.map((r) => r.outcome)).toEqual(['ok', 'ok', 'robots-disallowed', 'ok', 'ok']);
    const disallowed = results[2]!;
    if (disallowed.outcome === 'robots-disallowed') expect(disallowed.basis).toBe('rules');
    expect(s.log.filter((r) => r.path === '/robots.txt')).toHaveLength(1);
    expect(s.pages().map((r) => r.path)).not.toContain('/no-ragfresh/x');
    // The group for our token wins over `*`, so /private is allowed for us.
    expect(s.pages().map((r) => r.path)).toContain('/private');
    expect(s.log[0]!.headers['user-agent']).toBe(UA);
  });

  it('persists the verdict in the injected store; a new fetcher with the same store does not refetch within the TTL', async () => {
    const s = await site({ status: 200, body: 'User-agent: *\nDisallow: /x' });
    const store = new MemoryRobotsStore();
    const f1 = fetcher({ robots: { store } });
    expect((await f1.fetch(`${s.origin}/x`)).outcome).toBe('robots-disallowed');
    const verdict = await store.getRobots(s.origin);
    expect(verdict).toMatchObject({
      host: s.origin,
      status: 200,
      body: 'User-agent: *\nDisallow: /x',
    });
    expect(Date.parse(verdict!.expiresAt) - Date.parse(verdict!.fetchedAt)).toBe(24 * 3600_000);
    const f2 = fetcher({ robots: { store } });
    expect((await f2.fetch(`${s.origin}/x`)).outcome).toBe('robots-disallowed');
    expect((await f2.fetch(`${s.origin}/y`)).outcome).toBe('ok');
    expect(s.log.filter((r) => r.path === '/robots.txt')).toHaveLength(1);
  });

  it('refetches robots.txt after the TTL', async () => {
    const s = await site({ status: 200, body: 'User-agent: *\nAllow: /' });
    const f = fetcher({ robots: { ttlMs: 200 } });
    await f.fetch(`${s.origin}/1`);
    await f.fetch(`${s.origin}/2`);
    await new Promise((r) => setTimeout(r, 250));
    await f.fetch(`${s.origin}/3`);
    expect(s.log.filter((r) => r.path === '/robots.txt')).toHaveLength(2);
  });

  it('a 4xx robots.txt allows everything', async () => {
    const s = await site({ status: 404 });
    const f = fetcher();
    expect((await f.fetch(`${s.origin}/anything`)).outcome).toBe('ok');
  });

  it('a 5xx robots.txt disallows everything (for the error TTL)', async () => {
    const s = await site({ status: 503 });
    const store = new MemoryRobotsStore();
    const f = fetcher({ robots: { store, errorTtlMs: 60_000 } });
    const r = await f.fetch(`${s.origin}/page`);
    expect(r.outcome).toBe('robots-disallowed');
    if (r.outcome === 'robots-disallowed') expect(r.basis).toBe('unreachable');
    expect(s.pages()).toHaveLength(0);
    const v = await store.getRobots(s.origin);
    expect(v?.status).toBe(503);
    expect(Date.parse(v!.expiresAt) - Date.parse(v!.fetchedAt)).toBe(60_000);
  });

  it('an unreachable host disallows everything', async () => {
    // A port that was free a moment ago: nothing listens there.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const f = fetcher();
    const r = await f.fetch(`http://127.0.0.1:${port}/page`);
    expect(r.outcome).toBe('robots-disallowed');
  });

  it('Crawl-delay raises the host interval (server-side gaps >= the delay)', async () => {
    const s = await site({ status: 200, body: 'User-agent: *\nCrawl-delay: 1\nAllow: /' });
    const f = fetcher({ minIntervalMs: 0, perHostConcurrency: 4 });
    await Promise.all(['/1', '/2', '/3'].map((p) => f.fetch(`${s.origin}${p}`)));
    const times = s.pages().map((r) => r.at);
    expect(times).toHaveLength(3);
    for (let i = 1; i < times.length; i++)
      expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000);
    expect(f.hostState(s.host).intervalMs).toBe(1000);
  });

  it('requires a User-Agent with a contact URL (INVALID_CONFIG)', () => {
    for (const userAgent of [
      '',
      'ragfresh/0.1',
      'ragfresh/0.1 (contact: me)',
      'bad\r\nX: y https://x.org',
    ]) {
      expect(() => new Fetcher({ userAgent })).toThrow(
        expect.objectContaining({ code: 'INVALID_CONFIG' }),
      );
    }
    expect(new Fetcher({ userAgent: 'ragfresh/0.1 (+https://example.org/bot)' }).robotsToken).toBe(
      'ragfresh',
    );
  });
});
