import type { DocumentInterface } from '@langchain/core/documents';
import { MemoryConnector } from '@ragfresh/connector-memory';
import {
  FIELDS,
  HashingEmbeddings,
  InMemoryStateStore,
  type JournalStep,
  Publisher,
} from '@ragfresh/core';
import { type ComposedEngine, composeEngine, resolveEngineSettings } from '@ragfresh/engine';
import type { Fetcher } from '@ragfresh/fetch';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectorRetriever,
  currentViewFilter,
  formatEvidence,
  type LoadedPage,
  RagfreshLoader,
  RagfreshRetriever,
  toPublishCandidate,
} from '../src/index.js';
import { ConnectorVectorStore, simFetcher } from './helpers.js';

let sim: SimWeb;
let fetcher: Fetcher;
/** Composed for the `live` role over the same state: the retriever's `liveFetch`. */
let live: ComposedEngine;
let connector: MemoryConnector;
let state: InMemoryStateStore;
let publisher: Publisher;
let hook: ((step: JournalStep) => Promise<void>) | undefined;
const embeddings = new HashingEmbeddings();
const pages = new Map<string, LoadedPage>();

async function load(urls: readonly string[]): Promise<LoadedPage[]> {
  const loader = new RagfreshLoader({
    fetcher,
    sourceId: 'docs',
    urls,
    state: new InMemoryStateStore(),
  });
  const out: LoadedPage[] = [];
  for await (const p of loader.pages()) {
    out.push(p);
    pages.set(p.url, p);
  }
  expect(loader.skipped).toEqual([]);
  return out;
}

async function publish(urls: readonly string[]) {
  const loaded = await load(urls);
  return publisher.publish(await Promise.all(loaded.map((p) => toPublishCandidate(p, embeddings))));
}

/** documentId -> versions seen in one answer. */
function versionsByDocument(docs: readonly DocumentInterface[]): Map<string, Set<string>> {
  const m = new Map<string, Set<string>>();
  for (const d of docs) {
    const id = String(d.metadata[FIELDS.documentId]);
    const set = m.get(id) ?? new Set<string>();
    set.add(String(d.metadata[FIELDS.versionId]));
    m.set(id, set);
  }
  return m;
}
const mixed = (docs: readonly DocumentInterface[]) =>
  [...versionsByDocument(docs).values()].some((s) => s.size > 1);

beforeAll(async () => {
  sim = await startSimWeb({ seed: 9, hosts: 1, pagesPerHost: 6 });
  fetcher = simFetcher();
  connector = new MemoryConnector();
  await connector.open({ dimensions: embeddings.dimensions });
  state = new InMemoryStateStore();
  publisher = await Publisher.open({
    connector,
    state,
    hooks: { beforeStep: async (step) => hook?.(step) },
  });
  const report = await publish(sim.urls('docs-0'));
  expect(report.documents.every((d) => d.outcome === 'published')).toBe(true);
  live = await composeEngine(
    resolveEngineSettings({
      sources: [
        { id: 'docs', urls: sim.urls('docs-0'), everyMs: 60_000, identity: { mode: 'normalize' } },
      ],
      fetch: {
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        robots: false,
        minIntervalMs: 0,
        allowPrivateNetworks: true,
      },
    }),
    { state, embeddings },
    'live',
  );
});
afterAll(async () => {
  await live?.close();
  await publisher.close();
  await fetcher.close();
  await sim.stop();
});

const store = () => new ConnectorVectorStore(connector, embeddings);

describe('RagfreshRetriever: current view', () => {
  it('mid-promotion, an unfiltered reader sees two versions of a page; the retriever sees only the published one', async () => {
    const url = sim.urls('docs-0')[1]!;
    const oldVersion = pages.get(url)!.prepared.versionId;
    const phrase = sim.pageFacts(url).phrase;
    sim.mutate(url, 'edit', { section: 0 });
    sim.mutate(url, 'edit', { section: 1 });
    const retriever = new RagfreshRetriever({
      vectorStore: store(),
      dialect: 'memory',
      connector,
      k: 50,
    });
    const direct = connectorRetriever({ connector, embeddings, k: 50 });
    let checked = false;
    hook = async (step) => {
      if (step !== 'promoting') return;
      const naive = await store().similaritySearch(phrase, 50);
      expect(mixed(naive.filter((d) => d.metadata.url === url))).toBe(true);
      for (const r of [retriever, direct]) {
        const docs = (await r.invoke(phrase)).filter((d) => d.metadata.url === url);
        expect(docs.length).toBeGreaterThan(0);
        expect(new Set(docs.map((d) => d.metadata.rf_version))).toEqual(new Set([oldVersion]));
      }
      checked = true;
    };
    try {
      await publish([url]);
    } finally {
      hook = undefined;
    }
    expect(checked).toBe(true);
    const after = (await retriever.invoke(phrase)).filter((d) => d.metadata.url === url);
    expect(new Set(after.map((d) => d.metadata.rf_version))).toEqual(
      new Set([pages.get(url)!.prepared.versionId]),
    );
  });

  it('never returns two versions of one document while several documents are republished under concurrent queries', async () => {
    const urls = sim.urls('docs-0');
    const questions = urls.map((u) => sim.pageFacts(u).phrase);
    const readers = [
      new RagfreshRetriever({ vectorStore: store(), dialect: 'memory', connector, k: 30 }),
      RagfreshRetriever.fromConnector({ connector, embeddings, k: 30 }),
    ];
    let stop = false;
    let answers = 0;
    let mixes = 0;
    let epochsSeen = new Set<number>();
    const loop = async (r: RagfreshRetriever, offset: number) => {
      for (let i = offset; !stop; i++) {
        const docs = await r.invoke(questions[i % questions.length]!);
        answers++;
        if (mixed(docs)) mixes++;
        for (const d of docs) epochsSeen.add(Number(d.metadata.rf_epoch));
      }
    };
    const readersDone = Promise.all([
      loop(readers[0]!, 0),
      loop(readers[1]!, 3),
      loop(readers[0]!, 5),
    ]);
    const startEpoch = await connector.readEpoch();
    for (let round = 0; round < 4; round++) {
      const targets = [
        urls[(round * 2) % urls.length]!,
        urls[(round * 2 + 1) % urls.length]!,
        urls[(round * 2 + 3) % urls.length]!,
      ];
      for (const u of targets) sim.mutate(u, 'edit', { section: round % 2 });
      const report = await publish(targets);
      expect(report.documents.filter((d) => d.outcome === 'published')).toHaveLength(3);
    }
    stop = true;
    await readersDone;
    expect(await connector.readEpoch()).toBe(startEpoch + 4);
    expect(answers).toBeGreaterThan(20);
    expect(epochsSeen.size).toBeGreaterThan(1);
    expect(mixes).toBe(0);
    epochsSeen = new Set();
  });

  it("view 'flag' filters on rf_current; a bad epoch source is refused", async () => {
    const r = new RagfreshRetriever({
      vectorStore: store(),
      dialect: 'memory',
      view: 'flag',
      k: 5,
    });
    const docs = await r.invoke(sim.pageFacts(sim.urls('docs-0')[0]!).phrase);
    expect(docs.length).toBe(5);
    expect(docs.every((d) => d.metadata.rf_current === true)).toBe(true);
    expect(() => new RagfreshRetriever({ vectorStore: store(), dialect: 'memory' })).toThrow(
      /readEpoch/,
    );
    expect(() =>
      RagfreshRetriever.fromConnector({ connector, embeddings, staleReaders: 'exclude' }),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/needs state/),
      }),
    );
  });

  it('takes readEpoch and a filter function of your own (e.g. to add clauses)', async () => {
    const url = sim.urls('docs-0')[0]!;
    const docId = pages.get(url)!.documentId;
    const views: unknown[] = [];
    const r = new RagfreshRetriever({
      vectorStore: store(),
      readEpoch: async () => connector.readEpoch(),
      dialect: (view) => {
        views.push(view);
        const current = currentViewFilter('memory', view);
        return (doc: DocumentInterface) => current(doc) && doc.metadata.rf_doc === docId;
      },
      k: 50,
    });
    const docs = await r.invoke('anything at all');
    const epoch = await connector.readEpoch();
    expect(views).toEqual([{ epoch }]);
    expect(docs.length).toBe(pages.get(url)!.prepared.chunks.length);
    expect(docs.every((d) => d.metadata.rf_doc === docId && d.metadata.rf_epoch === epoch)).toBe(
      true,
    );
  });
});

describe('RagfreshRetriever: stale documents', () => {
  it('labels chunks of degraded documents with rf_stale / rf_stale_since, or excludes them', async () => {
    const url = sim.urls('docs-0')[4]!;
    const docId = pages.get(url)!.documentId;
    const record = (await state.getDocument(docId))!;
    await state.putDocument({
      ...record,
      status: 'degraded',
      statusReasons: ['server-error: HTTP 503'],
      lastGoodAt: '2026-01-02T03:04:05.000Z',
    });
    try {
      const question = sim.pageFacts(url).phrase;
      const label = RagfreshRetriever.fromConnector({ connector, embeddings, state, k: 4 });
      const docs = await label.invoke(question);
      const hit = docs.find((d) => d.metadata.rf_doc === docId)!;
      expect(hit.metadata).toMatchObject({
        rf_stale: true,
        rf_stale_since: '2026-01-02T03:04:05.000Z',
        rf_status: 'degraded',
      });
      expect(formatEvidence([hit])).toContain('STALE since 2026-01-02T03:04:05.000Z');
      const healthy = docs.find((d) => d.metadata.rf_doc !== docId);
      if (healthy) expect(healthy.metadata.rf_stale).toBeUndefined();

      const exclude = RagfreshRetriever.fromConnector({
        connector,
        embeddings,
        state,
        k: 4,
        staleReaders: 'exclude',
      });
      const kept = await exclude.invoke(question);
      expect(kept).toHaveLength(4);
      expect(kept.some((d) => d.metadata.rf_doc === docId)).toBe(false);
    } finally {
      await state.putDocument(record);
    }
  });
});

describe('RagfreshRetriever: live fetch', () => {
  const later = () => new Date(Date.now() + 3_600_000);

  async function withValidators(url: string) {
    const page = pages.get(url)!;
    const record = (await state.getDocument(page.documentId))!;
    await state.putDocument({ ...record, validators: page.fetch.validators });
    return page;
  }

  it('304 marks rf_revalidated_at; fresh documents are not fetched', async () => {
    const url = sim.urls('docs-0')[5]!;
    const page = await withValidators(url);
    const question = sim.pageFacts(url).phrase;
    const r = RagfreshRetriever.fromConnector({
      connector,
      embeddings,
      state,
      k: 1,
      liveFetch: { engine: live, objectiveMs: 60_000, now: later },
    });
    sim.clearLog();
    const [doc] = await r.invoke(question);
    expect(doc!.metadata.rf_doc).toBe(page.documentId);
    expect(doc!.metadata.rf_revalidated_at).toEqual(expect.any(String));
    expect(sim.log().map((e) => e.status)).toEqual([304]);
    expect(formatEvidence([doc!])).toContain('Revalidated: ');

    const fresh = RagfreshRetriever.fromConnector({
      connector,
      embeddings,
      state,
      k: 1,
      liveFetch: { engine: live, objectiveMs: 60_000 },
    });
    sim.clearLog();
    const [again] = await fresh.invoke(question);
    expect(sim.log()).toHaveLength(0);
    expect(again!.metadata.rf_revalidated_at).toBeUndefined();
  });

  it('200 with a changed section substitutes the live text (rf_live); a failed fetch keeps the stored copy, labelled', async () => {
    const url = sim.urls('docs-0')[3]!;
    const page = await withValidators(url);
    const oldSection = sim.pageFacts(url).sections[0]!.phrase;
    sim.mutate(url, 'edit', { section: 0 });
    const newSection = sim.pageFacts(url).sections[0]!.phrase;
    const r = RagfreshRetriever.fromConnector({
      connector,
      embeddings,
      state,
      k: 1,
      liveFetch: { engine: live, objectiveMs: 60_000, now: later },
    });
    const [doc] = await r.invoke(oldSection);
    expect(doc!.metadata.rf_doc).toBe(page.documentId);
    expect(doc!.metadata.rf_live).toBe(true);
    expect(doc!.metadata.rf_live_version).not.toBe(page.prepared.versionId);
    expect(doc!.pageContent).toContain(newSection);
    expect(doc!.pageContent).not.toContain(oldSection);
    expect(formatEvidence([doc!])).toMatch(/Fetched: .* \(live fetch; stored copy from .*\)/);

    // Retry-After past what the fetcher waits: reported, not retried.
    sim.mutate(url, 'outage', { times: 1, retryAfter: 600 });
    const [failed] = await r.invoke(oldSection);
    expect(failed!.metadata.rf_live).toBeUndefined();
    expect(failed!.pageContent).toContain(oldSection);
    expect(failed!.metadata.rf_live_fetch_failed).toMatch(/server-error \(HTTP 503\)/);
    expect(formatEvidence([failed!])).toMatch(
      /LIVE FETCH FAILED at .* \(server-error \(HTTP 503\)\): this is the stored copy fetched /,
    );
  });
});
