import { Chroma } from '@langchain/community/vectorstores/chroma';
import { ChromaConnector } from '@ragfresh/connector-chroma';
import { type LocalChromaServer, startLocalChroma } from '@ragfresh/connector-chroma/fixture';
import {
  FIELDS,
  HashingEmbeddings,
  InMemoryStateStore,
  type JournalStep,
  Publisher,
} from '@ragfresh/core';
import type { Fetcher } from '@ragfresh/fetch';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RagfreshLoader, RagfreshRetriever, toPublishCandidate } from '../src/index.js';
import { simFetcher } from './helpers.js';

// LangChain's own Chroma class reading a collection ragfresh publishes, through the retriever's
// `dialect: 'chroma'` dialect: the real `where` syntax against a real Chroma server.
let server: LocalChromaServer;
let sim: SimWeb;
let fetcher: Fetcher;
let connector: ChromaConnector;
let publisher: Publisher;
let hook: ((step: JournalStep) => Promise<void>) | undefined;
const embeddings = new HashingEmbeddings();
const collection = `rf-lc-${process.pid}-${Date.now()}`;

async function publish(urls: readonly string[]) {
  const loader = new RagfreshLoader({
    fetcher,
    sourceId: 'docs',
    urls,
    state: new InMemoryStateStore(),
  });
  const candidates = [];
  for await (const page of loader.pages())
    candidates.push(await toPublishCandidate(page, embeddings));
  return publisher.publish(candidates);
}

beforeAll(async () => {
  server = await startLocalChroma();
  sim = await startSimWeb({ seed: 11, hosts: 1, pagesPerHost: 4 });
  fetcher = simFetcher();
  connector = new ChromaConnector({ url: server.url, collection });
  await connector.open({ dimensions: embeddings.dimensions });
  publisher = await Publisher.open({
    connector,
    state: new InMemoryStateStore(),
    hooks: { beforeStep: async (step) => hook?.(step) },
  });
  await publish(sim.urls('docs-0'));
});
afterAll(async () => {
  await publisher?.close();
  await connector?.close();
  await fetcher?.close();
  await sim?.stop();
  await server?.stop();
});

function langchainChroma(): Chroma {
  const url = new URL(server.url);
  return new Chroma(embeddings, {
    collectionName: collection,
    clientParams: { host: url.hostname, port: Number(url.port) },
  });
}

describe("RagfreshRetriever over LangChain's Chroma class", () => {
  it("filter 'chroma' reads only the published version mid-promotion, the new one after", async () => {
    const url = sim.urls('docs-0')[1]!;
    const question = sim.pageFacts(url).phrase;
    const retriever = new RagfreshRetriever({
      vectorStore: langchainChroma(),
      dialect: 'chroma',
      connector,
      k: 20,
    });
    const flag = new RagfreshRetriever({
      vectorStore: langchainChroma(),
      dialect: 'chroma',
      view: 'flag',
      k: 20,
    });
    const versions = async (r: RagfreshRetriever) =>
      new Set(
        (await r.invoke(question))
          .filter((d) => d.metadata.url === url)
          .map((d) => d.metadata[FIELDS.versionId]),
      );
    const before = await versions(retriever);
    expect(before.size).toBe(1);
    expect(await versions(flag)).toEqual(before);

    sim.mutate(url, 'edit', { section: 0 });
    let checked = false;
    hook = async (step) => {
      if (step !== 'promoting') return;
      const unfiltered = await langchainChroma().similaritySearch(question, 40);
      expect(
        new Set(
          unfiltered.filter((d) => d.metadata.url === url).map((d) => d.metadata[FIELDS.versionId]),
        ).size,
      ).toBe(2);
      expect(await versions(retriever)).toEqual(before);
      checked = true;
    };
    try {
      const report = await publish([url]);
      expect(report.documents[0]!.outcome).toBe('published');
    } finally {
      hook = undefined;
    }
    expect(checked).toBe(true);
    const after = await versions(retriever);
    expect(after.size).toBe(1);
    expect(after).not.toEqual(before);
    expect(await versions(flag)).toEqual(after);
  });
});
