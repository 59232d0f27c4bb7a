import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PostgresRecordManager } from '@langchain/community/indexes/postgres';
import { Chroma } from '@langchain/community/vectorstores/chroma';
import { index } from '@langchain/core/indexing';
import type { ChatPromptValue } from '@langchain/core/prompt_values';
import { RunnableLambda, RunnablePassthrough, RunnableSequence } from '@langchain/core/runnables';
import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
import { startLocalChroma } from '@ragfresh/connector-chroma/fixture';
import { HashingEmbeddings, openStateStore } from '@ragfresh/core';
import { resolveEngineSettings } from '@ragfresh/engine';
import {
  formatEvidence,
  RagfreshLoader,
  RagfreshRetriever,
  ragPromptTemplate,
} from '@ragfresh/langchain';
import { startSimWeb } from '@ragfresh/sim';

export interface IndexRound {
  readonly name: string;
  readonly numAdded: number;
  readonly numDeleted: number;
  readonly numSkipped: number;
  readonly notModified: number;
  readonly answer: string;
}

/** Where the record manager lives (LangChain's indexing guide uses Postgres). */
const PG_URL = process.env.RAGFRESH_EXAMPLE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * LangChain's indexing guide, as written — `index()` with a record manager, a
 * `RecursiveCharacterTextSplitter`, LangChain's `Chroma` class, an LCEL chain — on ragfresh's
 * loader and retriever. The loader is composed from the same settings a `ragfresh refresh` of the
 * source reads (`RagfreshLoader.compose`: fetch rules, page limits, classify, deletion policy,
 * embedding space). Offline: the "web" is the simulated one, Chroma a local server, the record
 * manager Postgres on loopback. Three runs: cold; one page down (503) with
 * `cleanup: 'full'` (nothing deleted, the prompt says STALE); the page back.
 */
export async function runExample(log: (line: string) => void = console.log): Promise<IndexRound[]> {
  const sim = await startSimWeb({ seed: 5, hosts: 1, pagesPerHost: 6 });
  const chroma = await startLocalChroma();
  const dir = await mkdtemp(join(tmpdir(), 'ragfresh-langchain-index-'));
  const host = sim.hosts()[0]!;
  // What a ragfresh.config.ts says, resolved as the CLI resolves it: the source and how to fetch it.
  const settings = resolveEngineSettings({
    sources: [
      {
        id: 'docs',
        sitemaps: [`${sim.origin(host)}/sitemap.xml`],
        everyMs: 3_600_000,
        identity: { mode: 'normalize' },
      },
    ],
    fetch: {
      userAgent: 'ragfresh-example/0.1 (+https://example.org/bot)',
      robots: true,
      minIntervalMs: 0,
      allowPrivateNetworks: true, // the simulated web lives on 127.0.0.1
    },
  });
  const embeddings = new HashingEmbeddings(); // offline, lexical; use a real model in production
  // ragfresh's state (validators, statuses, last good copies): one SQLite file. The composed
  // loader closes it with itself.
  const state = await openStateStore(`sqlite:${join(dir, 'state.sqlite')}`);
  // The tutorial's loader + splitter, swapped for RagfreshLoader with the same splitter.
  const loader = await RagfreshLoader.compose(
    settings,
    { state, embeddings },
    {
      sourceId: 'docs',
      splitter: new RecursiveCharacterTextSplitter({ chunkSize: 1000, chunkOverlap: 200 }),
    },
  );
  const recordManager = new PostgresRecordManager(`ragfresh-example-${process.pid}-${Date.now()}`, {
    postgresConnectionOptions: { connectionString: PG_URL },
    tableName: 'ragfresh_example_records',
  });
  try {
    await recordManager.createSchema();
    const url = new URL(chroma.url);
    const vectorStore = new Chroma(embeddings, {
      collectionName: 'docs',
      clientParams: { host: url.hostname, port: Number(url.port) },
    });

    const retriever = new RagfreshRetriever({ vectorStore, view: 'index', state, k: 3 });
    const chain = RunnableSequence.from([
      { context: retriever.pipe(formatEvidence), question: new RunnablePassthrough() },
      ragPromptTemplate('Answer from the evidence. Cite its Source.'),
      // Stands in for a chat model (no network, no key): prints the evidence headers it got.
      RunnableLambda.from((prompt: ChatPromptValue) =>
        prompt.messages
          .map((m) => String(m.content))
          .join('\n')
          .split('\n')
          .filter((l) => /^(Source|Fetched|Section|STALE)/.test(l))
          .join('\n'),
      ),
    ]);

    const page = sim.urls(host)[2]!;
    const question = sim.pageFacts(page).sections[0]!.phrase;
    const rounds: IndexRound[] = [];
    const round = async (name: string) => {
      const r = await index({
        docsSource: loader,
        recordManager,
        vectorStore,
        options: { cleanup: 'full', sourceIdKey: 'source' },
      });
      const answer = await chain.invoke(question);
      const done = { name, ...r, notModified: loader.lastReport!.counts['not-modified'], answer };
      rounds.push(done);
      log(
        `${name}: added ${r.numAdded}, deleted ${r.numDeleted}, skipped ${r.numSkipped}, 304s ${done.notModified}`,
      );
      log(answer.replace(/^/gm, '  '));
    };

    await round('cold');
    sim.mutate(page, 'outage', { retryAfter: null });
    await round('page down (503)');
    sim.mutate(page, 'restore');
    await round('page back');
    return rounds;
  } finally {
    await recordManager.end();
    await loader.close();
    await chroma.stop();
    await sim.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runExample();
}
