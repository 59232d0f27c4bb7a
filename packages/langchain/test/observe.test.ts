import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMemoryConnector } from '@ragfresh/connector-memory';
import { documentId, HashingEmbeddings, InMemoryStateStore, type StateStore } from '@ragfresh/core';
import { composeEngine, type EngineSettings, resolveEngineSettings } from '@ragfresh/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChromeSite, PROMO, startChromeSite } from '../../engine/bench/chrome-site.ts';
import { RagfreshLoader } from '../src/index.js';
import { simFetcher } from './helpers.js';

// The loader observes pages through the engine's page step (`observePage`): the same page
// limits and the same learned boilerplate a refresh applies, so a page gives the refresh's
// version on every path (live refresh: live.test.ts). Real HTTP on loopback, the memory
// connector, in-memory state.

const PAGE_LIMITS = { maxDepth: 40 };
const MAX_TOKENS = 200;

/** One page nested 60 elements deep: under the default limits (256) it parses, under 40 it does not. */
async function deepPage(): Promise<{ server: Server; url: string }> {
  const body = `${'<div>'.repeat(60)}<p>Deep text that a parser would happily read.</p>${'</div>'.repeat(60)}`;
  const server = createServer((_req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(`<!doctype html><html><head><title>Deep</title></head><body>${body}</body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/deep` };
}

describe('the loader goes through the engine page step', () => {
  let site: ChromeSite;
  let deep: Awaited<ReturnType<typeof deepPage>>;
  let urls: string[];
  let state: StateStore;
  let settings: EngineSettings;
  /** What the refresh left: current version per chrome page, status reasons of the deep page. */
  const refreshed = new Map<string, string | undefined>();
  let deepReasons: readonly string[] = [];
  /** Counter increments the refresh made, by name and labels. */
  const counted: { name: string; labels: Record<string, string> }[] = [];

  beforeAll(async () => {
    site = await startChromeSite({ pages: 12 });
    deep = await deepPage();
    urls = [...site.urls, deep.url];
    settings = resolveEngineSettings({
      sources: [
        { id: 'docs', urls, everyMs: 60_000, identity: { mode: 'normalize' }, contract: {} },
      ],
      fetch: {
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        robots: false,
        minIntervalMs: 0,
        allowPrivateNetworks: true,
      },
      publish: { maxRetireShare: 1 },
      chunking: { maxTokens: MAX_TOKENS },
      boilerplate: { warmUpPages: 6 },
      pageLimits: PAGE_LIMITS,
    });
    state = new InMemoryStateStore();
    const engine = await composeEngine(
      settings,
      {
        connector: createMemoryConnector(),
        // The in-memory store keeps its data after close: the loader reads it next.
        state,
        embeddings: new HashingEmbeddings({ dimensions: 16 }),
        metrics: {
          inc: (name, _help, labels = {}) => counted.push({ name, labels: { ...labels } }),
          set: () => {},
        },
      },
      'refresh',
    );
    try {
      const report = await engine.engine.refresh({ all: true });
      expect(report.totals.published).toBe(site.urls.length);
      expect(report.totals.notTheDocument).toBe(1);
    } finally {
      await engine.close();
    }
    for (const u of site.urls) {
      const id = documentId('docs', u, { mode: 'normalize' });
      refreshed.set(id, (await state.getDocument(id))?.currentVersionId);
    }
    const deepRecord = await state.getDocument(documentId('docs', deep.url, { mode: 'normalize' }));
    deepReasons = deepRecord?.statusReasons ?? [];
  });

  afterAll(async () => {
    await site.stop();
    await new Promise((r) => deep.server.close(r));
  });

  const loader = (s: StateStore, pageLimits?: typeof PAGE_LIMITS) =>
    new RagfreshLoader({
      fetcher: simFetcher(),
      sourceId: 'docs',
      urls,
      state: s,
      maxTokens: MAX_TOKENS,
      ...(pageLimits === undefined ? {} : { pageLimits }),
    });

  it('a loader on the refresh state cuts every page to the version the refresh published, and refuses the deep page with the same reason', async () => {
    expect(deepReasons).toHaveLength(1);
    expect(deepReasons[0]).toMatch(
      /^page-too-deep: elements nest 6\d levels, over the 40-level limit/,
    );
    const l = loader(state, PAGE_LIMITS);
    const versions = new Map<string, string>();
    for await (const page of l.pages()) versions.set(page.documentId, page.prepared.versionId);
    for (const [id, version] of refreshed) {
      expect(version).toBeDefined();
      expect(versions.get(id), id).toBe(version);
    }
    const reports = l.lastReport!.pages;
    expect(reports.filter((p) => p.outcome === 'unchanged')).toHaveLength(site.urls.length);
    const deepReport = reports.find((p) => p.url === deep.url)!;
    expect(deepReport.outcome).toBe('degraded');
    expect(deepReport.reasons).toEqual(deepReasons);
    for await (const page of l.pages()) expect(page.prepared.text, page.url).not.toContain(PROMO);
  });

  it('controls: without the learned models every version differs and keeps the chrome; under the default limits the deep page parses', async () => {
    const fresh = loader(new InMemoryStateStore());
    let differs = 0;
    for await (const page of fresh.pages()) {
      if (page.url === deep.url) continue;
      if (page.prepared.versionId !== refreshed.get(page.documentId)) differs++;
      expect(page.prepared.text).toContain(PROMO);
    }
    expect(differs).toBe(site.urls.length);
    expect(fresh.lastReport!.pages.find((p) => p.url === deep.url)?.outcome).toBe('changed');
  });
});
