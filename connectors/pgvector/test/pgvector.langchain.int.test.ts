import { PGVectorStore } from '@langchain/community/vectorstores/pgvector';
import { Embeddings } from '@langchain/core/embeddings';
import { FIELDS, type StoreTarget } from '@ragfresh/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, tableForNamespace } from '../src/fixture.js';
import {
  LANGCHAIN_CURRENT_FILTER,
  langchainEpochFilter,
  type PgVectorConnector,
  readPgVectorEpoch,
} from '../src/index.js';
import { DIMS, makeVersion, namespace, vectorFor } from './chunks.js';

/** Every text embeds to the same vector: the filters, not the similarity, decide what comes back. */
class ConstantEmbeddings extends Embeddings {
  constructor() {
    super({});
  }
  async embedDocuments(texts: string[]): Promise<number[][]> {
    return texts.map(() => vectorFor(1));
  }
  async embedQuery(): Promise<number[]> {
    return vectorFor(1);
  }
}

let target: StoreTarget;
let pool: pg.Pool;
let connector: PgVectorConnector;
let store: PGVectorStore;
let table: string;

const epochFilter = langchainEpochFilter;

beforeAll(async () => {
  target = await fixture.start();
  const ns = namespace('langchain');
  table = tableForNamespace(ns);
  connector = (await target.createConnector(ns)) as PgVectorConnector;
  await connector.open({ dimensions: DIMS });
  // Publish through the epoch protocol: a:v1 at epoch 1, a:v2 replaces it at epoch 2 (shorter),
  // b:v1 at epoch 1, and a:v3 staged for epoch 3 but not published.
  await connector.upsert([
    ...makeVersion('s:a', 'v1', 5, { from: 1 }),
    ...makeVersion('s:b', 'v1', 2, { from: 1 }),
  ]);
  await connector.advanceEpoch(0, 1);
  await connector.patchValidity('s:a', 'v1', { current: true });
  await connector.patchValidity('s:b', 'v1', { current: true });
  await connector.upsert(makeVersion('s:a', 'v2', 3, { from: 2 }));
  await connector.patchValidity('s:a', 'v1', { to: 2 });
  await connector.advanceEpoch(1, 2);
  await connector.patchValidityMany([
    { documentId: 's:a', versionId: 'v2', patch: { current: true } },
    { documentId: 's:a', versionId: 'v1', patch: { current: false } },
  ]);
  await connector.upsert(makeVersion('s:a', 'v3', 4, { from: 3 }));

  pool = new pg.Pool({
    connectionString: String(target.connectorSpec(ns).options.connectionString),
    max: 2,
  });
  // Defaults on purpose: LangChain's own column names (id, text, metadata, embedding) and cosine distance.
  store = new PGVectorStore(new ConstantEmbeddings(), { pool, tableName: table });
});

afterAll(async () => {
  await connector?.close();
  await pool?.end();
  await target?.stop();
});

const versions = (docs: { metadata: Record<string, unknown> }[]) =>
  docs.map((d) => `${d.metadata[FIELDS.documentId]}/${d.metadata[FIELDS.versionId]}`).sort();

describe("LangChain's PGVectorStore reading the connector's table", () => {
  it('with { rf_current: true } returns only current chunks (the overlap-free flag view)', async () => {
    expect(LANGCHAIN_CURRENT_FILTER).toEqual({ [FIELDS.current]: true });
    const docs = await store.similaritySearch('anything', 100, LANGCHAIN_CURRENT_FILTER);
    expect(versions(docs)).toEqual([...Array(2).fill('s:b/v1'), ...Array(3).fill('s:a/v2')].sort());
    for (const d of docs) {
      expect(d.pageContent).toMatch(/^text of /);
      expect(d.metadata[FIELDS.current]).toBe(true);
    }
  });

  it('with the epoch range filter returns exactly the snapshot of that epoch', async () => {
    expect(langchainEpochFilter(7)).toEqual({ [FIELDS.from]: { lte: 7 }, [FIELDS.to]: { gt: 7 } });
    const e = await readPgVectorEpoch(pool, table);
    expect(e).toBe(2);
    expect(versions(await store.similaritySearch('q', 100, epochFilter(e)))).toEqual(
      [...Array(2).fill('s:b/v1'), ...Array(3).fill('s:a/v2')].sort(),
    );
    // The previous snapshot is still addressable until retirement.
    expect(versions(await store.similaritySearch('q', 100, epochFilter(1)))).toEqual(
      [...Array(2).fill('s:b/v1'), ...Array(5).fill('s:a/v1')].sort(),
    );
    // Staged v3 (rf_from 3) is invisible to both views.
    const all = await store.similaritySearch('q', 100);
    expect(all.filter((d) => d.metadata[FIELDS.versionId] === 'v3')).toHaveLength(4);
  });

  it('combines with document filters and returns ids, text and similarity as LangChain defines them', async () => {
    const hits = await store.similaritySearchVectorWithScore(vectorFor(2), 10, {
      ...epochFilter(2),
      [FIELDS.documentId]: 's:a',
    });
    expect(hits.map(([d]) => d.metadata[FIELDS.ordinal])).toContain(1);
    expect(hits).toHaveLength(3);
    for (const [d, distance] of hits) {
      expect(d.metadata[FIELDS.versionId]).toBe('v2');
      expect(d.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(distance).toBeGreaterThanOrEqual(0);
    }
    // Same chunks, same order as the connector's own epoch query.
    const ours = await connector.query(vectorFor(2), 10, {
      view: { kind: 'epoch', epoch: 2 },
      documentId: 's:a',
    });
    expect(hits.map(([d]) => d.id)).toEqual(ours.map((h) => h.id));
    hits.forEach(([, distance], i) => {
      expect(1 - distance).toBeCloseTo(ours[i]!.score, 5);
    });
  });

  it('a table created by PGVectorStore.initialize (empty) is adopted by the connector', async () => {
    const ns = namespace('lcinit');
    const t = tableForNamespace(ns);
    const created = await PGVectorStore.initialize(new ConstantEmbeddings(), {
      pool,
      tableName: t,
      dimensions: DIMS,
    });
    const c = (await target.createConnector(ns)) as PgVectorConnector;
    await c.open({ dimensions: DIMS });
    await c.upsert(makeVersion('s:x', 'v1', 2, { current: true }));
    const docs = await created.similaritySearch('q', 10, { [FIELDS.current]: true });
    expect(versions(docs)).toEqual(['s:x/v1', 's:x/v1']);
    await c.close();
    created.client?.release();
  });
});
