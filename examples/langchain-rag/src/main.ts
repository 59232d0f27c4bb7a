import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StringOutputParser } from '@langchain/core/output_parsers';
import { RunnablePassthrough, RunnableSequence } from '@langchain/core/runnables';
import { createLanceDbConnector } from '@ragfresh/connector-lancedb';
import { HashingEmbeddings, InMemoryStateStore, Publisher } from '@ragfresh/core';
import { Fetcher } from '@ragfresh/fetch';
import {
  formatEvidence,
  RagfreshLoader,
  RagfreshRetriever,
  ragPromptTemplate,
  toPublishCandidate,
} from '@ragfresh/langchain';
import { startSimWeb } from '@ragfresh/sim';
import { EchoEvidenceChatModel } from './echo-model.js';

export interface ExampleResult {
  readonly answers: readonly string[];
  readonly output: string;
}

/**
 * An existing LangChain RAG app, adopting ragfresh: the loader feeds ragfresh's publisher
 * (LanceDB, snapshot epochs), the retriever reads only the current view, and the prompt gets
 * provenance headers at assembly time, with page text fenced off as untrusted evidence.
 * Everything runs offline: the "web" is the simulated one on loopback.
 */
export async function runExample(
  log: (line: string) => void = console.log,
): Promise<ExampleResult> {
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    log(line);
  };
  const sim = await startSimWeb({ seed: 3, hosts: 1, pagesPerHost: 8 });
  const dir = await mkdtemp(join(tmpdir(), 'ragfresh-langchain-example-'));
  const fetcher = new Fetcher({
    userAgent: 'ragfresh-example/0.1 (+https://example.org/bot)',
    network: { allowPrivateNetworks: true }, // the simulated web lives on 127.0.0.1
    minIntervalMs: 0,
  });
  const embeddings = new HashingEmbeddings(); // offline, lexical; use a real model in production
  const connector = createLanceDbConnector({ path: join(dir, 'lancedb'), table: 'docs' });
  const state = new InMemoryStateStore();
  let publisher: Publisher | undefined;
  try {
    await connector.open({ dimensions: embeddings.dimensions });
    publisher = await Publisher.open({ connector, state });
    const host = sim.hosts()[0]!;

    // 1. Load the site through ragfresh (robots, politeness, extraction, stable ids) and publish.
    // The loader's own state (validators, last good copies); the publisher keeps its own.
    const loaderState = new InMemoryStateStore();
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      sitemaps: [`${sim.origin(host)}/sitemap.xml`],
      state: loaderState,
    });
    const refresh = async (only?: readonly string[]) => {
      const source =
        only === undefined
          ? loader
          : new RagfreshLoader({ fetcher, sourceId: 'docs', urls: only, state: loaderState });
      const candidates = [];
      for await (const page of source.pages())
        candidates.push(await toPublishCandidate(page, embeddings));
      const report = await publisher!.publish(candidates);
      const published = report.documents.filter((d) => d.outcome === 'published').length;
      say(`published ${published} page(s), epoch ${report.epoch}`);
    };
    await refresh();

    // 2. The app's retrieval chain: retriever -> formatEvidence -> prompt -> model.
    const retriever = RagfreshRetriever.fromConnector({ connector, embeddings, state, k: 3 });
    const chain = RunnableSequence.from([
      { context: retriever.pipe(formatEvidence), question: new RunnablePassthrough() },
      ragPromptTemplate(
        'You answer questions about the documentation. Cite the Source of every claim.',
      ),
      new EchoEvidenceChatModel({}),
      new StringOutputParser(),
    ]);

    const url = sim.urls(host)[2]!;
    const question = sim.pageFacts(url).sections[0]!.phrase;
    const answers: string[] = [];
    answers.push(await chain.invoke(question));
    say(answers[0]!);

    // 3. The page changes; ragfresh republishes it atomically and the same chain sees the new text.
    sim.mutate(url, 'edit', { section: 0 });
    await refresh([url]);
    const changed = sim.pageFacts(url).sections[0]!.phrase;
    answers.push(await chain.invoke(changed));
    say(answers[1]!);
    return { answers, output: lines.join('\n') };
  } finally {
    await publisher?.close();
    await connector.close();
    await state.close();
    await fetcher.close();
    await sim.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runExample();
}
