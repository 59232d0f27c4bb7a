import {
  chunkUuid,
  FIELDS,
  isRagfreshError,
  matchesFilter,
  OPEN_EPOCH,
  type QueryFilter,
  type StoreTarget,
  type ValidityPatch,
} from '@ragfresh/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, tableForNamespace } from '../src/fixture.js';
import { createPgVectorConnector, type PgVectorConnector } from '../src/index.js';
import { DIMS, makeChunk, makeVersion, namespace, vectorFor } from './chunks.js';

let target: StoreTarget;
let url: string;
let sql: pg.Pool;
const open: PgVectorConnector[] = [];

async function connector(ns: string, dims = DIMS): Promise<PgVectorConnector> {
  const c = (await target.createConnector(ns)) as PgVectorConnector;
  open.push(c);
  await c.open({ dimensions: dims });
  return c;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isRagfreshError(err)) return err.code;
    throw err;
  }
  throw new Error('expected a RagfreshError, got success');
}

beforeAll(async () => {
  target = await fixture.start();
  url = String(target.connectorSpec('probe').options.connectionString);
  sql = new pg.Pool({ connectionString: url, max: 2 });
});

afterAll(async () => {
  for (const c of open) await c.close();
  await sql?.end();
  await target?.stop();
});

describe('pgvector fixture', () => {
  it('serves real pgvector from PGlite over the wire protocol on loopback', async () => {
    expect(target.kind).toBe('local-server');
    expect(target.description).toMatch(
      /PGlite 0\.5\.14 .*pgvector 0\.\d+\.\d+ .*pglite-pgvector 0\.0\.15.*127\.0\.0\.1:\d+/,
    );
    const res = await sql.query<{ d: number }>(
      `SELECT ('[1,0]'::vector <=> '[0,1]'::vector)::float8 AS d`,
    );
    expect(res.rows[0]?.d).toBe(1);
    const spec = target.connectorSpec('some ns');
    expect(spec.exportName).toBe('createPgVectorConnector');
    expect(spec.module).toMatch(/^file:\/\/.*connectors\/pgvector\/dist\/index\.js$/);
    expect(spec.options).toEqual({ connectionString: url, table: 'rf_some_ns' });
    expect(JSON.parse(JSON.stringify(spec.options))).toEqual(spec.options);
  });

  it('maps long namespaces to distinct valid table names', () => {
    const a = tableForNamespace('x'.repeat(80));
    const b = tableForNamespace(`${'x'.repeat(79)}y`);
    expect(a).toHaveLength(48);
    expect(a).not.toBe(b);
    expect(tableForNamespace('Case-1/α')).toBe('rf_case_1__');
  });
});

describe('open: schema', () => {
  it('creates the LangChain layout, lookup and HNSW indexes, and the epoch row; reopening is idempotent', async () => {
    const ns = namespace('layout');
    const table = tableForNamespace(ns);
    const c = await connector(ns);
    const cols = await sql.query<{ name: string; type: string }>(
      `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
        WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
      [table],
    );
    expect(cols.rows).toEqual([
      { name: 'id', type: 'uuid' },
      { name: 'text', type: 'text' },
      { name: 'metadata', type: 'jsonb' },
      { name: 'embedding', type: `vector(${DIMS})` },
      { name: 'rf_doc', type: 'text' },
      { name: 'rf_version', type: 'text' },
    ]);
    const idx = await sql.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname`,
      [table],
    );
    const defs = idx.rows.map((r) => r.indexdef).join('\n');
    expect(defs).toMatch(/USING hnsw \(embedding vector_cosine_ops\)/);
    expect(defs).toMatch(/USING btree \(rf_doc, rf_version\)/);
    const generated = await sql.query<{ name: string; expr: string }>(
      `SELECT a.attname AS name, pg_get_expr(d.adbin, d.adrelid) AS expr FROM pg_attribute a
         JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = to_regclass($1) AND a.attgenerated = 's' ORDER BY a.attnum`,
      [table],
    );
    expect(generated.rows).toEqual([
      { name: 'rf_doc', expr: "(metadata ->> 'rf_doc'::text)" },
      { name: 'rf_version', expr: "(metadata ->> 'rf_version'::text)" },
    ]);
    const options = await sql.query<{ o: string[] }>(
      `SELECT reloptions AS o FROM pg_class WHERE oid = to_regclass($1)`,
      [table],
    );
    expect(options.rows[0]?.o).toEqual(['fillfactor=50']);
    expect(defs).toMatch(/UNIQUE INDEX .* \(id\)/);
    const epoch = await sql.query(`SELECT epoch, format FROM ${table}_rf_epoch`);
    expect(epoch.rows).toEqual([{ epoch: 0, format: 'ragfresh-pgvector/1' }]);
    expect(await c.readEpoch()).toBe(0);
    // Set by the pool's onConnect (PGlite's one session is shared, so this connection sees it).
    const scan = await sql.query<{ hnsw_iterative_scan?: string }>('SHOW hnsw.iterative_scan');
    expect(Object.values(scan.rows[0] ?? {})).toEqual(['strict_order']);

    await c.upsert(makeVersion('s:d', 'v1', 3));
    const again = await connector(ns);
    expect(await again.countChunks('s:d', 'v1')).toBe(3);
    expect(await again.readEpoch()).toBe(0);
    await c.open({ dimensions: DIMS });
  });

  it('vectors wider than HNSW allows (3072) get no ANN index and are searched exactly', async () => {
    const ns = namespace('wide');
    const c = await connector(ns, 3072);
    const idx = await sql.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes WHERE tablename = $1`,
      [tableForNamespace(ns)],
    );
    expect(idx.rows.map((r) => r.indexdef).join('\n')).not.toMatch(/hnsw/);
    const chunks = makeVersion('s:w', 'v1', 5, { dims: 3072 });
    await c.upsert(chunks);
    const hits = await c.query(vectorFor(3, 3072), 2, { view: { kind: 'all' } });
    expect(hits[0]?.metadata[FIELDS.chunkId]).toBe(chunks[2]?.id);
    expect(hits[0]?.score).toBeCloseTo(1, 5);
  });

  it('opens the same new table from several connectors at once', async () => {
    const ns = namespace('race');
    const cs = await Promise.all(Array.from({ length: 4 }, () => target.createConnector(ns)));
    open.push(...(cs as PgVectorConnector[]));
    await Promise.all(cs.map((c) => c.open({ dimensions: DIMS })));
    expect(await Promise.all(cs.map((c) => c.readEpoch()))).toEqual([0, 0, 0, 0]);
  });
});

describe('fencing', () => {
  it('an epoch table from before the fence gains it; a stale fence writes nothing, in the transaction', async () => {
    const ns = namespace('fence');
    const table = tableForNamespace(ns);
    // The layout before the fence column existed.
    await sql.query(
      `CREATE TABLE ${table}_rf_epoch (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), epoch integer NOT NULL, format text NOT NULL)`,
    );
    await sql.query(
      `INSERT INTO ${table}_rf_epoch (epoch, format) VALUES (3, 'ragfresh-pgvector/1')`,
    );
    const a = await connector(ns);
    expect([await a.readEpoch(), await a.readFence()]).toEqual([3, 0]);
    const b = await connector(ns);
    await b.raiseFence(7);
    expect(await codeOf(a.raiseFence(6))).toBe('LEASE_LOST');
    const chunks = makeVersion('s:f', 'v1', 3);
    expect(await codeOf(a.upsert(chunks, { fence: 6 }))).toBe('LEASE_LOST');
    expect(
      await codeOf(a.deleteVersions([{ documentId: 's:f', versionId: 'v1' }], { fence: 6 })),
    ).toBe('LEASE_LOST');
    expect(await codeOf(a.advanceEpoch(3, 4, { fence: 6 }))).toBe('LEASE_LOST');
    expect(await b.countChunks('s:f', 'v1')).toBe(0);
    expect(await b.readEpoch()).toBe(3);
    // Control: the held fence writes and moves, and the epoch row keeps it.
    await a.upsert(chunks, { fence: 7 });
    await a.advanceEpoch(3, 4, { fence: 7 });
    expect(await b.countChunks('s:f', 'v1')).toBe(3);
    const row = await sql.query(`SELECT epoch, fence::int AS fence FROM ${table}_rf_epoch`);
    expect(row.rows).toEqual([{ epoch: 4, fence: 7 }]);
  });
});

describe('writes', () => {
  it('upsert is idempotent: same ids overwrite, keyed by the UUID v5 of the chunk id', async () => {
    const ns = namespace('upsert');
    const c = await connector(ns);
    const chunks = makeVersion('s:d', 'v1', 10);
    await c.upsert(chunks);
    await c.upsert(chunks);
    expect(await c.countChunks('s:d', 'v1')).toBe(10);
    const changed = chunks.map((x, i) =>
      i === 3 ? { ...x, text: 'rewritten', embedding: vectorFor(99) } : x,
    );
    await c.upsert(changed);
    const listed = await c.listChunks('s:d', 'v1', { withEmbeddings: true });
    expect(listed).toHaveLength(10);
    expect(listed.map((x) => x.id)).toEqual(chunks.map((x) => chunkUuid(x.id)));
    expect(listed.map((x) => x.metadata[FIELDS.chunkId])).toEqual(chunks.map((x) => x.id));
    expect(listed[3]?.text).toBe('rewritten');
    expect(listed[3]?.embedding).toEqual(
      vectorFor(99)
        .map((x) => Math.fround(x))
        .map((x) => expect.closeTo(x, 6)),
    );
    expect(listed[0]?.metadata).toEqual(chunks[0]?.metadata);
    const rows = await sql.query<{ id: string }>(
      `SELECT id::text AS id FROM ${tableForNamespace(ns)} ORDER BY metadata->>'rf_ordinal'`,
    );
    expect(new Set(rows.rows.map((r) => r.id))).toEqual(
      new Set(chunks.map((x) => chunkUuid(x.id))),
    );
  });

  it('adds rf_chunk when absent and refuses one that disagrees with the id', async () => {
    const c = await connector(namespace('rfchunk'));
    const base = makeChunk('s:d', 'v1', 0);
    const { [FIELDS.chunkId]: _, ...rest } = base.metadata;
    await c.upsert([{ ...base, metadata: rest }]);
    const [listed] = await c.listChunks('s:d');
    expect(listed?.id).toBe(chunkUuid(base.id));
    expect(listed?.metadata[FIELDS.chunkId]).toBe(base.id);
    expect(
      await codeOf(
        c.upsert([{ ...base, metadata: { ...base.metadata, [FIELDS.chunkId]: 'other' } }]),
      ),
    ).toBe('INVALID_METADATA');
  });

  it('patches validity without clobbering other metadata, on the named version only', async () => {
    const c = await connector(namespace('patch'));
    const extra = { custom: 'keep me', nested_json: '{"a":[1,2]}', n: 42, flag: false };
    await c.upsert(makeVersion('s:d', 'v1', 4, { from: 1, current: true, extra }));
    await c.upsert(makeVersion('s:d', 'v2', 3, { from: 2, extra }));
    await c.upsert(makeVersion('s:other', 'v1', 2, { from: 1, current: true }));

    await c.patchValidity('s:d', 'v1', { to: 2 });
    const v1 = await c.listChunks('s:d', 'v1');
    for (const [i, x] of v1.entries()) {
      expect(x.metadata).toEqual({
        ...makeChunk('s:d', 'v1', i, { from: 1, current: true, extra }).metadata,
        [FIELDS.to]: 2,
      });
    }

    await c.patchValidity('s:d', 'v2', { current: true });
    expect((await c.listChunks('s:d', 'v2')).map((x) => x.metadata[FIELDS.current])).toEqual([
      true,
      true,
      true,
    ]);
    // One meaning: only the named version changes. v1 stays current until it is patched itself
    // (core sends both halves of a flip in one patchValidityMany call: see the atomic test).
    const after = await c.listChunks('s:d', 'v1');
    expect(after.map((x) => x.metadata[FIELDS.current])).toEqual([true, true, true, true]);
    expect(after.map((x) => x.metadata[FIELDS.to])).toEqual([2, 2, 2, 2]);
    expect(after[0]?.metadata.custom).toBe('keep me');
    // Another document is untouched.
    expect((await c.listChunks('s:other')).map((x) => x.metadata[FIELDS.current])).toEqual([
      true,
      true,
    ]);

    // current=false touches only the named version; an absent version is a no-op.
    await c.patchValidity('s:d', 'v2', { current: false, to: 5 });
    expect(
      (await c.listChunks('s:d', 'v2')).map((x) => [
        x.metadata[FIELDS.current],
        x.metadata[FIELDS.to],
      ]),
    ).toEqual([
      [false, 5],
      [false, 5],
      [false, 5],
    ]);
    await c.patchValidity('s:d', 'nope', { to: 3, current: true });
    expect(await c.countChunks('s:d', 'nope')).toBe(0);
  });

  it('validity patches are HOT updates: they rewrite no index entry, the HNSW graph included', async () => {
    const ns = namespace('hot');
    const c = await connector(ns);
    await c.upsert(makeVersion('s:d', 'v1', 10, { current: true }));
    await c.upsert(makeVersion('s:d', 'v2', 10));
    await c.patchValidity('s:d', 'v1', { to: 2 });
    await c.patchValidityMany([
      { documentId: 's:d', versionId: 'v2', patch: { current: true } },
      { documentId: 's:d', versionId: 'v1', patch: { current: false } },
    ]); // 20 rows: v2 set, v1 cleared
    await sql.query('SELECT pg_stat_force_next_flush()');
    await sql.query('SELECT 1');
    const stats = await sql.query<{ upd: string; hot: string }>(
      `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relid = to_regclass($1)`,
      [tableForNamespace(ns)],
    );
    expect(Number(stats.rows[0]?.upd)).toBe(30);
    expect(Number(stats.rows[0]?.hot)).toBe(30);
  });

  it('patchValidityMany (one UPDATE) gives the result of the same patches one by one and stays HOT', async () => {
    const ns = namespace('patchmany');
    const c = await connector(ns);
    type P = { readonly doc: string; readonly v: string; readonly patch: ValidityPatch };
    // Each list is applied by patchValidityMany to one copy of the documents and by
    // patchValidity one by one to another; each patch touches only its own version.
    const lists: P[][] = [
      [
        { doc: 'x', v: 'v2', patch: { current: true } },
        { doc: 'x', v: 'v1', patch: { current: false } },
      ],
      [
        { doc: 'x', v: 'v1', patch: { current: true } },
        { doc: 'x', v: 'v2', patch: { current: true } },
      ],
      [
        { doc: 'x', v: 'v2', patch: { current: true } },
        { doc: 'x', v: 'v1', patch: { current: true } },
      ],
      [
        { doc: 'x', v: 'v1', patch: { to: 5 } },
        { doc: 'x', v: 'v2', patch: { current: true } },
      ],
      [
        { doc: 'x', v: 'v2', patch: { current: true, to: 3 } },
        { doc: 'x', v: 'v1', patch: { to: 5 } },
      ],
      [{ doc: 'x', v: 'absent', patch: { current: true } }],
      [
        { doc: 'x', v: 'v1', patch: { current: false } },
        { doc: 'x', v: 'v2', patch: { current: false } },
        { doc: 'y', v: 'v1', patch: { to: 9 } },
      ],
      [
        { doc: 'y', v: 'v1', patch: { to: 9 } },
        { doc: 'x', v: 'v2', patch: { current: true } },
      ],
    ];
    const seed = async (prefix: string) => {
      await c.upsert([
        ...makeVersion(`${prefix}:x`, 'v1', 3, { from: 1, current: true }),
        ...makeVersion(`${prefix}:x`, 'v2', 2, { from: 2 }),
        ...makeVersion(`${prefix}:y`, 'v1', 2, { from: 1, current: true }),
      ]);
    };
    const state = async (prefix: string) =>
      [...(await c.listChunksMany([`${prefix}:x`, `${prefix}:y`]))].map(([doc, rows]) => [
        doc.split(':')[1],
        rows.map((r) => [
          r.metadata[FIELDS.versionId],
          r.metadata[FIELDS.ordinal],
          r.metadata[FIELDS.to],
          r.metadata[FIELDS.current],
        ]),
      ]);
    for (let i = 0; i < lists.length; i++) {
      await seed(`many${i}`);
      await seed(`one${i}`);
    }
    await sql.query('SELECT pg_stat_force_next_flush()');
    const statsOf = async () =>
      (
        await sql.query<{ upd: string; hot: string }>(
          `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relid = to_regclass($1)`,
          [tableForNamespace(ns)],
        )
      ).rows[0];
    const before = await statsOf();
    for (const [i, list] of lists.entries()) {
      await c.patchValidityMany(
        list.map((p) => ({ documentId: `many${i}:${p.doc}`, versionId: p.v, patch: p.patch })),
      );
      for (const p of list) await c.patchValidity(`one${i}:${p.doc}`, p.v, p.patch);
      expect(await state(`many${i}`), `patch list ${i}`).toEqual(await state(`one${i}`));
    }
    // Spot-check: two `current: true` patches leave both versions current (no hidden clear).
    expect(await state('many1')).toEqual([
      [
        'x',
        [
          ['v1', 0, OPEN_EPOCH, true],
          ['v1', 1, OPEN_EPOCH, true],
          ['v1', 2, OPEN_EPOCH, true],
          ['v2', 0, OPEN_EPOCH, true],
          ['v2', 1, OPEN_EPOCH, true],
        ],
      ],
      [
        'y',
        [
          ['v1', 0, OPEN_EPOCH, true],
          ['v1', 1, OPEN_EPOCH, true],
        ],
      ],
    ]);
    await sql.query('SELECT pg_stat_force_next_flush()');
    await sql.query('SELECT 1');
    const after = await statsOf();
    const updated = Number(after?.upd) - Number(before?.upd);
    expect(updated).toBeGreaterThan(0);
    expect(Number(after?.hot) - Number(before?.hot)).toBe(updated);
  });

  it('deletes a version, documents, and absent things without error', async () => {
    const c = await connector(namespace('delete'));
    await c.upsert([
      ...makeVersion('s:a', 'v1', 3),
      ...makeVersion('s:a', 'v2', 2),
      ...makeVersion('s:b', 'v1', 2),
      ...makeVersion('s:c', 'v1', 1),
    ]);
    await c.deleteVersion('s:a', 'v1');
    expect(await c.countChunks('s:a', 'v1')).toBe(0);
    expect(await c.countChunks('s:a', 'v2')).toBe(2);
    await c.deleteVersion('s:a', 'v9');
    await c.deleteDocuments(['s:a', 's:b', 's:zzz', 's:a']);
    expect(await c.listChunks('s:a')).toEqual([]);
    expect(await c.listChunks('s:b')).toEqual([]);
    expect(await c.countChunks('s:c', 'v1')).toBe(1);
  });

  it('compact after a removal vacuums the table, keeps what was not deleted, and says what it cannot reclaim', async () => {
    const c = await connector(namespace('compact'));
    await c.upsert([...makeVersion('s:gone', 'v1', 3), ...makeVersion('s:kept', 'v1', 2)]);
    await c.deleteDocuments(['s:gone']);
    const report = await c.compact();
    expect(report.reclaimed).toBe(false);
    expect(report.note).toMatch(/vacuumed; dead-row bytes stay until Postgres overwrites them/);
    const rows = await sql.query(`SELECT metadata->>'rf_doc' AS doc FROM ${c.tableName}`);
    expect(rows.rows.map((r) => r.doc)).toEqual(['s:kept', 's:kept']);
    expect(await c.countChunks('s:kept', 'v1')).toBe(2);
    // Idempotent.
    expect((await c.compact()).reclaimed).toBe(false);
  });

  it('writes more than maxWriteBatch chunks in one call, and a 1,000-chunk document', async () => {
    const c = await connector(namespace('big'));
    expect(c.capabilities.maxWriteBatch).toBe(500);
    const doc = makeVersion('s:big', 'v1', 1000);
    const other = makeVersion('s:more', 'v1', 234);
    await c.upsert([...doc, ...other]);
    expect(await c.countChunks('s:big', 'v1')).toBe(1000);
    expect(await c.countChunks('s:more', 'v1')).toBe(234);
    const listed = await c.listChunks('s:big', 'v1');
    expect(listed.map((x) => x.metadata[FIELDS.ordinal])).toEqual(doc.map((_, i) => i));
    const hits = await c.query(vectorFor(1), 1000, { view: { kind: 'all' }, documentId: 's:big' });
    expect(hits).toHaveLength(1000);
    expect(new Set(hits.map((h) => h.id))).toEqual(new Set(doc.map((x) => chunkUuid(x.id))));

    const small = createPgVectorConnector({
      connectionString: url,
      table: tableForNamespace(namespace('smallbatch')),
      maxWriteBatch: 7,
    });
    open.push(small);
    await small.open({ dimensions: DIMS });
    await small.upsert(makeVersion('s:d', 'v1', 50));
    expect(await small.countChunks('s:d', 'v1')).toBe(50);
  });

  it('round-trips Unicode, long text and awkward metadata exactly', async () => {
    const c = await connector(namespace('unicode'));
    const long = 'Ünïcödé ✓ 日本語のテキスト עברית 👩‍👩‍👧‍👦 e\u0301 '.repeat(4000);
    const extra = {
      quotes: `it's "quoted" \\ back\\slash \n newline \t tab`,
      emoji: '🦄🧪',
      rtl: 'مرحبا',
      json_like: '{"not": "parsed"}',
      big: 9_007_199_254_740_991,
      neg: -12.5,
      tiny: 1e-9,
      t: true,
      empty: '',
      heading_path: JSON.stringify(['Ä', 'B > C', '“curly”']),
    };
    const chunk = makeChunk('s:ü', 'v1', 0, { text: long, extra });
    await c.upsert([chunk]);
    const [back] = await c.listChunks('s:ü', 'v1');
    expect(back?.text).toBe(long);
    expect(back?.text.length).toBe(long.length);
    expect(back?.metadata).toEqual(chunk.metadata);
    const [hit] = await c.query(chunk.embedding, 1, { view: { kind: 'all' } });
    expect(hit?.metadata).toEqual(chunk.metadata);
    expect(hit?.text).toBe(long);
  });
});

describe('epoch', () => {
  it('advanceEpoch is a compare-and-set in the store', async () => {
    const ns = namespace('cas');
    const a = await connector(ns);
    const b = await connector(ns);
    await a.advanceEpoch(0, 1);
    expect(await b.readEpoch()).toBe(1);
    expect(await codeOf(b.advanceEpoch(0, 2))).toBe('EPOCH_CONFLICT');
    expect(await a.readEpoch()).toBe(1);
    // Two publishers racing from the same epoch: exactly one wins.
    const results = await Promise.allSettled([a.advanceEpoch(1, 2), b.advanceEpoch(1, 3)]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(isRagfreshError((lost[0] as PromiseRejectedResult).reason, 'EPOCH_CONFLICT')).toBe(true);
    expect([2, 3]).toContain(await a.readEpoch());
    const row = await sql.query(`SELECT epoch FROM ${tableForNamespace(ns)}_rf_epoch`);
    expect(row.rows).toEqual([{ epoch: await a.readEpoch() }]);
  });
});

describe('reads', () => {
  it('list, count and query apply the view and scope filters exactly as core inView/matchesFilter', async () => {
    const c = await connector(namespace('filters'));
    const all = [
      ...makeVersion('a:1', 'v1', 5, { from: 1, to: 3, source: 'a' }),
      ...makeVersion('a:1', 'v2', 4, { from: 3, current: true, source: 'a' }),
      ...makeVersion('a:2', 'v1', 3, { from: 2, current: true, source: 'a' }),
      ...makeVersion('b:1', 'v1', 6, { from: 1, to: 2, source: 'b' }),
      ...makeVersion('b:1', 'v2', 2, { from: 4, source: 'b' }), // staged, not yet published
    ];
    await c.upsert(all);
    expect(await c.countChunks('a:1', 'v1')).toBe(5);
    expect((await c.listChunks('a:1')).length).toBe(9);

    const filters: QueryFilter[] = [];
    for (const view of [
      { kind: 'all' as const },
      { kind: 'flag' as const },
      ...[0, 1, 2, 3, 4, 5, OPEN_EPOCH - 1].map((epoch) => ({ kind: 'epoch' as const, epoch })),
    ]) {
      filters.push(
        { view },
        { view, documentId: 'a:1' },
        { view, documentId: 'a:1', versionId: 'v1' },
        { view, sourceId: 'b' },
      );
    }
    for (const f of filters) {
      const hits = await c.query(vectorFor(2), 100, f);
      const expected = all.filter((x) => matchesFilter(x.metadata, f)).map((x) => chunkUuid(x.id));
      expect(new Set(hits.map((h) => h.id)), JSON.stringify(f)).toEqual(new Set(expected));
    }
    // Epoch 3: a:1 is v2 only, b:1 has nothing current (v1 ended at 2, v2 starts at 4).
    const e3 = await c.query(vectorFor(1), 100, { view: { kind: 'epoch', epoch: 3 } });
    expect(
      new Set(e3.map((h) => `${h.metadata[FIELDS.documentId]}/${h.metadata[FIELDS.versionId]}`)),
    ).toEqual(new Set(['a:1/v2', 'a:2/v1']));
  });

  it('scores are 1 - cosine distance, best first, limited to k', async () => {
    const c = await connector(namespace('score'));
    const chunks = makeVersion('s:d', 'v1', 20);
    await c.upsert(chunks);
    const q = vectorFor(7);
    const hits = await c.query(q, 5, { view: { kind: 'all' } });
    expect(hits).toHaveLength(5);
    expect(hits[0]?.id).toBe(chunkUuid(chunks[6]!.id));
    expect(hits[0]?.score).toBeCloseTo(1, 5);
    const cos = (a: readonly number[], b: readonly number[]) => {
      let d = 0;
      let na = 0;
      let nb = 0;
      for (let i = 0; i < a.length; i++) {
        d += a[i]! * b[i]!;
        na += a[i]! ** 2;
        nb += b[i]! ** 2;
      }
      return d / Math.sqrt(na * nb);
    };
    const expected = chunks
      .map((x) => ({ id: x.id, score: cos(q, x.embedding) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 5);
    expect(hits.map((h) => h.metadata[FIELDS.chunkId])).toEqual(expected.map((e) => e.id));
    for (const [i, h] of hits.entries()) expect(h.score).toBeCloseTo(expected[i]!.score, 5);
    for (let i = 1; i < hits.length; i++)
      expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
  });

  it('searchCurrent reads the epoch from the store and queries its snapshot', async () => {
    const c = await connector(namespace('current'));
    await c.upsert(makeVersion('s:d', 'v1', 3, { from: 1 }));
    expect(await c.searchCurrent(vectorFor(1), 10)).toEqual([]);
    await c.advanceEpoch(0, 1);
    expect(
      (await c.searchCurrent(vectorFor(1), 10)).map((h) => h.metadata[FIELDS.versionId]),
    ).toEqual(['v1', 'v1', 'v1']);
  });
});
