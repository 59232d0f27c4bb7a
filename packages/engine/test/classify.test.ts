import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { documentId, reasonLine } from '@ragfresh/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';
import { PERSISTENT_NOT_DOCUMENT_RUNS } from './internals.js';

/** A short API-docs page about one error code: the title names the status, the text explains it. */
const errorDoc = (title: string, topic: string) =>
  `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${title} | Acme API</title></head><body>
<nav class="sidebar"><a href="/docs/errors/">Errors</a> <a href="/docs/auth">Authentication</a></nav>
<main><article><h1>${title}</h1>
<p>The API answers ${topic}. The body is a JSON object with <code>code</code> and <code>message</code>; keep the <code>request_id</code> header when you write to support.</p>
<p>Check the identifier, the API version header and your key, then retry with exponential backoff starting at one second.</p>
</article></main></body></html>`;

/** The host's own not-found page (what a soft 404 and the probe answer look like). */
const notFoundPage = (path: string) =>
  `<!DOCTYPE html><html><head><title>Page not found | Acme</title></head><body>
<nav><a href="/">Acme</a></nav><main><h1>Page not found</h1>
<p>Sorry, we could not find the page you were looking for. It may have been moved or deleted.</p>
<p>Try the search, or go back to the <a href="/">home page</a>. (${path.length > 0 ? 'ref 7' : ''})</p></main></body></html>`;

interface Route {
  status?: number;
  headers?: Record<string, string>;
  body: string;
}

/** A tiny loopback site: fixed routes, and what unknown paths get (a real 404 or a 200 catch-all). */
class Site {
  readonly routes = new Map<string, Route>();
  unknown: 'real-404' | 'soft-404' = 'real-404';
  readonly requests: string[] = [];
  #server!: Server;
  origin = '';

  async start(): Promise<void> {
    this.#server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      this.requests.push(path);
      const route = this.routes.get(path) ?? {
        status: this.unknown === 'soft-404' ? 200 : 404,
        body: notFoundPage(path),
      };
      res.writeHead(route.status ?? 200, {
        'content-type': 'text/html; charset=utf-8',
        ...route.headers,
      });
      res.end(route.body);
    });
    await new Promise<void>((ok) => this.#server.listen(0, '127.0.0.1', ok));
    this.origin = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  url(path: string): string {
    return `${this.origin}${path}`;
  }

  stop(): Promise<void> {
    return new Promise((ok) => this.#server.close(() => ok()));
  }
}

describe('classify stage: status phrases need evidence', () => {
  let h: Harness;
  const site = new Site();
  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 1 });
    await site.start();
  });
  afterAll(async () => {
    await site.stop();
    await h.stop();
  });
  beforeEach(() => {
    site.routes.clear();
    site.requests.length = 0;
    site.unknown = 'real-404';
  });

  const published = async (sourceId: string, url: string) =>
    (await h.connector.listChunks(documentId(sourceId, url))).length;

  it('error-code docs pages on a host that answers unknown URLs 404 are indexed, labelled, one probe per folder', async () => {
    site.routes.set('/docs/errors/429', {
      body: errorDoc('429 Too Many Requests', 'when you send more than 100 requests a minute'),
    });
    site.routes.set('/docs/errors/404', {
      body: errorDoc('Error 404: Not Found', 'when the resource in the path does not exist'),
    });
    const urls = [site.url('/docs/errors/429'), site.url('/docs/errors/404')];
    const report = await h.engine([source('docs', urls)]).refresh({ all: true });
    const events = report.sources[0]!.events;
    for (const url of urls) {
      expect(await published('docs', url), url).toBeGreaterThan(0);
      const labels = events.find((e) => e.url === url && e.event === 'indexed-despite');
      expect(labels?.reasons.map(reasonLine)[0]).toMatch(/^unconfirmed: (rate_limited|soft_404): /);
    }
    const probes = site.requests.filter((p) => p.includes('ragfresh-probe-'));
    expect(probes).toHaveLength(1);
    expect(probes[0]).toMatch(/^\/docs\/errors\/ragfresh-probe-[0-9a-f]{12}$/);
    // Published and unchanged: the next run asks the host nothing more.
    site.requests.length = 0;
    await h.engine([source('docs', urls)]).refresh({ all: true });
    expect(site.requests.filter((p) => p.includes('ragfresh-probe-'))).toEqual([]);
  });

  it('a host that answers a URL that cannot exist with the same page: that page is not the document', async () => {
    site.unknown = 'soft-404';
    const url = site.url('/docs/moved-page');
    const report = await h.engine([source('soft', [url])]).refresh({ all: true });
    expect(await published('soft', url)).toBe(0);
    const event = report.sources[0]!.events.find((e) => e.url === url);
    expect(event?.event).toBe('not-the-document');
    expect(event?.reasons.map(reasonLine)[0]).toMatch(
      /^soft_404: not-found title\/h1 .*; the host answers \S+ragfresh-probe-\S+ \(a URL that cannot exist\) with this page \(\d+% of the words shared\)$/,
    );
  });

  it('a rate-limit page served 200 with Retry-After is not the document; without the header it is', async () => {
    const page = errorDoc('429 Too Many Requests', 'when you send more than 100 requests a minute');
    site.routes.set('/limited', { body: page, headers: { 'retry-after': '30' } });
    site.routes.set('/docs', {
      body: errorDoc('429 Too Many Requests', 'when a key sends more than its plan allows'),
    });
    const [limited, docs] = [site.url('/limited'), site.url('/docs')];
    const report = await h.engine([source('rl', [limited, docs])]).refresh({ all: true });
    expect(await published('rl', limited)).toBe(0);
    expect(await published('rl', docs)).toBeGreaterThan(0);
    expect(
      report.sources[0]!.events.find((e) => e.url === limited)?.reasons.map(reasonLine)[0],
    ).toMatch(/; the answer carries Retry-After: 30$/);
  });

  it('a published page that turns into a short not-found page keeps its version; a catch-all body at two URLs is caught', async () => {
    const long = `<html><head><title>Queues | Acme</title></head><body><main><h1>Queues</h1>${'<p>A queue holds jobs until a worker takes them; each job is retried on failure with backoff.</p>'.repeat(20)}</main></body></html>`;
    site.routes.set('/docs/queues', { body: long });
    const url = site.url('/docs/queues');
    const engine = h.engine([source('turn', [url, site.url('/a/x'), site.url('/b/y')])]);
    await engine.refresh({ all: true });
    const before = (await h.state.getDocument(documentId('turn', url)))!.currentVersionId;
    expect(before).toBeDefined();
    site.routes.set('/docs/queues', { body: notFoundPage('') });
    site.routes.set('/a/x', { body: notFoundPage('') });
    site.routes.set('/b/y', { body: notFoundPage('') });
    const report = await engine.refresh({ all: true });
    const r = await h.state.getDocument(documentId('turn', url));
    expect(r?.currentVersionId).toBe(before);
    expect(r?.status).toBe('degraded');
    expect(r?.statusReasons[0]).toMatch(
      /; the page had a published version of \d+ chars and now has \d+$/,
    );
    // The two never-published URLs serve one body: the second one seen is caught by it.
    const reasons = report.sources[0]!.events.flatMap((e) => e.reasons.map(reasonLine));
    expect(
      reasons.some((x) => /; the host served this same body for \d URLs in this run$/.test(x)),
    ).toBe(true);
  });

  it('classify.ignore indexes what the verdict would block, labelled; without it the page stays out', async () => {
    site.unknown = 'soft-404';
    const url = site.url('/kb/not-found-help');
    const blocked = await h.engine([source('noign', [url])]).refresh({ all: true });
    expect(await published('noign', url)).toBe(0);
    expect(blocked.sources[0]!.events.find((e) => e.url === url)?.event).toBe('not-the-document');
    const report = await h
      .engine([source('ign', [url], { classify: { ignore: ['soft_404'] } })])
      .refresh({ all: true });
    expect(await published('ign', url)).toBeGreaterThan(0);
    const label = report.sources[0]!.events.find((e) => e.event === 'indexed-despite');
    expect(label?.reasons.map(reasonLine)[0]).toMatch(/^ignored: by classify\.ignore: soft_404: /);
  });

  it(`a page judged not the document on ${PERSISTENT_NOT_DOCUMENT_RUNS} runs becomes a review item; accepting it indexes it until the content changes`, async () => {
    site.unknown = 'soft-404';
    const url = site.url('/guide/errors');
    const id = documentId('persist', url);
    const engine = h.engine([source('persist', [url])]);
    for (let run = 1; run < PERSISTENT_NOT_DOCUMENT_RUNS; run++)
      await engine.refresh({ all: true });
    expect(await h.state.getReviewItem(`persistent:${id}`)).toBeUndefined();
    await engine.refresh({ all: true });
    const item = await h.state.getReviewItem(`persistent:${id}`);
    expect(item).toMatchObject({
      kind: 'ingestion',
      reason: 'persistent-not-the-document',
      status: 'pending',
    });
    expect(item?.evidence[0]).toBe(
      `judged not the document on ${PERSISTENT_NOT_DOCUMENT_RUNS} runs in a row, content unchanged`,
    );
    expect(await published('persist', url)).toBe(0);
    // Another run with the same content asks nothing new.
    await engine.refresh({ all: true });
    expect((await h.state.getReviewItem(`persistent:${id}`))?.createdAt).toBe(item?.createdAt);

    const approval = await engine.approveMany([`persistent:${id}`], 'tester');
    expect(approval).toEqual({ approved: [`persistent:${id}`], blocked: [] });
    expect((await h.state.getDocument(id))?.currentVersionId).toBe(item?.versionId);
    expect(await published('persist', url)).toBeGreaterThan(0);
    // Unchanged content stays indexed.
    const again = await engine.refresh({ all: true });
    const events = again.sources[0]!.events.filter((e) => e.url === url);
    expect(events.map((e) => e.event)).toEqual(['unchanged']);
    expect((await h.state.getDocument(id))?.status).toBe('healthy');
    // A content change is judged afresh: not the document again, the accepted version kept.
    site.routes.set('/guide/errors', {
      body: notFoundPage('').replace('moved or deleted', 'moved, renamed or deleted'),
    });
    site.unknown = 'soft-404';
    const changed = await engine.refresh({ all: true });
    expect(changed.sources[0]!.events.find((e) => e.url === url)?.event).toBe('not-the-document');
    expect((await h.state.getDocument(id))?.currentVersionId).toBe(item?.versionId);
  });
  it('an accepted firm verdict (a password form beside a short docs text) stays indexed, labelled accepted', async () => {
    site.routes.set('/account/sign-in-help', {
      body: '<html><head><title>Signing in | Acme</title></head><body><main><h1>Signing in</h1><p>Use the e-mail address your workspace invited. Single sign-on users sign in from their identity provider instead.</p><form action="/session"><input type="password" name="p"></form></main></body></html>',
    });
    const url = site.url('/account/sign-in-help');
    const id = documentId('firm', url);
    const engine = h.engine([source('firm', [url])]);
    for (let run = 0; run < PERSISTENT_NOT_DOCUMENT_RUNS; run++)
      await engine.refresh({ all: true });
    expect((await h.state.getDocument(id))?.statusReasons[0]).toMatch(/^login_wall: /);
    expect(await engine.approve(`persistent:${id}`, 'tester')).toBe(true);
    expect(await published('firm', url)).toBeGreaterThan(0);
    const again = await engine.refresh({ all: true });
    const events = again.sources[0]!.events.filter((e) => e.url === url);
    expect(events.map((e) => e.event)).toEqual(['indexed-despite', 'unchanged']);
    expect(events[0]?.reasons.map(reasonLine)[0]).toMatch(/^accepted: by tester: login_wall: /);
  });
});
