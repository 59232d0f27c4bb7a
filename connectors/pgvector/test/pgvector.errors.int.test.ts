import { createServer } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { isRagfreshError, type RagfreshError, type StoreTarget } from '@ragfresh/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, tableForNamespace } from '../src/fixture.js';
import { createPgVectorConnector, type PgVectorConnector } from '../src/index.js';
import { DIMS, makeChunk, makeVersion, namespace } from './chunks.js';

let target: StoreTarget;
let url: string;
let sql: pg.Pool;
const open: PgVectorConnector[] = [];

function make(
  table: string,
  extra: { connectionString?: string; connectTimeoutMs?: number } = {},
): PgVectorConnector {
  const c = createPgVectorConnector({
    connectionString: extra.connectionString ?? url,
    table,
    ...extra,
  });
  open.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<RagfreshError> {
  try {
    await p;
  } catch (err) {
    if (isRagfreshError(err)) return err;
    throw err;
  }
  throw new Error('expected a RagfreshError, got success');
}

async function rows(table: string): Promise<unknown[]> {
  return (await sql.query(`SELECT * FROM ${table} ORDER BY 1`)).rows;
}

async function exists(table: string): Promise<boolean> {
  return (
    (await sql.query<{ r: string | null }>(`SELECT to_regclass($1)::text AS r`, [table])).rows[0]
      ?.r !== null
  );
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
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

describe('DIMENSION_MISMATCH', () => {
  it('an existing table with another vector size is refused, naming both sizes and the fix; data stays', async () => {
    const table = tableForNamespace(namespace('dims'));
    const a = make(table);
    await a.open({ dimensions: DIMS });
    await a.upsert(makeVersion('s:d', 'v1', 3));
    await a.advanceEpoch(0, 1);
    const before = await rows(table);

    const err = await failure(make(table).open({ dimensions: 16 }));
    expect(err.code).toBe('DIMENSION_MISMATCH');
    expect(err.message).toMatch(/^\[ragfresh\] \[pgvector\] /);
    expect(err.message).toContain(`public.${table}`);
    expect(err.message).toMatch(
      /8-dimension .* asked for 16; use the embeddings the table was built with, or a new table name/,
    );
    expect(await rows(table)).toEqual(before);
    expect(await a.readEpoch()).toBe(1);

    const wrongVector = { ...makeChunk('s:d', 'v2', 0), embedding: [1, 2, 3] };
    expect((await failure(a.upsert([wrongVector]))).code).toBe('DIMENSION_MISMATCH');
    expect((await failure(a.query([1, 2], 3, { view: { kind: 'all' } }))).code).toBe(
      'DIMENSION_MISMATCH',
    );
    expect(await rows(table)).toEqual(before);
  });
});

describe('STORE_UNREACHABLE', () => {
  it('a server nobody listens on gives STORE_UNREACHABLE naming the address and the fix', async () => {
    const port = await freePort();
    const err = await failure(
      make('rf_unreachable', {
        connectionString: `postgres://postgres:secret@127.0.0.1:${port}/postgres`,
      }).open({
        dimensions: DIMS,
      }),
    );
    expect(err.code).toBe('STORE_UNREACHABLE');
    expect(err.message).toContain(`127.0.0.1:${port}/postgres`);
    expect(err.message).toMatch(/start the server or fix connectionString/);
    expect(err.message).not.toContain('secret');
  });

  it('a server that goes away after open gives STORE_UNREACHABLE on the next call', async () => {
    const db = await PGlite.create({ extensions: { vector } });
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
    await server.start();
    const c = make('rf_goes_away', {
      connectionString: `postgres://postgres@${server.getServerConn()}/postgres`,
      connectTimeoutMs: 2000,
    });
    await c.open({ dimensions: DIMS });
    await c.upsert(makeVersion('s:d', 'v1', 2));
    await server.stop();
    await db.close();
    const err = await failure(c.countChunks('s:d', 'v1'));
    expect(err.code).toBe('STORE_UNREACHABLE');
  });
});

describe('FOREIGN_DATA', () => {
  it('a table with another layout is refused and left untouched', async () => {
    const table = tableForNamespace(namespace('layout'));
    await sql.query(
      `CREATE TABLE ${table} (id serial PRIMARY KEY, body text, embedding vector(${DIMS}))`,
    );
    await sql.query(
      `INSERT INTO ${table} (body, embedding) VALUES ('theirs', '[1,2,3,4,5,6,7,8]')`,
    );
    const before = await rows(table);
    const err = await failure(make(table).open({ dimensions: DIMS }));
    expect(err.code).toBe('FOREIGN_DATA');
    expect(err.message).toMatch(
      /its id column is integer, not uuid; it was not written by ragfresh\. Choose another table name/,
    );
    expect(await rows(table)).toEqual(before);
    expect(await exists(`${table}_rf_epoch`)).toBe(false);
  });

  it('a LangChain-layout table holding rows ragfresh did not write is refused; rows stay, no epoch table appears', async () => {
    const table = tableForNamespace(namespace('lcrows'));
    await sql.query(
      `CREATE TABLE ${table} (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), text text, metadata jsonb, embedding vector(${DIMS}))`,
    );
    await sql.query(
      `INSERT INTO ${table} (text, metadata, embedding) VALUES ('someone else', '{"source":"x"}', '[1,1,1,1,1,1,1,1]')`,
    );
    const before = await rows(table);
    const err = await failure(make(table).open({ dimensions: DIMS }));
    expect(err.code).toBe('FOREIGN_DATA');
    expect(err.message).toContain(`holds rows but has no public.${table}_rf_epoch`);
    expect(await rows(table)).toEqual(before);
    expect(await exists(`${table}_rf_epoch`)).toBe(false);
  });

  it('an empty LangChain-layout table is adopted', async () => {
    const table = tableForNamespace(namespace('lcempty'));
    await sql.query(
      `CREATE TABLE ${table} (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), text text, metadata jsonb, embedding vector(${DIMS}))`,
    );
    const c = make(table);
    await c.open({ dimensions: DIMS });
    await c.upsert(makeVersion('s:d', 'v1', 2));
    expect(await c.countChunks('s:d', 'v1')).toBe(2);
  });

  it('a vector column without a declared size is refused', async () => {
    const table = tableForNamespace(namespace('nodims'));
    await sql.query(
      `CREATE TABLE ${table} (id uuid PRIMARY KEY, text text, metadata jsonb, embedding vector)`,
    );
    const err = await failure(make(table).open({ dimensions: DIMS }));
    expect(err.code).toBe('FOREIGN_DATA');
    expect(err.message).toContain('its embedding column is vector, not vector(8)');
  });

  it('foreign rows added to a ragfresh table, or a foreign epoch table, are refused on open', async () => {
    const table = tableForNamespace(namespace('stray'));
    const a = make(table);
    await a.open({ dimensions: DIMS });
    await a.upsert(makeVersion('s:d', 'v1', 2));
    await sql.query(
      `INSERT INTO ${table} (id, text, metadata, embedding) VALUES (gen_random_uuid(), 'x', '{"source":"langchain"}', '[1,1,1,1,1,1,1,1]')`,
    );
    const before = await rows(table);
    const err = await failure(make(table).open({ dimensions: DIMS }));
    expect(err.code).toBe('FOREIGN_DATA');
    expect(err.message).toMatch(/rows without rf_doc\/rf_version/);
    expect(await rows(table)).toEqual(before);

    const other = tableForNamespace(namespace('epochtable'));
    await sql.query(`CREATE TABLE ${other}_rf_epoch (epoch integer, format text)`);
    await sql.query(`INSERT INTO ${other}_rf_epoch VALUES (1, 'x'), (2, 'y')`);
    const err2 = await failure(make(other).open({ dimensions: DIMS }));
    expect(err2.code).toBe('FOREIGN_DATA');
    expect(err2.message).toContain(`${other}_rf_epoch is not a ragfresh epoch table`);
    // The whole open ran in one transaction: the chunk table it would have created is gone too.
    expect(await exists(other)).toBe(false);
  });
});

describe('STORE_REJECTED', () => {
  it('metadata or text Postgres cannot hold rejects the whole batch, naming the chunk and field; stored data stays', async () => {
    const table = tableForNamespace(namespace('reject'));
    const c = make(table);
    await c.open({ dimensions: DIMS });
    await c.upsert(makeVersion('s:d', 'v1', 3));
    const before = await rows(table);
    const good = makeVersion('s:d', 'v2', 3);
    const cases = [
      {
        ...makeChunk('s:d', 'v2', 3),
        metadata: { ...makeChunk('s:d', 'v2', 3).metadata, title: 'nul \u0000 here' },
      },
      { ...makeChunk('s:d', 'v2', 3), text: 'text with \u0000 NUL' },
      {
        ...makeChunk('s:d', 'v2', 3),
        metadata: { ...makeChunk('s:d', 'v2', 3).metadata, heading: 'lone \ud800 surrogate' },
      },
    ];
    const fields = ['metadata field title', 'text', 'metadata field heading'];
    for (const [i, bad] of cases.entries()) {
      const err = await failure(c.upsert([...good, bad]));
      expect(err.code).toBe('STORE_REJECTED');
      expect(err.message).toContain(
        `chunk s:d#v2#3: ${fields[i]} contains a NUL character or an unpaired UTF-16 surrogate`,
      );
      expect(await rows(table)).toEqual(before);
    }
  });

  it('a value the server refuses (index entry over the btree limit) rolls the batch back with STORE_REJECTED', async () => {
    const table = tableForNamespace(namespace('btree'));
    const c = make(table);
    await c.open({ dimensions: DIMS });
    await c.upsert(makeVersion('s:d', 'v1', 3));
    const before = await rows(table);
    let noise = '';
    let x = 12345;
    while (noise.length < 30_000) {
      x = (x * 1103515245 + 12345) % 2147483648;
      noise += 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[x % 62];
    }
    const err = await failure(
      c.upsert([...makeVersion('s:d', 'v2', 3), makeChunk('s:d', noise, 0)]),
    );
    expect(err.code).toBe('STORE_REJECTED');
    expect(err.message).toMatch(
      /rejected writing chunks on public\.rf_btree_\w+ \(54000: index row/,
    );
    expect(err.message).toContain('nothing was changed by the failed statement');
    expect(await rows(table)).toEqual(before);
  });
});
