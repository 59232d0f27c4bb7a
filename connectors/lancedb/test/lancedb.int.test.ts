import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { FIELDS, OPEN_EPOCH, type StoredChunk } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLanceDbConnector,
  epochViewWhere,
  LanceDbConnector,
  lanceWhere,
  sqlString,
} from '../src/index.js';
import { DIMS, expectCode, makeChunks, uniqueName, vector } from './chunks.js';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ragfresh-lancedb-test-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const open: LanceDbConnector[] = [];
afterAll(async () => {
  for (const c of open) await c.close();
});

async function openConnector(
  table = uniqueName('rf'),
  options: { dims?: number; maxWriteBatch?: number } = {},
) {
  const c = new LanceDbConnector({
    path: dir,
    table,
    ...(options.maxWriteBatch === undefined ? {} : { maxWriteBatch: options.maxWriteBatch }),
  });
  await c.open({ dimensions: options.dims ?? DIMS });
  open.push(c);
  return c;
}

describe('lancedb connector against the embedded engine', () => {
  it('declares its guarantees', () => {
    const c = createLanceDbConnector({ path: dir, table: 'x' });
    expect(c.capabilities).toMatchObject({
      store: 'lancedb',
      promotion: 'snapshot',
      flagPromotion: 'overlap',
      visibility: { mode: 'immediate' },
      epochInStore: true,
      idForm: 'chunk-id',
      scan: true,
    });
  });

  it('scans every chunk exactly once over several pages, also when commits and a compaction land between pages', async () => {
    const c = await openConnector();
    const written = [
      ...makeChunks({ documentId: "s:it's", versionId: 'v1', from: 1, count: 23, current: true }),
      ...makeChunks({ documentId: 's:b', versionId: 'v1', from: 1, to: 2, count: 11 }),
      ...makeChunks({ documentId: 's:b', versionId: 'v2', from: 3, count: 9 }),
    ];
    // Several commits, so the table has several fragments for the scan to cross.
    for (let i = 0; i < written.length; i += 10) await c.upsert(written.slice(i, i + 10));
    const pages: string[][] = [];
    for await (const page of c.scanChunks({ pageSize: 7 }))
      pages.push(page.map((chunk) => chunk.id));
    expect(pages.length).toBe(Math.ceil(written.length / 7));
    expect(pages.every((p) => p.length <= 7)).toBe(true);
    const seen = pages.flat();
    expect(seen.length).toBe(written.length);
    expect(new Set(seen)).toEqual(new Set(written.map((w) => w.id)));

    // A new chunk and a compaction between pages: every chunk that was there is still seen once.
    const late = makeChunks({ documentId: 's:late', versionId: 'v1', from: 4, count: 2 });
    const during: string[] = [];
    let paged = 0;
    for await (const page of c.scanChunks({ pageSize: 7 })) {
      during.push(...page.map((chunk) => chunk.id));
      if (++paged === 2) {
        await c.upsert(late);
        await c.maintain();
      }
    }
    expect(during.filter((id) => !late.some((l) => l.id === id)).sort()).toEqual(
      written.map((w) => w.id).sort(),
    );
    expect(new Set(during).size).toBe(during.length);
    // Validity comes from the columns, as listChunks reads it.
    const [b1] = (await c.listChunks('s:b', 'v1')).map((x) => x.metadata[FIELDS.to]);
    const scannedB1 = [];
    for await (const page of c.scanChunks())
      for (const chunk of page)
        if (
          chunk.metadata[FIELDS.documentId] === 's:b' &&
          chunk.metadata[FIELDS.versionId] === 'v1'
        )
          scannedB1.push(chunk.metadata[FIELDS.to]);
    expect(new Set(scannedB1)).toEqual(new Set([b1]));
    expect(scannedB1).toHaveLength(11);
  });

  it('escapes SQL strings so ids with quotes, colons and hashes match exactly', async () => {
    expect(sqlString("it's")).toBe("'it''s'");
    expect(lanceWhere({ documentId: "s:o'k", versionId: 'v#1' })).toBe(
      "rf_doc = 's:o''k' AND rf_version = 'v#1'",
    );
    expect(epochViewWhere(3)).toBe('rf_from <= 3 AND rf_to > 3');
    const c = await openConnector();
    const tricky = makeChunks({
      documentId: "src:it's \\ %_ doc",
      versionId: 'v1',
      count: 2,
      from: 1,
    });
    const plain = makeChunks({
      documentId: 'src:its \\ %_ doc',
      versionId: 'v1',
      count: 1,
      from: 1,
    });
    await c.upsert([...tricky, ...plain]);
    expect(await c.countChunks("src:it's \\ %_ doc", 'v1')).toBe(2);
    expect((await c.listChunks("src:it's \\ %_ doc")).map((l) => l.id)).toEqual(
      tricky.map((t) => t.id),
    );
    await c.deleteDocuments(["src:it's \\ %_ doc"]);
    expect(await c.countChunks('src:its \\ %_ doc', 'v1')).toBe(1);
  });

  it('creates a marked table with text, vector, metadata and rf_* columns', async () => {
    const c = await openConnector();
    const db = await lancedb.connect(dir);
    const t = await db.openTable(c.tableName);
    const schema = await t.schema();
    expect(schema.fields.map((f) => f.name)).toEqual([
      'id',
      'text',
      'vector',
      'metadata',
      'rf_doc',
      'rf_version',
      'rf_source',
      'rf_from',
      'rf_to',
      'rf_current',
      'rf_access',
    ]);
    expect(schema.metadata.get('rf_schema')).toBe('ragfresh/1');
    expect(await db.tableNames()).toContain(c.epochTableName);
    await openConnector(c.tableName);
    t.close();
    db.close();
  });

  it('a table from before access scope gains rf_access at open; its old rows match no reader', async () => {
    const c = await openConnector();
    await c.upsert(
      makeChunks({ documentId: 'old:doc', versionId: 'v1', count: 3, from: 1, current: true }),
    );
    await c.advanceEpoch(0, 1);
    const name = c.tableName;
    await c.close();
    const db = await lancedb.connect(dir);
    const t = await db.openTable(name);
    await t.dropColumns(['rf_access']);
    t.close();
    db.close();
    const reopened = await openConnector(name);
    expect(await reopened.searchCurrent(vector(0), 10)).toHaveLength(0);
    expect(await reopened.query(vector(0), 10, { view: { kind: 'epoch', epoch: 1 } })).toHaveLength(
      3,
    );
    await reopened.upsert(
      makeChunks({ documentId: 'new:doc', versionId: 'v1', count: 2, from: 1, current: true }),
    );
    const hits = await reopened.searchCurrent(vector(0), 10);
    expect(hits.map((h) => h.metadata[FIELDS.documentId])).toEqual(['new:doc', 'new:doc']);
  });

  it('an epoch table from before the record named its space gains the column at open; the next move names it', async () => {
    const c = await openConnector();
    await c.advanceEpoch(0, 1, { space: 'es_before' });
    expect(await c.readEpochSpace()).toBe('es_before');
    const { tableName, epochTableName } = c;
    await c.close();
    const db = await lancedb.connect(dir);
    const t = await db.openTable(epochTableName);
    await t.dropColumns(['space']);
    t.close();
    db.close();
    const reopened = await openConnector(tableName);
    expect(reopened.capabilities.epochSpace).toBe(true);
    expect(await reopened.readEpoch()).toBe(1);
    expect(await reopened.readEpochSpace()).toBeUndefined();
    await reopened.raiseFence(3);
    await reopened.advanceEpoch(1, 2, { fence: 3, space: 'es_after' });
    // A move naming no space keeps the one the record names.
    await reopened.advanceEpoch(2, 3, { fence: 3 });
    const reader = await openConnector(tableName);
    expect(await reader.readEpoch()).toBe(3);
    expect(await reader.readEpochSpace()).toBe('es_after');
    expect(await reader.readFence()).toBe(3);
    await expect(reopened.advanceEpoch(3, 4, { space: "es_x'; --" })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('upsert is idempotent and overwrites by id', async () => {
    const c = await openConnector();
    const chunks = makeChunks({ documentId: 'src:doc1', versionId: 'v1', count: 5, from: 1 });
    await c.upsert(chunks);
    await c.upsert(chunks);
    expect(await c.countChunks('src:doc1', 'v1')).toBe(5);
    await c.upsert(chunks.map((ch, i) => (i === 2 ? { ...ch, text: 'rewritten' } : ch)));
    const listed = await c.listChunks('src:doc1', 'v1');
    expect(listed.map((l) => l.id)).toEqual(chunks.map((ch) => ch.id));
    expect(listed[2]!.text).toBe('rewritten');
    expect(listed[0]!.metadata).toEqual(chunks[0]!.metadata);
  });

  it('patches validity without touching other metadata', async () => {
    const c = await openConnector();
    const chunks = makeChunks({
      documentId: 'src:doc1',
      versionId: 'v1',
      count: 3,
      from: 1,
      extra: { custom_key: 'keep me', n: 7 },
    });
    const other = makeChunks({ documentId: 'src:doc1', versionId: 'v2', count: 2, from: 2 });
    await c.upsert([...chunks, ...other]);
    await c.patchValidity('src:doc1', 'v1', { to: 2 });
    await c.patchValidity('src:doc1', 'v1', { current: true });
    const listed = await c.listChunks('src:doc1', 'v1', { withEmbeddings: true });
    for (const [i, l] of listed.entries()) {
      expect(l.metadata).toEqual({
        ...chunks[i]!.metadata,
        [FIELDS.to]: 2,
        [FIELDS.current]: true,
      });
      expect(l.text).toBe(chunks[i]!.text);
      l.embedding!.forEach((x, j) => {
        expect(x).toBeCloseTo(chunks[i]!.embedding[j]!, 5);
      });
    }
    expect((await c.listChunks('src:doc1', 'v2')).map((l) => l.metadata)).toEqual(
      other.map((o) => o.metadata),
    );
  });

  it('keeps the published epoch in the store with compare-and-set', async () => {
    const c = await openConnector();
    expect(await c.readEpoch()).toBe(0);
    await c.advanceEpoch(0, 1);
    expect(await c.readEpoch()).toBe(1);
    await expectCode(c.advanceEpoch(0, 2), 'EPOCH_CONFLICT');
    expect(await c.readEpoch()).toBe(1);
    const other = await openConnector(c.tableName);
    expect(await other.readEpoch()).toBe(1);
    await other.advanceEpoch(1, 2);
    // readConsistencyInterval 0: the first connection sees the other's commit at once.
    expect(await c.readEpoch()).toBe(2);
  });

  it('lets exactly one of several concurrent publishers advance the epoch', async () => {
    const name = uniqueName('rf');
    const publishers = await Promise.all(Array.from({ length: 6 }, () => openConnector(name)));
    for (let round = 0; round < 3; round++) {
      const results = await Promise.allSettled(
        publishers.map((p) => p.advanceEpoch(round, round + 1)),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(
        results.filter(
          (r) =>
            r.status === 'rejected' && (r.reason as { code?: string }).code === 'EPOCH_CONFLICT',
        ),
      ).toHaveLength(publishers.length - 1);
      expect(await publishers[0]!.readEpoch()).toBe(round + 1);
    }
  });

  it('filters list, count and query by view, document, version and source', async () => {
    const c = await openConnector();
    const v1 = makeChunks({
      documentId: 'a:doc',
      versionId: 'v1',
      count: 4,
      from: 1,
      current: true,
    });
    const b = makeChunks({
      documentId: 'b:doc',
      versionId: 'v1',
      count: 3,
      from: 1,
      current: true,
    });
    await c.upsert([...v1, ...b]);
    await c.advanceEpoch(0, 1);
    const v2 = makeChunks({ documentId: 'a:doc', versionId: 'v2', count: 2, from: 2 });
    await c.upsert(v2);
    await c.patchValidity('a:doc', 'v1', { to: 2 });
    const epoch1 = await c.query(vector(0), 20, { view: { kind: 'epoch', epoch: 1 } });
    expect(new Set(epoch1.map((h) => h.metadata[FIELDS.versionId]))).toEqual(new Set(['v1']));
    expect(epoch1).toHaveLength(7);
    const epoch2 = await c.query(vector(0), 20, {
      view: { kind: 'epoch', epoch: 2 },
      documentId: 'a:doc',
    });
    expect(epoch2.map((h) => h.id).sort()).toEqual(v2.map((x) => x.id).sort());
    expect(
      (await c.searchCurrent(vector(0), 20, { documentId: 'a:doc' })).every(
        (h) => h.metadata[FIELDS.versionId] === 'v1',
      ),
    ).toBe(true);
    await c.advanceEpoch(1, 2);
    expect(
      (await c.searchCurrent(vector(0), 20, { documentId: 'a:doc' })).map(
        (h) => h.metadata[FIELDS.versionId],
      ),
    ).toEqual(['v2', 'v2']);
    expect(await c.query(vector(0), 20, { view: { kind: 'flag' } })).toHaveLength(7);
    expect(await c.query(vector(0), 50, { view: { kind: 'all' } })).toHaveLength(9);
    const bySource = await c.query(vector(0), 50, { view: { kind: 'all' }, sourceId: 'b' });
    expect(bySource.map((h) => h.id).sort()).toEqual(b.map((x) => x.id).sort());
    expect(
      await c.query(vector(0), 50, { view: { kind: 'all' }, documentId: 'a:doc', versionId: 'v2' }),
    ).toHaveLength(2);
    const own = await c.query(v1[3]!.embedding, 3, { view: { kind: 'all' } });
    expect(own[0]!.id).toBe(v1[3]!.id);
    expect(own[0]!.score).toBeCloseTo(1, 4);
    expect(own[0]!.score).toBeGreaterThan(own[1]!.score);
    expect(await c.countChunks('a:doc', 'v1')).toBe(4);
    expect(await c.countChunks('a:doc', 'v9')).toBe(0);
    expect(await c.listChunks('a:doc')).toHaveLength(6);
  });

  it('deletes a version or whole documents; absent ones are a no-op', async () => {
    const c = await openConnector();
    await c.upsert([
      ...makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 3, from: 1 }),
      ...makeChunks({ documentId: 'a:doc', versionId: 'v2', count: 3, from: 2 }),
      ...makeChunks({ documentId: 'b:doc', versionId: 'v1', count: 2, from: 1 }),
      ...makeChunks({ documentId: 'c:doc', versionId: 'v1', count: 2, from: 1 }),
    ]);
    await c.deleteVersion('a:doc', 'v1');
    expect(await c.countChunks('a:doc', 'v1')).toBe(0);
    expect(await c.countChunks('a:doc', 'v2')).toBe(3);
    await c.deleteVersion('a:doc', 'v1');
    await c.deleteVersion('zzz:doc', 'v1');
    await c.deleteDocuments(['a:doc', 'b:doc', 'missing:doc']);
    expect(await c.listChunks('a:doc')).toEqual([]);
    expect(await c.listChunks('b:doc')).toEqual([]);
    expect(await c.countChunks('c:doc', 'v1')).toBe(2);
  });

  it('writes more than maxWriteBatch chunks in several commits', async () => {
    const c = await openConnector(uniqueName('rf'), { maxWriteBatch: 500 });
    const chunks = makeChunks({
      documentId: 'big:doc',
      versionId: 'v1',
      count: 1700,
      from: 1,
      text: (i) => `t${i}`,
    });
    await c.upsert(chunks);
    expect(await c.countChunks('big:doc', 'v1')).toBe(1700);
  });

  it('stores and lists a 1,000-chunk document in ordinal order', async () => {
    const c = await openConnector();
    const chunks = makeChunks({ documentId: 'long:doc', versionId: 'v1', count: 1000, from: 1 });
    await c.upsert([...chunks].reverse());
    const listed = await c.listChunks('long:doc', 'v1');
    expect(listed).toHaveLength(1000);
    expect(listed.map((l) => l.metadata[FIELDS.ordinal])).toEqual(chunks.map((_, i) => i));
    await c.patchValidity('long:doc', 'v1', { current: true, to: 9 });
    const after = await c.listChunks('long:doc', 'v1');
    expect(
      after.every((l) => l.metadata[FIELDS.current] === true && l.metadata[FIELDS.to] === 9),
    ).toBe(true);
  });

  it('round-trips Unicode and long text and metadata, including keys it has no column for', async () => {
    const c = await openConnector();
    const long = 'Ünïcödé 漢字 עברית 👩‍👩‍👧‍👦 e\u0301 '.repeat(4000);
    const chunks = makeChunks({
      documentId: 'uni:dokümänt-日本',
      versionId: 'v1',
      count: 2,
      from: 1,
      text: (i) => (i === 0 ? long : "emoji 🚀 and 'quotes' and \\ backslash\nnewline\ttab"),
      extra: {
        title: '标题 — «Titel» ‹x› 🎉',
        heading_path: JSON.stringify(['A', 'B', 'Ç']),
        long_field: 'x'.repeat(20_000),
        'key with spaces & ünïcode': 'ok',
        future_key: 'added by a later schema',
        zero: 0,
        negative: -12.5,
        big: 2 ** 52,
        flag: false,
      },
    });
    await c.upsert(chunks);
    const listed = await c.listChunks('uni:dokümänt-日本', 'v1');
    expect(listed.map((l) => l.text)).toEqual(chunks.map((ch) => ch.text));
    expect(listed.map((l) => l.metadata)).toEqual(chunks.map((ch) => ch.metadata));
  });

  it('keeps OPEN_EPOCH as an integer bound readers can compare', async () => {
    const c = await openConnector();
    await c.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 1, from: 0 }));
    expect(
      await c.query(vector(0), 1, { view: { kind: 'epoch', epoch: OPEN_EPOCH - 1 } }),
    ).toHaveLength(1);
    expect(
      await c.query(vector(0), 1, { view: { kind: 'epoch', epoch: OPEN_EPOCH } }),
    ).toHaveLength(0);
  });
});

describe('a plain LanceDB reader with the documented filter', () => {
  it('sees only the current view, from the store alone', async () => {
    const c = await openConnector();
    await c.upsert([
      ...makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 3, from: 1, current: true }),
      ...makeChunks({ documentId: 'b:doc', versionId: 'v1', count: 2, from: 1, current: true }),
    ]);
    await c.advanceEpoch(0, 1);
    await c.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v2', count: 2, from: 2 }));
    await c.patchValidity('a:doc', 'v1', { to: 2 });

    const db = await lancedb.connect(dir, { readConsistencyInterval: 0 });
    const epochTable = await db.openTable(`${c.tableName}__rf_epoch`);
    const table = await db.openTable(c.tableName);
    const read = async () => {
      const [row] = await epochTable.query().where("id = 'epoch'").toArray();
      const hits = await table
        .vectorSearch(vector(0))
        .distanceType('cosine')
        .where(epochViewWhere(Number(row.epoch)))
        .limit(20)
        .toArray();
      return hits
        .map(
          (h) =>
            `${h.rf_doc}@${h.rf_version}:${(JSON.parse(h.metadata) as Record<string, unknown>).title}`,
        )
        .sort();
    };
    expect(await read()).toEqual([
      ...Array(3).fill('a:doc@v1:Title of a:doc'),
      ...Array(2).fill('b:doc@v1:Title of b:doc'),
    ]);
    await c.advanceEpoch(1, 2);
    expect(await read()).toEqual([
      ...Array(2).fill('a:doc@v2:Title of a:doc'),
      ...Array(2).fill('b:doc@v1:Title of b:doc'),
    ]);
    const flagged = await table.query().where('rf_current = true').select(['id']).toArray();
    expect(flagged).toHaveLength(5);
    epochTable.close();
    table.close();
    db.close();
  });
});

describe('lancedb connector refuses bad input with coded errors and keeps stored data', () => {
  it('DIMENSION_MISMATCH when opening an existing table with other dimensions', async () => {
    const c = await openConnector();
    await c.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 3, from: 1 }));
    const wrong = new LanceDbConnector({ path: dir, table: c.tableName });
    const err = await expectCode(wrong.open({ dimensions: DIMS + 1 }), 'DIMENSION_MISMATCH');
    expect(err.message).toContain('[lancedb]');
    expect(err.message).toContain(c.tableName);
    expect(await c.countChunks('a:doc', 'v1')).toBe(3);
  });

  it('STORE_UNREACHABLE when the path cannot hold a database', async () => {
    const file = join(dir, `plain-file-${Date.now()}`);
    writeFileSync(file, 'not a directory');
    const c = new LanceDbConnector({ path: join(file, 'db'), table: 'chunks' });
    const err = await expectCode(c.open({ dimensions: DIMS }), 'STORE_UNREACHABLE');
    expect(err.message).toContain(file);
  });

  it('FOREIGN_DATA for a table not created by ragfresh', async () => {
    const name = uniqueName('foreign');
    const db = await lancedb.connect(dir);
    const theirs = await db.createTable(name, [
      { vector: vector(1), text: 'their text', source: 'them' },
    ]);
    const c = new LanceDbConnector({ path: dir, table: name });
    const err = await expectCode(c.open({ dimensions: DIMS }), 'FOREIGN_DATA');
    expect(err.message).toContain(name);
    const rows = await theirs.query().toArray();
    expect(rows.map((r) => r.text)).toEqual(['their text']);
    expect((await theirs.schema()).fields.map((f) => f.name)).toEqual(['vector', 'text', 'source']);
    theirs.close();
    db.close();
  });

  it('FOREIGN_DATA when the epoch table name is taken', async () => {
    const name = uniqueName('rf');
    const db = await lancedb.connect(dir);
    const squatter = await db.createTable(`${name}__rf_epoch`, [
      { id: 'epoch', epoch: 99, note: 'mine' },
    ]);
    const c = new LanceDbConnector({ path: dir, table: name });
    await expectCode(c.open({ dimensions: DIMS }), 'FOREIGN_DATA');
    expect(await squatter.countRows()).toBe(1);
    squatter.close();
    db.close();
  });

  it('INVALID_METADATA for metadata the columns cannot hold, before anything is written', async () => {
    const c = await openConnector();
    const good = makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 2, from: 1 });
    await c.upsert(good);
    const surrogate = makeChunks({
      documentId: 'a:doc',
      versionId: 'v2',
      count: 3,
      from: 2,
      extra: { title: 'broken \uDC00 half' },
    });
    expect((await expectCode(c.upsert(surrogate), 'INVALID_METADATA')).message).toContain('title');
    const fractional = makeChunks({ documentId: 'a:doc', versionId: 'v3', count: 2, from: 2 }).map(
      (ch) => ({
        ...ch,
        metadata: { ...ch.metadata, [FIELDS.from]: 2.5 },
      }),
    );
    expect((await expectCode(c.upsert(fractional), 'INVALID_METADATA')).message).toContain(
      'integer',
    );
    const nested = makeChunks({ documentId: 'a:doc', versionId: 'v4', count: 1, from: 2 }).map(
      (ch) => ({ ...ch, metadata: { ...ch.metadata, nested: { a: 1 } } }) as unknown as StoredChunk,
    );
    await expectCode(c.upsert(nested), 'INVALID_METADATA');
    for (const v of ['v2', 'v3', 'v4']) expect(await c.countChunks('a:doc', v)).toBe(0);
    expect((await c.listChunks('a:doc', 'v1')).map((l) => l.metadata)).toEqual(
      good.map((g) => g.metadata),
    );
  });

  it('INVALID_CONFIG for a table name LanceDB refuses', () => {
    expect(() => new LanceDbConnector({ path: dir, table: 'a/b' })).toThrow(/table name/);
    expect(() => new LanceDbConnector({ path: '', table: 'ok' })).toThrow(/path/);
  });
});
