import { existsSync, renameSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { RagfreshError } from '../errors.js';
import type { StateBackend } from './backend.js';
import { KeyvStateStore } from './keyv-store.js';
import { SqliteStateBackend } from './sqlite.js';

/** Where `openStateStore('sqlite:')` keeps its file, relative to `cwd`. */
export const DEFAULT_SQLITE_STATE_PATH = '.ragfresh/state.sqlite';
export const DEFAULT_STATE_NAMESPACE = 'ragfresh';

export interface OpenStateStoreOptions {
  /**
   * Prefix of every key, so several ragfresh deployments (or tests) can share one database.
   * Default `ragfresh`.
   */
  readonly namespace?: string;
  /** Base directory of a relative SQLite path. Default `process.cwd()`. */
  readonly cwd?: string;
  /** Table holding the records (SQLite and Postgres). Default `ragfresh_state`. */
  readonly table?: string;
  /** SQLite: how long a writer waits for another process's lock. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /** SQLite: `normal` (default, survives process crashes) or `full` (also power loss, slower). */
  readonly sqliteSynchronous?: 'normal' | 'full';
  /** Redis and Postgres: how long to try connecting before STORE_UNREACHABLE. Default 5000 ms. */
  readonly connectTimeoutMs?: number;
}

/**
 * Opens the durable state store named by `spec`:
 * - `sqlite:<path>` (or `sqlite:` / `sqlite` for `.ragfresh/state.sqlite`; `sqlite::memory:`),
 *   the embedded default; the file's directory is created;
 * - `redis://…` / `rediss://…`;
 * - `postgres://…` / `postgresql://…`.
 * Throws INVALID_CONFIG for any other spec, STORE_UNREACHABLE when the server cannot be reached.
 */
export async function openStateStore(
  spec: string,
  options: OpenStateStoreOptions = {},
): Promise<KeyvStateStore> {
  const namespace = options.namespace ?? DEFAULT_STATE_NAMESPACE;
  if (typeof namespace !== 'string' || namespace.length === 0) {
    throw new RagfreshError(
      'INVALID_CONFIG',
      `state namespace ${JSON.stringify(namespace)} must be a non-empty string.`,
      { scope: 'state' },
    );
  }
  const backend = await openBackend(typeof spec === 'string' ? spec.trim() : '', options, spec);
  return new KeyvStateStore(backend, namespace);
}

async function openBackend(
  spec: string,
  options: OpenStateStoreOptions,
  original: unknown,
): Promise<StateBackend> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(spec)?.[1]?.toLowerCase() ?? spec.toLowerCase();
  switch (scheme) {
    case 'sqlite': {
      return new SqliteStateBackend({
        path: sqliteStatePath(spec, options)!,
        ...(options.table === undefined ? {} : { table: options.table }),
        ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
        ...(options.sqliteSynchronous === undefined
          ? {}
          : { synchronous: options.sqliteSynchronous }),
      });
    }
    case 'redis':
    case 'rediss':
      requireUrl(spec);
      // Vendor clients load only when a store of that kind is opened.
      return (await import('./redis.js')).RedisStateBackend.open({
        url: spec,
        ...(options.connectTimeoutMs === undefined
          ? {}
          : { connectTimeoutMs: options.connectTimeoutMs }),
      });
    case 'postgres':
    case 'postgresql':
      requireUrl(spec);
      return (await import('./postgres.js')).PostgresStateBackend.open({
        url: spec,
        ...(options.table === undefined ? {} : { table: options.table }),
        ...(options.connectTimeoutMs === undefined
          ? {}
          : { connectTimeoutMs: options.connectTimeoutMs }),
      });
    default:
      throw new RagfreshError(
        'INVALID_CONFIG',
        `state store ${describeSpec(original)} is not recognised; use sqlite:<path>, redis://host:6379 or postgres://user@host:5432/db.`,
        { scope: 'state' },
      );
  }
}

/** The file a `sqlite:` spec names (resolved against `cwd`), undefined for other specs. */
export function sqliteStatePath(
  spec: string,
  options: Pick<OpenStateStoreOptions, 'cwd'> = {},
): string | undefined {
  const trimmed = spec.trim();
  if (!/^sqlite(:|$)/i.test(trimmed)) return undefined;
  const rest = trimmed.slice('sqlite'.length).replace(/^:/, '').replace(/^\/\//, '');
  const path = rest === '' ? DEFAULT_SQLITE_STATE_PATH : rest;
  return path === ':memory:' || isAbsolute(path)
    ? path
    : resolve(options.cwd ?? process.cwd(), path);
}

/**
 * Moves a corrupt SQLite state file (and its `-wal` / `-shm` companions) aside to
 * `<file>.corrupt-<time>`, never deleting it, so `ragfresh recover` can rebuild a fresh state
 * in its place. Returns where the file went; undefined when the spec is not a SQLite file.
 */
export function moveCorruptStateAside(
  spec: string,
  options: Pick<OpenStateStoreOptions, 'cwd'> & { readonly now?: Date } = {},
): { readonly from: string; readonly to: string } | undefined {
  const path = sqliteStatePath(spec, options);
  if (path === undefined || path === ':memory:' || !existsSync(path)) return undefined;
  const stamp = (options.now ?? new Date()).toISOString().replace(/[:.]/g, '-');
  const to = `${path}.corrupt-${stamp}`;
  for (const suffix of ['-wal', '-shm'])
    if (existsSync(`${path}${suffix}`)) renameSync(`${path}${suffix}`, `${to}${suffix}`);
  renameSync(path, to);
  return { from: path, to };
}

function requireUrl(spec: string): void {
  let url: URL | undefined;
  try {
    url = new URL(spec);
  } catch {
    url = undefined;
  }
  if (url === undefined || url.hostname === '') {
    throw new RagfreshError(
      'INVALID_CONFIG',
      `state store URL ${describeSpec(spec)} is not a valid URL with a host; use e.g. redis://127.0.0.1:6379 or postgres://user@127.0.0.1:5432/db.`,
      { scope: 'state' },
    );
  }
}

/** The spec for a message, with any password masked. */
function describeSpec(spec: unknown): string {
  if (typeof spec !== 'string') return String(spec);
  return JSON.stringify(spec.replace(/(\/\/[^:/@]*:)[^@/]*@/, '$1***@'));
}
