import { InMemoryRecordManager } from '@langchain/community/indexes/memory';
import { Chroma } from '@langchain/community/vectorstores/chroma';
import { index } from '@langchain/core/indexing';
import { type LocalChromaServer, startLocalChroma } from '@ragfresh/connector-chroma/fixture';
import { CountingEmbeddings, InMemoryStateStore } from '@ragfresh/core';
import type { Fetcher } from '@ragfresh/fetch';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatEvidence, RagfreshLoader, RagfreshRetriever } from '../src/index.js';
import { simFetcher } from './helpers.js';

// LangChain's indexing guide, as written, on a real Chroma server: index() + a record manager +
// LangChain's Chroma class, with RagfreshLoader as docsSource and RagfreshRetriever reading back.
let server: LocalChromaServer;
let sim: SimWeb;
let fetcher: Fetcher;

beforeAll(async () => {
  server = await startLocalChroma();
  sim = await startSimWeb({ seed: 21, hosts: 1, pagesPerHost: 6 });
  fetcher = simFetcher();
});
afterAll(async () => {
  await fetcher?.close();
  await sim?.stop();
  await server?.stop();
});

const HOUR = 3_600_000;
const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;

describe.each(['incremental', 'full'] as const)("index() into Chroma, cleanup '%s'", (cleanup) => {
  it('cold; unchanged; one edit; 503 + 304; recovered; 410 confirmed', async () => {
    const urls = sim.urls('docs-0');
    for (const url of urls) sim.mutate(url, 'restore', { content: true });
    let now = Date.parse('2030-01-01T00:00:00Z');
    const state = new InMemoryStateStore();
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls,
      state,
      deletion: { goneChecks: 2, minGoneAgeMs: HOUR, autoApprove: true },
      now: () => new Date(now),
    });
    const embeddings = new CountingEmbeddings();
    const url = new URL(server.url);
    const vectorStore = new Chroma(embeddings, {
      collectionName: `rf-index-${cleanup}-${process.pid}`,
      clientParams: { host: url.hostname, port: Number(url.port) },
    });
    const recordManager = new InMemoryRecordManager();
    await recordManager.createSchema();
    const collection = await vectorStore.ensureCollection();
    const chunksOf = async (page: string) =>
      (await collection.get({ where: { url: page }, include: [] })).ids.length;
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
      return { ...result, removed, embedded: embeddings.texts, report: loader.lastReport! };
    };
    const retriever = new RagfreshRetriever({ vectorStore, view: 'index', state, k: 3 });
    const prompt = async (page: string) =>
      formatEvidence(
        (await retriever.invoke(sim.pageFacts(page).sections[0]!.phrase)).filter(
          (d) => d.metadata.url === page,
        ),
      );

    // Cold.
    const cold = await run();
    expect(cold.report.counts.changed).toBe(urls.length);
    expect(cold.embedded).toBe(cold.numAdded);
    const total = await collection.count();
    expect(total).toBe(cold.numAdded);

    // Unchanged: every page answers 304, nothing is embedded, written or deleted.
    const unchanged = await run();
    expect(sim.log().map((e) => e.status)).toEqual(urls.map(() => 304));
    expect(unchanged).toMatchObject({ numAdded: 0, numDeleted: 0, embedded: 0, numSkipped: total });

    // One edit: only that page is re-embedded; its old chunks go.
    const edited = urls[1]!;
    const before = await chunksOf(edited);
    sim.mutate(edited, 'edit', { section: 0 });
    const edit = await run();
    const after = await chunksOf(edited);
    expect(edit).toMatchObject({ numAdded: after, embedded: after, numDeleted: before });
    expect(edit.report.counts).toMatchObject({ changed: 1, 'not-modified': urls.length - 1 });
    const afterEdit = await collection.count();

    // One page 503, the others 304: nothing deleted under either mode; the prompt says STALE.
    const failing = urls[2]!;
    sim.mutate(failing, 'outage', { retryAfter: null });
    const outage = await run();
    expect(outage.report.pages[2]).toMatchObject({ outcome: 'degraded', emitted: 'copy' });
    expect(outage.report.counts['not-modified']).toBe(urls.length - 1);
    expect(outage).toMatchObject({ numAdded: 0, numDeleted: 0, embedded: 0, removed: 0 });
    expect(await collection.count()).toBe(afterEdit);
    const stale = await prompt(failing);
    expect(stale).toMatch(new RegExp(`^Fetched: ${ISO.source}$`, 'm'));
    expect(stale).toMatch(new RegExp(`^STALE since ${ISO.source}`, 'm'));
    const healthy = await prompt(urls[3]!);
    expect(healthy).toMatch(new RegExp(`^Fetched: ${ISO.source}$`, 'm'));
    expect(healthy).not.toMatch(/STALE/);

    // Recovered: a 304 again, healthy, nothing written.
    sim.mutate(failing, 'restore');
    const recovered = await run();
    expect(recovered.report.pages[2]!.outcome).toBe('not-modified');
    expect(recovered).toMatchObject({ numAdded: 0, numDeleted: 0, embedded: 0 });
    expect(await prompt(failing)).not.toMatch(/STALE/);

    // 410: kept while the evidence is short of goneChecks over minGoneAgeMs, then deleted.
    const gone = urls[4]!;
    const goneChunks = await chunksOf(gone);
    sim.mutate(gone, 'delete410');
    const first = await run();
    expect(first.report.pages[4]).toMatchObject({ outcome: 'gone-unconfirmed', emitted: 'copy' });
    expect(first).toMatchObject({ numDeleted: 0, removed: 0 });
    expect(await chunksOf(gone)).toBe(goneChunks);
    now += 2 * HOUR;
    const confirmed = await run();
    expect(confirmed.report.pages[4]).toMatchObject({ outcome: 'gone-confirmed', emitted: 'none' });
    expect(confirmed.numDeleted + confirmed.removed).toBe(goneChunks);
    expect(await chunksOf(gone)).toBe(0);
    expect(await collection.count()).toBe(afterEdit - goneChunks);
    sim.mutate(gone, 'restore');
  });
});
