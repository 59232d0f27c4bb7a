import { isRagfreshError, type RagfreshError } from '@ragfresh/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from '../src/fixture.js';
import { createPgVectorConnector } from '../src/index.js';
import { DIMS, makeVersion, namespace, vectorFor } from './chunks.js';

/**
 * Against the machine's real PostgreSQL (DEVELOPERS.md: 127.0.0.1:5432, trust auth, database
 * `test`); RAGFRESH_PGVECTOR_URL points elsewhere. A missing server fails loudly. When the
 * server has no pgvector (Debian bookworm ships no postgresql-15-pgvector package; it comes
 * from apt.postgresql.org), the connector must say so with a coded error and change nothing.
 */
const URL = process.env.RAGFRESH_PGVECTOR_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let sql: pg.Pool;
let pgvector: 'installed' | 'available' | 'absent';

async function failure(p: Promise<unknown>): Promise<RagfreshError> {
  try {
    await p;
  } catch (err) {
    if (isRagfreshError(err)) return err;
    throw err;
  }
  throw new Error('expected a RagfreshError, got success');
}

beforeAll(async () => {
  sql = new pg.Pool({ connectionString: URL, max: 2, connectionTimeoutMillis: 5000 });
  const r = await sql.query<{ installed: string | null; available: string | null }>(
    `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS installed,
            (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available`,
  );
  const row = r.rows[0];
  pgvector = row?.installed ? 'installed' : row?.available ? 'available' : 'absent';
});

afterAll(async () => {
  await sql?.end();
});

describe(`real PostgreSQL at ${URL.replace(/:[^:@/]*@/, ':***@')}`, () => {
  it('a wrong database name is STORE_UNREACHABLE with the fix', async () => {
    const u = new globalThis.URL(URL);
    u.pathname = '/ragfresh_no_such_db';
    const c = createPgVectorConnector({ connectionString: u.href, table: 'rf_nodb' });
    const err = await failure(c.open({ dimensions: DIMS }));
    expect(err.code).toBe('STORE_UNREACHABLE');
    expect(err.message).toMatch(/check the user, password and database in connectionString/);
    await c.close();
  });

  it('publishes and reads through the real server, or names the missing extension and changes nothing', async () => {
    const table = `rf_pg_${namespace('real').toLowerCase()}`.slice(0, 48);
    const c = createPgVectorConnector({ connectionString: URL, table });
    try {
      if (pgvector === 'absent') {
        const err = await failure(c.open({ dimensions: DIMS }));
        expect(err.code).toBe('STORE_REJECTED');
        expect(err.message).toMatch(
          /has no pgvector extension; install it on the server \(e\.g\. apt install postgresql-\d+-pgvector from apt\.postgresql\.org\)/,
        );
        const left = await sql.query(`SELECT to_regclass($1) AS a, to_regclass($2) AS b`, [
          table,
          `${table}_rf_epoch`,
        ]);
        expect(left.rows[0]).toEqual({ a: null, b: null });
        return;
      }
      await c.open({ dimensions: DIMS });
      await c.upsert(makeVersion('s:d', 'v1', 20, { from: 1 }));
      await c.advanceEpoch(0, 1);
      await c.patchValidity('s:d', 'v1', { current: true });
      await c.upsert(makeVersion('s:d', 'v2', 10, { from: 2, seed: 3 }));
      await c.patchValidity('s:d', 'v1', { to: 2 });
      expect((await failure(c.advanceEpoch(0, 2))).code).toBe('EPOCH_CONFLICT');
      await c.advanceEpoch(1, 2);
      await c.patchValidityMany([
        { documentId: 's:d', versionId: 'v2', patch: { current: true } },
        { documentId: 's:d', versionId: 'v1', patch: { current: false } },
      ]);
      const hits = await c.searchCurrent(vectorFor(1), 50);
      expect(new Set(hits.map((h) => h.metadata.rf_version))).toEqual(new Set(['v2']));
      expect(hits).toHaveLength(10);
      const flag = await c.query(vectorFor(1), 50, { view: { kind: 'flag' } });
      expect(flag).toHaveLength(10);
    } finally {
      await c.close();
      await sql.query(
        `DROP TABLE IF EXISTS ${pg.escapeIdentifier(table)}, ${pg.escapeIdentifier(`${table}_rf_epoch`)}`,
      );
    }
  });

  it('the fixture accepts a url target and describes the server', async () => {
    const t = await fixture.start({ url: URL });
    expect(t.kind).toBe('url');
    expect(t.description).toMatch(
      /^PostgreSQL \d+\.\d+.* \+ pgvector (\d+\.\d+\.\d+|available .*|NOT INSTALLED) at postgres:\/\//,
    );
    expect(t.connectorSpec('x').options).toEqual({ connectionString: URL, table: 'rf_x' });
    await t.stop();
  });
});
