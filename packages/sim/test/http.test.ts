import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimWeb, startSimWeb } from '../src/index.js';
import { raw } from './raw.js';

let sim: SimWeb;
beforeAll(async () => {
  sim = await startSimWeb({
    seed: 3,
    hosts: 3,
    pagesPerHost: 12,
    robots: (host, i) =>
      i === 1
        ? { disallow: ['/private/'], crawlDelay: 2 }
        : `User-agent: *\nDisallow:\n# ${host}\n`,
  });
});
afterAll(async () => {
  await sim.stop();
});

describe('hosts', () => {
  it('refuses options it cannot honour, with INVALID_ARGUMENT', async () => {
    await expect(startSimWeb({ hosts: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(startSimWeb({ hosts: 200, pagesPerHost: 1000 })).rejects.toThrowError(
      /at most 100000/,
    );
    await expect(startSimWeb({ seed: 1.5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('gives each host its own loopback origin and pages on it', () => {
    expect(sim.hosts()).toEqual(['docs-0', 'docs-1', 'docs-2']);
    const origins = sim.hosts().map((h) => sim.origin(h));
    expect(new Set(origins).size).toBe(3);
    for (const o of origins) expect(o).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sim.urls()).toHaveLength(36);
    expect(sim.urls('docs-1').every((u) => u.startsWith(sim.origin('docs-1')))).toBe(true);
    expect(sim.hostOf(sim.urls('docs-2')[3] as string)).toBe('docs-2');
    expect(() => sim.hostOf('http://example.com/')).toThrowError(/not served by this sim/);
  });

  it('serves realistic documentation pages', async () => {
    const url = sim.urls('docs-0')[2] as string;
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    const facts = sim.pageFacts(url);
    expect(html).toContain('<html lang="en">');
    expect(html).toContain('<meta charset="utf-8">');
    expect(html).toContain(`<link rel="canonical" href="${url}">`);
    expect(html).toContain(`<title>${facts.title} — `);
    for (const marker of [
      'class="navbar"',
      'class="breadcrumbs"',
      'class="sidebar"',
      'id="cookie-consent"',
      '<footer',
      'Edit this page',
      '<table',
      'class="language-',
      '<h1',
      '<h2',
    ]) {
      expect(html).toContain(marker);
    }
    expect(html).toMatch(/<code class="language-(python|bash)"># /);
    expect(html).toContain(facts.phrase);
  });

  it('serves the same page for tracking-parameter variants', async () => {
    const url = sim.urls('docs-2')[4] as string;
    const a = await raw(url);
    const b = await raw(`${url}?utm_source=newsletter&utm_medium=email&fbclid=abc`);
    expect(b.status).toBe(200);
    expect(b.body.equals(a.body)).toBe(true);
    expect(b.headers.etag).toBe(a.headers.etag);
  });

  it('redirects the other trailing-slash form of a page to the page', async () => {
    for (const host of sim.hosts()) {
      const url = sim.urls(host)[2] as string;
      const other = url.endsWith('/') ? url.slice(0, -1) : `${url}/`;
      const res = await raw(`${other}?utm_source=x`);
      expect(res.status, other).toBe(301);
      expect(res.headers.location).toBe(`${url}?utm_source=x`);
    }
  });

  it('answers unknown paths with 404 and other methods with 405', async () => {
    const res = await raw(`${sim.origin('docs-0')}/no/such/page`);
    expect(res.status).toBe(404);
    const post = await raw(sim.urls()[0] as string, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });
});

describe('conditional requests', () => {
  it('sends a strong ETag (hash of the body) and Last-Modified, and 304s a matching If-None-Match', async () => {
    const url = sim.urls('docs-1')[3] as string;
    const first = await raw(url);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);
    expect(new Date(first.headers['last-modified'] as string).toISOString()).toBe(
      sim.pageFacts(url).lastModified,
    );
    const again = await raw(url);
    expect(again.headers.etag).toBe(etag);
    const cond = await raw(url, { headers: { 'if-none-match': etag } });
    expect(cond.status).toBe(304);
    expect(cond.body.length).toBe(0);
    expect(cond.headers.etag).toBe(etag);
    const weak = await raw(url, { headers: { 'if-none-match': `"nope", W/${etag}` } });
    expect(weak.status).toBe(304);
    const miss = await raw(url, { headers: { 'if-none-match': '"other"' } });
    expect(miss.status).toBe(200);
  });

  it('honours If-Modified-Since unless If-None-Match is present', async () => {
    const url = sim.urls('docs-1')[5] as string;
    const lm = (await raw(url)).headers['last-modified'] as string;
    expect((await raw(url, { headers: { 'if-modified-since': lm } })).status).toBe(304);
    const before = new Date(Date.parse(lm) - 1000).toUTCString();
    expect((await raw(url, { headers: { 'if-modified-since': before } })).status).toBe(200);
    expect(
      (await raw(url, { headers: { 'if-modified-since': lm, 'if-none-match': '"x"' } })).status,
    ).toBe(200);
  });

  it('works through fetch (undici) too', async () => {
    const url = sim.urls('docs-0')[1] as string;
    const first = await fetch(url);
    await first.arrayBuffer();
    const etag = first.headers.get('etag') as string;
    const second = await fetch(url, { headers: { 'if-none-match': etag } });
    expect(second.status).toBe(304);
  });
});

describe('encoding and HEAD', () => {
  it('gzips when Accept-Encoding allows and not otherwise', async () => {
    const url = sim.urls('docs-0')[4] as string;
    const plain = await raw(url);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('Accept-Encoding');
    const gz = await raw(url, { headers: { 'accept-encoding': 'br, gzip;q=0.8' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.body.length).toBeLessThan(plain.body.length / 2);
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
    expect(gz.headers.etag).toBe(plain.headers.etag);
    const refused = await raw(url, { headers: { 'accept-encoding': 'gzip;q=0, identity' } });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });

  it('answers HEAD with the GET headers and no body', async () => {
    const url = sim.urls('docs-2')[1] as string;
    const get = await raw(url);
    const head = await raw(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-length']).toBe(String(get.body.length));
    expect(head.headers.etag).toBe(get.headers.etag);
  });
});

describe('robots, sitemaps, llms.txt, twins', () => {
  it('serves configured robots.txt per host', async () => {
    const r0 = await raw(`${sim.origin('docs-0')}/robots.txt`);
    expect(r0.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r0.body.toString()).toBe('User-agent: *\nDisallow:\n# docs-0\n');
    const r1 = (await raw(`${sim.origin('docs-1')}/robots.txt`)).body.toString();
    expect(r1).toContain('Disallow: /private/');
    expect(r1).toContain('Crawl-delay: 2');
    expect(r1).toContain(`Sitemap: ${sim.origin('docs-1')}/sitemap.xml`);
    sim.setRobots('docs-0', { disallow: ['/'] });
    expect((await raw(`${sim.origin('docs-0')}/robots.txt`)).body.toString()).toContain(
      'Disallow: /\n',
    );
  });

  it('serves a sitemap index with a plain and a gzipped child that list every page with lastmod', async () => {
    const origin = sim.origin('docs-2');
    const index = (await raw(`${origin}/sitemap.xml`)).body.toString();
    expect(index).toContain('<sitemapindex');
    const locs = [...index.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1] as string);
    expect(locs).toEqual([`${origin}/sitemaps/pages-1.xml`, `${origin}/sitemaps/pages-2.xml.gz`]);
    const child1 = (await raw(locs[0] as string)).body.toString();
    const gzRes = await raw(locs[1] as string);
    expect(gzRes.headers['content-type']).toBe('application/gzip');
    expect(gzRes.headers['content-encoding']).toBeUndefined();
    const child2 = gunzipSync(gzRes.body).toString();
    const listed = [
      ...(child1 + child2).matchAll(/<loc>([^<]+)<\/loc>\s*<lastmod>([^<]+)<\/lastmod>/g),
    ];
    expect(listed.map((m) => m[1])).toEqual(sim.urls('docs-2'));
    for (const m of listed) expect(m[2]).toBe(sim.pageFacts(m[1] as string).lastModified);
  });

  it('serves an Atom feed of the most recently updated pages', async () => {
    const origin = sim.origin('docs-1');
    const res = await raw(`${origin}/feed.xml`);
    expect(res.headers['content-type']).toBe('application/atom+xml; charset=utf-8');
    const xml = res.body.toString();
    const entries = [
      ...xml.matchAll(/<link href="([^"]+)"\/>\s*<id>[^<]+<\/id>\s*<updated>([^<]+)<\/updated>/g),
    ];
    expect(entries).toHaveLength(12);
    const times = entries.map((m) => Date.parse(m[2] as string));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    for (const m of entries) expect(sim.pageFacts(m[1] as string).lastModified).toBe(m[2]);
  });

  it('serves llms.txt linking Markdown twins, and the twins themselves', async () => {
    const origin = sim.origin('docs-0');
    const llms = (await raw(`${origin}/llms.txt`)).body.toString();
    expect(llms).toMatch(/^# .+ Docs\n\n> /);
    const links = [...llms.matchAll(/\]\((http[^)]+\.md)\)/g)].map((m) => m[1] as string);
    expect(links).toHaveLength(11);
    const url = sim.urls('docs-0')[3] as string;
    expect(links).toContain(sim.markdownUrl(url));
    const md = await raw(sim.markdownUrl(url));
    expect(md.headers['content-type']).toBe('text/markdown; charset=utf-8');
    const text = md.body.toString();
    expect(sim.markdown(url)).toBe(text);
    const facts = sim.pageFacts(url);
    expect(text.startsWith(`# ${facts.title}\n`)).toBe(true);
    expect(text).toContain(facts.phrase);
    for (const s of facts.sections) expect(text).toContain(`${'#'.repeat(s.level)} ${s.heading}\n`);
    expect(text).toMatch(/```(python|bash)\n# /);
  });
});

describe('request log', () => {
  it('records time, method, host, path, headers, status and concurrency', async () => {
    sim.clearLog();
    const url = sim.urls('docs-1')[2] as string;
    const t0 = performance.timeOrigin + performance.now();
    await raw(url, { headers: { 'user-agent': 'ragfresh-test/1.0' } });
    await raw(`${url}?utm_source=x`, { method: 'HEAD' });
    await raw(`${sim.origin('docs-1')}/missing`);
    const log = sim.log();
    expect(log.map((e) => [e.method, e.status, e.host])).toEqual([
      ['GET', 200, 'docs-1'],
      ['HEAD', 200, 'docs-1'],
      ['GET', 404, 'docs-1'],
    ]);
    const [a, b] = log;
    expect(a?.headers['user-agent']).toBe('ragfresh-test/1.0');
    expect(a?.path).toBe(new URL(url).pathname);
    expect(b?.path).toBe(`${new URL(url).pathname}?utm_source=x`);
    expect(a?.time).toBeGreaterThanOrEqual(t0);
    expect((b?.time ?? 0) > (a?.time ?? 0)).toBe(true);
    expect(a?.endTime).toBeGreaterThanOrEqual(a?.time ?? Infinity);
    expect(a?.concurrent).toBe(1);
    expect(a?.bytes).toBeGreaterThan(1000);
    expect(sim.log('docs-0')).toEqual([]);
    sim.clearLog();
    expect(sim.log()).toEqual([]);
  });

  it('identifies connections, so keep-alive reuse is visible', async () => {
    sim.clearLog();
    const [a, b] = sim.urls('docs-0');
    await (await fetch(a as string)).arrayBuffer();
    await (await fetch(b as string)).arrayBuffer();
    await raw(a as string);
    await raw(b as string);
    const ids = sim.log().map((e) => e.connection);
    expect(ids[0]).toBeGreaterThan(0);
    expect(ids[1]).toBe(ids[0]);
    expect(new Set(ids).size).toBe(3);
  });

  it('counts concurrent requests per host', async () => {
    sim.clearLog();
    const url = sim.urls('docs-2')[0] as string;
    sim.mutate(url, 'slow', { headerDelayMs: 100 });
    await Promise.all([raw(url), raw(url), raw(url)]);
    sim.mutate(url, 'restore');
    expect(Math.max(...sim.log().map((e) => e.concurrent))).toBe(3);
  });
});
