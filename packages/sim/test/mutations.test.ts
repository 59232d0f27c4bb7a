import { runInNewContext } from 'node:vm';
import { createGunzip, gunzipSync } from 'node:zlib';
import { isRagfreshError } from '@ragfresh/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type SimWeb, startSimWeb } from '../src/index.js';
import { raw } from './raw.js';

let sim: SimWeb;
let url: string;
beforeAll(async () => {
  sim = await startSimWeb({ seed: 11, hosts: 2, pagesPerHost: 10 });
});
afterAll(async () => {
  await sim.stop();
});
beforeEach(() => {
  sim.reset();
  url = sim.urls('docs-0')[3] as string;
});

const body = async (u: string) => (await raw(u)).body.toString('utf8');
const withoutFooter = (html: string) => html.replace(/<footer[\s\S]*<\/footer>/, '');

describe('content mutations', () => {
  it('edit changes one section: new phrase, new ETag, later Last-Modified, same elsewhere', async () => {
    const before = sim.pageFacts(url);
    const first = await raw(url);
    sim.mutate(url, 'edit', { section: 1, text: 'Added in the spring release.' });
    const after = sim.pageFacts(url);
    expect(after.revision).toBe(1);
    expect(after.phrase).toBe(before.phrase);
    expect(after.sections[0]?.phrase).toBe(before.sections[0]?.phrase);
    expect(after.sections[1]?.phrase).not.toBe(before.sections[1]?.phrase);
    expect(Date.parse(after.lastModified)).toBeGreaterThan(Date.parse(before.lastModified));
    const second = await raw(url, { headers: { 'if-none-match': first.headers.etag as string } });
    expect(second.status).toBe(200);
    expect(second.headers.etag).not.toBe(first.headers.etag);
    const html = second.body.toString();
    expect(html).toContain(after.sections[1]?.phrase);
    expect(html).not.toContain(before.sections[1]?.phrase);
    expect(html).toContain('Added in the spring release.');
    expect(await body(sim.markdownUrl(url))).toContain(after.sections[1]?.phrase);
    const sitemap =
      (await body(`${sim.origin('docs-0')}/sitemaps/pages-1.xml`)) +
      gunzipSync((await raw(`${sim.origin('docs-0')}/sitemaps/pages-2.xml.gz`)).body).toString();
    expect(sitemap).toContain(`<loc>${url}</loc>\n    <lastmod>${after.lastModified}</lastmod>`);
    const feed = await body(`${sim.origin('docs-0')}/feed.xml`);
    expect(/<entry>\s*<title>[^<]*<\/title>\s*<link href="([^"]+)"/.exec(feed)?.[1]).toBe(url);
    // Same seed, same edits => same bytes: edits are deterministic too.
    sim.mutate(url, 'restore', { content: true });
    expect(sim.pageFacts(url).sections.map((s) => s.phrase)).toEqual(
      before.sections.map((s) => s.phrase),
    );
    sim.mutate(url, 'edit', { section: 1, text: 'Added in the spring release.' });
    expect(sim.pageFacts(url).sections[1]?.phrase).not.toBe(after.sections[1]?.phrase); // revision 2 now
  });

  it('shrink removes sections', async () => {
    const before = sim.pageFacts(url);
    const full = await body(url);
    sim.mutate(url, 'shrink', { keepSections: 1 });
    const after = sim.pageFacts(url);
    expect(after.sections.filter((s) => s.level === 2)).toHaveLength(1);
    expect(after.sections.length).toBeLessThan(before.sections.length);
    const small = await body(url);
    expect(small.length).toBeLessThan(full.length);
    expect(small).not.toContain(before.sections.at(-1)?.phrase);
    sim.mutate(url, 'shrink', { keepSections: 0 });
    expect(sim.pageFacts(url).sections).toEqual([]);
    expect(await body(url)).toContain(before.phrase);
  });

  it('rejects content mutations on non-pages and unknown kinds with INVALID_ARGUMENT', () => {
    const origin = sim.origin('docs-0');
    const codeOf = (fn: () => void) => {
      try {
        fn();
      } catch (err) {
        return isRagfreshError(err) ? err.code : 'other';
      }
      return 'none';
    };
    expect(codeOf(() => sim.mutate(`${origin}/robots.txt`, 'edit'))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => sim.mutate(url, 'explode' as never))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => sim.mutate('http://example.com/', 'outage'))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => sim.mutate(url, 'edit', { section: 99 }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => sim.mutate(url, 'outage', { retryAfter: -1 }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => sim.mutate(url, 'slow', { chunkSize: 0 }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => sim.mutate(url, 'outage', { times: 0 }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => sim.mutateHost('docs-9', 'outage'))).toBe('INVALID_ARGUMENT');
  });
});

describe('deletions', () => {
  for (const [kind, status] of [
    ['delete404', 404],
    ['delete410', 410],
  ] as const) {
    it(`${kind} answers ${status}, drops the page from sitemaps and llms.txt, restore brings it back`, async () => {
      sim.mutate(url, kind);
      expect((await raw(url)).status).toBe(status);
      expect((await raw(sim.markdownUrl(url))).status).toBe(status);
      expect(await body(`${sim.origin('docs-0')}/sitemaps/pages-1.xml`)).not.toContain(
        `<loc>${url}</loc>`,
      );
      expect(await body(`${sim.origin('docs-0')}/llms.txt`)).not.toContain(sim.markdownUrl(url));
      sim.mutate(url, 'restore');
      expect((await raw(url)).status).toBe(200);
      expect(await body(`${sim.origin('docs-0')}/sitemaps/pages-1.xml`)).toContain(
        `<loc>${url}</loc>`,
      );
    });
  }
});

describe('faults', () => {
  it('outage: 503 with Retry-After, for `times` responses', async () => {
    sim.mutate(url, 'outage', { times: 2 });
    const a = await raw(url);
    expect(a.status).toBe(503);
    expect(a.headers['retry-after']).toBe('120');
    expect((await raw(url)).status).toBe(503);
    expect((await raw(url)).status).toBe(200);
    sim.mutate(url, 'outage', { retryAfter: 7 });
    expect((await raw(url)).headers['retry-after']).toBe('7');
  });

  it('rateLimit: 429 with Retry-After', async () => {
    sim.mutate(url, 'rateLimit', { retryAfter: 3 });
    const res = await raw(url);
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('3');
  });

  it('consentWall: 200 with only a consent wall', async () => {
    const facts = sim.pageFacts(url);
    sim.mutate(url, 'consentWall');
    const res = await raw(url);
    expect(res.status).toBe(200);
    const html = res.body.toString();
    expect(html).toContain('Before you continue');
    expect(html).toContain('Accept all');
    expect(html).not.toContain(facts.phrase);
  });

  it('challenge: 200 "Just a moment..." page, status configurable', async () => {
    sim.mutate(url, 'challenge');
    const res = await raw(url);
    expect(res.status).toBe(200);
    expect(res.headers['cf-mitigated']).toBe('challenge');
    expect(res.body.toString()).toContain('<title>Just a moment...</title>');
    sim.mutate(url, 'challenge', { status: 403 });
    expect((await raw(url)).status).toBe(403);
  });

  it('loginRedirect: 302 to /login, which serves a login form', async () => {
    sim.mutate(url, 'loginRedirect');
    const res = await raw(url);
    expect(res.status).toBe(302);
    const location = res.headers.location as string;
    expect(location).toBe(
      `${sim.origin('docs-0')}/login?next=${encodeURIComponent(new URL(url).pathname)}`,
    );
    const login = await fetch(url);
    expect(login.url).toBe(location);
    expect(await login.text()).toContain('type="password"');
  });

  it('offHostRedirect: 301 to another origin', async () => {
    sim.mutate(url, 'offHostRedirect');
    const res = await raw(url);
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe(`${sim.origin('docs-1')}/`);
    sim.mutate(url, 'offHostRedirect', { location: 'https://elsewhere.example/' });
    expect((await raw(url)).headers.location).toBe('https://elsewhere.example/');
    const single = await startSimWeb({ seed: 11, hosts: 1, pagesPerHost: 2 });
    try {
      const only = single.urls()[1] as string;
      single.mutate(only, 'offHostRedirect');
      expect((await raw(only)).headers.location).toBe(
        `http://moved.invalid${new URL(only).pathname}`,
      );
    } finally {
      await single.stop();
    }
  });

  it('soft404: 200 saying the page is not found', async () => {
    sim.mutate(url, 'soft404');
    const res = await raw(url);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toContain('<h1>Page not found</h1>');
  });

  it('appShell: empty root plus a bundle that renders the article client-side (or not)', async () => {
    const facts = sim.pageFacts(url);
    sim.mutate(url, 'appShell');
    const html = await body(url);
    expect(html).toContain('<div id="root"></div>');
    expect(html).not.toContain(facts.phrase);
    const src = /<script defer src="([^"]+)"/.exec(html)?.[1]?.replaceAll('&amp;', '&') as string;
    const js = await body(new URL(src, url).href);
    expect(js).toContain("getElementById('root')");
    expect(js).toContain(facts.phrase);
    // Run the bundle against a minimal DOM: it must fill #root with the article.
    const root = { innerHTML: '' };
    const document = {
      readyState: 'complete',
      title: '',
      getElementById: (id: string) => (id === 'root' ? root : null),
    };
    runInNewContext(js, { document });
    expect(root.innerHTML).toContain(facts.phrase);
    expect(root.innerHTML).toContain('<h2');
    expect(document.title).toContain(facts.title);
    sim.mutate(url, 'appShell', { clientRender: false });
    const src2 = /<script defer src="([^"]+)"/
      .exec(await body(url))?.[1]
      ?.replaceAll('&amp;', '&') as string;
    expect(await body(new URL(src2, url).href)).not.toContain(facts.phrase);
  });

  it('timestampChurn: new ETag every response, same content and Last-Modified', async () => {
    const a = await raw(url);
    sim.mutate(url, 'timestampChurn');
    const b = await raw(url);
    const c = await raw(url, { headers: { 'if-none-match': b.headers.etag as string } });
    expect(c.status).toBe(200);
    expect(new Set([a.headers.etag, b.headers.etag, c.headers.etag]).size).toBe(3);
    expect(withoutFooter(b.body.toString())).toBe(withoutFooter(a.body.toString()));
    expect(withoutFooter(c.body.toString())).toBe(withoutFooter(a.body.toString()));
    expect(c.headers['last-modified']).toBe(a.headers['last-modified']);
  });

  it('slow: delays headers and trickles the body', async () => {
    sim.clearLog();
    sim.mutate(url, 'slow', { headerDelayMs: 80, chunkDelayMs: 5, chunkSize: 2048 });
    const res = await raw(url);
    expect(res.status).toBe(200);
    const entry = sim.log()[0];
    const chunks = Math.ceil(res.body.length / 2048);
    expect((entry?.endTime ?? 0) - (entry?.time ?? 0)).toBeGreaterThanOrEqual(
      80 + (chunks - 1) * 5 - 2,
    );
  });

  it('slow: survives a client that gives up mid-body', async () => {
    sim.clearLog();
    sim.mutate(url, 'slow', { chunkDelayMs: 50, chunkSize: 512 });
    const ac = new AbortController();
    const res = await fetch(url, { signal: ac.signal, headers: { 'accept-encoding': 'identity' } });
    expect(res.status).toBe(200);
    ac.abort();
    await new Promise((r) => setTimeout(r, 120));
    const [entry] = sim.log();
    expect(entry?.endTime).toBeDefined();
    expect(entry?.bytes).toBeLessThan(Number(res.headers.get('content-length')));
    sim.mutate(url, 'restore');
    expect((await raw(url)).status).toBe(200);
  });

  it('wrongCharset: Latin-1 header over a UTF-8 body, or a charset only in <meta>', async () => {
    sim.mutate(url, 'wrongCharset');
    const res = await raw(url);
    expect(res.headers['content-type']).toBe('text/html; charset=ISO-8859-1');
    const html = res.body.toString('utf8');
    expect(html).toContain('<meta charset="utf-8">');
    expect(html).toMatch(/[—©]/);
    expect(Buffer.from(html, 'utf8').equals(res.body)).toBe(true);
    sim.mutate(url, 'wrongCharset', { charset: 'meta-only' });
    expect((await raw(url)).headers['content-type']).toBe('text/html');
  });

  it('wrongCharset latin1: a body really encoded as ISO-8859-1, declared in header and/or meta', async () => {
    const utf8 = await raw(url);
    sim.mutate(url, 'wrongCharset', { charset: 'latin1' });
    const res = await raw(url);
    expect(res.headers['content-type']).toBe('text/html; charset=ISO-8859-1');
    expect(res.headers.etag).not.toBe(utf8.headers.etag);
    const html = res.body.toString('latin1');
    expect(html).toContain('<meta charset="iso-8859-1">');
    expect(html).toContain('© ');
    expect(res.body.includes(Buffer.from('© ', 'latin1'))).toBe(true);
    expect(res.body.includes(Buffer.from('©', 'utf8'))).toBe(false);
    expect(html).toContain(sim.pageFacts(url).phrase);
    const cond = await raw(url, { headers: { 'if-none-match': res.headers.etag as string } });
    expect(cond.status).toBe(304);
    sim.mutate(url, 'wrongCharset', { charset: 'latin1-meta-only' });
    const meta = await raw(url);
    expect(meta.headers['content-type']).toBe('text/html');
    expect(meta.body.equals(res.body)).toBe(true);
    expect(() => sim.mutate(url, 'wrongCharset', { charset: 'utf-16' as never })).toThrowError(
      /charset must be one of/,
    );
  });

  it('gzipBomb: a small gzip body that inflates to the requested size', async () => {
    sim.mutate(url, 'gzipBomb', { inflatedBytes: 16 * 1024 * 1024 });
    const res = await raw(url, { headers: { 'accept-encoding': 'identity' } });
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.body.length).toBeLessThan(64 * 1024);
    let inflated = 0;
    await new Promise<void>((resolve, reject) => {
      const gunzip = createGunzip();
      gunzip.on('data', (c: Buffer) => {
        inflated += c.length;
      });
      gunzip.on('end', resolve);
      gunzip.on('error', reject);
      gunzip.end(res.body);
    });
    expect(inflated).toBe(16 * 1024 * 1024);
  });

  it('restore ends faults and modifiers but keeps edits unless {content: true}', async () => {
    const original = await raw(url);
    sim.mutate(url, 'edit');
    sim.mutate(url, 'outage');
    sim.mutate(url, 'wrongCharset');
    sim.mutate(url, 'restore');
    const restored = await raw(url);
    expect(restored.status).toBe(200);
    expect(restored.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(restored.headers.etag).not.toBe(original.headers.etag);
    sim.mutate(url, 'restore', { content: true });
    const back = await raw(url);
    expect(withoutFooter(back.body.toString())).toBe(withoutFooter(original.body.toString()));
  });

  it('faults on robots.txt and host-wide faults', async () => {
    const origin = sim.origin('docs-0');
    sim.mutate(`${origin}/robots.txt`, 'outage');
    expect((await raw(`${origin}/robots.txt`)).status).toBe(503);
    expect((await raw(url)).status).toBe(200);
    sim.mutate(`${origin}/robots.txt`, 'restore');
    sim.mutateHost('docs-0', 'rateLimit');
    expect((await raw(`${origin}/robots.txt`)).status).toBe(429);
    expect((await raw(url)).status).toBe(429);
    expect((await raw(sim.urls('docs-1')[0] as string)).status).toBe(200);
    sim.mutateHost('docs-0', 'restore');
    expect((await raw(url)).status).toBe(200);
  });
});

describe('schedule', () => {
  it('applies mutations at logical ticks, deterministically', async () => {
    const other = sim.urls('docs-1')[2] as string;
    sim.schedule([
      { url, kind: 'edit', atTick: 1 },
      { url: other, kind: 'delete410', atTick: 2 },
      { url: other, kind: 'restore', atTick: 3 },
    ]);
    const v0 = sim.pageFacts(url).revision;
    expect(sim.advance()).toBe(1);
    expect(sim.pageFacts(url).revision).toBe(v0 + 1);
    expect((await raw(other)).status).toBe(200);
    sim.advance();
    expect((await raw(other)).status).toBe(410);
    sim.advance();
    expect((await raw(other)).status).toBe(200);
    expect(sim.tick()).toBe(3);
    expect(sim.now().getTime()).toBeGreaterThan(Date.parse(sim.pageFacts(url).lastModified));
  });

  it('applies mutations after N requests to a path', async () => {
    sim.schedule([
      { url, kind: 'outage', afterRequests: 2, opts: { times: 1 } },
      { url, kind: 'edit', afterRequests: 4 },
    ]);
    const statuses: number[] = [];
    const etags: unknown[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await raw(`${url}?utm_campaign=${i}`);
      statuses.push(res.status);
      etags.push(res.headers.etag);
    }
    expect(statuses).toEqual([200, 200, 503, 200, 200, 200]);
    expect(etags[3]).toBe(etags[0]);
    expect(etags[4]).not.toBe(etags[0]);
  });

  it('refuses a step without exactly one trigger', () => {
    expect(() => sim.schedule([{ url, kind: 'edit' }])).toThrowError(
      /exactly one of atTick or afterRequests/,
    );
  });
});
