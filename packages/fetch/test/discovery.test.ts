import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultTwinCandidates,
  discoverLlmsTxt,
  discoverSitemap,
  type Fetcher,
  parseLlmsTxt,
  SitemapParser,
} from '../src/index.js';
import { html, startServer, type TestServer, testFetcher } from './helpers.js';

let s: TestServer;
let f: Fetcher;

function urlset(paths: readonly string[], base: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths
    .map((p, i) => `<url><loc>${base}${p}</loc><lastmod>2026-0${(i % 9) + 1}-15</lastmod></url>`)
    .join('\n')}</urlset>`;
}

beforeAll(async () => {
  s = await startServer((req, res) => {
    const base = `http://${req.headers.host}`;
    const u = req.url ?? '/';
    if (u === '/sitemap.xml') {
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(
        `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${base}/s1.xml</loc><lastmod>2026-11-01T10:00:00+00:00</lastmod></sitemap><sitemap><loc>${base}/s2.xml.gz</loc></sitemap><sitemap><loc>${base}/missing.xml</loc></sitemap></sitemapindex>`,
      );
      return;
    }
    if (u === '/s1.xml') {
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
      res.end(urlset(['/a', '/b?x=1&amp;y=2', '/c'], base));
      return;
    }
    if (u === '/s2.xml.gz') {
      res.writeHead(200, { 'content-type': 'application/gzip' });
      res.end(gzipSync(urlset(['/d', '/e'], base)));
      return;
    }
    if (u === '/llms.txt') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(
        '# Site\n\n> summary\n\n## Docs\n\n- [Guide](/guide.md): how to\n- [API](https://api.example.org/ref.md)\n\n## Optional\n\n- [Blog](blog/index.md)\n',
      );
      return;
    }
    if (u === '/guide.md' || u === '/docs/index.md') {
      res.writeHead(200, { 'content-type': 'text/markdown; charset=utf-8' });
      res.end(`# Twin of ${u}\n`);
      return;
    }
    if (u === '/html-twin.md') {
      // Some servers answer any path with their HTML app: not a real twin.
      html(res, '<!doctype html><html><body>app</body></html>');
      return;
    }
    if (u.endsWith('.md') || u === '/missing.xml') {
      res.writeHead(404);
      res.end();
      return;
    }
    html(res, `<p>html ${u}</p>`);
  });
  f = testFetcher();
});
afterAll(async () => {
  await f.close();
  await s.close();
});

describe('sitemaps', () => {
  it('follows a sitemap index into plain and gzip sitemaps, with lastmod', async () => {
    const d = await discoverSitemap(f, `${s.origin}/sitemap.xml`);
    expect(d.entries.map((e) => e.url)).toEqual(
      ['/a', '/b?x=1&y=2', '/c', '/d', '/e'].map((p) => `${s.origin}${p}`),
    );
    expect(d.entries[0]).toEqual({
      url: `${s.origin}/a`,
      lastmod: '2026-01-15T00:00:00.000Z',
      sitemap: `${s.origin}/s1.xml`,
    });
    expect(d.sitemaps).toEqual([
      `${s.origin}/sitemap.xml`,
      `${s.origin}/s1.xml`,
      `${s.origin}/s2.xml.gz`,
      `${s.origin}/missing.xml`,
    ]);
    expect(d.failures).toEqual([
      { url: `${s.origin}/missing.xml`, outcome: 'gone', reason: 'gone: HTTP 404' },
    ]);
    expect(d.truncated).toBe(false);
  });

  it('bounds the URL count and says the listing was truncated', async () => {
    const d = await discoverSitemap(f, `${s.origin}/sitemap.xml`, { maxUrls: 2 });
    expect(d.entries).toHaveLength(2);
    expect(d.truncated).toBe(true);
  });

  it('bounds nesting depth', async () => {
    const d = await discoverSitemap(f, `${s.origin}/sitemap.xml`, { maxDepth: 0 });
    expect(d.entries).toHaveLength(0);
    expect(d.truncated).toBe(true);
  });

  it('parses incrementally, across arbitrary chunk boundaries', () => {
    const xml = urlset(
      Array.from({ length: 50 }, (_, i) => `/p${i}`),
      'https://example.org',
    );
    for (const size of [1, 7, 100, 100_000]) {
      const p = new SitemapParser('https://example.org/sitemap.xml', 30);
      for (let i = 0; i < xml.length; i += size) p.write(xml.slice(i, i + size));
      expect(p.entries).toHaveLength(30);
      expect(p.truncated).toBe(true);
      expect(p.entries[29]!.url).toBe('https://example.org/p29');
    }
    const cdata = new SitemapParser('https://e.org/s.xml');
    cdata.write('<urlset><url><loc><![CDATA[https://e.org/x?a=1&b=2]]></loc></url></urlset>');
    expect(cdata.entries[0]!.url).toBe('https://e.org/x?a=1&b=2');
  });
});

describe('llms.txt', () => {
  it('lists links with sections, resolved against the file URL', async () => {
    const d = await discoverLlmsTxt(f, `${s.origin}/llms.txt`);
    expect(d.outcome).toBe('ok');
    expect(d.links).toEqual([
      { url: `${s.origin}/guide.md`, title: 'Guide', section: 'Docs', description: 'how to' },
      { url: 'https://api.example.org/ref.md', title: 'API', section: 'Docs' },
      { url: `${s.origin}/blog/index.md`, title: 'Blog', section: 'Optional' },
    ]);
    expect(parseLlmsTxt('[x](javascript:alert(1)) [y](mailto:a@b)', 'https://e.org/')).toEqual([]);
  });
});

describe('Markdown twins', () => {
  it('candidates: <path>.md, or index.md for a directory', () => {
    expect(defaultTwinCandidates(new URL('https://e.org/docs/guide?x=1#h'))).toEqual([
      'https://e.org/docs/guide.md',
    ]);
    expect(defaultTwinCandidates(new URL('https://e.org/docs/'))).toEqual([
      'https://e.org/docs/index.md',
    ]);
    expect(defaultTwinCandidates(new URL('https://e.org/page.html'))).toEqual([
      'https://e.org/page.md',
    ]);
  });

  it('prefers a twin when it exists, reporting acquisition markdown-twin', async () => {
    const r = await f.fetch(`${s.origin}/guide`, { markdownTwin: true });
    expect(r.outcome).toBe('ok');
    expect(r.acquisition).toBe('markdown-twin');
    expect(r.url).toBe(`${s.origin}/guide`);
    expect(r.finalUrl).toBe(`${s.origin}/guide.md`);
    if (r.outcome === 'ok') expect(r.text).toBe('# Twin of /guide.md\n');
    const dir = await f.fetch(`${s.origin}/docs/`, { markdownTwin: true });
    expect(dir.acquisition).toBe('markdown-twin');
    expect(dir.finalUrl).toBe(`${s.origin}/docs/index.md`);
  });

  it('falls back to the page when the twin is missing or is HTML', async () => {
    const g = testFetcher({ markdownTwin: { giveUpAfterMisses: 100 } });
    const r = await g.fetch(`${s.origin}/no-twin`, { markdownTwin: true });
    expect(r.outcome).toBe('ok');
    expect(r.acquisition).toBe('raw');
    expect(r.finalUrl).toBe(`${s.origin}/no-twin`);
    const h = await g.fetch(`${s.origin}/html-twin`, { markdownTwin: true });
    expect(h.acquisition).toBe('raw');
    await g.close();
  });

  it('stops probing twins on an origin after repeated misses', async () => {
    const t = await startServer((req, res) => {
      if ((req.url ?? '').endsWith('.md')) {
        res.writeHead(404);
        res.end();
        return;
      }
      html(res, 'page');
    });
    const g = testFetcher({ markdownTwin: { giveUpAfterMisses: 2 } });
    for (let i = 0; i < 5; i++) await g.fetch(`${t.origin}/p${i}`, { markdownTwin: true });
    expect(t.log.filter((l) => l.path.endsWith('.md'))).toHaveLength(2);
    expect(t.log.filter((l) => !l.path.endsWith('.md'))).toHaveLength(5);
    await g.close();
    await t.close();
  });
});
