import { EventEmitter } from 'node:events';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { KeyvStoreAdapter, StoredData } from 'keyv';
import { RagfreshError } from '../errors.js';

export interface KeyvSqliteOptions {
  /** Database file path, or `:memory:`. The directory must exist. */
  readonly path: string;
  /** Table name (`[A-Za-z_][A-Za-z0-9_]*`). Default `keyv`. */
  readonly table?: string;
  /** How long a writer waits for another connection's lock before failing. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /**
   * `normal` (default) survives a crash of the process but may lose the last commits on power
   * loss; `full` also survives power loss at the cost of one fsync per write.
   */
  readonly synchronous?: 'normal' | 'full';
  /** Rows fetched per page when iterating. Default 256. */
  readonly iterationLimit?: number;
}

interface Row {
  readonly key: string;
  readonly value: string;
}

/**
 * A keyv storage adapter over `node:sqlite` (`DatabaseSync`): one file, no native build, WAL
 * journal, a busy timeout so several processes can share the file. Each `set`/`delete` is one
 * statement, so it is atomic on its own; `transaction()` groups several under `BEGIN IMMEDIATE`.
 * Usable as `new Keyv({ store: new KeyvSqlite({ path }) })`; keyv's own envelope and TTL apply.
 */
export class KeyvSqlite extends EventEmitter implements KeyvStoreAdapter {
  // biome-ignore lint/suspicious/noExplicitAny: KeyvStoreAdapter declares opts as any
  opts: any;
  namespace?: string | undefined;
  readonly db: DatabaseSync;
  private readonly table: string;
  private readonly path: string;
  private readonly pageSize: number;
  private readonly statements = new Map<string, StatementSync>();

  constructor(options: KeyvSqliteOptions) {
    super();
    const table = options.table ?? 'keyv';
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) {
      throw new RagfreshError(
        'INVALID_CONFIG',
        `SQLite table name ${JSON.stringify(table)} is not a plain identifier; use letters, digits and _.`,
        { scope: 'sqlite' },
      );
    }
    this.table = table;
    this.path = options.path;
    this.pageSize = Math.max(1, options.iterationLimit ?? 256);
    // `dialect` lets keyv expose its iterator over this adapter.
    this.opts = { dialect: 'sqlite', url: `sqlite://${options.path}`, table, path: options.path };
    try {
      const { DatabaseSync } = loadNodeSqlite();
      this.db = new DatabaseSync(options.path, { timeout: options.busyTimeoutMs ?? 5000 });
      this.db.exec('PRAGMA journal_mode = WAL');
      this.db.exec(`PRAGMA synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.db.exec(
        `CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
      );
      // Ordered indexes (the per-source aggregates): a member with a score, read from either end.
      this.db.exec(
        `CREATE TABLE IF NOT EXISTS ${table}_z (key TEXT NOT NULL, member TEXT NOT NULL, score REAL NOT NULL, PRIMARY KEY (key, member)) WITHOUT ROWID`,
      );
      this.db.exec(
        `CREATE INDEX IF NOT EXISTS ${table}_z_score ON ${table}_z (key, score, member)`,
      );
    } catch (cause) {
      throw (
        corruptError(options.path, cause) ??
        new RagfreshError(
          'STORE_UNREACHABLE',
          `cannot open SQLite state file ${JSON.stringify(options.path)}: ${(cause as Error).message}; check the path and its permissions.`,
          { scope: 'sqlite', cause },
        )
      );
    }
  }

  /** Runs one SQLite call; a file found damaged mid-way (not only at open) is STATE_CORRUPT. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (cause) {
      throw corruptError(this.path, cause) ?? cause;
    }
  }

  private statement(sql: string): StatementSync {
    let stmt = this.statements.get(sql);
    if (stmt === undefined) {
      stmt = this.guard(() => this.db.prepare(sql.replaceAll('$table', this.table)));
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  /** Synchronous read, for use inside `transaction()`. */
  getSync(key: string): string | undefined {
    const stmt = this.statement('SELECT value FROM $table WHERE key = ?');
    const row = this.guard(() => stmt.get(key)) as { value: string } | undefined;
    return row?.value;
  }

  /** Synchronous read of several keys (one statement per 256), values in the order of `keys`. */
  getManySync(keys: readonly string[]): (string | undefined)[] {
    const found = new Map<string, string>();
    for (let i = 0; i < keys.length; i += 256) {
      const slice = keys.slice(i, i + 256);
      const stmt = this.statement(
        `SELECT key, value FROM $table WHERE key IN (${slice.map(() => '?').join(',')})`,
      );
      const rows = this.guard(() => stmt.all(...slice)) as unknown as Row[];
      for (const r of rows) found.set(r.key, r.value);
    }
    return keys.map((k) => found.get(k));
  }

  /** Synchronous upsert, for use inside `transaction()`. */
  setSync(key: string, value: string): void {
    const stmt = this.statement(
      'INSERT INTO $table (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    );
    this.guard(() => stmt.run(key, value));
  }

  deleteSync(key: string): boolean {
    const stmt = this.statement('DELETE FROM $table WHERE key = ?');
    return Number(this.guard(() => stmt.run(key)).changes) > 0;
  }

  /** Synchronous write of one ordered-index member (`zincr` adds to its score). */
  zwriteSync(op: 'zadd' | 'zincr' | 'zrem', key: string, member: string, score = 0): void {
    const sql =
      op === 'zrem'
        ? 'DELETE FROM $table_z WHERE key = ? AND member = ?'
        : op === 'zadd'
          ? 'INSERT INTO $table_z (key, member, score) VALUES (?, ?, ?) ON CONFLICT(key, member) DO UPDATE SET score = excluded.score'
          : 'INSERT INTO $table_z (key, member, score) VALUES (?, ?, ?) ON CONFLICT(key, member) DO UPDATE SET score = score + excluded.score';
    const stmt = this.statement(sql);
    this.guard(() => (op === 'zrem' ? stmt.run(key, member) : stmt.run(key, member, score)));
  }

  /** Members of one ordered index: all (`limit` undefined) or the first `limit` from one end. */
  zreadSync(key: string, end: 'low' | 'high', limit?: number): { member: string; score: number }[] {
    const stmt = this.statement(
      `SELECT member, score FROM $table_z WHERE key = ? ORDER BY score ${end === 'low' ? 'ASC' : 'DESC'}, member ASC${limit === undefined ? '' : ' LIMIT ?'}`,
    );
    const rows = this.guard(() => (limit === undefined ? stmt.all(key) : stmt.all(key, limit)));
    return rows as unknown as { member: string; score: number }[];
  }

  /** Drops every ordered index whose key starts with `prefix:`. */
  zclearSync(prefix: string): void {
    const [low, high] = prefixRange(prefix);
    const stmt = this.statement('DELETE FROM $table_z WHERE key >= ? AND key < ?');
    this.guard(() => stmt.run(low, high));
  }

  /**
   * Runs `fn` inside `BEGIN IMMEDIATE … COMMIT`: the write lock is taken up front (waiting up
   * to the busy timeout), so a read-check-write inside `fn` cannot race another connection.
   */
  transaction<T>(fn: () => T): T {
    this.guard(() => this.db.exec('BEGIN IMMEDIATE'));
    try {
      const result = fn();
      this.guard(() => this.db.exec('COMMIT'));
      return result;
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  async get<Value>(key: string): Promise<StoredData<Value> | undefined> {
    return this.getSync(key) as StoredData<Value> | undefined;
  }

  async getMany<Value>(keys: string[]): Promise<Array<StoredData<Value | undefined>>> {
    return keys.map((key) => this.getSync(key) as StoredData<Value | undefined>);
  }

  // biome-ignore lint/suspicious/noExplicitAny: keyv hands over its serialized value
  async set(key: string, value: any): Promise<void> {
    this.setSync(key, typeof value === 'string' ? value : JSON.stringify(value));
  }

  async setMany(values: Array<{ key: string; value: unknown }>): Promise<void> {
    this.transaction(() => {
      for (const { key, value } of values) {
        this.setSync(key, typeof value === 'string' ? value : JSON.stringify(value));
      }
    });
  }

  async delete(key: string): Promise<boolean> {
    return this.deleteSync(key);
  }

  async deleteMany(keys: string[]): Promise<boolean> {
    return this.transaction(() => keys.map((key) => this.deleteSync(key)).some(Boolean));
  }

  async has(key: string): Promise<boolean> {
    return this.getSync(key) !== undefined;
  }

  async clear(): Promise<void> {
    if (this.namespace === undefined) {
      const all = this.statement('DELETE FROM $table');
      this.guard(() => all.run());
      return;
    }
    const [low, high] = prefixRange(this.namespace);
    const some = this.statement('DELETE FROM $table WHERE key >= ? AND key < ?');
    this.guard(() => some.run(low, high));
  }

  /** `[key, value]` of every key starting with `namespace + ':'` (all keys without one), by key, paged. */
  async *iterator<Value>(
    namespace?: string,
  ): AsyncGenerator<Array<string | Awaited<Value> | undefined>, void> {
    const [low, high] = namespace === undefined ? ['', '\u{10FFFF}'] : prefixRange(namespace);
    let after: string | null = null;
    for (;;) {
      const first = after === null;
      const stmt = this.statement(
        `SELECT key, value FROM $table WHERE key ${first ? '>=' : '>'} ? AND key < ? ORDER BY key LIMIT ?`,
      );
      const from = after ?? low;
      const rows = this.guard(() => stmt.all(from, high, this.pageSize)) as unknown as Row[];
      for (const row of rows) yield [row.key, row.value as Awaited<Value>];
      if (rows.length < this.pageSize) return;
      after = rows[rows.length - 1]!.key;
    }
  }

  async disconnect(): Promise<void> {
    if (this.db.isOpen) this.db.close();
  }
}

/** SQLite's primary result codes for a damaged file: SQLITE_CORRUPT and SQLITE_NOTADB. */
const CORRUPT_CODES: ReadonlySet<number> = new Set([11, 26]);

/**
 * STATE_CORRUPT for an error SQLite raised because the file is damaged (garbage bytes, a
 * truncated file), undefined for any other error. The message names the way out.
 */
export function corruptError(path: string, cause: unknown): RagfreshError | undefined {
  const code = (cause as { errcode?: unknown } | null)?.errcode;
  if (typeof code !== 'number' || !CORRUPT_CODES.has(code & 0xff)) return undefined;
  return new RagfreshError(
    'STATE_CORRUPT',
    `SQLite state file ${JSON.stringify(path)} is corrupt (${(cause as Error).message}); run \`ragfresh recover\` to move it aside and rebuild the state from the store.`,
    { scope: 'sqlite', cause },
  );
}

/** `[low, high)` bounds of every key starting with `prefix:` under binary collation. */
function prefixRange(prefix: string): [string, string] {
  return [`${prefix}:`, `${prefix};`];
}

/**
 * `node:sqlite`, loaded on first use and without its one-time ExperimentalWarning: Node 22
 * prints it on stderr of every CLI run otherwise, and the API used here is stable in practice.
 * Other warnings pass through untouched.
 */
function loadNodeSqlite(): typeof import('node:sqlite') {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (String(text).includes('SQLite is an experimental feature')) return;
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return process.getBuiltinModule('node:sqlite');
  } finally {
    process.emitWarning = emitWarning;
  }
}
