import { DocumentLedger, documentId } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';
import { EngineContext, takeInventory } from './internals.js';

describe('inventory', () => {
  let h: Harness;
  let ctx: EngineContext;
  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 3 });
    ctx = new EngineContext({ state: h.state, fetcher: h.fetcher } as never);
  });
  afterAll(() => h.stop());

  it('collapses tracking-parameter variants into one document, with the identity computed once', async () => {
    const url = 'https://docs.example.org/guide';
    const inv = await takeInventory(
      ctx,
      source('s', [url, `${url}?utm_source=mail`, 'https://DOCS.example.org/guide#top']),
    );
    expect(inv.entries).toEqual([{ url, documentId: documentId('s', url), listed: true }]);
    expect(inv.complete).toBe(true);
  });

  it('re-checks known live documents discovery stopped listing; a bad URL makes coverage incomplete', async () => {
    const gone = 'https://docs.example.org/removed';
    await h.state.putDocument({
      ...DocumentLedger.fresh(documentId('k', gone), 'k', gone),
      currentVersionId: 'v1',
    });
    const inv = await takeInventory(ctx, source('k', ['https://docs.example.org/a', 'ftp://x']));
    expect(inv.entries.map((e) => [e.url, e.listed])).toEqual([
      ['https://docs.example.org/a', true],
      [gone, false],
    ]);
    expect(inv.complete).toBe(false);
    expect(inv.problems[0]).toMatch(/^bad-url: ftp:\/\/x/);
  });

  it('a sitemap that cannot be read makes coverage incomplete (nothing is deleted from a partial list)', async () => {
    const origin = h.sim.origin(h.sim.hosts()[0]!);
    const inv = await takeInventory(
      ctx,
      source('m', [], { sitemaps: [`${origin}/sitemap.xml`, `${origin}/no-such-sitemap.xml`] }),
    );
    expect(inv.entries.length).toBe(h.sim.urls().length);
    expect(inv.complete).toBe(false);
    expect(inv.problems.some((p) => p.startsWith('sitemap-unreadable'))).toBe(true);
  });

  it('asks for sitemaps and llms.txt conditionally: a second inventory reads them from 304s and counts them', async () => {
    const origin = h.sim.origin(h.sim.hosts()[0]!);
    const src = source('c', [], {
      sitemaps: [`${origin}/sitemap.xml`],
      llmsTxt: [`${origin}/llms.txt`],
    });
    const first = await takeInventory(ctx, src);
    h.sim.clearLog();
    const second = await takeInventory(ctx, src);
    const listings = h.sim.log().filter((e) => !e.url.endsWith('/robots.txt'));
    expect(listings.length).toBeGreaterThan(1);
    expect(listings.map((e) => e.status)).toEqual(listings.map(() => 304));
    expect(second.listingsNotModified).toBe(listings.length);
    expect(second.entries.map((e) => e.url)).toEqual(first.entries.map((e) => e.url));
    expect(second.complete).toBe(true);
  });
});
