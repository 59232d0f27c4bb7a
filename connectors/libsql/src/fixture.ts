import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoreFixture, StoreTarget } from '@ragfresh/core';
import {
  createLibSqlConnector,
  LANGCHAIN_CURRENT_FILTER,
  type LibSqlConnectorOptions,
  langchainEpochFilter,
} from './index.js';

/** What the conformance case `langchain-reader` calls (`LangChainReaderTarget` in @ragfresh/conformance). */
export interface LibSqlLangChainReader {
  search(
    vector: readonly number[],
    k: number,
    view: { readonly kind: 'epoch'; readonly epoch: number } | { readonly kind: 'flag' },
  ): Promise<Array<{ pageContent: string; metadata: Record<string, unknown> }>>;
  close(): Promise<void>;
}

/**
 * LangChain's `LibSQLVectorStore` opened on a namespace's table with its own client, as an
 * application opens it, filtering with `langchainEpochFilter` / `LANGCHAIN_CURRENT_FILTER`.
 * Loaded on use: `@langchain/community` and `@langchain/core` are needed only for this.
 */
async function openLangChainReader(url: string, table: string): Promise<LibSqlLangChainReader> {
  let LibSQLVectorStore: typeof import('@langchain/community/vectorstores/libsql').LibSQLVectorStore;
  try {
    ({ LibSQLVectorStore } = await import('@langchain/community/vectorstores/libsql'));
  } catch (err) {
    throw new Error(
      `the langchain-reader case needs @langchain/community and @langchain/core installed beside @ragfresh/connector-libsql (npm i -D @langchain/community @langchain/core): ${(err as Error).message}`,
    );
  }
  const { createClient } = await import('@libsql/client');
  const db = createClient({ url });
  const unused = async (): Promise<never> => {
    throw new Error('the reader passes vectors; nothing may embed text');
  };
  const embeddings = {
    embedDocuments: unused,
    embedQuery: unused,
  } as unknown as ConstructorParameters<typeof LibSQLVectorStore>[0];
  const store = new LibSQLVectorStore(embeddings, { db, table });
  return {
    async search(vector, k, view) {
      const filter =
        view.kind === 'epoch' ? langchainEpochFilter(view.epoch) : LANGCHAIN_CURRENT_FILTER;
      const hits = await store.similaritySearchVectorWithScore([...vector], k, filter);
      return hits.map(([d]) => ({ pageContent: d.pageContent, metadata: d.metadata }));
    },
    async close() {
      db.close();
    },
  };
}

/** Table names: `rf_` + the namespace with anything but letters, digits and `_` replaced. */
export function tableForNamespace(namespace: string): string {
  return `rf_${namespace.replace(/[^A-Za-z0-9_]/g, '_')}`.slice(0, 48);
}

/**
 * Embedded target: one libSQL database file in a temp dir, one table per namespace.
 * `start({ url })` takes another `file:` URL; `options.search: 'approximate'` is not a start
 * option — build a fixture with `libSqlFixture({ search: 'approximate' })` for that. With the
 * vector index (the default fixture has it), the target also opens LangChain's class on a
 * namespace (`langchainReader`), for the suite's `langchain-reader` case.
 */
export function libSqlFixture(
  extra: Pick<LibSqlConnectorOptions, 'search' | 'vectorIndex'> = {},
): StoreFixture {
  return {
    store: 'libsql',
    async start(
      options,
    ): Promise<
      StoreTarget & { langchainReader(namespace: string): Promise<LibSqlLangChainReader> }
    > {
      const dir =
        options?.url === undefined ? mkdtempSync(join(tmpdir(), 'ragfresh-libsql-')) : undefined;
      const url = options?.url ?? `file:${join(dir as string, 'index.db')}`;
      const spec = (ns: string): LibSqlConnectorOptions => ({
        url,
        table: tableForNamespace(ns),
        ...extra,
      });
      const search = extra.search ?? 'exact';
      const index = extra.vectorIndex ?? search === 'approximate';
      return {
        kind: options?.url === undefined ? 'embedded' : 'url',
        description: `embedded libSQL (@libsql/client 0.17, libsql 0.5, SQLite 3.45.1) at ${url}, ${search} search${index ? ', vector index (LangChain-readable)' : ''}`,
        async createConnector(ns) {
          return createLibSqlConnector(spec(ns));
        },
        connectorSpec(ns) {
          return {
            // Resolves to dist/index.js both from src/ (under vitest) and from dist/.
            module: new URL('../dist/index.js', import.meta.url).href,
            exportName: 'createLibSqlConnector',
            options: spec(ns),
          };
        },
        langchainReader(ns) {
          return openLangChainReader(url, tableForNamespace(ns));
        },
        async stop() {
          if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

/**
 * The default target: exact search (the connector's default) with the vector index LangChain's
 * class needs, so the suite also measures what `LibSQLVectorStore` reads.
 */
export const fixture: StoreFixture = libSqlFixture({ vectorIndex: true });
