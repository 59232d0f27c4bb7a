import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  discoverLlmsTxt,
  discoverSitemap,
  type Fetcher,
  MemoryRawSnapshotStore,
} from '../src/index.js';
import { testFetcher } from './helpers.js';

let sim: SimWeb;
beforeAll(async () => {
  sim = await startSimWeb({ seed: 7, hosts: 3, pagesPerHost: 12 });
});
afterAll(async () => {
  await sim.stop();
});
beforeEach(() => {
  sim.reset();
  sim.clearLog();
});

function fetcher(opts: Parameters<typeof testFetcher>[0] = {}): Fetcher {
  return testFetcher({ robots: {}, ...opts });
}

describe('against the simulated web', () => {
  it('keeps a 1 s interval per host across 3 sim hosts (sim request log)', async () => {
    const f = fetcher({ minIntervalMs: 1000, perHostConcurrency: 3 });
    const hosts = sim.hosts();
    await Promise.all(
      hosts.flatMap((h) =>
        sim
          .urls(h)
          .slice(0, 3)
          .map((u) => f.fetch(u)),
      ),
    );
    await f.close();
    for (const h of hosts) {
      const times = sim.log(h).map((e) => e.time);
      expect(times).toHaveLength(4); // robots.txt + 3 pages
      for (let i = 1; i < times.length; i++)
        expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000);
      expect(Math.max(...sim.log(h).map((e) => e.concurrent))).toBe(1);
    }
  });

  it('revalidates with the sim ETag: 304 -> not-modified; an edit -> ok with a new digest', async () => {
    const f = fetcher({ minIntervalMs: 0 });
    const url = sim.urls(sim.hosts()[0])[2]!;
    const first = await f.fetch(url, { pipelineKey: 'p1' });
    if (first.outcome !== 'ok') throw new Error(`expected ok, got ${first.outcome}`);
    expect(first.text).toContain(sim.pageFacts(url).phrase);
    const again = await f.fetch(url, { validators: first.validators, pipelineKey: 'p1' });
    expect(again.outcome).toBe('not-modified');
    sim.mutate(url, 'edit', { section: 0 });
    const edited = await f.fetch(url, { validators: first.validators, pipelineKey: 'p1' });
    if (edited.outcome !== 'ok') throw new Error(`expected ok, got ${edited.outcome}`);
    expect(edited.rawDigest).not.toBe(first.rawDigest);
    expect(edited.validators.etag).not.toBe(first.validators.etag);
    await f.close();
  });

  it('a sim rate limit (429, Retry-After: 1) delays only that host', async () => {
    const f = fetcher({ minIntervalMs: 0 });
    const [h0, h1] = sim.hosts();
    const limited = sim.urls(h0)[1]!;
    sim.mutate(limited, 'rateLimit', { retryAfter: 1, times: 1 });
    const [r, ...others] = await Promise.all([
      f.fetch(limited),
      ...sim
        .urls(h1)
        .slice(0, 4)
        .map((u) => f.fetch(u)),
    ]);
    expect(r.outcome).toBe('ok');
    expect(r.attempts).toBe(2);
    const hits = sim.log(h0).filter((e) => e.url === limited);
    expect(hits.map((e) => e.status)).toEqual([429, 200]);
    expect(hits[1]!.time - hits[0]!.time).toBeGreaterThanOrEqual(1000);
    expect(others.every((o) => o.outcome === 'ok')).toBe(true);
    // Order, not the clock: the other host was answered before the limited URL's retry.
    for (const e of sim.log(h1)) expect(e.time).toBeLessThan(hits[1]!.time);
    await f.close();
  });

  it('maps sim faults to outcomes', async () => {
    const f = fetcher({ minIntervalMs: 0, retry: { maxAttempts: 1 }, maxBytes: 2 * 1024 * 1024 });
    const host = sim.hosts()[0]!;
    const urls = sim.urls(host);
    sim.mutate(urls[1]!, 'delete410');
    sim.mutate(urls[2]!, 'outage', { retryAfter: 1 });
    sim.mutate(urls[3]!, 'offHostRedirect');
    sim.mutate(urls[4]!, 'gzipBomb', { inflatedBytes: 64 * 1024 * 1024 });
    sim.mutate(urls[5]!, 'wrongCharset', { charset: 'meta-only' });
    sim.mutate(urls[6]!, 'loginRedirect');
    const outcomes = await Promise.all(urls.slice(1, 7).map((u) => f.fetch(u)));
    expect(outcomes.map((o) => o.outcome)).toEqual([
      'gone',
      'server-error',
      'off-host-redirect',
      'too-large',
      'ok',
      // The login redirect lands on /login, which the sim's robots.txt disallows.
      'robots-disallowed',
    ]);
    const meta = outcomes[4]!;
    if (meta.outcome === 'ok') {
      expect(meta.charset).toBe('utf-8');
      expect(meta.text).toContain(sim.pageFacts(urls[5]!).phrase);
    }
    expect(outcomes[5]!.redirects).toHaveLength(1);
    expect(outcomes[5]!.finalUrl).toContain('/login?next=');
    const disallowed = await f.fetch(`${sim.origin(host)}/search?q=x`);
    expect(disallowed.outcome).toBe('robots-disallowed');
    await f.close();
  });

  it('discovers every page from the sim sitemap index (plain + gzip) and llms.txt, and fetches twins', async () => {
    const f = fetcher({ minIntervalMs: 0 });
    const host = sim.hosts()[1]!;
    const d = await discoverSitemap(f, `${sim.origin(host)}/sitemap.xml`);
    expect(d.failures).toEqual([]);
    expect(d.entries.map((e) => e.url).sort()).toEqual([...sim.urls(host)].sort());
    expect(d.entries.every((e) => e.lastmod !== undefined)).toBe(true);
    const llms = await discoverLlmsTxt(f, `${sim.origin(host)}/llms.txt`);
    expect(llms.links.length).toBeGreaterThan(0);
    const page = sim.urls(host)[3]!;
    const snapshots = new MemoryRawSnapshotStore();
    const g = fetcher({ minIntervalMs: 0, snapshots });
    const twin = await g.fetch(page, { markdownTwin: true });
    expect(twin.outcome).toBe('ok');
    expect(twin.acquisition).toBe('markdown-twin');
    expect(twin.finalUrl).toBe(sim.markdownUrl(page));
    if (twin.outcome === 'ok') {
      expect(twin.text).toContain(sim.pageFacts(page).phrase);
      expect(await snapshots.has(twin.rawDigest)).toBe(true);
    }
    await f.close();
    await g.close();
  });
});
