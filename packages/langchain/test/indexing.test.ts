import { _HashedDocument, index } from '@langchain/core/indexing';
import { CountingEmbeddings, InMemoryStateStore } from '@ragfresh/core';
import type { Fetcher } from '@ragfresh/fetch';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RagfreshLoader, VOLATILE_KEY } from '../src/index.js';
import { IdVectorStore, MemoryRecordManager, simFetcher } from './helpers.js';

let sim: SimWeb;
let fetcher: Fetcher;

beforeAll(async () => {
  sim = await startSimWeb({ seed: 8, hosts: 1, pagesPerHost: 6 });
  fetcher = simFetcher();
});
afterAll(async () => {
  await fetcher.close();
  await sim.stop();
});

const HOUR = 3_600_000;

/** The app of LangChain's indexing guide, on RagfreshLoader, with a clock the test moves. */
function app(cleanup: 'incremental' | 'full', urls: readonly string[]) {
  let now = Date.parse('2030-01-01T00:00:00Z');
  const loader = new RagfreshLoader({
    fetcher,
    sourceId: 'docs',
    urls,
    state: new InMemoryStateStore(),
    deletion: { goneChecks: 2, minGoneAgeMs: HOUR, autoApprove: true },
    now: () => new Date(now),
  });
  const embeddings = new CountingEmbeddings();
  const vectorStore = new IdVectorStore(embeddings, {});
  const recordManager = new MemoryRecordManager();
  const run = async () => {
    embeddings.texts = 0;
    sim.clearLog();
    const result = await index({
      docsSource: loader,
      recordManager,
      vectorStore,
      options: { cleanup, sourceIdKey: 'source' },
    });
    const removed =
      cleanup === 'incremental'
        ? await loader.deleteConfirmedGone({ recordManager, vectorStore })
        : 0;
    return { ...result, embedded: embeddings.texts, removed, report: loader.lastReport! };
  };
  const chunksOf = (url: string) =>
    [...vectorStore.rows.values()].filter((r) => r.doc.metadata.url === url).length;
  return { loader, vectorStore, run, chunksOf, advance: (ms: number) => (now += ms) };
}

describe.each(['incremental', 'full'] as const)("index() with cleanup '%s'", (cleanup) => {
  it('cold, unchanged (all 304, nothing embedded), one edit, 503 + 304 (nothing deleted), recovered, 410 gone only when confirmed', async () => {
    const urls = sim.urls('docs-0');
    sim.mutate(urls[5]!, 'restore', { content: true });
    const a = app(cleanup, urls);

    const cold = await a.run();
    expect(cold.report.counts.changed).toBe(urls.length);
    expect(cold.embedded).toBe(cold.numAdded);
    const total = a.vectorStore.rows.size;

    const unchanged = await a.run();
    expect(unchanged).toMatchObject({ numAdded: 0, numDeleted: 0, embedded: 0, numSkipped: total });
    expect(unchanged.report.counts['not-modified']).toBe(urls.length);
    expect(unchanged.report.conditionalRequests).toBe(urls.length);
    expect(sim.log().map((e) => e.status)).toEqual(urls.map(() => 304));

    const edited = urls[1]!;
    const before = a.chunksOf(edited);
    sim.mutate(edited, 'edit', { section: 0 });
    const edit = await a.run();
    expect(edit.report.counts.changed).toBe(1);
    expect(edit.embedded).toBe(a.chunksOf(edited));
    expect(edit.numAdded).toBe(a.chunksOf(edited));
    expect(edit.numDeleted).toBe(before);
    const afterEdit = a.vectorStore.rows.size;

    sim.mutate(urls[2]!, 'outage', { retryAfter: null });
    const failing = await a.run();
    expect(failing.report.pages[2]).toMatchObject({ outcome: 'degraded', emitted: 'copy' });
    expect(failing.report.counts['not-modified']).toBe(urls.length - 1);
    expect(failing).toMatchObject({ numAdded: 0, numDeleted: 0, embedded: 0, removed: 0 });
    expect(a.vectorStore.rows.size).toBe(afterEdit);

    sim.mutate(urls[2]!, 'restore');
    const recovered = await a.run();
    expect(recovered.report.counts['not-modified']).toBe(urls.length);
    expect(recovered).toMatchObject({ numAdded: 0, numDeleted: 0, embedded: 0 });

    const gone = urls[5]!;
    const goneChunks = a.chunksOf(gone);
    sim.mutate(gone, 'delete410');
    const first410 = await a.run();
    expect(first410.report.pages[5]).toMatchObject({
      outcome: 'gone-unconfirmed',
      emitted: 'copy',
    });
    expect(first410).toMatchObject({ numDeleted: 0, removed: 0 });
    expect(a.chunksOf(gone)).toBe(goneChunks);
    // Two observations, but not yet an hour apart: still not confirmed.
    const early410 = await a.run();
    expect(early410.report.pages[5]!.outcome).toBe('gone-unconfirmed');
    expect(a.chunksOf(gone)).toBe(goneChunks);
    a.advance(2 * HOUR);
    const confirmed = await a.run();
    expect(confirmed.report.pages[5]).toMatchObject({ outcome: 'gone-confirmed', emitted: 'none' });
    expect(confirmed.numDeleted + confirmed.removed).toBe(goneChunks);
    expect(a.chunksOf(gone)).toBe(0);
    expect(a.vectorStore.rows.size).toBe(afterEdit - goneChunks);
    sim.mutate(gone, 'restore');
  });
});

describe('RagfreshLoader metadata', () => {
  it('keeps volatile values out of the hash index() computes (default), nested, or flat', async () => {
    const url = sim.urls('docs-0')[3]!;
    const make = (volatileMetadata: boolean | 'nested') =>
      new RagfreshLoader({
        fetcher,
        sourceId: 'docs',
        urls: [url],
        volatileMetadata,
        state: new InMemoryStateStore(),
      });
    const hashes = (docs: Awaited<ReturnType<RagfreshLoader['load']>>) =>
      docs.map((x) => _HashedDocument.fromDocument(x).hash_);
    const flat = make(false);
    const [a1, a2] = [await flat.load(), await flat.load()];
    expect(flat.lastReport!.counts['not-modified']).toBe(1);
    expect(a1[0]!.metadata.retrieved_at).toBeUndefined();
    expect(hashes(a2)).toEqual(hashes(a1));

    const nested = make('nested');
    const [n1, n2] = [await nested.load(), await nested.load()];
    expect(n1[0]!.metadata[VOLATILE_KEY]).toMatchObject({
      retrieved_at: expect.any(String),
      http_status: 200,
    });
    expect(hashes(n2)).toEqual(hashes(n1));

    const eager = make(true);
    const e1 = await eager.load();
    sim.mutate(url, 'timestampChurn');
    await new Promise((r) => setTimeout(r, 5));
    const e2 = await eager.load();
    expect(e1[0]!.metadata.retrieved_at).toEqual(expect.any(String));
    expect(hashes(e2)).not.toEqual(hashes(e1));
  });

  it('pages mode yields one Document per page; lazyLoad streams in source order', async () => {
    const urls = sim.urls('docs-0').slice(0, 4);
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls,
      mode: 'pages',
      concurrency: 2,
      state: new InMemoryStateStore(),
    });
    const seen: string[] = [];
    sim.clearLog();
    for await (const doc of loader.lazyLoad()) seen.push(doc.metadata.url as string);
    expect(seen).toEqual(urls);
    const inFlight = sim.log().map((e) => e.concurrent);
    expect(inFlight).toHaveLength(4);
    expect(Math.max(...inFlight)).toBeLessThanOrEqual(2);
  });

  it('a page never seen good yields nothing and is reported; the rest are yielded', async () => {
    const urls = sim.urls('docs-0').slice(0, 3);
    sim.mutate(urls[1]!, 'outage', { times: 1, retryAfter: null });
    sim.mutate(urls[2]!, 'consentWall', { times: 1 });
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls,
      mode: 'pages',
      state: new InMemoryStateStore(),
    });
    const docs = await loader.load();
    expect(docs.map((d) => d.metadata.url)).toEqual([urls[0]]);
    expect(loader.skipped.map((s) => s.url)).toEqual([urls[1], urls[2]]);
    expect(loader.skipped[0]!.reasons[0]).toMatch(/^server-error/);
    expect(loader.lastReport!.counts.degraded).toBe(2);
  });

  it('loads from a sitemap', async () => {
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      sitemaps: [`${sim.origin('docs-0')}/sitemap.xml`],
      mode: 'pages',
      state: new InMemoryStateStore(),
    });
    const docs = await loader.load();
    expect(new Set(docs.map((d) => d.metadata.url))).toEqual(new Set(sim.urls('docs-0')));
  });

  it('loads one document once whatever URL variants name it; a URL the identity policy refuses is skipped', async () => {
    const url = sim.urls('docs-0')[3]!;
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: [url, `${url}?utm_source=newsletter`, `${url}#install`],
      mode: 'pages',
      state: new InMemoryStateStore(),
    });
    const docs = await loader.load();
    expect(docs.map((d) => d.metadata.url)).toEqual([url]);
    const strict = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: [url, `${url}?utm_source=newsletter`],
      identity: { mode: 'strict' },
      mode: 'pages',
      state: new InMemoryStateStore(),
    });
    expect((await strict.load()).map((d) => d.metadata.url)).toEqual([url]);
    expect(strict.skipped).toEqual([
      { url: `${url}?utm_source=newsletter`, reasons: [expect.stringMatching(/^invalid-url: /)] },
    ]);
  });
});
