import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { DocumentInterface } from '@langchain/core/documents';
import { index } from '@langchain/core/indexing';
import { maximalMarginalRelevance } from '@langchain/core/utils/math';
import type { MaxMarginalRelevanceSearchOptions } from '@langchain/core/vectorstores';
import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
import {
  CountingEmbeddings,
  canonicalKey,
  HashingEmbeddings,
  InMemoryStateStore,
} from '@ragfresh/core';
import { Fetcher } from '@ragfresh/fetch';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  formatEvidence,
  RagfreshLoader,
  RagfreshRetriever,
  ragPromptTemplate,
} from '../src/index.js';
import { IdVectorStore, MemoryRecordManager, simFetcher } from './helpers.js';

let sim: SimWeb;
let fetcher: Fetcher;

beforeAll(async () => {
  sim = await startSimWeb({ seed: 31, hosts: 2, pagesPerHost: 4 });
  fetcher = simFetcher();
});
afterAll(async () => {
  await fetcher.close();
  await sim.stop();
});

/** The test store with MMR (as LangChain's MemoryVectorStore has it). */
class MmrVectorStore extends IdVectorStore {
  override async maxMarginalRelevanceSearch(
    query: string,
    options: MaxMarginalRelevanceSearchOptions<this['FilterType']>,
  ): Promise<DocumentInterface[]> {
    const q = await this.embeddings.embedQuery(query);
    const found = await this.similaritySearchVectorWithScore(
      q,
      options.fetchK ?? 20,
      options.filter,
    );
    const vectors = await this.embeddings.embedDocuments(found.map(([d]) => d.pageContent));
    const picked = maximalMarginalRelevance(q, vectors, options.lambda ?? 0.5, options.k);
    return picked.map((i) => found[i]![0]);
  }
}

const splitter = () => new RecursiveCharacterTextSplitter({ chunkSize: 300, chunkOverlap: 40 });

describe("LangChain's conventions", () => {
  it('metadata.source is the page URL (identity policy) and Document.id the chunk id', async () => {
    const url = `${sim.urls('docs-0')[1]!}?utm_source=x`;
    const docs = await new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: [url],
      state: new InMemoryStateStore(),
    }).load();
    expect(docs.length).toBeGreaterThan(0);
    for (const d of docs) {
      expect(d.metadata.source).toBe(canonicalKey(url));
      expect(d.metadata.source).toBe(sim.urls('docs-0')[1]);
      expect(d.metadata.rf_doc).toMatch(/^docs:[0-9a-f]{24}$/);
      expect(d.id).toBe(d.metadata.rf_chunk);
    }
  });

  it('loadAndSplit(RecursiveCharacterTextSplitter) keeps ids per chunk, one rf_chunk, no nested loc, heading paths', async () => {
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: sim.urls('docs-0').slice(0, 2),
      state: new InMemoryStateStore(),
    });
    const own = await loader.load();
    const split = await loader.loadAndSplit(splitter());
    expect(split.length).toBeGreaterThan(own.length);
    const ids = split.map((d) => d.id);
    expect(new Set(ids).size).toBe(split.length);
    for (const d of split) {
      expect(d.id).toBe(d.metadata.rf_chunk);
      expect(d.metadata.loc).toBeUndefined();
      expect(Object.values(d.metadata).every((v) => typeof v !== 'object')).toBe(true);
      expect(d.pageContent.length).toBeLessThanOrEqual(300);
      expect(typeof d.metadata.heading).toBe('string');
    }
    // The splitter is part of the version: its chunks never pass for ragfresh's own.
    expect(split[0]!.metadata.rf_version).not.toBe(own[0]!.metadata.rf_version);
    // Deterministic: a second split of the same pages gives the same ids.
    expect((await loader.loadAndSplit(splitter())).map((d) => d.id)).toEqual(ids);
  });

  it('index({ docsSource: loader }) goes through the splitter option (index() calls load())', async () => {
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: sim.urls('docs-0'),
      state: new InMemoryStateStore(),
      splitter: splitter(),
    });
    const embeddings = new CountingEmbeddings();
    const vectorStore = new IdVectorStore(embeddings, {});
    const recordManager = new MemoryRecordManager();
    const options = { cleanup: 'full' as const, sourceIdKey: 'source' };
    const first = await index({ docsSource: loader, recordManager, vectorStore, options });
    const stored = [...vectorStore.rows.values()].map((r) => r.doc);
    expect(stored.length).toBe(first.numAdded);
    expect(stored.every((d) => d.pageContent.length <= 300)).toBe(true);
    const second = await index({ docsSource: loader, recordManager, vectorStore, options });
    expect(second).toEqual({
      numAdded: 0,
      numUpdated: 0,
      numDeleted: 0,
      numSkipped: first.numAdded,
    });
    expect(loader.lastReport!.counts['not-modified']).toBe(sim.urls('docs-0').length);
  });

  it('the prompt template takes {context} by default (as the tutorials) and {question}', async () => {
    const messages = await ragPromptTemplate('Answer.').formatMessages({
      context: 'EVIDENCE',
      question: 'Q?',
    });
    expect(String(messages[1]!.content)).toBe('Evidence:\n\nEVIDENCE');
    const named = await ragPromptTemplate('Answer.', { variable: 'evidence' }).formatMessages({
      evidence: 'E2',
      question: 'Q?',
    });
    expect(String(named[1]!.content)).toContain('E2');
  });
});

describe('RagfreshRetriever over a store index() built', () => {
  let store: MmrVectorStore;
  let state: InMemoryStateStore;
  let urls: string[];

  beforeAll(async () => {
    urls = sim.urls('docs-1');
    state = new InMemoryStateStore();
    const loader = new RagfreshLoader({ fetcher, sourceId: 'docs', urls, state });
    store = new MmrVectorStore(new HashingEmbeddings(), {});
    await index({
      docsSource: loader,
      recordManager: new MemoryRecordManager(),
      vectorStore: store,
      options: { cleanup: 'full' },
    });
  });

  it('takes k, a user filter, a score threshold, MMR; labels come from state; callbacks see the run', async () => {
    const question = sim.pageFacts(urls[2]!).sections[0]!.phrase;
    const plain = new RagfreshRetriever({ vectorStore: store, view: 'index', state, k: 2 });
    const hits = await plain.invoke(question);
    expect(hits).toHaveLength(2);
    expect(hits[0]!.metadata.url).toBe(urls[2]);
    expect(hits.every((d) => d.metadata.rf_status === 'healthy')).toBe(true);
    expect(formatEvidence(hits)).toMatch(/^Fetched: \d{4}-\d\d-\d\dT/m);

    const only = urls[3]!;
    const filtered = await new RagfreshRetriever({
      vectorStore: store,
      view: 'index',
      dialect: 'memory',
      filter: (d: DocumentInterface) => d.metadata.url === only,
      k: 3,
    }).invoke(question);
    expect(filtered.length).toBeGreaterThan(0);
    expect(filtered.every((d) => d.metadata.url === only)).toBe(true);

    const scored = await new RagfreshRetriever({
      vectorStore: store,
      view: 'index',
      k: 10,
      scoreThreshold: 0.99,
    }).invoke(question);
    expect(scored.length).toBeLessThan(10);
    expect(scored.every((d) => (d.metadata.rf_score as number) >= 0.99)).toBe(true);

    const mmr = await new RagfreshRetriever({
      vectorStore: store,
      view: 'index',
      k: 3,
      searchType: 'mmr',
      searchKwargs: { fetchK: 10, lambda: 0.2 },
    }).invoke(question);
    expect(mmr).toHaveLength(3);
    expect(new Set(mmr.map((d) => d.pageContent)).size).toBe(3);

    const events: string[] = [];
    class Recorder extends BaseCallbackHandler {
      name = 'recorder';
      override handleRetrieverStart() {
        events.push('retriever-start');
      }
      override handleRetrieverEnd(docs: DocumentInterface[]) {
        events.push(`retriever-end:${docs.length}`);
      }
    }
    await plain.invoke(question, { callbacks: [new Recorder()] });
    expect(events).toEqual(['retriever-start', 'retriever-end:2']);
  });

  it('needs a dialect for the epoch and flag views; refuses MMR on a store without it', () => {
    expect(() => new RagfreshRetriever({ vectorStore: store, view: 'flag' })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/dialect/),
      }),
    );
    const noMmr = new IdVectorStore(new HashingEmbeddings(), {});
    expect(
      () => new RagfreshRetriever({ vectorStore: noMmr, view: 'index', searchType: 'mmr' }),
    ).toThrow(expect.objectContaining({ code: 'NOT_SUPPORTED' }));
  });
});

describe('Retry-After', () => {
  it('a host answering Retry-After: 120 is deferred for the run: bounded, last good copies emitted, deferral reported', async () => {
    // Default politeness (1 s between requests per host, retries): what made loads take minutes.
    const polite = new Fetcher({
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      network: { allowPrivateNetworks: true },
      robots: false,
    });
    try {
      const [slow, fine] = [sim.urls('docs-0').slice(0, 3), sim.urls('docs-1').slice(0, 2)];
      const loader = new RagfreshLoader({
        fetcher: polite,
        sourceId: 'docs',
        urls: [...slow, ...fine],
        state: new InMemoryStateStore(),
      });
      const cold = await loader.load();
      const perPage = (docs: typeof cold) =>
        Object.fromEntries(
          [...slow, ...fine].map((u) => [u, docs.filter((d) => d.metadata.url === u).length]),
        );
      for (const url of slow) sim.mutate(url, 'outage', { retryAfter: 120 });
      sim.clearLog();
      const docs = await loader.load();
      const report = loader.lastReport!;
      expect(perPage(docs)).toEqual(perPage(cold));
      expect(report.deferredHosts).toHaveLength(1);
      expect(report.deferredHosts[0]!.host).toBe(new URL(slow[0]!).host);
      expect(report.deferredHosts[0]!.retryAfterMs).toBeGreaterThan(100_000);
      expect(report.pages.map((p) => [p.outcome, p.emitted])).toEqual([
        ['degraded', 'copy'],
        ['deferred', 'copy'],
        ['deferred', 'copy'],
        ['not-modified', 'copy'],
        ['not-modified', 'copy'],
      ]);
      // The slow host got one request (no retry slept through, no queued request sent).
      const slowHost = new URL(slow[0]!).host;
      expect(sim.log().filter((e) => new URL(e.url).host === slowHost)).toHaveLength(1);
      for (const url of slow) sim.mutate(url, 'restore');
    } finally {
      await polite.close();
    }
  });
});
