// The conventional LangChain.js pipeline of the freshness bench, in the bench process: a loader
// (global fetch, linkedom + Readability + Turndown, MarkdownTextSplitter 1000/200, as in the
// refresh bench) feeding LangChain's `index()` with an in-memory record manager into an
// in-memory vector store, the same counting hashing embedder as ragfresh. Three ways to run it:
// cleanup `incremental`, cleanup `full`, and `incremental` with a volatile `fetched_at` in the
// metadata (a common loader habit). The loader skips what is not a 200 or where Readability
// finds no article, and indexes everything else under the requested URL.
import { MemoryVectorStore } from '@langchain/classic/vectorstores/memory';
import { InMemoryRecordManager } from '@langchain/community/indexes/memory';
import { Document, type DocumentInterface } from '@langchain/core/documents';
import { index } from '@langchain/core/indexing';
import { MarkdownTextSplitter } from '@langchain/textsplitters';
import { Readability } from '@mozilla/readability';
import { CountingEmbeddings } from '@ragfresh/core';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';
import { BENCH_DIMENSIONS } from './counting-embeddings.ts';
import type { ViewChunk } from './freshness-audit.ts';

export type LangChainMode = 'incremental' | 'full' | 'fetched_at';

const CONCURRENCY = 16;

/**
 * `MemoryVectorStore` drops the ids `index()` passes and has no `delete` (its cleanup needs
 * one); this adds both, and tells the bench's concurrent reader after every write.
 */
class ObservedMemoryVectorStore extends MemoryVectorStore {
  afterWrite: () => void = () => {};

  override async addDocuments(
    documents: DocumentInterface[],
    options?: { ids?: string[] },
  ): Promise<void> {
    const vectors = await this.embeddings.embedDocuments(documents.map((d) => d.pageContent));
    const withIds = documents.map(
      (d, i) => new Document({ ...d, ...(options?.ids?.[i] ? { id: options.ids[i] } : {}) }),
    );
    await this.addVectors(vectors, withIds);
    this.afterWrite();
  }

  override async delete(params: { ids: string[] }): Promise<void> {
    const gone = new Set(params.ids);
    this.memoryVectors = this.memoryVectors.filter((v) => v.id === undefined || !gone.has(v.id));
    this.afterWrite();
  }
}

export class LangChainPipeline {
  readonly embeddings = new CountingEmbeddings({ dimensions: BENCH_DIMENSIONS });
  readonly #store = new ObservedMemoryVectorStore(this.embeddings);
  readonly #records = new InMemoryRecordManager();
  readonly #turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' });
  readonly #splitter = new MarkdownTextSplitter({ chunkSize: 1000, chunkOverlap: 200 });
  readonly mode: LangChainMode;

  constructor(mode: LangChainMode) {
    this.mode = mode;
  }

  set afterWrite(fn: () => void) {
    this.#store.afterWrite = fn;
  }

  /** What a reader of the store retrieves: every stored chunk (there is no other view). */
  view(): ViewChunk[] {
    return this.#store.memoryVectors.map((v) => ({
      url: String(v.metadata.source),
      text: v.content,
    }));
  }

  async #load(url: string): Promise<Document[]> {
    let res: Response;
    try {
      res = await fetch(url);
    } catch {
      return [];
    }
    if (res.status !== 200) {
      await res.arrayBuffer().catch(() => undefined);
      return [];
    }
    const { document } = parseHTML(await res.text());
    const article = new Readability(document as never).parse();
    if (!article?.content) return [];
    const metadata: Record<string, string> = { source: url, title: article.title ?? '' };
    if (this.mode === 'fetched_at') metadata.fetched_at = new Date().toISOString();
    return this.#splitter.splitDocuments([
      new Document({ pageContent: this.#turndown.turndown(article.content), metadata }),
    ]);
  }

  /** One round: load `urls` (what the crawl reached), then one `index()` call. */
  async round(urls: readonly string[]): Promise<void> {
    const perUrl: Document[][] = [];
    let next = 0;
    const worker = async () => {
      while (next < urls.length) {
        const i = next++;
        perUrl[i] = await this.#load(urls[i]!);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    await index({
      // In URL order, so the batches index() cuts are the same in every run.
      docsSource: perUrl.flat(),
      recordManager: this.#records,
      vectorStore: this.#store,
      options: {
        cleanup: this.mode === 'full' ? 'full' : 'incremental',
        sourceIdKey: 'source',
      },
    });
  }
}
