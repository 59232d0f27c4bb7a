import { _HashedDocument, index } from '@langchain/core/indexing';
import type { Fetcher } from '@ragfresh/fetch';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RagfreshLoader, VOLATILE_KEY } from '../src/index.js';
import { CountingEmbeddings, IdVectorStore, MemoryRecordManager, simFetcher } from './helpers.js';

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

describe('index() with RagfreshLoader', () => {
  it('writes nothing on an unchanged second run; after one edit re-embeds only that page and removes its stale chunks', async () => {
    const urls = sim.urls('docs-0');
    const loader = new RagfreshLoader({ fetcher, sourceId: 'docs', urls });
    const embeddings = new CountingEmbeddings();
    const vectorStore = new IdVectorStore(embeddings, {});
    const recordManager = new MemoryRecordManager();
    const options = { cleanup: 'incremental' as const, sourceIdKey: 'source' };

    const first = await index({ docsSource: loader, recordManager, vectorStore, options });
    expect(loader.skipped).toEqual([]);
    expect(first.numAdded).toBeGreaterThan(urls.length);
    expect(first.numDeleted).toBe(0);
    expect(embeddings.documents).toBe(first.numAdded);
    const chunksAfterFirst = vectorStore.rows.size;

    embeddings.documents = 0;
    embeddings.calls = 0;
    const second = await index({ docsSource: loader, recordManager, vectorStore, options });
    expect(second).toEqual({
      numAdded: 0,
      numUpdated: 0,
      numDeleted: 0,
      numSkipped: first.numAdded,
    });
    expect(embeddings.calls).toBe(0);
    expect(vectorStore.rows.size).toBe(chunksAfterFirst);

    const edited = urls[2]!;
    const oldPhrase = sim.pageFacts(edited).sections[0]!.phrase;
    const before = [...vectorStore.rows.values()].filter((r) => r.doc.metadata.url === edited);
    const editedDocId = before[0]!.doc.metadata.source as string;
    sim.mutate(edited, 'edit', { section: 0 });
    const newPhrase = sim.pageFacts(edited).sections[0]!.phrase;
    expect(newPhrase).not.toBe(oldPhrase);

    embeddings.documents = 0;
    const third = await index({ docsSource: loader, recordManager, vectorStore, options });
    const after = [...vectorStore.rows.values()].filter((r) => r.doc.metadata.url === edited);
    // Only the edited page's chunks are new; every one of them is re-embedded (its version changed).
    expect(third.numAdded).toBe(after.length);
    expect(embeddings.documents).toBe(after.length);
    // Its previous chunks are all gone (cleanup by source = documentId), nothing else is touched.
    expect(third.numDeleted).toBe(before.length);
    expect(third.numSkipped).toBe(chunksAfterFirst - before.length);
    expect(vectorStore.rows.size).toBe(chunksAfterFirst - before.length + after.length);
    expect(after.every((r) => r.doc.metadata.source === editedDocId)).toBe(true);
    const texts = [...vectorStore.rows.values()].map((r) => r.doc.pageContent).join('\n');
    expect(texts).toContain(newPhrase);
    expect(texts).not.toContain(oldPhrase);
    expect(new Set(after.map((r) => r.doc.metadata.rf_version)).size).toBe(1);
  });

  it('carries provenance, and keeps volatile values out of the hash index() computes', async () => {
    const url = sim.urls('docs-0')[1]!;
    const flat = new RagfreshLoader({ fetcher, sourceId: 'docs', urls: [url] });
    const nested = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: [url],
      volatileMetadata: 'nested',
    });
    const eager = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: [url],
      volatileMetadata: true,
    });
    const [a1, a2] = [await flat.load(), await flat.load()];
    const d = a1[0]!;
    expect(d.metadata).toMatchObject({
      source: expect.stringMatching(/^docs:[0-9a-f]{24}$/),
      rf_doc: d.metadata.source,
      url,
      title: expect.any(String),
      heading: expect.any(String),
      rf_version: expect.stringMatching(/^v[0-9a-f]{24}$/),
      rf_chunk: expect.stringContaining('#'),
      chunk_hash: expect.any(String),
      page_hash: expect.any(String),
    });
    expect(d.metadata.retrieved_at).toBeUndefined();
    const hashes = (docs: typeof a1) => docs.map((x) => _HashedDocument.fromDocument(x).hash_);
    expect(hashes(a2)).toEqual(hashes(a1));

    const [n1, n2] = [await nested.load(), await nested.load()];
    expect(n1[0]!.metadata[VOLATILE_KEY]).toMatchObject({
      retrieved_at: expect.any(String),
      http_status: 200,
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(hashes(n2)).toEqual(hashes(n1));

    const e1 = await eager.load();
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
    });
    const seen: string[] = [];
    sim.clearLog();
    for await (const doc of loader.lazyLoad()) seen.push(doc.metadata.url as string);
    expect(seen).toEqual(urls);
    // The fetcher would allow 4 per host; the loader keeps 2 pages in flight.
    const inFlight = sim.log().map((e) => e.concurrent);
    expect(inFlight).toHaveLength(4);
    expect(Math.max(...inFlight)).toBeLessThanOrEqual(2);
  });

  it('reports pages that yield nothing and yields the rest', async () => {
    const urls = sim.urls('docs-0').slice(0, 3);
    sim.mutate(urls[1]!, 'outage', { times: 1, retryAfter: null });
    sim.mutate(urls[2]!, 'consentWall', { times: 1 });
    const loader = new RagfreshLoader({ fetcher, sourceId: 'docs', urls, mode: 'pages' });
    const docs = await loader.load();
    expect(docs.map((d) => d.metadata.url)).toEqual([urls[0]]);
    expect(loader.skipped.map((s) => s.url)).toEqual([urls[1], urls[2]]);
    expect(loader.skipped[0]!.reasons[0]).toMatch(/^server-error/);
  });

  it('loads from a sitemap', async () => {
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      sitemaps: [`${sim.origin('docs-0')}/sitemap.xml`],
      mode: 'pages',
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
    });
    const docs = await loader.load();
    expect(docs.map((d) => d.metadata.url)).toEqual([url]);
    const strict = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: [url, `${url}?utm_source=newsletter`],
      identity: { mode: 'strict' },
      mode: 'pages',
    });
    expect((await strict.load()).map((d) => d.metadata.url)).toEqual([url]);
    expect(strict.skipped).toEqual([
      { url: `${url}?utm_source=newsletter`, reasons: [expect.stringMatching(/^invalid-url: /)] },
    ]);
  });
});
