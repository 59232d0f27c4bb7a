import type { DocumentInterface } from '@langchain/core/documents';
import { Document } from '@langchain/core/documents';
import type { Embeddings } from '@langchain/core/embeddings';
import type {
  ListKeyOptions,
  RecordManagerInterface,
  UpdateOptions,
} from '@langchain/core/indexing';
import { VectorStore } from '@langchain/core/vectorstores';
import type { Connector } from '@ragfresh/core';
import { Fetcher } from '@ragfresh/fetch';

/** A host's not-found page, answered 200 at every unknown path (a soft 404 host). */
export const NOT_FOUND_PAGE = `<!DOCTYPE html><html><head><title>Page not found | Acme</title></head><body>
<nav><a href="/">Acme</a></nav><main><h1>Page not found</h1>
<p>Sorry, we could not find the page you were looking for. It may have been moved or deleted.</p>
<p>Try the search, or go back to the <a href="/">home page</a>.</p></main></body></html>`;

export function simFetcher(): Fetcher {
  return new Fetcher({
    userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
    network: { allowPrivateNetworks: true },
    minIntervalMs: 0,
    perHostConcurrency: 4,
    robots: false,
    retry: { maxAttempts: 1 },
  });
}

interface Row {
  readonly doc: DocumentInterface;
  readonly vector: number[];
}

/** A small LangChain vector store keyed by the ids `index()` passes; filter is a predicate. */
export class IdVectorStore extends VectorStore {
  declare FilterType: (doc: DocumentInterface) => boolean;
  readonly rows = new Map<string, Row>();

  _vectorstoreType(): string {
    return 'id-memory';
  }

  async addVectors(
    vectors: number[][],
    documents: DocumentInterface[],
    options?: { ids?: string[] },
  ): Promise<string[]> {
    const ids = documents.map((d, i) => options?.ids?.[i] ?? d.id ?? `auto-${this.rows.size + i}`);
    documents.forEach((doc, i) => {
      this.rows.set(ids[i]!, { doc, vector: vectors[i]! });
    });
    return ids;
  }

  async addDocuments(
    documents: DocumentInterface[],
    options?: { ids?: string[] },
  ): Promise<string[]> {
    const vectors = await this.embeddings.embedDocuments(documents.map((d) => d.pageContent));
    return this.addVectors(vectors, documents, options);
  }

  override async delete(params: { ids: string[] }): Promise<void> {
    for (const id of params.ids) this.rows.delete(id);
  }

  async similaritySearchVectorWithScore(
    query: number[],
    k: number,
    filter?: this['FilterType'],
  ): Promise<[DocumentInterface, number][]> {
    const scored: [DocumentInterface, number][] = [];
    for (const { doc, vector } of this.rows.values()) {
      if (filter !== undefined && !filter(doc)) continue;
      scored.push([doc, dot(query, vector)]);
    }
    return scored.sort((a, b) => b[1] - a[1]).slice(0, k);
  }
}

function dot(a: readonly number[], b: readonly number[]): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/**
 * A LangChain view over a ragfresh connector (any validity): every chunk is a candidate, the
 * filter predicate decides. Stands in for a store's own LangChain class reading the same index.
 */
export class ConnectorVectorStore extends VectorStore {
  declare FilterType: (doc: DocumentInterface) => boolean;
  constructor(
    readonly connector: Connector,
    embeddings: Embeddings,
  ) {
    super(embeddings, {});
  }
  _vectorstoreType(): string {
    return 'ragfresh-connector';
  }
  async addVectors(): Promise<void> {
    throw new Error('read-only');
  }
  async addDocuments(): Promise<void> {
    throw new Error('read-only');
  }
  async similaritySearchVectorWithScore(
    query: number[],
    k: number,
    filter?: this['FilterType'],
  ): Promise<[DocumentInterface, number][]> {
    const hits = await this.connector.query(query, 100_000, { view: { kind: 'all' } });
    const out: [DocumentInterface, number][] = [];
    for (const h of hits) {
      const doc = new Document({ id: h.id, pageContent: h.text, metadata: { ...h.metadata } });
      if (filter !== undefined && !filter(doc)) continue;
      out.push([doc, h.score]);
      if (out.length >= k) break;
    }
    return out;
  }
}

/** The small RecordManagerInterface: keys with update time and group id. */
export class MemoryRecordManager implements RecordManagerInterface {
  readonly records = new Map<string, { updatedAt: number; groupId: string | null }>();
  #clock = 0;
  async createSchema(): Promise<void> {}
  async getTime(): Promise<number> {
    // Strictly increasing, so "before this run" is exact even within one millisecond.
    this.#clock = Math.max(this.#clock + 1, Date.now());
    return this.#clock;
  }
  async update(keys: string[], options: UpdateOptions = {}): Promise<void> {
    const now = await this.getTime();
    if (options.timeAtLeast !== undefined && now < options.timeAtLeast) {
      throw new Error(`time ${now} is before timeAtLeast ${options.timeAtLeast}`);
    }
    const groups = options.groupIds;
    if (groups !== undefined && groups.length !== keys.length)
      throw new Error('keys/groupIds length mismatch');
    keys.forEach((key, i) => {
      this.records.set(key, {
        updatedAt: now,
        groupId: groups?.[i] ?? this.records.get(key)?.groupId ?? null,
      });
    });
  }
  async exists(keys: string[]): Promise<boolean[]> {
    return keys.map((k) => this.records.has(k));
  }
  async listKeys(options: ListKeyOptions = {}): Promise<string[]> {
    const out: string[] = [];
    for (const [key, r] of this.records) {
      if (options.before !== undefined && !(r.updatedAt < options.before)) continue;
      if (options.after !== undefined && !(r.updatedAt > options.after)) continue;
      if (options.groupIds !== undefined && !options.groupIds.includes(r.groupId)) continue;
      out.push(key);
      if (options.limit !== undefined && out.length >= options.limit) break;
    }
    return out;
  }
  async deleteKeys(keys: string[]): Promise<void> {
    for (const k of keys) this.records.delete(k);
  }
}
