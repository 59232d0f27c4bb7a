import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { expectCode, makeChunks } from '@ragfresh/conformance/testing';
import { FIELDS } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LibSqlConnector } from '../src/index.js';

const DIMS = 8;
let dir: string;
let url: string;
let n = 0;
const table = () => `t${++n}`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ragfresh-libsql-int-'));
  url = `file:${join(dir, 'index.db')}`;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('libsql connector: configuration', () => {
  it.each([
    'libsql://db-org.turso.io',
    'https://db.example.org',
    'http://127.0.0.1:8080',
    'wss://db.example.org',
  ])('refuses the remote URL %s with NOT_SUPPORTED until it is tested', (remote) => {
    expect(() => new LibSqlConnector({ url: remote, table: 'docs' })).toThrow(
      expect.objectContaining({ code: 'NOT_SUPPORTED' }),
    );
  });

  it('refuses non-file URLs, bad table names and approximate search without the index', () => {
    for (const options of [
      { url: '/tmp/x.db', table: 'docs' },
      { url, table: '1docs' },
      { url, table: 'docs; DROP TABLE x' },
      { url, table: 'docs', search: 'approximate' as const, vectorIndex: false },
    ]) {
      expect(() => new LibSqlConnector(options)).toThrow(
        expect.objectContaining({ code: 'INVALID_CONFIG' }),
      );
    }
  });
});

describe('libsql connector: layout and data', () => {
  it('reopening with other dimensions is DIMENSION_MISMATCH, and the table is untouched', async () => {
    const t = table();
    const a = new LibSqlConnector({ url, table: t });
    await a.open({ dimensions: DIMS });
    await a.upsert(
      makeChunks({ documentId: 's:a', versionId: 'v1', count: 2, from: 1, dims: DIMS }),
    );
    await a.close();
    const b = new LibSqlConnector({ url, table: t });
    await expectCode(b.open({ dimensions: 12 }), 'DIMENSION_MISMATCH');
    const c = new LibSqlConnector({ url, table: t });
    await c.open({ dimensions: DIMS });
    expect(await c.countChunks('s:a', 'v1')).toBe(2);
    await c.close();
  });

  it("refuses a table holding rows LangChain's addDocuments wrote (no rf_doc) with FOREIGN_DATA", async () => {
    const t = table();
    const a = new LibSqlConnector({ url, table: t });
    await a.open({ dimensions: DIMS });
    await a.close();
    const db = createClient({ url });
    await db.execute({
      sql: `INSERT INTO ${t} (id, content, metadata, embedding) VALUES ('x', 'text', '{"source":"x"}', vector32(?))`,
      args: [JSON.stringify(new Array(DIMS).fill(0.5))],
    });
    db.close();
    await expectCode(
      new LibSqlConnector({ url, table: t }).open({ dimensions: DIMS }),
      'FOREIGN_DATA',
    );
  });

  it('patches keep every other field and its type (a boolean stays a boolean, not 1)', async () => {
    const c = new LibSqlConnector({ url, table: table() });
    await c.open({ dimensions: DIMS });
    const chunks = makeChunks({
      documentId: 's:a',
      versionId: 'v1',
      count: 3,
      from: 1,
      dims: DIMS,
      extra: { flag: false, ratio: 0.25, heading_path: '["A","B"]' },
    });
    await c.upsert(chunks);
    await c.patchValidityMany([
      { documentId: 's:a', versionId: 'v1', patch: { to: 4, current: true } },
    ]);
    const listed = await c.listChunks('s:a', 'v1', { withEmbeddings: true });
    expect(listed.map((l) => l.metadata)).toEqual(
      chunks.map((ch) => ({ ...ch.metadata, [FIELDS.to]: 4, [FIELDS.current]: true })),
    );
    expect(typeof listed[0]!.metadata[FIELDS.current]).toBe('boolean');
    expect(typeof listed[0]!.metadata.flag).toBe('boolean');
    listed.forEach((l, i) => {
      l.embedding!.forEach((x, j) => {
        expect(x).toBeCloseTo(chunks[i]!.embedding[j]!, 6);
      });
    });
    await c.close();
  });

  it('batch hooks: one call counts, lists and deletes many versions exactly', async () => {
    const c = new LibSqlConnector({ url, table: table() });
    await c.open({ dimensions: DIMS });
    const refs = [...Array(120).keys()].map((i) => ({ documentId: `s:d${i}`, versionId: 'v1' }));
    await c.upsert(
      refs.flatMap((r, i) => makeChunks({ ...r, count: (i % 3) + 1, from: 1, dims: DIMS })),
    );
    const counts = await c.countChunksMany([...refs, { documentId: 's:none', versionId: 'v1' }]);
    expect(counts).toEqual([...refs.map((_, i) => (i % 3) + 1), 0]);
    const listed = await c.listChunksMany(refs.slice(0, 5).map((r) => r.documentId));
    expect([...listed.values()].map((l) => l.length)).toEqual([1, 2, 3, 1, 2]);
    await c.deleteVersions(refs.slice(0, 100));
    expect((await c.countChunksMany(refs)).reduce((a, b) => a + b, 0)).toBe(
      refs.slice(100).reduce((s, _, i) => s + ((i + 100) % 3) + 1, 0),
    );
    await c.close();
  });

  it('advanceEpoch is a compare-and-set between two connectors on the same file', async () => {
    const t = table();
    const a = new LibSqlConnector({ url, table: t });
    const b = new LibSqlConnector({ url, table: t });
    await a.open({ dimensions: DIMS });
    await b.open({ dimensions: DIMS });
    const results = await Promise.allSettled([a.advanceEpoch(0, 1), b.advanceEpoch(0, 1)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason.code).toBe('EPOCH_CONFLICT');
    expect(await b.readEpoch()).toBe(1);
    await a.close();
    await b.close();
  });
  it('an epoch table from before the fence gains it; a stale fence writes nothing, in the transaction', async () => {
    const t = table();
    // The layout before the fence column existed.
    const raw = createClient({ url });
    await raw.execute(
      `CREATE TABLE "${t}_rf_epoch" (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), epoch INTEGER NOT NULL, format TEXT NOT NULL)`,
    );
    await raw.execute(`INSERT INTO "${t}_rf_epoch" VALUES (1, 3, 'ragfresh-libsql/1')`);
    const a = new LibSqlConnector({ url, table: t });
    await a.open({ dimensions: DIMS });
    expect([await a.readEpoch(), await a.readFence()]).toEqual([3, 0]);
    const b = new LibSqlConnector({ url, table: t });
    await b.open({ dimensions: DIMS });
    await b.raiseFence(7);
    await expectCode(a.raiseFence(6), 'LEASE_LOST');
    const chunks = makeChunks({
      documentId: 's:f',
      versionId: 'v1',
      count: 3,
      from: 4,
      dims: DIMS,
    });
    await expectCode(a.upsert(chunks, { fence: 6 }), 'LEASE_LOST');
    await expectCode(a.advanceEpoch(3, 4, { fence: 6 }), 'LEASE_LOST');
    expect(await b.countChunks('s:f', 'v1')).toBe(0);
    expect(await b.readEpoch()).toBe(3);
    // Control: the held fence writes and moves, and the epoch row keeps it.
    await a.upsert(chunks, { fence: 7 });
    await a.advanceEpoch(3, 4, { fence: 7 });
    expect(await b.countChunks('s:f', 'v1')).toBe(3);
    const row = await raw.execute(`SELECT epoch, fence FROM "${t}_rf_epoch"`);
    expect([row.rows[0]?.epoch, row.rows[0]?.fence]).toEqual([4, 7]);
    raw.close();
    await a.close();
    await b.close();
  });
});
