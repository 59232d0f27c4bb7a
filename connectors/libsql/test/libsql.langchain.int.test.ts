import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LibSQLVectorStore } from '@langchain/community/vectorstores/libsql';
import { Embeddings } from '@langchain/core/embeddings';
import { type Client, createClient } from '@libsql/client';
import { makeChunks, vector } from '@ragfresh/conformance/testing';
import { FIELDS, type StoredChunk } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LANGCHAIN_CURRENT_FILTER,
  LibSqlConnector,
  langchainEpochFilter,
  readLibSqlEpoch,
} from '../src/index.js';

const DIMS = 8;
const DOCS = 30;

/** Queries go in as vectors; the embeddings object is never asked for anything. */
class UnusedEmbeddings extends Embeddings {
  constructor() {
    super({});
  }
  async embedDocuments(): Promise<number[][]> {
    throw new Error('not used');
  }
  async embedQuery(): Promise<number[]> {
    throw new Error('not used');
  }
}

// 30 documents of 3 chunks. v1 is published at epoch 1; v2 at epoch 2 reuses v1's vectors,
// which is what ragfresh does for every unchanged chunk of a new version. v3x is staged for
// epoch 3 with vectors of its own and never published.
const doc = (i: number) => `s:doc-${String(i).padStart(2, '0')}`;
const version = (i: number, v: string, from: number): StoredChunk[] =>
  makeChunks({ documentId: doc(i), versionId: v, count: 3, from, dims: DIMS }).map(
    (c, ordinal) => ({
      ...c,
      embedding: vector(i * 3 + ordinal + (v === 'v3x' ? 1000 : 0), DIMS),
    }),
  );

let dir: string;
let connector: LibSqlConnector;
let db: Client;
let store: LibSQLVectorStore;
const v2: StoredChunk[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ragfresh-libsql-lc-'));
  const url = `file:${join(dir, 'index.db')}`;
  connector = new LibSqlConnector({ url, table: 'docs', vectorIndex: true });
  await connector.open({ dimensions: DIMS });
  const docs = [...Array(DOCS).keys()];
  await connector.upsert(docs.flatMap((i) => version(i, 'v1', 1)));
  await connector.advanceEpoch(0, 1);
  await connector.patchValidityMany(
    docs.map((i) => ({ documentId: doc(i), versionId: 'v1', patch: { current: true } })),
  );
  for (const i of docs) v2.push(...version(i, 'v2', 2));
  await connector.upsert(v2);
  await connector.patchValidityMany(
    docs.map((i) => ({ documentId: doc(i), versionId: 'v1', patch: { to: 2 } })),
  );
  await connector.advanceEpoch(1, 2);
  await connector.patchValidityMany(
    docs.flatMap((i) => [
      { documentId: doc(i), versionId: 'v2', patch: { current: true } },
      { documentId: doc(i), versionId: 'v1', patch: { current: false } },
    ]),
  );
  await connector.upsert(docs.flatMap((i) => version(i, 'v3x', 3)));
  db = createClient({ url });
  store = new LibSQLVectorStore(new UnusedEmbeddings(), { db, table: 'docs' });
});

afterAll(async () => {
  db?.close();
  await connector?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** For every current chunk: does a LangChain read with its own vector return it? */
async function langchainRecall(
  filter: LibSQLVectorStore['FilterType'],
  k: number,
): Promise<{ found: number; leaked: number }> {
  let found = 0;
  let leaked = 0;
  for (const chunk of v2) {
    const hits = await store.similaritySearchVectorWithScore([...chunk.embedding], k, filter);
    leaked += hits.filter(([d]) => d.metadata[FIELDS.versionId] !== 'v2').length;
    if (hits.some(([d]) => d.metadata[FIELDS.chunkId] === chunk.id)) found += 1;
  }
  return { found, leaked };
}

describe("LangChain's LibSQLVectorStore reads the connector's table", () => {
  it('reads the epoch from the store and returns only current chunks with either filter', async () => {
    const epoch = await readLibSqlEpoch(db, 'docs');
    expect(epoch).toBe(2);
    // k = 10, not 1: the retired v1 copy has the same vector, may be vector_top_k's nearest row,
    // and LangChain filters only after vector_top_k (next test).
    const hits = await store.similaritySearchVectorWithScore(
      [...v2[0]!.embedding],
      10,
      langchainEpochFilter(epoch),
    );
    const hit = hits.find(([d]) => d.metadata[FIELDS.chunkId] === v2[0]!.id);
    expect(hit).toBeDefined();
    const [doc0, score] = hit!;
    // LangChain returns rowid as id, the text as pageContent, the parsed metadata (booleans
    // stay booleans: the connector writes JSON true, never 1) and the cosine distance.
    expect(doc0.pageContent).toBe(v2[0]!.text);
    expect(doc0.metadata).toEqual({
      [FIELDS.chunkId]: v2[0]!.id,
      ...v2[0]!.metadata,
      [FIELDS.current]: true,
    });
    expect(typeof doc0.id).toBe('string');
    expect(score).toBeCloseTo(0, 5);
    for (const filter of [langchainEpochFilter(epoch), LANGCHAIN_CURRENT_FILTER]) {
      const { leaked } = await langchainRecall(filter, 4);
      expect(leaked).toBe(0);
    }
  });

  it('filters after vector_top_k: a filtered read returns fewer than k rows', async () => {
    // 270 stored rows, 90 current. LangChain appends the filter to the JOIN on vector_top_k's
    // k nearest rows, so it filters those k rows instead of finding k matching rows.
    const hits = await store.similaritySearchVectorWithScore(
      [...v2[0]!.embedding],
      6,
      langchainEpochFilter(2),
    );
    expect(hits.length).toBeLessThan(6);
    const exact = await connector.searchCurrent([...v2[0]!.embedding], 6);
    expect(exact).toHaveLength(6);
    // With k = 1 the nearest row is often the retired v1 copy of the same vector, and the
    // filter then leaves nothing: a current chunk asked for by its own vector is not returned.
    const k1 = await langchainRecall(langchainEpochFilter(2), 1);
    expect(k1.leaked).toBe(0);
    expect(k1.found).toBeLessThan(v2.length);
    let exactFound = 0;
    for (const chunk of v2) {
      const [top] = await connector.searchCurrent([...chunk.embedding], 1);
      if (top?.id === chunk.id) exactFound += 1;
    }
    expect(exactFound).toBe(v2.length);
    console.log(
      `LangChain k=1 reads with the epoch filter while v1 is stored: ${k1.found}/${v2.length} current chunks found by their own vector; exact connector search ${exactFound}/${v2.length}`,
    );
  });

  it('loses current rows once the retired duplicates of their vectors are deleted (vector_top_k)', async () => {
    // With v1 still stored (grace period), every v2 chunk is found by its own vector.
    const before = await langchainRecall(langchainEpochFilter(2), 10);
    expect(before).toEqual({ found: v2.length, leaked: 0 });
    // Retire v1 (what the Publisher does after the grace period) and unstage v3x.
    const docs = [...Array(DOCS).keys()];
    await connector.deleteVersions(docs.map((i) => ({ documentId: doc(i), versionId: 'v1' })));
    await connector.deleteVersions(docs.map((i) => ({ documentId: doc(i), versionId: 'v3x' })));
    const after = await langchainRecall(langchainEpochFilter(2), 10);
    expect(after.leaked).toBe(0);
    // The libsql DiskANN index (libsql 0.5.29) no longer reaches some rows whose vector equalled
    // a deleted row's. Recorded, not hoped for: if this starts finding all of them, update README.
    expect(after.found).toBeLessThan(v2.length);
    // The connector's default exact search still finds every one of them.
    let exactFound = 0;
    for (const chunk of v2) {
      const hits = await connector.searchCurrent([...chunk.embedding], 3);
      if (hits.some((h) => h.id === chunk.id)) exactFound += 1;
    }
    expect(exactFound).toBe(v2.length);
    console.log(
      `LangChain recall of current chunks by their own vector: ${before.found}/${v2.length} before retiring the duplicates, ${after.found}/${v2.length} after; exact connector search ${exactFound}/${v2.length}`,
    );
  });
});
