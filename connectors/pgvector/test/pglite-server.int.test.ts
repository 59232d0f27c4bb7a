import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgliteServer } from '../src/pglite-server.js';

/**
 * The fixture's multiplexer: many connections, each running parameterised queries (several
 * wire messages each) and transactions, on PGlite's single session.
 */
let db: PGlite;
let server: PGLiteSocketServer;
let url: string;

beforeAll(async () => {
  db = await PGlite.create({ extensions: { vector } });
  server = await startPgliteServer({ db, maxConnections: 64 });
  url = `postgres://postgres@${server.getServerConn()}/postgres`;
});

afterAll(async () => {
  await server?.stop();
  await db?.close();
});

describe('pglite-server (unit-scheduling multiplexer over pglite-socket)', () => {
  it('keeps concurrent parameterised queries of different connections apart', async () => {
    const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: url, max: 2 }));
    const wrong: string[] = [];
    const work = async (p: pg.Pool, tag: string) => {
      for (let i = 0; i < 150; i++) {
        const r = await p.query<{ x: string; tag: string; i: number }>(
          `SELECT $1::text AS x, '${tag}' AS tag, $2::int + ${i} AS i`,
          [`${tag}${i}`, i],
        );
        const row = r.rows[0];
        if (row?.x !== `${tag}${i}` || row.tag !== tag || row.i !== 2 * i)
          wrong.push(`${tag}${i}: ${JSON.stringify(row)}`);
      }
    };
    await Promise.all(pools.flatMap((p, j) => [work(p, `a${j}`), work(p, `b${j}`)]));
    for (const p of pools) await p.end();
    expect(wrong).toEqual([]);
  });

  it('keeps a transaction on its connection while others wait, and isolates its effects until commit', async () => {
    const a = new pg.Client({ connectionString: url });
    const b = new pg.Client({ connectionString: url });
    await a.connect();
    await b.connect();
    await a.query('CREATE TABLE tx_probe (n int)');
    await a.query('BEGIN');
    await a.query('INSERT INTO tx_probe VALUES ($1)', [1]);
    let bDone = false;
    const bRead = b
      .query<{ c: number }>('SELECT count(*)::int AS c FROM tx_probe WHERE n >= $1', [0])
      .then((r) => {
        bDone = true;
        return r.rows[0]?.c;
      });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(bDone).toBe(false); // the session belongs to a's transaction
    await a.query('INSERT INTO tx_probe VALUES ($1)', [2]);
    await a.query('COMMIT');
    expect(await bRead).toBe(2); // both rows or none: never one
    await a.end();
    await b.end();
  });

  it('rolls back a transaction whose connection drops, and serves the others afterwards', async () => {
    const a = new pg.Client({ connectionString: url });
    await a.connect();
    await a.query('CREATE TABLE drop_probe (n int)');
    await a.query('BEGIN');
    await a.query('INSERT INTO drop_probe VALUES ($1)', [1]);
    a.on('error', () => {});
    (a as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    const b = new pg.Client({ connectionString: url });
    await b.connect();
    const r = await b.query<{ c: number }>('SELECT count(*)::int AS c FROM drop_probe');
    expect(r.rows[0]?.c).toBe(0);
    await b.end();
    await a.end().catch(() => {});
  });
});
