import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import {
  type FixtureStartOptions,
  RagfreshError,
  redactUrl,
  type StoreFixture,
  type StoreTarget,
} from '@ragfresh/core';
import pg from 'pg';
import { createPgVectorConnector, type PgVectorConnectorOptions } from './index.js';
import { startPgliteServer } from './pglite-server.js';

/**
 * Connections the local PGlite server accepts at once. They are multiplexed onto PGlite's
 * single session (one query at a time; an open transaction holds the session until it ends;
 * see pglite-server.ts), so this bounds connectors x pool size, not parallelism.
 */
export const LOCAL_SERVER_MAX_CONNECTIONS = 256;

/** Version of an installed package, found by walking up from its resolved entry point. */
function packageVersion(name: string): string {
  let dir = dirname(fileURLToPath(import.meta.resolve(name)));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name) return pkg.version ?? 'unknown';
    }
    const up = dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}

/** Table name for a namespace: `rf_` + a safe form, hashed when it would exceed the connector's limit. */
export function tableForNamespace(namespace: string): string {
  const safe = `rf_${namespace.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`;
  if (safe.length <= 48) return safe;
  return `${safe.slice(0, 39)}_${createHash('sha256').update(namespace).digest('hex').slice(0, 8)}`;
}

async function serverFacts(
  connectionString: string,
): Promise<{ server: string; pgvector: string }> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    const v = await client.query<{ v: string }>(`SELECT current_setting('server_version') AS v`);
    const ext = await client.query<{ v: string }>(
      `SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'),
                       (SELECT 'available ' || default_version FROM pg_available_extensions WHERE name = 'vector'),
                       'NOT INSTALLED') AS v`,
    );
    return { server: v.rows[0]?.v ?? 'unknown', pgvector: ext.rows[0]?.v ?? 'unknown' };
  } catch (cause) {
    throw new RagfreshError(
      'STORE_UNREACHABLE',
      `cannot reach Postgres at ${redactUrl(connectionString)} (${cause instanceof Error ? cause.message : String(cause)}); start the server or fix --url.`,
      { scope: 'pgvector', cause },
    );
  } finally {
    await client.end().catch(() => {});
  }
}

function target(
  kind: StoreTarget['kind'],
  description: string,
  connectionString: string,
  onStop: (tables: ReadonlySet<string>) => Promise<void>,
): StoreTarget {
  const tables = new Set<string>();
  const options = (ns: string): PgVectorConnectorOptions => {
    const table = tableForNamespace(ns);
    tables.add(table);
    return { connectionString, table };
  };
  return {
    kind,
    description,
    async createConnector(ns) {
      return createPgVectorConnector(options(ns));
    },
    connectorSpec(ns) {
      return {
        module: new URL('../dist/index.js', import.meta.url).href,
        exportName: 'createPgVectorConnector',
        options: { ...options(ns) },
      };
    },
    async stop() {
      await onStop(tables);
    },
  };
}

/**
 * pgvector targets:
 * - default (`local-server`): PGlite (Postgres compiled to WASM) with the real pgvector
 *   extension, in this process, served over the Postgres wire protocol on a free loopback port
 *   by pglite-socket; connectors talk to it with `pg` exactly as to a real server.
 * - `{ url }` (`url`): a running Postgres with pgvector. Tables the target created are dropped
 *   on stop.
 */
export const fixture: StoreFixture = {
  store: 'pgvector',
  async start(options: FixtureStartOptions = {}): Promise<StoreTarget> {
    if (options.url !== undefined) {
      const url = options.url;
      const facts = await serverFacts(url);
      return target(
        'url',
        `PostgreSQL ${facts.server} + pgvector ${facts.pgvector} at ${redactUrl(url)}`,
        url,
        async (tables) => {
          const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
          try {
            await client.connect();
            for (const t of tables) {
              await client.query(
                `DROP TABLE IF EXISTS ${pg.escapeIdentifier(t)}, ${pg.escapeIdentifier(`${t}_rf_epoch`)}`,
              );
            }
          } finally {
            await client.end().catch(() => {});
          }
        },
      );
    }
    const db = await PGlite.create({ extensions: { vector } });
    await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
    const facts = await db.query<{ server: string; ext: string }>(
      `SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS ext`,
    );
    const server = await startPgliteServer({ db, maxConnections: LOCAL_SERVER_MAX_CONNECTIONS });
    const address = server.getServerConn();
    const row = facts.rows[0];
    return target(
      'local-server',
      `PGlite ${packageVersion('@electric-sql/pglite')} (PostgreSQL ${row?.server} in WASM) + pgvector ${row?.ext} ` +
        `(@electric-sql/pglite-pgvector ${packageVersion('@electric-sql/pglite-pgvector')}), in-memory, served by ` +
        `@electric-sql/pglite-socket ${packageVersion('@electric-sql/pglite-socket')} at ${address} ` +
        `(up to ${LOCAL_SERVER_MAX_CONNECTIONS} connections multiplexed onto one PGlite session, one protocol unit at a time)`,
      `postgres://postgres@${address}/postgres`,
      async () => {
        await server.stop();
        await db.close();
      },
    );
  },
};
