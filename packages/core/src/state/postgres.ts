import KeyvPostgres from '@keyv/postgres';
import { RagfreshError } from '../errors.js';
import {
  corrupt,
  describeError,
  encodeStateOp,
  type IndexEntry,
  parseLease,
  redactUrl,
  type StateBackend,
  type StateGuard,
} from './backend.js';
import type { Lease, StateOp } from './types.js';

export interface PostgresBackendOptions {
  /** `postgres://user[:password]@host:port/db` or `postgresql://…`. */
  readonly url: string;
  /** Table holding every record. Default `ragfresh_state`. */
  readonly table?: string;
  readonly schema?: string;
  /** Give up connecting after this long. Default 5000 ms. */
  readonly connectTimeoutMs?: number;
}

// The server clock decides expiry, so processes on different machines agree.
const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
const PAGE = 256;

/**
 * @keyv/postgres keeps one pg pool per process (for the last URI it was given) and
 * `disconnect()` ends it for every adapter, so the pool is only ended when the last open
 * Postgres state store closes.
 */
let openStores = 0;

/**
 * Postgres backend: records through `@keyv/postgres` (one `key`/`value` table); lease grants
 * are one conditional upsert and fenced writes one statement that locks the lease row
 * (`FOR SHARE`) while it writes, each atomic on the server.
 */
export class PostgresStateBackend implements StateBackend {
  readonly kind = 'postgres' as const;
  readonly scanMayRepeat = false;
  readonly adapter: KeyvPostgres;
  private readonly table: string;
  /** The ordered indexes' table and the function that commits a guarded transaction. */
  private readonly zTable: string;
  private readonly commitFn: string;
  private closed = false;

  private constructor(adapter: KeyvPostgres, schema: string, table: string) {
    this.adapter = adapter;
    this.table = `${schema}.${table}`;
    this.zTable = `${schema}.${table}_z`;
    this.commitFn = `${schema}.${table}_commit_v2`;
  }

  /**
   * The ordered-index table and the commit function: one call of it is one statement, so its
   * guards (checked under per-key advisory locks, each read on a fresh snapshot) and its writes
   * are one transaction.
   */
  private async ensureAggregateSchema(): Promise<void> {
    // Several processes opening one new database race on these; the loser's duplicate is fine.
    const racing = (error: { code?: string }) => {
      if (error.code !== '23505' && error.code !== '42P07') throw error;
    };
    await this.adapter
      .query(
        `CREATE TABLE IF NOT EXISTS ${this.zTable} (key text COLLATE "C" NOT NULL, member text COLLATE "C" NOT NULL, score double precision NOT NULL, PRIMARY KEY (key, member))`,
      )
      .catch(racing);
    await this.adapter
      .query(
        `CREATE INDEX IF NOT EXISTS ${this.zTable.split('.')[1]}_score ON ${this.zTable} (key, score, member)`,
      )
      .catch(racing);
    const exists = (await this.adapter.query(`SELECT to_regproc($1) IS NOT NULL AS ok`, [
      this.commitFn,
    ])) as Array<{ ok: boolean }>;
    if (exists[0]?.ok === true) return;
    await this.adapter
      .query(`CREATE OR REPLACE FUNCTION ${this.commitFn}(guards jsonb, ops jsonb) RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE g jsonb; o jsonb; v text;
BEGIN
  FOR g IN SELECT e FROM jsonb_array_elements(guards) AS e ORDER BY e->>0 LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended(g->>0, 0));
  END LOOP;
  FOR g IN SELECT e FROM jsonb_array_elements(guards) AS e LOOP
    SELECT t.value INTO v FROM ${this.table} AS t WHERE t.key = g->>0;
    IF jsonb_typeof(g->1) = 'null' THEN
      IF v IS NOT NULL THEN RETURN false; END IF;
    ELSIF v IS DISTINCT FROM g->>1 THEN RETURN false;
    END IF;
  END LOOP;
  -- Rows are written in one global order (table, key, member; a key's own ops keep their
  -- order), so two commits that touch the same aggregate rows lock them in the same order
  -- and cannot deadlock each other.
  FOR o IN SELECT x.e FROM jsonb_array_elements(ops) WITH ORDINALITY AS x(e, n)
    ORDER BY (x.e->>0 LIKE 'z%'), (x.e->>1) COLLATE "C",
      CASE WHEN x.e->>0 LIKE 'z%' THEN (x.e->>2) COLLATE "C" END, x.n LOOP
    CASE o->>0
      WHEN 'set' THEN INSERT INTO ${this.table} (key, value) VALUES (o->>1, o->>2)
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
      WHEN 'del' THEN DELETE FROM ${this.table} WHERE key = o->>1;
      WHEN 'zadd' THEN INSERT INTO ${this.zTable} AS z (key, member, score) VALUES (o->>1, o->>2, (o->>3)::double precision)
        ON CONFLICT (key, member) DO UPDATE SET score = EXCLUDED.score;
      WHEN 'zincr' THEN INSERT INTO ${this.zTable} AS z (key, member, score) VALUES (o->>1, o->>2, (o->>3)::double precision)
        ON CONFLICT (key, member) DO UPDATE SET score = z.score + EXCLUDED.score;
      WHEN 'zrem' THEN DELETE FROM ${this.zTable} WHERE key = o->>1 AND member = o->>2;
    END CASE;
  END LOOP;
  RETURN true;
END
$fn$`)
      .catch(async (error: unknown) => {
        // Another process created it at the same moment.
        const again = (await this.adapter.query(`SELECT to_regproc($1) IS NOT NULL AS ok`, [
          this.commitFn,
        ])) as Array<{ ok: boolean }>;
        if (again[0]?.ok !== true) throw error;
      });
  }

  static async open(options: PostgresBackendOptions): Promise<PostgresStateBackend> {
    const tableName = options.table ?? 'ragfresh_state';
    const schema = options.schema ?? 'public';
    for (const name of [tableName, schema]) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
        throw new RagfreshError(
          'INVALID_CONFIG',
          `Postgres table/schema name ${JSON.stringify(name)} is not a plain identifier; use letters, digits and _.`,
          { scope: 'postgres' },
        );
      }
    }
    const adapter = new KeyvPostgres({
      uri: options.url,
      table: tableName,
      schema,
      keySize: 1024,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    });
    let lastError: unknown;
    adapter.on('error', (error: unknown) => {
      lastError = error;
    });
    openStores += 1;
    const backend = new PostgresStateBackend(adapter, schema, tableName);
    try {
      await adapter.query('SELECT 1');
      // Prefix scans compare keys bytewise whatever the database collation; this index serves them.
      await adapter
        .query(
          `CREATE INDEX IF NOT EXISTS ${tableName}_key_c ON ${backend.table} (key COLLATE "C")`,
        )
        .catch((error: { code?: string }) => {
          if (error.code !== '23505' && error.code !== '42P07') throw error;
        });
      await backend.ensureAggregateSchema();
    } catch (cause) {
      await backend.close();
      throw new RagfreshError(
        'STORE_UNREACHABLE',
        `cannot reach Postgres at ${redactUrl(options.url)} (${describeError(cause ?? lastError)}); start Postgres or fix the state URL.`,
        { scope: 'postgres', cause },
      );
    }
    return backend;
  }

  private async query(
    sql: string,
    values: unknown[],
    leaseKey?: string,
  ): Promise<Array<Record<string, unknown>>> {
    try {
      return (await this.adapter.query(sql, values)) as Array<Record<string, unknown>>;
    } catch (error) {
      // 22P02: a stored lease value that is not JSON could not be cast to jsonb.
      if (leaseKey !== undefined && (error as { code?: string }).code === '22P02') {
        throw corrupt(leaseKey, 'is not a lease record', error);
      }
      throw error;
    }
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.adapter.get(key)) as string | undefined;
  }
  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    if (keys.length === 0) return [];
    const rows = await this.query(
      `SELECT key, value FROM ${this.table} WHERE key = ANY($1::text[])`,
      [[...keys]],
    );
    const found = new Map(rows.map((r) => [r.key as string, r.value as string]));
    return keys.map((k) => found.get(k));
  }
  async set(key: string, value: string): Promise<void> {
    await this.adapter.set(key, value);
  }
  async delete(key: string): Promise<void> {
    await this.adapter.delete(key);
  }

  // Not @keyv/postgres's iterator: it ends quietly on a query error, which would truncate a listing.
  async *scan(prefix: string): AsyncIterable<readonly [string, string]> {
    const low = `${prefix}:`;
    const high = `${prefix};`;
    let after: string | undefined;
    for (;;) {
      const rows =
        after === undefined
          ? await this.query(
              `SELECT key, value FROM ${this.table} WHERE key COLLATE "C" >= $1 AND key COLLATE "C" < $2 ORDER BY key COLLATE "C" LIMIT ${PAGE}`,
              [low, high],
            )
          : await this.query(
              `SELECT key, value FROM ${this.table} WHERE key COLLATE "C" > $1 AND key COLLATE "C" < $2 ORDER BY key COLLATE "C" LIMIT ${PAGE}`,
              [after, high],
            );
      for (const row of rows) yield [row.key as string, row.value as string];
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1]!.key as string;
    }
  }

  async acquireLease(
    key: string,
    name: string,
    holder: string,
    ttlMs: number,
    minFence = 0,
  ): Promise<Lease | undefined> {
    const rows = await this.query(
      `INSERT INTO ${this.table} AS t (key, value)
       VALUES ($1, json_build_object('name', $2::text, 'holder', $3::text, 'fence', GREATEST(1, $5::bigint), 'expiresAt', ${NOW} + $4::bigint)::text)
       ON CONFLICT (key) DO UPDATE SET value = json_build_object('name', $2::text, 'holder', $3::text,
         'fence', GREATEST((t.value::jsonb->>'fence')::bigint + 1, $5::bigint), 'expiresAt', ${NOW} + $4::bigint)::text
       WHERE (t.value::jsonb->>'expiresAt')::bigint <= ${NOW} OR t.value::jsonb->>'holder' = $3::text
       RETURNING value`,
      [key, name, holder, Math.ceil(ttlMs), minFence],
      key,
    );
    if (rows[0] !== undefined) return parseLease(rows[0].value as string, key);
    // Not granted: held by someone else, unless the stored lease is damaged (which this reports).
    await this.currentFence(key);
    return undefined;
  }

  async renewLease(key: string, lease: Lease, ttlMs: number): Promise<Lease | undefined> {
    const rows = await this.query(
      `UPDATE ${this.table} AS t SET value = json_build_object('name', t.value::jsonb->>'name', 'holder', $2::text,
         'fence', $3::bigint, 'expiresAt', ${NOW} + $4::bigint)::text
       WHERE t.key = $1 AND (t.value::jsonb->>'fence')::bigint = $3::bigint AND t.value::jsonb->>'holder' = $2::text
       RETURNING value`,
      [key, lease.holder, lease.fence, Math.ceil(ttlMs)],
      key,
    );
    return rows[0] === undefined ? undefined : parseLease(rows[0].value as string, key);
  }

  async releaseLease(key: string, lease: Lease): Promise<void> {
    await this.query(
      `UPDATE ${this.table} AS t SET value = json_build_object('name', t.value::jsonb->>'name', 'holder', $2::text,
         'fence', $3::bigint, 'expiresAt', 0)::text
       WHERE t.key = $1 AND (t.value::jsonb->>'fence')::bigint = $3::bigint AND t.value::jsonb->>'holder' = $2::text`,
      [key, lease.holder, lease.fence],
      key,
    );
  }

  async currentFence(key: string): Promise<number | undefined> {
    const rows = await this.query(`SELECT value, ${NOW} AS now FROM ${this.table} WHERE key = $1`, [
      key,
    ]);
    const row = rows[0];
    if (row === undefined) return undefined;
    const lease = parseLease(row.value as string, key);
    return lease.expiresAt > Number(row.now) ? lease.fence : undefined;
  }

  async putFenced(leaseKey: string, fence: number, key: string, value: string): Promise<boolean> {
    // FOR SHARE holds the lease row until the write commits: a concurrent grant waits for it,
    // and a grant that committed first makes the re-checked condition false.
    const rows = await this.query(
      `WITH lease AS (
         SELECT 1 FROM ${this.table}
         WHERE key = $1 AND (value::jsonb->>'fence')::bigint = $2::bigint AND (value::jsonb->>'expiresAt')::bigint > ${NOW}
         FOR SHARE)
       INSERT INTO ${this.table} (key, value) SELECT $3, $4 FROM lease
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
       RETURNING 1 AS ok`,
      [leaseKey, fence, key, value],
      leaseKey,
    );
    return rows.length === 1;
  }

  async deleteIfEquals(key: string, value: string): Promise<boolean> {
    const rows = await this.query(
      `DELETE FROM ${this.table} WHERE key = $1 AND value = $2 RETURNING 1 AS ok`,
      [key, value],
    );
    return rows.length === 1;
  }

  async commit(guards: readonly StateGuard[], ops: readonly StateOp[]): Promise<boolean> {
    const g = guards.map((x) => [x.key, x.value ?? null]);
    const o = ops.map(encodeStateOp);
    const args = [JSON.stringify(g), JSON.stringify(o)];
    // One call is one transaction: a deadlock or serialization failure aborted all of it, so
    // running it again is safe. The fixed write order makes these rare (other statements on
    // the same rows can still interleave).
    for (let attempt = 1; ; attempt++) {
      try {
        const rows = await this.query(`SELECT ${this.commitFn}($1::jsonb, $2::jsonb) AS ok`, args);
        return rows[0]?.ok === true;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if ((code !== '40P01' && code !== '40001') || attempt >= 4) throw error;
        await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
      }
    }
  }

  async zrange(key: string, end: 'low' | 'high', limit: number): Promise<IndexEntry[]> {
    return this.zread(key, end, limit);
  }

  async zall(key: string): Promise<IndexEntry[]> {
    return this.zread(key, 'low');
  }

  private async zread(key: string, end: 'low' | 'high', limit?: number): Promise<IndexEntry[]> {
    const rows = await this.query(
      `SELECT member, score FROM ${this.zTable} WHERE key = $1 ORDER BY score ${end === 'low' ? 'ASC' : 'DESC'}, member ASC${limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.floor(limit))}`}`,
      [key],
    );
    return rows.map((r) => ({ member: r.member as string, score: Number(r.score) }));
  }

  async zclear(prefix: string): Promise<void> {
    await this.query(`DELETE FROM ${this.zTable} WHERE key >= $1 AND key < $2`, [
      `${prefix}:`,
      `${prefix};`,
    ]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    openStores -= 1;
    if (openStores === 0) await this.adapter.disconnect();
  }
}
