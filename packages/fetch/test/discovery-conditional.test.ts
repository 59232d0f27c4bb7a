import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DiscoveryCache,
  type DiscoveryCacheEntry,
  discoverLlmsTxt,
  discoverSitemap,
  type Fetcher,
} from '../src/index.js';
import { startServer, type TestServer, testFetcher } from './helpers.js';

// Listings are fetched conditionally when discovery is given a cache: a 304 reuses the
// remembered text, is counted, and lists the same URLs; a changed listing is read in full.
let s: TestServer;
let f: Fetcher;
let version = 1;

function mapCache(): DiscoveryCache & { readonly map: Map<string, DiscoveryCacheEntry> } {
  const map = new Map<string, DiscoveryCacheEntry>();
  return {
    map,
    get: async (url) => map.get(url),
    set: async (url, entry) => {
      map.set(url, entry);
    },
  };
}

beforeAll(async () => {
  s = await startServer((req, res) => {
    const base = `http://${req.headers.host}`;
    const u = req.url ?? '/';
    const etag = `"${u}-v${version}"`;
    const bodies: Record<string, [string, Buffer | string]> = {
      '/sitemap.xml': [
        'application/xml',
        `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${base}/pages.xml.gz</loc></sitemap></sitemapindex>`,
      ],
      '/pages.xml.gz': [
        'application/gzip',
        gzipSync(
          `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${base}/a</loc></url>${
            version > 1 ? `<url><loc>${base}/b</loc></url>` : ''
          }</urlset>`,
        ),
      ],
      '/llms.txt': ['text/plain', `# Site\n\n- [A](/a.md)\n${version > 1 ? '- [B](/b.md)\n' : ''}`],
    };
    const body = bodies[u];
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    // The index never changes; the child sitemap and llms.txt change with the version.
    const tag = u === '/sitemap.xml' ? '"index"' : etag;
    if (req.headers['if-none-match'] === tag) {
      res.writeHead(304, { etag: tag }).end();
      return;
    }
    res.writeHead(200, { 'content-type': body[0], etag: tag }).end(body[1]);
  });
  f = testFetcher();
});
afterAll(async () => {
  await f.close();
  await s.close();
});

describe('conditional discovery', () => {
  it('sitemaps: the second read is all 304 from the cache, a changed child is read in full', async () => {
    const cache = mapCache();
    const first = await discoverSitemap(f, `${s.origin}/sitemap.xml`, { cache });
    expect(first.notModified).toBe(0);
    expect(first.entries.map((e) => e.url)).toEqual([`${s.origin}/a`]);
    expect([...cache.map.keys()]).toEqual([`${s.origin}/sitemap.xml`, `${s.origin}/pages.xml.gz`]);

    const sent = s.log.length;
    const second = await discoverSitemap(f, `${s.origin}/sitemap.xml`, { cache });
    expect(second.notModified).toBe(2);
    expect(second.entries).toEqual(first.entries);
    expect(s.log.slice(sent).map((r) => r.headers['if-none-match'])).toEqual([
      '"index"',
      '"/pages.xml.gz-v1"',
    ]);

    version = 2;
    const third = await discoverSitemap(f, `${s.origin}/sitemap.xml`, { cache });
    expect(third.notModified).toBe(1);
    expect(third.entries.map((e) => e.url)).toEqual([`${s.origin}/a`, `${s.origin}/b`]);
    version = 1;
  });

  it('llms.txt: 304 from the cache lists the same links and says so', async () => {
    const cache = mapCache();
    const first = await discoverLlmsTxt(f, `${s.origin}/llms.txt`, { cache });
    expect(first).toMatchObject({ outcome: 'ok', notModified: false });
    const second = await discoverLlmsTxt(f, `${s.origin}/llms.txt`, { cache });
    expect(second).toMatchObject({ outcome: 'ok', notModified: true });
    expect(second.links).toEqual(first.links);
  });

  it('without a cache nothing is sent conditionally', async () => {
    const sent = s.log.length;
    const d = await discoverSitemap(f, `${s.origin}/sitemap.xml`);
    expect(d.notModified).toBe(0);
    expect(s.log.slice(sent).every((r) => r.headers['if-none-match'] === undefined)).toBe(true);
  });
});
