import {
  buildConnector,
  type CompactReport,
  Connector,
  type ConnectorCapabilities,
  type ConnectorFactoryContext,
  checkConnectorOptions,
  chunkUuid,
  type ErrorCode,
  FIELDS,
  type FlatMetadata,
  isRagfreshError,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  RagfreshError,
  readerAccessTokens,
  type StoredChunk,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
  type ViewSelector,
} from '@ragfresh/core';
import pg from 'pg';

/**
 * Options of `createPgVectorConnector`. Plain JSON, so a child process can rebuild the same
 * connector from a `ConnectorSpec`.
 */
export interface PgVectorConnectorOptions {
  /** `postgres://user:password@host:port/database`. The server needs the pgvector extension. */
  readonly connectionString: string;
  /** Table holding the chunks; the epoch lives in `<table>_rf_epoch`. Letters, digits, `_`; at most 48 characters. */
  readonly table: string;
  /** Schema of both tables (created when missing). Default `public`. */
  readonly schema?: string;
  /**
   * Pool size. Default 4. Against PGlite served by pglite-socket every connection is multiplexed
   * onto PGlite's single session, so more connections add no parallelism there (see README).
   */
  readonly maxConnections?: number;
  /** How long to wait for a connection before STORE_UNREACHABLE. Default 10 000 ms. */
  readonly connectTimeoutMs?: number;
  /** Chunks per INSERT statement. Default 500. */
  readonly maxWriteBatch?: number;
}

/** The `rf_to` / `rf_current` keys a validity patch sets, as a jsonb object to merge. */
function validitySet(patch: ValidityPatch): Record<string, number | boolean> {
  const set: Record<string, number | boolean> = {};
  if (patch.to !== undefined) set[FIELDS.to] = patch.to;
  if (patch.current !== undefined) set[FIELDS.current] = patch.current;
  return set;
}

/** Written into `<table>_rf_epoch.format`; a table whose marker differs is foreign. */
export const PGVECTOR_LAYOUT = 'ragfresh-pgvector/1';

export const PGVECTOR_CAPABILITIES: ConnectorCapabilities = {
  store: 'pgvector',
  // Epoch readers filter `rf_from <= E < rf_to`; the epoch is one row updated by compare-and-set.
  promotion: 'snapshot',
  // `_patchValidityMany` applies a call's patches in one UPDATE statement, and core sends a
  // batch's flag flip in one call: a reader's snapshot sees the old flags or the new ones.
  flagPromotion: 'atomic',
  visibility: { mode: 'immediate' },
  maxWriteBatch: 500,
  epochInStore: true,
  idForm: 'uuid',
  // The epoch row holds the newest fence; a fenced write locks it (FOR SHARE) and checks it in
  // the write's own transaction, so a raise commits before or after the write, never between.
  fencing: 'store',
  scan: true,
};

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_TABLE_NAME = 48;
/** Generated copies of the lookup keys (see #ensureKeyColumns). */
const KEY_COLUMNS_SQL =
  "rf_doc text GENERATED ALWAYS AS (metadata->>'rf_doc') STORED, rf_version text GENERATED ALWAYS AS (metadata->>'rf_version') STORED";
/** Free space left in each page so a validity patch can put the new row version beside the old (HOT). */
const FILLFACTOR = 50;
/** Widest `vector` pgvector's HNSW index accepts. */
export const HNSW_MAX_DIMENSIONS = 2000;
/** NUL and unpaired surrogates: Postgres text and jsonb cannot hold them (pg would silently replace surrogates). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching NUL is the point.
const UNSTORABLE = /[\u0000\p{Cs}]/u;

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

interface ChunkRow {
  id: string;
  text: string | null;
  metadata: Record<string, unknown> | null;
  embedding?: string;
  distance?: number | null;
}

function describeServer(connectionString: string): string {
  try {
    const u = new URL(connectionString);
    return `${u.hostname || 'localhost'}:${u.port || '5432'}${u.pathname || '/'}`;
  } catch {
    return 'the configured server';
  }
}

function vectorLiteral(v: readonly number[]): string {
  return `[${v.join(',')}]`;
}

function pgCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function isNetworkError(err: unknown): boolean {
  const code = pgCode(err);
  if (code !== undefined && NETWORK_CODES.has(code)) return true;
  if (code?.startsWith('08')) return true; // SQLSTATE class 08: connection exception
  const message = err instanceof Error ? err.message : String(err);
  return /Connection terminated|timeout expired|connect ECONNREFUSED|Too many connections|Client has encountered a connection error/i.test(
    message,
  );
}

/**
 * pgvector connector: one Postgres table in the layout LangChain's `PGVectorStore` reads
 * (`id uuid` primary key, `text`, `metadata jsonb`, `embedding vector(n)`), plus a one-row
 * `<table>_rf_epoch` table holding the published epoch.
 */
export class PgVectorConnector extends Connector {
  readonly #options: PgVectorConnectorOptions;
  readonly #schema: string;
  readonly #table: string;
  readonly #server: string;
  #pool: pg.Pool | undefined;
  /** Quoted, schema-qualified names. */
  readonly #t: string;
  readonly #e: string;

  constructor(options: PgVectorConnectorOptions) {
    const maxWriteBatch = options.maxWriteBatch ?? PGVECTOR_CAPABILITIES.maxWriteBatch;
    super({ ...PGVECTOR_CAPABILITIES, maxWriteBatch });
    if (typeof options.connectionString !== 'string' || options.connectionString === '') {
      throw this.error(
        'INVALID_CONFIG',
        'connectionString is required, e.g. postgres://postgres@127.0.0.1:5432/postgres.',
      );
    }
    const schema = options.schema ?? 'public';
    for (const [what, name] of [
      ['table', options.table],
      ['schema', schema],
    ] as const) {
      if (typeof name !== 'string' || !IDENTIFIER.test(name) || name.length > MAX_TABLE_NAME) {
        throw this.error(
          'INVALID_CONFIG',
          `${what} name ${JSON.stringify(name)} is invalid; use 1-${MAX_TABLE_NAME} letters, digits or '_', not starting with a digit.`,
        );
      }
    }
    const pool = options.maxConnections ?? 4;
    if (!Number.isSafeInteger(pool) || pool < 1) {
      throw this.error('INVALID_CONFIG', `maxConnections must be a positive integer, got ${pool}.`);
    }
    this.#options = options;
    this.#schema = schema;
    this.#table = options.table;
    this.#server = describeServer(options.connectionString);
    this.#t = `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(options.table)}`;
    this.#e = `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(`${options.table}_rf_epoch`)}`;
  }

  protected override _forNamespace(suffix: string): PgVectorConnector {
    return new PgVectorConnector({ ...this.#options, table: `${this.#table}__${suffix}` });
  }

  /** `schema.table` of the chunk table. */
  get tableName(): string {
    return `${this.#schema}.${this.#table}`;
  }

  /** `schema.table` of the one-row epoch table. */
  get epochTableName(): string {
    return `${this.#schema}.${this.#table}_rf_epoch`;
  }

  #fail(code: ErrorCode, message: string, cause?: unknown): RagfreshError {
    return this.error(code, message, cause);
  }

  /** Maps driver and server errors to coded RagfreshErrors; passes RagfreshErrors through. */
  #translate(err: unknown, doing: string): RagfreshError {
    if (isRagfreshError(err)) return err;
    const message = err instanceof Error ? err.message : String(err);
    if (isNetworkError(err)) {
      return this.#fail(
        'STORE_UNREACHABLE',
        `cannot reach Postgres at ${this.#server} while ${doing} (${message}); start the server or fix connectionString.`,
        err,
      );
    }
    const code = pgCode(err);
    if (code?.startsWith('28') || code === '3D000') {
      return this.#fail(
        'STORE_UNREACHABLE',
        `Postgres at ${this.#server} refused the connection while ${doing} (${message}); check the user, password and database in connectionString.`,
        err,
      );
    }
    if (code === '42501') {
      return this.#fail(
        'STORE_REJECTED',
        `Postgres at ${this.#server} denied ${doing} on ${this.tableName} (${message}); grant the connecting role the needed privileges.`,
        err,
      );
    }
    return this.#fail(
      'STORE_REJECTED',
      `Postgres at ${this.#server} rejected ${doing} on ${this.tableName} (${code ?? 'no SQLSTATE'}: ${message}); nothing was changed by the failed statement.`,
      err,
    );
  }

  get #db(): pg.Pool {
    if (this.#pool === undefined) {
      const pool = new pg.Pool({
        connectionString: this.#options.connectionString,
        max: this.#options.maxConnections ?? 4,
        connectionTimeoutMillis: this.#options.connectTimeoutMs ?? 10_000,
        idleTimeoutMillis: 10_000,
        allowExitOnIdle: true,
        // Awaited by the pool before the client is used. Filtered HNSW scans then keep going
        // until k rows pass the filter (pgvector >= 0.8); older servers reject the setting,
        // which only leaves filtered ANN scans approximate.
        onConnect: async (client) => {
          await client.query(`SET hnsw.iterative_scan = 'strict_order'`).catch(() => {});
        },
      });
      // An idle client losing its server must not crash the process; the next query reports it.
      pool.on('error', () => {});
      this.#pool = pool;
    }
    return this.#pool;
  }

  async #query<R extends pg.QueryResultRow>(
    doing: string,
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.#db.query<R>(text, values);
    } catch (err) {
      throw this.#translate(err, doing);
    }
  }

  /** Runs `fn` in one transaction on one connection; rolls back on any failure. */
  async #transaction<T>(doing: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#db.connect();
    } catch (err) {
      throw this.#translate(err, doing);
    }
    let broken: unknown;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackErr) {
        broken = rollbackErr;
      }
      throw this.#translate(err, doing);
    } finally {
      client.release(broken instanceof Error ? broken : undefined);
    }
  }

  protected async _open(options: OpenOptions): Promise<void> {
    const n = options.dimensions;
    if (n > 16_000) {
      throw this.#fail(
        'INVALID_ARGUMENT',
        `pgvector stores at most 16000 dimensions, asked for ${n}.`,
      );
    }
    await this.#transaction('opening the table', async (c) => {
      // Serialises concurrent opens of the same table (CREATE ... IF NOT EXISTS races otherwise).
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`ragfresh:${this.tableName}`]);
      await this.#ensureExtension(c);
      if (this.#schema !== 'public')
        await c.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(this.#schema)}`);
      const columns = await this.#columns(c, this.#t);
      if (columns.size === 0) {
        await c.query(
          `CREATE TABLE ${this.#t} (id uuid PRIMARY KEY, text text NOT NULL, metadata jsonb NOT NULL, embedding vector(${n}) NOT NULL, ${KEY_COLUMNS_SQL}) WITH (fillfactor = ${FILLFACTOR})`,
        );
      } else {
        await this.#checkLayout(c, columns, n);
      }
      await this.#ensureEpochTable(c, columns.size > 0);
      if (columns.size > 0) await this.#ensureKeyColumns(c, columns);
      await this.#assertNoStrayRows(c);
      const name = (suffix: string) => pg.escapeIdentifier(`${this.#table}_${suffix}`);
      await c.query(
        `CREATE INDEX IF NOT EXISTS ${name('rf_doc_version')} ON ${this.#t} (rf_doc, rf_version)`,
      );
      // pgvector's HNSW indexes `vector` up to 2000 dimensions; wider vectors are searched
      // exactly (sequential scan), which is correct, only slower on large tables.
      if (n <= HNSW_MAX_DIMENSIONS) {
        await c.query(
          `CREATE INDEX IF NOT EXISTS ${name('embedding_hnsw')} ON ${this.#t} USING hnsw (embedding vector_cosine_ops)`,
        );
      }
    });
  }

  async #ensureExtension(c: pg.PoolClient): Promise<void> {
    const installed = await c.query(`SELECT extversion FROM pg_extension WHERE extname = 'vector'`);
    if (installed.rowCount !== 0) return;
    const available = await c.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`);
    if (available.rowCount === 0) {
      const version = await c.query<{ v: string }>(
        `SELECT current_setting('server_version_num') AS v`,
      );
      const major = Math.floor(Number(version.rows[0]?.v ?? '0') / 10_000);
      throw this.#fail(
        'STORE_REJECTED',
        `Postgres at ${this.#server} has no pgvector extension; install it on the server (e.g. apt install postgresql-${major}-pgvector from apt.postgresql.org) or point connectionString at a server with pgvector.`,
      );
    }
    try {
      await c.query('CREATE EXTENSION IF NOT EXISTS vector');
    } catch (err) {
      if (pgCode(err) === '42501') {
        throw this.#fail(
          'STORE_REJECTED',
          `the connecting role may not create the pgvector extension on ${this.#server}; ask a superuser to run CREATE EXTENSION vector once.`,
          err,
        );
      }
      throw err;
    }
  }

  async #columns(c: pg.PoolClient, qualified: string): Promise<Map<string, string>> {
    const res = await c.query<{ name: string; type: string }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a
        WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`,
      [qualified],
    );
    return new Map(res.rows.map((r) => [r.name, r.type]));
  }

  async #checkLayout(c: pg.PoolClient, columns: Map<string, string>, n: number): Promise<void> {
    const foreign = (why: string) =>
      this.#fail(
        'FOREIGN_DATA',
        `table ${this.tableName} exists but ${why}; it was not written by ragfresh. Choose another table name, or move that table away. Nothing was changed.`,
      );
    for (const [column, type] of [
      ['id', 'uuid'],
      ['text', 'text'],
      ['metadata', 'jsonb'],
    ] as const) {
      const actual = columns.get(column);
      if (actual !== type)
        throw foreign(
          actual === undefined
            ? `has no ${column} column`
            : `its ${column} column is ${actual}, not ${type}`,
        );
    }
    const embedding = columns.get('embedding');
    const match = embedding === undefined ? null : /^(?:[\w.]+\.)?vector\((\d+)\)$/.exec(embedding);
    if (match === null) {
      throw foreign(
        embedding === undefined
          ? 'has no embedding column'
          : `its embedding column is ${embedding}, not vector(${n})`,
      );
    }
    const have = Number(match[1]);
    if (have !== n) {
      throw this.#fail(
        'DIMENSION_MISMATCH',
        `table ${this.tableName} holds ${have}-dimension vectors (vector(${have})), asked for ${n}; use the embeddings the table was built with, or a new table name. Nothing was changed.`,
      );
    }
    const pk = await c.query(
      `SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnatts = 1 AND a.attname = 'id'`,
      [this.#t],
    );
    if (pk.rowCount === 0) throw foreign('its id column is not unique (no primary key)');
  }

  async #ensureEpochTable(c: pg.PoolClient, tableExisted: boolean): Promise<void> {
    const columns = await this.#columns(c, this.#e);
    if (columns.size === 0) {
      if (tableExisted) {
        const rows = await c.query(`SELECT 1 FROM ${this.#t} LIMIT 1`);
        if (rows.rowCount !== 0) {
          throw this.#fail(
            'FOREIGN_DATA',
            `table ${this.tableName} holds rows but has no ${this.epochTableName}; it was not written by ragfresh. Choose another table name, or move that table away. Nothing was changed.`,
          );
        }
      }
      await c.query(
        `CREATE TABLE ${this.#e} (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), epoch integer NOT NULL, format text NOT NULL, fence bigint NOT NULL DEFAULT 0, space text)`,
      );
      await c.query(`INSERT INTO ${this.#e} (epoch, format) VALUES (0, $1)`, [PGVECTOR_LAYOUT]);
      return;
    }
    let format: string | undefined;
    if (columns.get('epoch') === 'integer' && columns.get('format') === 'text') {
      const res = await c.query<{ format: string }>(`SELECT format FROM ${this.#e}`);
      format = res.rowCount === 1 ? res.rows[0]?.format : undefined;
    }
    if (format !== PGVECTOR_LAYOUT) {
      throw this.#fail(
        'FOREIGN_DATA',
        `${this.epochTableName} is not a ragfresh epoch table (expected one row with format ${PGVECTOR_LAYOUT}); choose another table name. Nothing was changed.`,
      );
    }
    // Epoch tables written before the fence reached the store gain it (no fence raised yet).
    if (!columns.has('fence'))
      await c.query(`ALTER TABLE ${this.#e} ADD COLUMN fence bigint NOT NULL DEFAULT 0`);
    // And those written before the epoch record named its space (null until the next move).
    if (!columns.has('space')) await c.query(`ALTER TABLE ${this.#e} ADD COLUMN space text`);
  }

  /**
   * `rf_doc` / `rf_version` are stored generated copies of the metadata keys. Indexing them
   * (not an expression on `metadata`) lets validity patches, which rewrite only `metadata`,
   * be HOT updates that skip every index, the HNSW graph included.
   */
  async #ensureKeyColumns(c: pg.PoolClient, columns: Map<string, string>): Promise<void> {
    const generated = await c.query<{ name: string; expr: string }>(
      `SELECT a.attname AS name, pg_get_expr(d.adbin, d.adrelid) AS expr
         FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = to_regclass($1) AND a.attgenerated = 's'`,
      [this.#t],
    );
    const exprs = new Map(generated.rows.map((r) => [r.name, r.expr]));
    const missing: string[] = [];
    for (const key of ['rf_doc', 'rf_version']) {
      if (!columns.has(key)) {
        missing.push(key);
        continue;
      }
      if (columns.get(key) !== 'text' || !exprs.get(key)?.includes(`'${key}'`)) {
        throw this.#fail(
          'FOREIGN_DATA',
          `table ${this.tableName} has a ${key} column that is not ragfresh's generated copy of metadata->>'${key}'; choose another table name. Nothing was changed.`,
        );
      }
    }
    if (missing.length > 0) {
      // Adopting an empty LangChain table (or an older ragfresh layout).
      await c.query(
        `ALTER TABLE ${this.#t} ${missing.map((k) => `ADD COLUMN ${k} text GENERATED ALWAYS AS (metadata->>'${k}') STORED`).join(', ')}, SET (fillfactor = ${FILLFACTOR})`,
      );
    }
  }

  async #assertNoStrayRows(c: pg.PoolClient): Promise<void> {
    const stray = await c.query<{ id: string }>(
      `SELECT id::text AS id FROM ${this.#t} WHERE rf_doc IS NULL OR rf_version IS NULL LIMIT 1`,
    );
    if (stray.rowCount !== 0) {
      throw this.#fail(
        'FOREIGN_DATA',
        `table ${this.tableName} holds rows without rf_doc/rf_version (e.g. id ${stray.rows[0]?.id}), written by something other than ragfresh; delete them or use another table. Nothing was changed.`,
      );
    }
  }

  #assertStorable(chunk: StoredChunk): void {
    const reject = (field: string) =>
      this.#fail(
        'STORE_REJECTED',
        `chunk ${chunk.id}: ${field} contains a NUL character or an unpaired UTF-16 surrogate, which Postgres text/jsonb cannot store; clean the text before publishing. Nothing in this batch was written.`,
      );
    if (UNSTORABLE.test(chunk.text)) throw reject('text');
    for (const [key, value] of Object.entries(chunk.metadata)) {
      if (UNSTORABLE.test(key)) throw reject(`a metadata key`);
      if (typeof value === 'string' && UNSTORABLE.test(value))
        throw reject(`metadata field ${key}`);
    }
  }

  #metadataOf(chunk: StoredChunk): FlatMetadata {
    const readable = chunk.metadata[FIELDS.chunkId];
    if (readable === undefined) return { ...chunk.metadata, [FIELDS.chunkId]: chunk.id };
    if (readable !== chunk.id) {
      throw this.#fail(
        'INVALID_METADATA',
        `chunk ${chunk.id} carries ${FIELDS.chunkId}=${JSON.stringify(readable)}; the store keys rows by the UUID of the chunk id and keeps the readable id in ${FIELDS.chunkId}, so they must agree.`,
      );
    }
    return chunk.metadata;
  }

  /**
   * Runs one write statement; under a fence, in a transaction that first locks the epoch row
   * (FOR SHARE: writers do not block each other, a raise waits for them) and refuses a stale
   * fence, so a raise is ordered entirely before or after the write.
   */
  async #write(doing: string, fence: number | undefined, text: string, values: unknown[]) {
    if (fence === undefined) {
      await this.#query(doing, text, values);
      return;
    }
    await this.#transaction(doing, async (c) => {
      const held = await c.query<{ fence: string }>(`SELECT fence FROM ${this.#e} FOR SHARE`);
      const stored = Number(held.rows[0]?.fence ?? 0);
      if (stored > fence) throw this.staleFence(fence, stored);
      await c.query(text, values);
    });
  }

  protected async _upsert(chunks: readonly StoredChunk[], fence?: number): Promise<void> {
    const ids: string[] = [];
    const texts: string[] = [];
    const metas: string[] = [];
    const vectors: string[] = [];
    for (const chunk of chunks) {
      this.#assertStorable(chunk);
      ids.push(chunkUuid(chunk.id));
      texts.push(chunk.text);
      metas.push(JSON.stringify(this.#metadataOf(chunk)));
      vectors.push(vectorLiteral(chunk.embedding));
    }
    // One statement per batch: all of it is written or none (a statement is a transaction).
    await this.#write(
      'writing chunks',
      fence,
      `INSERT INTO ${this.#t} (id, text, metadata, embedding)
       SELECT u.id, u.text, u.metadata, u.embedding::vector
         FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::text[]) AS u(id, text, metadata, embedding)
       ON CONFLICT (id) DO UPDATE SET text = EXCLUDED.text, metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding`,
      [ids, texts, metas, vectors],
    );
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
    fence?: number,
  ): Promise<void> {
    // `||` replaces only the patched keys; only the named version's rows are touched.
    await this.#write(
      'patching validity',
      fence,
      `UPDATE ${this.#t} SET metadata = metadata || $3::jsonb WHERE rf_doc = $1 AND rf_version = $2`,
      [documentId, versionId, JSON.stringify(validitySet(patch))],
    );
  }

  /**
   * Every patch of the call in one UPDATE (one statement, so one commit): the rows of each
   * named version get its `rf_to` / `rf_current`, nothing else changes. Core sends a batch's
   * whole flag flip (new versions on, the versions they replace off) in one call, so a flag
   * reader's snapshot holds the old flags or the new ones (flagPromotion `atomic`). Only
   * `metadata` changes, so the updates stay HOT.
   */
  protected override async _patchValidityMany(
    patches: readonly VersionPatch[],
    fence?: number,
  ): Promise<void> {
    await this.#write(
      'patching validity',
      fence,
      `UPDATE ${this.#t} t
          SET metadata = t.metadata || p.patch
         FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS p(doc, version, patch)
        WHERE t.rf_doc = p.doc AND t.rf_version = p.version`,
      [
        patches.map((p) => p.documentId),
        patches.map((p) => p.versionId),
        patches.map((p) => JSON.stringify(validitySet(p.patch))),
      ],
    );
  }

  protected async _readEpoch(): Promise<number> {
    const res = await this.#query<{ epoch: number }>(
      'reading the epoch',
      `SELECT epoch FROM ${this.#e}`,
    );
    const epoch = res.rows[0]?.epoch;
    if (res.rowCount !== 1 || typeof epoch !== 'number') {
      throw this.#fail(
        'FOREIGN_DATA',
        `${this.epochTableName} must hold exactly one row; restore it or use another table.`,
      );
    }
    return epoch;
  }

  /** One conditional UPDATE on the epoch row: the expected epoch and a fence not older than held. */
  protected async _advanceEpoch(
    expected: number,
    next: number,
    fence?: number,
    space?: string,
  ): Promise<void> {
    if (next > 2_147_483_646)
      throw this.#fail('INVALID_ARGUMENT', `epoch ${next} does not fit the store's integer epoch.`);
    await this.#transaction('advancing the epoch', async (c) => {
      // The space in the same UPDATE as the epoch; a move naming none keeps the stored one.
      const res = await c.query(
        `UPDATE ${this.#e} SET epoch = $2, fence = GREATEST(fence, COALESCE($3::bigint, 0)),
            space = COALESCE($4::text, space)
          WHERE epoch = $1 AND ($3::bigint IS NULL OR fence <= $3::bigint)`,
        [expected, next, fence ?? null, space ?? null],
      );
      if (res.rowCount === 1) return;
      const now = await c.query<{ epoch: number; fence: string }>(
        `SELECT epoch, fence FROM ${this.#e}`,
      );
      const held = Number(now.rows[0]?.fence ?? 0);
      if (fence !== undefined && held > fence) throw this.staleFence(fence, held);
      throw this.#fail(
        'EPOCH_CONFLICT',
        `published epoch is ${now.rows[0]?.epoch}, expected ${expected}; another publisher moved it. Reload state and retry.`,
      );
    });
  }

  /** The epoch row's `space` (null until a move names one). */
  protected override async _readEpochSpace(): Promise<string | undefined> {
    const res = await this.#query<{ space: string | null }>(
      'reading the space of the epoch',
      `SELECT space FROM ${this.#e}`,
    );
    const space = res.rows[0]?.space;
    return typeof space === 'string' && space !== '' ? space : undefined;
  }

  protected override async _readFence(): Promise<number> {
    const res = await this.#query<{ fence: string }>(
      'reading the fence',
      `SELECT fence FROM ${this.#e}`,
    );
    return Number(res.rows[0]?.fence ?? 0);
  }

  protected override async _raiseFence(fence: number): Promise<void> {
    const res = await this.#query(
      'raising the fence',
      `UPDATE ${this.#e} SET fence = $1 WHERE fence <= $1`,
      [fence],
    );
    // Refused: the fence only grows, so what is read now is still newer than `fence`.
    if (res.rowCount !== 1) throw this.staleFence(fence, await this._readFence());
  }

  protected async _deleteVersion(
    documentId: string,
    versionId: string,
    fence?: number,
  ): Promise<void> {
    await this.#write(
      'deleting a version',
      fence,
      `DELETE FROM ${this.#t} WHERE rf_doc = $1 AND rf_version = $2`,
      [documentId, versionId],
    );
  }

  protected override async _deleteVersions(
    refs: readonly VersionRef[],
    fence?: number,
  ): Promise<void> {
    await this.#write(
      'deleting versions',
      fence,
      `DELETE FROM ${this.#t} t
        USING unnest($1::text[], $2::text[]) AS r(doc, version)
        WHERE t.rf_doc = r.doc AND t.rf_version = r.version`,
      [refs.map((r) => r.documentId), refs.map((r) => r.versionId)],
    );
  }

  protected async _deleteDocuments(documentIds: readonly string[], fence?: number): Promise<void> {
    await this.#write(
      'deleting documents',
      fence,
      `DELETE FROM ${this.#t} WHERE rf_doc = ANY($1::text[])`,
      [[...documentIds]],
    );
  }

  /** Rows as core sees them: `id` is the stored key (idForm 'uuid'); the readable id is metadata rf_chunk. */
  #listed(row: ChunkRow): ListedChunk {
    const metadata = (row.metadata ?? {}) as Record<string, FlatMetadata[string]>;
    const base = { id: row.id, text: row.text ?? '', metadata };
    return row.embedding === undefined
      ? base
      : { ...base, embedding: JSON.parse(row.embedding) as number[] };
  }

  /** Keyset pages in primary-key order: the cursor is the last id of the previous page. */
  protected override async _scan(
    cursor: string | undefined,
    pageSize: number,
  ): Promise<{ chunks: ListedChunk[]; next?: string }> {
    const res = await this.#query<ChunkRow>(
      'scanning chunks',
      `SELECT id::text AS id, text, metadata FROM ${this.#t}
        WHERE $1::uuid IS NULL OR id > $1::uuid ORDER BY id LIMIT $2`,
      [cursor ?? null, pageSize],
    );
    const chunks = res.rows.map((r) => this.#listed(r));
    return chunks.length < pageSize ? { chunks } : { chunks, next: chunks.at(-1)!.id };
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const values: unknown[] = [documentId];
    let where = 'rf_doc = $1';
    if (versionId !== undefined) {
      values.push(versionId);
      where += ' AND rf_version = $2';
    }
    const res = await this.#query<ChunkRow>(
      'listing chunks',
      `SELECT id::text AS id, text, metadata${withEmbeddings ? ', embedding::text AS embedding' : ''} FROM ${this.#t} WHERE ${where}`,
      values,
    );
    return res.rows.map((r) => this.#listed(r));
  }

  protected override async _count(documentId: string, versionId: string): Promise<number> {
    const res = await this.#query<{ n: number }>(
      'counting chunks',
      `SELECT count(*)::int AS n FROM ${this.#t} WHERE rf_doc = $1 AND rf_version = $2`,
      [documentId, versionId],
    );
    return res.rows[0]?.n ?? 0;
  }

  protected override async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const res = await this.#query<ChunkRow>(
      'listing chunks',
      `SELECT id::text AS id, text, metadata${withEmbeddings ? ', embedding::text AS embedding' : ''} FROM ${this.#t} WHERE rf_doc = ANY($1::text[])`,
      [[...documentIds]],
    );
    return res.rows.map((r) => this.#listed(r));
  }

  /** One count per ref, in order (a ref with no rows counts 0 through the outer join). */
  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const res = await this.#query<{ n: number }>(
      'counting chunks',
      `SELECT count(t.id)::int AS n
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(doc, version, ord)
         LEFT JOIN ${this.#t} t ON t.rf_doc = r.doc AND t.rf_version = r.version
        GROUP BY r.ord
        ORDER BY r.ord`,
      [refs.map((r) => r.documentId), refs.map((r) => r.versionId)],
    );
    return res.rows.map((r) => r.n);
  }

  protected async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const values: unknown[] = [vectorLiteral(vector), k];
    const where = [...viewClauses(filter.view, values)];
    for (const [column, value] of [
      ['rf_doc', filter.documentId],
      ['rf_version', filter.versionId],
      [`metadata->>'${FIELDS.sourceId}'`, filter.sourceId],
    ] as const) {
      if (value === undefined) continue;
      values.push(value);
      where.push(`${column} = $${values.length}`);
    }
    if (filter.access !== undefined) {
      // jsonb `?|`: the rf_access array holds any of the reader's tokens as an element.
      values.push(readerAccessTokens(filter.access));
      where.push(`metadata->'${FIELDS.access}' ?| $${values.length}::text[]`);
    }
    const res = await this.#query<ChunkRow>(
      'querying',
      `SELECT id::text AS id, text, metadata, (embedding <=> $1::vector)::float8 AS distance
         FROM ${this.#t}
        ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
        ORDER BY embedding <=> $1::vector
        LIMIT $2`,
      values,
    );
    const hits = res.rows.map((r): QueryHit => {
      const d = r.distance;
      const score = typeof d === 'number' && Number.isFinite(d) ? 1 - d : 0;
      const { id, text, metadata } = this.#listed(r);
      return { id, text, metadata, score };
    });
    // Ties keep the reference order (readable id ascending); a SQL tie-breaker would stop the HNSW index being used.
    const readable = (h: QueryHit) => String(h.metadata[FIELDS.chunkId] ?? h.id);
    return hits.sort((a, b) => {
      const ra = readable(a);
      const rb = readable(b);
      return b.score - a.score || (ra < rb ? -1 : ra > rb ? 1 : 0);
    });
  }

  /**
   * A removal's deletes: VACUUM marks the dead rows' space reusable (their bytes stay in the
   * heap until overwritten, and in WAL archives and backups). VACUUM FULL, which rewrites the
   * table under an exclusive lock, is left to the operator (docs/governance.md).
   */
  protected override async _compact(): Promise<CompactReport> {
    await this.#query('vacuuming', `VACUUM ${this.#t}`);
    return {
      reclaimed: false,
      note: `pgvector: rows deleted and ${this.tableName} vacuumed; dead-row bytes stay until Postgres overwrites them (run VACUUM FULL to rewrite the table)`,
    };
  }

  /** Drops the chunk table and its epoch table in one transaction (their indexes go with them). */
  protected override async _dropNamespace(): Promise<void> {
    await this.#transaction('dropping the namespace', async (c) => {
      await c.query(`DROP TABLE IF EXISTS ${this.#t}, ${this.#e}`);
    });
  }

  protected async _close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    if (pool !== undefined) await pool.end();
  }
}

/** SQL conditions selecting `view`; the same semantics as core's `inView`. */
export function viewClauses(view: ViewSelector, values: unknown[]): string[] {
  if (view.kind === 'all') return [];
  if (view.kind === 'flag') return [`metadata->>'rf_current' = 'true'`];
  values.push(view.epoch);
  const e = `$${values.length}::int`;
  return [`(metadata->>'rf_from')::int <= ${e}`, `(metadata->>'rf_to')::int > ${e}`];
}

/** JSON-options factory used by `ConnectorSpec` (child processes). */
export function createPgVectorConnector(options: PgVectorConnectorOptions): PgVectorConnector {
  return new PgVectorConnector(options);
}

/**
 * LangChain `PGVectorStore` filter selecting the snapshot of `epoch`: `rf_from <= epoch < rf_to`
 * (its numeric range operators compile to `(metadata->>'rf_from')::numeric <= $n`).
 */
export function langchainEpochFilter(epoch: number): {
  readonly rf_from: { readonly lte: number };
  readonly rf_to: { readonly gt: number };
} {
  return { rf_from: { lte: epoch }, rf_to: { gt: epoch } };
}

/** LangChain `PGVectorStore` filter for the `rf_current` view (atomic per document on this store). */
export const LANGCHAIN_CURRENT_FILTER: { readonly rf_current: true } = Object.freeze({
  rf_current: true,
});

/** Reads the published epoch a reader should filter on, with any `pg` client or pool. */
export async function readPgVectorEpoch(
  db: { query(text: string): Promise<{ rows: Array<{ epoch?: unknown }> }> },
  table: string,
  schema = 'public',
): Promise<number> {
  const res = await db.query(
    `SELECT epoch FROM ${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(`${table}_rf_epoch`)}`,
  );
  const epoch = res.rows[0]?.epoch;
  if (typeof epoch !== 'number') {
    throw new RagfreshError(
      'FOREIGN_DATA',
      `${schema}.${table}_rf_epoch holds no epoch; was the table opened by ragfresh?`,
      {
        scope: 'pgvector',
      },
    );
  }
  return epoch;
}

/**
 * The registry factory (`connector: { store: 'pgvector', ...options }` in a ragfresh config):
 * `connectionString` is required, `table` defaults to `ragfresh_chunks` (schema `public`).
 * Unknown keys and wrong types are one INVALID_CONFIG line naming `connector.<key>`.
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  _context: ConnectorFactoryContext,
): PgVectorConnector {
  const spec = {
    connectionString: 'string!',
    table: 'string',
    schema: 'string',
    maxConnections: 'integer',
    connectTimeoutMs: 'integer',
    maxWriteBatch: 'integer',
  } as const;
  const given = checkConnectorOptions<PgVectorConnectorOptions>('pgvector', options, spec);
  return buildConnector(
    'pgvector',
    Object.keys(spec),
    () =>
      new PgVectorConnector({
        ...given,
        connectionString: given.connectionString as string,
        table: given.table ?? 'ragfresh_chunks',
      }),
  );
}
