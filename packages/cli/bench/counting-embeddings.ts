import { Embeddings } from '@langchain/core/embeddings';
import { HashingEmbeddings } from '@ragfresh/core';

/** Vector size of every embedding in the bench (both pipelines, the same hashing embedder). */
export const BENCH_DIMENSIONS = 256;

/**
 * The offline hashing embedder, counting the texts it is asked to embed. Both pipelines get
 * one, so "embeddings computed" is counted the same way for each and by neither pipeline.
 * `embedQuery` (the runtime's dimension probe, smoke queries) is counted apart.
 */
export class CountingEmbeddings extends Embeddings {
  readonly #inner = new HashingEmbeddings({ dimensions: BENCH_DIMENSIONS });
  documentsEmbedded = 0;
  queriesEmbedded = 0;

  constructor() {
    super({});
  }

  async embedDocuments(documents: string[]): Promise<number[][]> {
    this.documentsEmbedded += documents.length;
    return this.#inner.embedDocuments(documents);
  }

  async embedQuery(document: string): Promise<number[]> {
    this.queriesEmbedded += 1;
    return this.#inner.embedQuery(document);
  }
}
