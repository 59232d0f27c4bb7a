// One round of the conventional LangChain.js pipeline the refresh bench compares ragfresh with,
// in its own process: read the sitemaps, fetch every page (global fetch, 32 in flight), parse
// with linkedom, Readability, Turndown, split with MarkdownTextSplitter, then LangChain's
// `index()` with an in-memory record manager (incremental cleanup by source URL) into an
// in-memory vector store, with the same hashing embedder as ragfresh, counted. Fetches are
// unconditional: such a pipeline re-downloads and re-extracts everything each round and relies
// on the record manager's hashes to skip re-embedding.
//
// The record manager and vector store are in memory; between rounds (processes) they are
// saved to a file with v8.serialize. Loading and saving are outside the measured section,
// as opening LanceDB and SQLite are for ragfresh.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { deserialize, serialize } from 'node:v8';
import { gunzipSync } from 'node:zlib';
import { MemoryVectorStore } from '@langchain/classic/vectorstores/memory';
import { InMemoryRecordManager } from '@langchain/community/indexes/memory';
import { Document, type DocumentInterface } from '@langchain/core/documents';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import { index } from '@langchain/core/indexing';
import { MarkdownTextSplitter } from '@langchain/textsplitters';
import { Readability } from '@mozilla/readability';
import { CountingEmbeddings } from '@ragfresh/core';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';
import { addChunk, type ChunkSnapshot } from './changed-chunks.ts';
import { BENCH_DIMENSIONS } from './counting-embeddings.ts';
import {
  type PhaseCost,
  peakRssMiB,
  phaseInput,
  startPhase,
  writePhaseResult,
} from './phase-process.ts';

export interface LangChainPhaseInput {
  readonly statePath: string;
  readonly sitemaps: readonly string[];
  /** MarkdownTextSplitter chunk size in characters (the bench uses the usual 1000 / 200). */
  readonly chunkSize: number;
  readonly chunkOverlap: number;
}

export interface LangChainPhaseResult extends PhaseCost {
  readonly pages: number;
  /** Pages Readability returned nothing for, or that did not answer 200. */
  readonly failedPages: number;
  readonly chunks: number;
  readonly embedded: number;
  readonly indexed: { added: number; updated: number; skipped: number; deleted: number };
  readonly snapshot: ChunkSnapshot;
}

const CONCURRENCY = 32;
/** Pages per `index()` call; incremental cleanup only looks at sources in the call. */
const PAGES_PER_INDEX = 50;

type Vector = MemoryVectorStore['memoryVectors'][number];

/**
 * `MemoryVectorStore` drops the ids `index()` passes and has no `delete`, which `index()`'s
 * cleanup needs; this adds both and nothing else.
 */
class IndexableMemoryVectorStore extends MemoryVectorStore {
  override async addDocuments(
    documents: DocumentInterface[],
    options?: { ids?: string[] },
  ): Promise<void> {
    const vectors = await this.embeddings.embedDocuments(documents.map((d) => d.pageContent));
    const withIds = documents.map(
      (d, i) => new Document({ ...d, ...(options?.ids?.[i] ? { id: options.ids[i] } : {}) }),
    );
    await this.addVectors(vectors, withIds);
  }

  override async delete(params: { ids: string[] }): Promise<void> {
    const gone = new Set(params.ids);
    this.memoryVectors = this.memoryVectors.filter((v) => v.id === undefined || !gone.has(v.id));
  }
}

interface SavedState {
  readonly records: Array<[string, { updatedAt: number; groupId: string | null }]>;
  readonly vectors: Array<Omit<Vector, 'embedding'> & { embedding: Float32Array }>;
}

function load(
  statePath: string,
  embeddings: EmbeddingsInterface,
): {
  recordManager: InMemoryRecordManager;
  vectorStore: IndexableMemoryVectorStore;
} {
  const recordManager = new InMemoryRecordManager();
  const vectorStore = new IndexableMemoryVectorStore(embeddings);
  if (existsSync(statePath)) {
    const saved = deserialize(readFileSync(statePath)) as SavedState;
    recordManager.records = new Map(saved.records);
    vectorStore.memoryVectors = saved.vectors.map((v) => ({
      ...v,
      embedding: Array.from(v.embedding),
    }));
  }
  return { recordManager, vectorStore };
}

function save(
  statePath: string,
  recordManager: InMemoryRecordManager,
  vectorStore: IndexableMemoryVectorStore,
): void {
  const saved: SavedState = {
    records: [...recordManager.records],
    vectors: vectorStore.memoryVectors.map((v) => ({
      ...v,
      embedding: Float32Array.from(v.embedding),
    })),
  };
  writeFileSync(statePath, serialize(saved));
}

/** Page URLs of the sitemaps, following sitemap indexes and gzip-compressed children. */
async function sitemapUrls(sitemaps: readonly string[]): Promise<string[]> {
  const urls: string[] = [];
  for (const sitemap of sitemaps) {
    const body = Buffer.from(await (await fetch(sitemap)).arrayBuffer());
    const xml = (body[0] === 0x1f && body[1] === 0x8b ? gunzipSync(body) : body).toString('utf8');
    const locs = [...xml.matchAll(/<loc>\s*([^<\s]+)\s*<\/loc>/g)].map((m) => m[1]!);
    if (xml.includes('<sitemapindex')) urls.push(...(await sitemapUrls(locs)));
    else urls.push(...locs);
  }
  return urls;
}

async function run(input: LangChainPhaseInput): Promise<LangChainPhaseResult> {
  const embeddings = new CountingEmbeddings({ dimensions: BENCH_DIMENSIONS });
  const { recordManager, vectorStore } = load(input.statePath, embeddings);
  const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' });
  const splitter = new MarkdownTextSplitter({
    chunkSize: input.chunkSize,
    chunkOverlap: input.chunkOverlap,
  });
  const indexed = { added: 0, updated: 0, skipped: 0, deleted: 0 };
  let failedPages = 0;
  let pending: Document[] = [];
  let pendingPages = 0;
  let indexing: Promise<void> = Promise.resolve();
  const flush = () => {
    const docs = pending;
    pending = [];
    pendingPages = 0;
    indexing = indexing.then(async () => {
      const r = await index({
        docsSource: docs,
        recordManager,
        vectorStore,
        options: { cleanup: 'incremental', sourceIdKey: 'source' },
      });
      indexed.added += r.numAdded;
      indexed.updated += r.numUpdated;
      indexed.skipped += r.numSkipped;
      indexed.deleted += r.numDeleted;
    });
  };

  const stop = startPhase();
  const urls = await sitemapUrls(input.sitemaps);
  let next = 0;
  const worker = async () => {
    while (next < urls.length) {
      const url = urls[next++]!;
      // A conventional loader retries a dropped connection (the sim closes idle keep-alive
      // sockets); without this one reset ends the whole phase.
      let res: Response | undefined;
      for (let attempt = 1; res === undefined; attempt++) {
        try {
          res = await fetch(url);
        } catch (err) {
          if (attempt >= 3) throw err;
        }
      }
      if (res.status !== 200) {
        await res.arrayBuffer();
        failedPages += 1;
        continue;
      }
      const html = await res.text();
      const { document } = parseHTML(html);
      const article = new Readability(document as never).parse();
      if (!article?.content) {
        failedPages += 1;
        continue;
      }
      const markdown = turndown.turndown(article.content);
      const chunks = await splitter.splitDocuments([
        new Document({ pageContent: markdown, metadata: { source: url, title: article.title } }),
      ]);
      pending.push(...chunks);
      pendingPages += 1;
      if (pendingPages >= PAGES_PER_INDEX) flush();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  flush();
  await indexing;
  const cost = stop();

  const snapshot: Record<string, string[]> = {};
  for (const v of vectorStore.memoryVectors)
    addChunk(snapshot, String(v.metadata.source), v.content);
  const result: LangChainPhaseResult = {
    ...cost,
    peakRssMiB: peakRssMiB(),
    pages: urls.length,
    failedPages,
    chunks: vectorStore.memoryVectors.length,
    embedded: embeddings.texts,
    indexed,
    snapshot,
  };
  save(input.statePath, recordManager, vectorStore);
  return result;
}

writePhaseResult(await run(phaseInput<LangChainPhaseInput>()));
