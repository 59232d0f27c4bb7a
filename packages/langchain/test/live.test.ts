import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Document } from '@langchain/core/documents';
import { createMemoryConnector } from '@ragfresh/connector-memory';
import { documentId, FIELDS, HashingEmbeddings, InMemoryStateStore } from '@ragfresh/core';
import {
  type ClassifySettings,
  type ComposedEngine,
  composeEngine,
  type EngineSettings,
  resolveEngineSettings,
} from '@ragfresh/engine';
import type { PageLimits } from '@ragfresh/engine/pipeline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveRefresh, RagfreshRetriever, READER_FIELDS } from '../src/index.js';
import { NOT_FOUND_PAGE } from './helpers.js';

// Live refresh composed through the root (`composeEngine(…, 'live')`): a result's page is
// observed as a refresh of its source observes it — the same page limits and the same classify
// stage — so what a refresh refused, live refresh refuses with the same reason, and what a
// source's `classify.ignore` lets through, it reads. Real HTTP on loopback, the memory
// connector, in-memory state; the refresh's records are what live refresh revalidates.

/** Nested 60 elements deep: over a `pageLimits.maxDepth` of 40, under the default (256). */
const DEEP = `<!doctype html><html><head><title>Deep</title></head><body>${'<div>'.repeat(60)}<p>Deep text that a parser would happily read.</p>${'</div>'.repeat(60)}</body></html>`;

interface Site {
  readonly server: Server;
  readonly deep: string;
  /** Answers the host's not-found page with 200 (as does every other path). */
  readonly soft: string;
}

async function startSite(): Promise<Site> {
  const server = createServer((req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(req.url === '/docs/deep' ? DEEP : NOT_FOUND_PAGE);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, deep: `${origin}/docs/deep`, soft: `${origin}/docs/errors` };
}

const LIMITS: Partial<PageLimits> = { maxDepth: 40 };
const IGNORE_SOFT_404: ClassifySettings = { ignore: ['soft_404'] };

let site: Site;
let settings: EngineSettings;
let refresh: ComposedEngine;
const state = new InMemoryStateStore();
const embeddings = new HashingEmbeddings({ dimensions: 16 });

/** `docs` ignores soft 404s; `strict` lists the same soft 404 and takes `classify` from the caller. */
function settingsOf(options: {
  readonly pageLimits?: Partial<PageLimits>;
  readonly classify?: ClassifySettings;
}): EngineSettings {
  return resolveEngineSettings({
    sources: [
      {
        id: 'docs',
        urls: [site.deep, site.soft],
        everyMs: 60_000,
        identity: { mode: 'normalize' },
        classify: IGNORE_SOFT_404,
      },
      {
        id: 'strict',
        urls: [site.soft],
        everyMs: 60_000,
        identity: { mode: 'normalize' },
        ...(options.classify === undefined ? {} : { classify: options.classify }),
      },
    ],
    fetch: {
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      robots: false,
      minIntervalMs: 0,
      allowPrivateNetworks: true,
    },
    publish: { maxRetireShare: 1 },
    chunking: { maxTokens: 200 },
    ...(options.pageLimits === undefined ? {} : { pageLimits: options.pageLimits }),
  });
}

/** Runs `check` with an engine composed for the live role over the refresh's state. */
async function withLive(
  s: EngineSettings,
  check: (live: ComposedEngine) => Promise<void>,
): Promise<void> {
  const live = await composeEngine(s, { state, embeddings }, 'live');
  try {
    await check(live);
  } finally {
    await live.close();
  }
}

const idOf = (url: string, source = 'docs') => documentId(source, url, { mode: 'normalize' });

beforeAll(async () => {
  site = await startSite();
  settings = settingsOf({ pageLimits: LIMITS });
  refresh = await composeEngine(
    settings,
    { connector: createMemoryConnector(), state, embeddings },
    'refresh',
  );
  const report = await refresh.engine.refresh({ all: true });
  // The soft 404 is published by the source that ignores the verdict and refused by the
  // other; the deep page is refused.
  expect(report.totals.published).toBe(1);
  expect(report.totals.notTheDocument).toBe(2);
});

afterAll(async () => {
  await refresh?.close();
  await new Promise((r) => site.server.close(r));
});

describe('live refresh composed for the live role', () => {
  it('a page over the configured depth: live refresh keeps the stored copy, labelled with the reason the refresh recorded', async () => {
    const [reason] = (await state.getDocument(idOf(site.deep)))?.statusReasons ?? [];
    expect(reason).toMatch(/^page-too-deep: elements nest 6\d levels, over the 40-level limit/);
    const stored = new Document({
      pageContent: 'Deep text that a parser would happily read.',
      metadata: {
        [FIELDS.documentId]: idOf(site.deep),
        [FIELDS.url]: site.deep,
        [FIELDS.sourceId]: 'docs',
        // A page without an h1: its heading paths are rooted at the title.
        [FIELDS.headingPath]: JSON.stringify(['Deep']),
      },
    });
    const before = await state.getDocument(idOf(site.deep));
    await withLive(settings, async (engine) => {
      const [limited] = await liveRefresh([stored], { engine, objectiveMs: 0 });
      expect(limited!.pageContent).toBe(stored.pageContent);
      expect(limited!.metadata[READER_FIELDS.liveFetchFailed]).toBe(`not the document: ${reason}`);
    });
    // A reader: the record the refresh wrote is left as it was.
    expect(await state.getDocument(idOf(site.deep))).toEqual(before);
    // Control: the same settings under the default limits read the page live.
    await withLive(settingsOf({}), async (engine) => {
      const [open] = await liveRefresh([stored], { engine, objectiveMs: 0 });
      expect(open!.metadata[READER_FIELDS.liveFetchFailed]).toBeUndefined();
      expect(open!.metadata[READER_FIELDS.revalidatedAt]).toEqual(expect.any(String));
    });
  });

  it("a source's classify.ignore: live refresh refuses the soft 404 a refresh of the source refused, with its reason; with the override it reads it", async () => {
    const [reason] = (await state.getDocument(idOf(site.soft, 'strict')))?.statusReasons ?? [];
    expect(reason).toMatch(/^soft_404: /);
    // The chunk the other source published, as the strict source's result.
    const [published] = await RagfreshRetriever.fromConnector({
      connector: refresh.connector,
      embeddings,
      k: 1,
      sourceId: 'docs',
    }).invoke('Sorry, we could not find the page you were looking for.');
    expect(published!.metadata[FIELDS.url]).toBe(site.soft);
    const stored = new Document({
      pageContent: published!.pageContent,
      metadata: {
        ...published!.metadata,
        [FIELDS.documentId]: idOf(site.soft, 'strict'),
        [FIELDS.sourceId]: 'strict',
      },
    });
    await withLive(settings, async (engine) => {
      const [refused] = await liveRefresh([stored], { engine, objectiveMs: 0 });
      expect(refused!.pageContent).toBe(stored.pageContent);
      expect(refused!.metadata[READER_FIELDS.liveFetchFailed]).toBe(`not the document: ${reason}`);
    });
    // Control: the strict source with the override reads the page live (the stored section).
    await withLive(
      settingsOf({ pageLimits: LIMITS, classify: IGNORE_SOFT_404 }),
      async (engine) => {
        const [read] = await liveRefresh([stored], { engine, objectiveMs: 0 });
        expect(read!.metadata[READER_FIELDS.liveFetchFailed]).toBeUndefined();
        expect(read!.metadata[READER_FIELDS.revalidatedAt]).toEqual(expect.any(String));
      },
    );
  });

  it("the retriever's liveFetch: a published result is revalidated through the live engine", async () => {
    await withLive(settings, async (engine) => {
      const [doc] = await RagfreshRetriever.fromConnector({
        connector: refresh.connector,
        embeddings,
        state,
        k: 1,
        liveFetch: { engine, objectiveMs: 0 },
      }).invoke('Sorry, we could not find the page you were looking for.');
      expect(doc!.metadata[FIELDS.url]).toBe(site.soft);
      expect(doc!.metadata[READER_FIELDS.liveFetchFailed]).toBeUndefined();
      expect(doc!.metadata[READER_FIELDS.revalidatedAt]).toEqual(expect.any(String));
    });
  });

  it('a result of a source the settings do not list is labelled, and the retriever takes only a live-role engine', async () => {
    const other = new Document({
      pageContent: 'text',
      metadata: {
        [FIELDS.documentId]: 'blog:x',
        [FIELDS.url]: site.soft,
        [FIELDS.sourceId]: 'blog',
      },
    });
    await withLive(settings, async (engine) => {
      const [labelled] = await liveRefresh([other], { engine, objectiveMs: 0 });
      expect(labelled!.metadata[READER_FIELDS.liveFetchFailed]).toBe(
        `no source "blog" in the live engine's settings (sources: docs, strict)`,
      );
    });
    expect(() =>
      RagfreshRetriever.fromConnector({
        connector: refresh.connector,
        embeddings,
        liveFetch: { engine: refresh, objectiveMs: 0 },
      }),
    ).toThrow(
      /^\[ragfresh\] \[langchain\] liveFetch takes an engine composed for the live role, got the refresh role; compose it with composeEngine\(settings, \{ state, embeddings \}, 'live'\)\.$/,
    );
  });
});
