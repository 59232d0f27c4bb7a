import { resolve as resolvePath } from 'node:path';
import { type Client, createClient, type InStatement, type InValue } from '@libsql/client';

type InArgs = InValue[];

import {
  buildConnector,
  type CompactReport,
  Connector,
  type ConnectorCapabilities,
  type ConnectorFactoryContext,
  checkConnectorOptions,
  type ErrorCode,
  FIELDS,
  type FlatMetadata,
  isRagfreshError,
  type ListedChunk,
  OPEN_EPOCH,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  type RagfreshError,
  readerAccessTokens,
  type StoredChunk,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
  type ViewSelector,
} from '@ragfresh/core';

/**
 * Options of `createLibSqlConnector`. Plain JSON, so a child process can rebuild the same
 * connector from a `ConnectorSpec`.
 */
export type LibSqlConnectorOptions = {
  /** `file:/absolute/path.db` (or `file:relative.db`). Remote `libsql://` / `http(s)://` URLs are refused until tested. */
  readonly url: string;
  /** Chunk table: letters, digits, `_`, not starting with a digit, at most 48. The epoch lives in `<table>_rf_epoch`. */
  readonly table: string;
  /**
   * `exact` (default): every query ranks by `vector_distance_cos` over the rows its filter
   * selects. `approximate`: unscoped queries go through the `libsql_vector_idx` index with
   * `vector_top_k` (see README: it loses rows whose vectors duplicate another's). Implies `vectorIndex`.
   */
  readonly search?: 'exact' | 'approximate';
  /**
   * Create the `idx_<table>_embedding` vector index. LangChain's `LibSQLVectorStore` searches
   * only through it, so set this when LangChain reads the table. Default: `search === 'approximate'`.
   */
  readonly vectorIndex?: boolean;
  /** Chunks per write transaction. Default 500. */
  readonly maxWriteBatch?: number;
  /** How long a statement waits for another process's write lock (SQLite busy timeout). Default 5 000 ms. */
  readonly busyTimeoutMs?: number;
};

/** Written into `<table>_rf_epoch.format`; an epoch table whose marker differs is foreign. */
export const LIBSQL_LAYOUT = 'ragfresh-libsql/1';

export const LIBSQL_CAPABILITIES: ConnectorCapabilities = {
  store: 'libsql',
  // Epoch readers filter `rf_from <= E < rf_to`; the epoch is one row moved by compare-and-set.
  promotion: 'snapshot',
  // A `_patchValidityMany` call is one write transaction, and core never splits one
  // document's flag flip (new on, previous off) across calls: flag readers see old or new.
  flagPromotion: 'atomic',
  visibility: { mode: 'immediate' },
  maxWriteBatch: 500,
  epochInStore: true,
  idForm: 'chunk-id',
  epochClaim: 'exclusive',
  // The epoch row holds the newest fence; a fenced write transaction opens with a guard that
  // fails it when the fence is stale (one BEGIN IMMEDIATE: no raise can come in between).
  fencing: 'store',
  scan: true,
};

/**
 * The manifest's `langchain` entry, declared when the table has the vector index LangChain's
 * class needs (`vectorIndex`, or `search: 'approximate'`). `lossy`: the class searches only
 * through `vector_top_k`, filters after the k nearest rows and, once retired duplicates of a
 * vector are deleted, no longer reaches some current rows (measured by the suite's
 * `langchain-reader` case and `test/libsql.langchain.int.test.ts`).
 */
export const LIBSQL_LANGCHAIN_READER = Object.freeze({
  class: 'LibSQLVectorStore (@langchain/community/vectorstores/libsql)',
  recall: 'lossy' as const,
});

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_TABLE_NAME = 48;
/** libSQL's F32_BLOB column limit. */
const MAX_DIMENSIONS = 65_536;

interface Row {
  readonly [column: string]: unknown;
}

/**
 * libSQL connector: one table in the layout LangChain's `LibSQLVectorStore` reads (`content`,
 * `metadata` JSON text, `embedding F32_BLOB(n)`, found by `rowid`), keyed by the readable
 * chunk id, plus a one-row `<table>_rf_epoch` table holding the published epoch.
 */
export class LibSqlConnector extends Connector {
  readonly #options: LibSqlConnectorOptions;
  readonly #t: string;
  readonly #e: string;
  readonly #index: string;
  readonly #approximate: boolean;
  readonly #withIndex: boolean;
  #client: Client | undefined;

  constructor(options: LibSqlConnectorOptions) {
    const maxWriteBatch = options.maxWriteBatch ?? LIBSQL_CAPABILITIES.maxWriteBatch;
    // LangChain's class can read the table only through the vector index, and its search
    // through vector_top_k loses current rows whose vectors duplicate a retired row's.
    const readable = options.vectorIndex ?? options.search === 'approximate';
    super({
      ...LIBSQL_CAPABILITIES,
      maxWriteBatch,
      ...(readable ? { langchain: LIBSQL_LANGCHAIN_READER } : {}),
    });
    const url = options.url;
    if (typeof url !== 'string' || url === '') {
      throw this.error('INVALID_CONFIG', 'url is required, e.g. file:/var/lib/rag/index.db.');
    }
    if (/^(libsql|https?|wss?):/i.test(url)) {
      throw this.error(
        'NOT_SUPPORTED',
        `url ${url.replace(/\?.*$/, '')} is a remote libSQL server; this connector is tested only on embedded file: databases. Use a file: URL.`,
      );
    }
    if (!url.startsWith('file:') || url === 'file:') {
      throw this.error(
        'INVALID_CONFIG',
        `url ${JSON.stringify(url)} is not a file: URL; use file:/absolute/path.db.`,
      );
    }
    const table = options.table;
    if (typeof table !== 'string' || !IDENTIFIER.test(table) || table.length > MAX_TABLE_NAME) {
      throw this.error(
        'INVALID_CONFIG',
        `table name ${JSON.stringify(table)} is invalid; use 1-${MAX_TABLE_NAME} letters, digits or '_', not starting with a digit.`,
      );
    }
    const search = options.search ?? 'exact';
    if (search !== 'exact' && search !== 'approximate') {
      throw this.error(
        'INVALID_CONFIG',
        `search must be 'exact' or 'approximate', got ${JSON.stringify(search)}.`,
      );
    }
    if (options.vectorIndex === false && search === 'approximate') {
      throw this.error(
        'INVALID_CONFIG',
        "search 'approximate' needs the vector index; drop vectorIndex: false.",
      );
    }
    this.#options = options;
    this.#approximate = search === 'approximate';
    this.#withIndex = options.vectorIndex ?? this.#approximate;
    this.#t = `"${table}"`;
    this.#e = `"${table}_rf_epoch"`;
    // The name LangChain's LibSQLVectorStore looks for: idx_<table>_<column>.
    this.#index = `idx_${table}_embedding`;
  }

  protected override _forNamespace(suffix: string): LibSqlConnector {
    return new LibSqlConnector({ ...this.#options, table: `${this.#options.table}__${suffix}` });
  }

  get tableName(): string {
    return this.#options.table;
  }

  get epochTableName(): string {
    return `${this.#options.table}_rf_epoch`;
  }

  /** Name of the `libsql_vector_idx` index (present with `vectorIndex`). */
  get vectorIndexName(): string {
    return this.#index;
  }

  #fail(code: ErrorCode, message: string, cause?: unknown): RagfreshError {
    return this.error(code, message, cause);
  }

  #translate(err: unknown, doing: string): RagfreshError {
    if (isRagfreshError(err)) return err;
    const message = err instanceof Error ? err.message : String(err);
    const code = String((err as { code?: unknown } | null)?.code ?? '');
    if (/SQLITE_(BUSY|LOCKED)/.test(code) || /database is locked/i.test(message)) {
      return this.#fail(
        'STORE_UNREACHABLE',
        `${this.#where()} stayed locked by another writer while ${doing} (${message}); retry, or raise busyTimeoutMs.`,
        err,
      );
    }
    if (/SQLITE_(CANTOPEN|NOTADB|IOERR|READONLY|PERM)/.test(code)) {
      return this.#fail(
        'STORE_UNREACHABLE',
        `cannot use ${this.#where()} while ${doing} (${code}: ${message}); check the path and its permissions.`,
        err,
      );
    }
    return this.#fail(
      'STORE_REJECTED',
      `${this.#where()} rejected ${doing} on ${this.tableName} (${code || 'no code'}: ${message}); nothing was changed by the failed statement.`,
      err,
    );
  }

  #where(): string {
    return `libSQL database ${this.#options.url}`;
  }

  get #db(): Client {
    if (this.#client === undefined) {
      this.#client = createClient({
        url: this.#options.url,
        intMode: 'number',
        timeout: this.#options.busyTimeoutMs ?? 5_000,
      });
    }
    return this.#client;
  }

  async #run(doing: string, stmt: InStatement): Promise<Row[]> {
    try {
      return (await this.#db.execute(stmt)).rows as unknown as Row[];
    } catch (err) {
      throw this.#translate(err, doing);
    }
  }

  /**
   * Statements in one write transaction (BEGIN IMMEDIATE … COMMIT): all or nothing. Under a
   * fence, the first statement fails the transaction when the epoch row holds a newer fence
   * (it re-inserts the singleton row: a primary-key violation), so nothing is written.
   */
  async #write(doing: string, stmts: InStatement[], fence?: number): Promise<number[]> {
    if (stmts.length === 0) return [];
    const guard: InStatement[] =
      fence === undefined
        ? []
        : [
            {
              sql: `INSERT INTO ${this.#e} (singleton, epoch, format) SELECT 1, 0, 'stale fence' WHERE (SELECT fence FROM ${this.#e}) > ?`,
              args: [fence],
            },
          ];
    try {
      const results = await this.#db.batch([...guard, ...stmts], 'write');
      return results.slice(guard.length).map((r) => r.rowsAffected);
    } catch (err) {
      // The fence only grows: newer now means the guard (or the store) refused this write.
      if (fence !== undefined) {
        const held = await this._readFence().catch(() => 0);
        if (held > fence) throw this.staleFence(fence, held);
      }
      throw this.#translate(err, doing);
    }
  }

  protected async _open(options: OpenOptions): Promise<void> {
    const n = options.dimensions;
    if (n > MAX_DIMENSIONS) {
      throw this.#fail(
        'INVALID_ARGUMENT',
        `libSQL F32_BLOB holds at most ${MAX_DIMENSIONS} dimensions, asked for ${n}.`,
      );
    }
    // WAL lets another process read while a publisher writes; it is a property of the file.
    await this.#run('enabling WAL', 'PRAGMA journal_mode = WAL');
    const existing = await this.#columns(this.tableName);
    const stmts: InStatement[] = [];
    if (existing.size === 0) {
      stmts.push(
        `CREATE TABLE IF NOT EXISTS ${this.#t} (
           id TEXT PRIMARY KEY,
           content TEXT NOT NULL,
           metadata TEXT NOT NULL,
           embedding F32_BLOB(${n}) NOT NULL,
           rf_doc TEXT GENERATED ALWAYS AS (metadata ->> '$.rf_doc') VIRTUAL,
           rf_version TEXT GENERATED ALWAYS AS (metadata ->> '$.rf_version') VIRTUAL
         )`,
      );
    } else {
      this.#checkLayout(existing, n);
    }
    stmts.push(
      `CREATE INDEX IF NOT EXISTS "${this.tableName}_rf_doc_version" ON ${this.#t} (rf_doc, rf_version)`,
      `CREATE TABLE IF NOT EXISTS ${this.#e} (
         singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
         epoch INTEGER NOT NULL,
         format TEXT NOT NULL,
         fence INTEGER NOT NULL DEFAULT 0,
         space TEXT
       )`,
      {
        sql: `INSERT OR IGNORE INTO ${this.#e} (singleton, epoch, format) VALUES (1, 0, ?)`,
        args: [LIBSQL_LAYOUT],
      },
    );
    if (this.#withIndex) {
      stmts.push(
        `CREATE INDEX IF NOT EXISTS "${this.#index}" ON ${this.#t} (libsql_vector_idx(embedding, 'metric=cosine'))`,
      );
    }
    if (existing.size > 0) {
      const epochColumns = await this.#columns(this.epochTableName);
      if (epochColumns.size === 0) {
        const rows = await this.#run('checking the table', `SELECT 1 FROM ${this.#t} LIMIT 1`);
        if (rows.length > 0) {
          throw this.#fail(
            'FOREIGN_DATA',
            `table ${this.tableName} holds rows but has no ${this.epochTableName}; it was not written by ragfresh. Choose another table name. Nothing was changed.`,
          );
        }
      }
    }
    await this.#write('opening the table', stmts);
    // Epoch tables written before the fence reached the store gain it (no fence raised yet).
    if (!(await this.#columns(this.epochTableName)).has('fence')) {
      await this.#write('adding the fence to the epoch table', [
        `ALTER TABLE ${this.#e} ADD COLUMN fence INTEGER NOT NULL DEFAULT 0`,
      ]);
    }
    // And those written before the epoch record named its space (null until the next move).
    if (!(await this.#columns(this.epochTableName)).has('space')) {
      await this.#write('adding the space to the epoch table', [
        `ALTER TABLE ${this.#e} ADD COLUMN space TEXT`,
      ]);
    }
    const marker = await this.#run('reading the epoch table', `SELECT format FROM ${this.#e}`);
    if (marker.length !== 1 || marker[0]?.format !== LIBSQL_LAYOUT) {
      throw this.#fail(
        'FOREIGN_DATA',
        `${this.epochTableName} is not a ragfresh epoch table (expected one row with format ${LIBSQL_LAYOUT}); choose another table name.`,
      );
    }
    const stray = await this.#run(
      'checking the table',
      `SELECT id FROM ${this.#t} WHERE rf_doc IS NULL OR rf_version IS NULL LIMIT 1`,
    );
    if (stray.length > 0) {
      throw this.#fail(
        'FOREIGN_DATA',
        `table ${this.tableName} holds rows without rf_doc/rf_version (e.g. id ${String(stray[0]?.id)}), written by something other than ragfresh (LangChain's addDocuments?); delete them or use another table.`,
      );
    }
  }

  async #columns(table: string): Promise<Map<string, string>> {
    const rows = await this.#run('reading the layout', {
      sql: 'SELECT name, type FROM pragma_table_xinfo(?)',
      args: [table],
    });
    return new Map(rows.map((r) => [String(r.name), String(r.type).toUpperCase()]));
  }

  #checkLayout(columns: Map<string, string>, n: number): void {
    const foreign = (why: string) =>
      this.#fail(
        'FOREIGN_DATA',
        `table ${this.tableName} exists but ${why}; it was not written by ragfresh. Choose another table name. Nothing was changed.`,
      );
    for (const [column, type] of [
      ['id', 'TEXT'],
      ['content', 'TEXT'],
      ['metadata', 'TEXT'],
      ['rf_doc', 'TEXT'],
      ['rf_version', 'TEXT'],
    ] as const) {
      const actual = columns.get(column);
      if (actual !== type)
        throw foreign(
          actual === undefined ? `has no ${column} column` : `its ${column} column is ${actual}`,
        );
    }
    const match = /^F32_BLOB\((\d+)\)$/.exec(columns.get('embedding') ?? '');
    if (match === null) throw foreign('its embedding column is not F32_BLOB(n)');
    const have = Number(match[1]);
    if (have !== n) {
      throw this.#fail(
        'DIMENSION_MISMATCH',
        `table ${this.tableName} holds ${have}-dimension vectors (F32_BLOB(${have})), asked for ${n}; use the embeddings the table was built with, or a new table name. Nothing was changed.`,
      );
    }
  }

  #assertKeyed(chunk: StoredChunk): void {
    const readable = chunk.metadata[FIELDS.chunkId];
    if (readable !== undefined && readable !== chunk.id) {
      throw this.#fail(
        'INVALID_METADATA',
        `chunk ${chunk.id} carries ${FIELDS.chunkId}=${JSON.stringify(readable)}; the table is keyed by the chunk id, so they must agree.`,
      );
    }
  }

  protected async _upsert(chunks: readonly StoredChunk[], fence?: number): Promise<void> {
    const stmts: InStatement[] = chunks.map((chunk) => {
      this.#assertKeyed(chunk);
      return {
        sql: `INSERT INTO ${this.#t} (id, content, metadata, embedding) VALUES (?, ?, ?, vector32(?))
              ON CONFLICT (id) DO UPDATE SET content = excluded.content, metadata = excluded.metadata, embedding = excluded.embedding`,
        args: [
          chunk.id,
          chunk.text,
          JSON.stringify({ [FIELDS.chunkId]: chunk.id, ...chunk.metadata }),
          JSON.stringify(chunk.embedding),
        ],
      };
    });
    // One write transaction per batch: all of it is written or none.
    await this.#write('writing chunks', stmts, fence);
  }

  #patchStatement(p: VersionPatch): InStatement {
    const paths: string[] = [];
    const args: InArgs = [];
    if (p.patch.to !== undefined) {
      paths.push(`'$.${FIELDS.to}', ?`);
      args.push(p.patch.to);
    }
    if (p.patch.current !== undefined) {
      // A bound JS boolean reaches SQLite as the integer 1/0; json('true') keeps a JSON boolean.
      paths.push(`'$.${FIELDS.current}', json(?)`);
      args.push(p.patch.current ? 'true' : 'false');
    }
    args.push(p.documentId, p.versionId);
    return {
      sql: `UPDATE ${this.#t} SET metadata = json_set(metadata, ${paths.join(', ')}) WHERE rf_doc = ? AND rf_version = ?`,
      args,
    };
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
    fence?: number,
  ): Promise<void> {
    await this._patchValidityMany([{ documentId, versionId, patch }], fence);
  }

  protected override async _patchValidityMany(
    patches: readonly VersionPatch[],
    fence?: number,
  ): Promise<void> {
    // One transaction for the whole call: a flag flip (new on, old off) commits as one.
    await this.#write(
      'patching validity',
      patches.map((p) => this.#patchStatement(p)),
      fence,
    );
  }

  protected async _readEpoch(): Promise<number> {
    const rows = await this.#run('reading the epoch', `SELECT epoch FROM ${this.#e}`);
    const epoch = rows[0]?.epoch;
    if (rows.length !== 1 || typeof epoch !== 'number') {
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
    if (next >= OPEN_EPOCH)
      throw this.#fail('INVALID_ARGUMENT', `epoch ${next} does not fit the validity bounds.`);
    // The space in the same UPDATE as the epoch; a move naming none keeps the stored one.
    const [changed] = await this.#write('advancing the epoch', [
      {
        sql: `UPDATE ${this.#e} SET epoch = ?, fence = max(fence, ?), space = coalesce(?, space) WHERE epoch = ? AND fence <= ?`,
        args: [next, fence ?? 0, space ?? null, expected, fence ?? Number.MAX_SAFE_INTEGER],
      },
    ]);
    if (changed === 1) return;
    const held = await this._readFence();
    if (fence !== undefined && held > fence) throw this.staleFence(fence, held);
    const now = await this._readEpoch();
    throw this.#fail(
      'EPOCH_CONFLICT',
      `published epoch is ${now}, expected ${expected}; another publisher moved it. Reload state and retry.`,
    );
  }

  /** The epoch row's `space` (null until a move names one). */
  protected override async _readEpochSpace(): Promise<string | undefined> {
    const rows = await this.#run('reading the space of the epoch', `SELECT space FROM ${this.#e}`);
    const space = rows[0]?.space;
    return typeof space === 'string' && space !== '' ? space : undefined;
  }

  protected override async _readFence(): Promise<number> {
    const rows = await this.#run('reading the fence', `SELECT fence FROM ${this.#e}`);
    return Number(rows[0]?.fence ?? 0);
  }

  protected override async _raiseFence(fence: number): Promise<void> {
    const [changed] = await this.#write('raising the fence', [
      { sql: `UPDATE ${this.#e} SET fence = ? WHERE fence <= ?`, args: [fence, fence] },
    ]);
    if (changed !== 1) throw this.staleFence(fence, await this._readFence());
  }

  protected async _deleteVersion(
    documentId: string,
    versionId: string,
    fence?: number,
  ): Promise<void> {
    await this._deleteVersions([{ documentId, versionId }], fence);
  }

  protected override async _deleteVersions(
    refs: readonly VersionRef[],
    fence?: number,
  ): Promise<void> {
    const { clause, args } = refsClause(refs);
    await this.#write(
      'deleting versions',
      [{ sql: `DELETE FROM ${this.#t} WHERE ${clause}`, args }],
      fence,
    );
  }

  protected async _deleteDocuments(documentIds: readonly string[], fence?: number): Promise<void> {
    await this.#write(
      'deleting documents',
      [
        {
          sql: `DELETE FROM ${this.#t} WHERE rf_doc IN (${placeholders(documentIds.length)})`,
          args: [...documentIds],
        },
      ],
      fence,
    );
  }

  #listed(row: Row, withEmbeddings: boolean): ListedChunk {
    const metadata = JSON.parse(String(row.metadata)) as FlatMetadata;
    const base = { id: String(row.id), text: String(row.content), metadata };
    return withEmbeddings ? { ...base, embedding: decodeF32(row.vec) } : base;
  }

  #columnsFor(withEmbeddings: boolean): string {
    // The raw blob, not vector_extract(): its text form keeps only 6 significant digits.
    return `id, content, metadata${withEmbeddings ? ', embedding AS vec' : ''}`;
  }

  /** Keyset pages in primary-key order: the cursor is the last id of the previous page. */
  protected override async _scan(
    cursor: string | undefined,
    pageSize: number,
  ): Promise<{ chunks: ListedChunk[]; next?: string }> {
    const rows = await this.#run('scanning chunks', {
      sql: `SELECT ${this.#columnsFor(false)} FROM ${this.#t}${cursor === undefined ? '' : ' WHERE id > ?'} ORDER BY id LIMIT ?`,
      args: cursor === undefined ? [pageSize] : [cursor, pageSize],
    });
    const chunks = rows.map((r) => this.#listed(r, false));
    return chunks.length < pageSize ? { chunks } : { chunks, next: chunks.at(-1)!.id };
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const args: InArgs = [documentId];
    let where = 'rf_doc = ?';
    if (versionId !== undefined) {
      where += ' AND rf_version = ?';
      args.push(versionId);
    }
    const rows = await this.#run('listing chunks', {
      sql: `SELECT ${this.#columnsFor(withEmbeddings)} FROM ${this.#t} WHERE ${where}`,
      args,
    });
    return rows.map((r) => this.#listed(r, withEmbeddings));
  }

  protected override async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const rows = await this.#run('listing chunks', {
      sql: `SELECT ${this.#columnsFor(withEmbeddings)} FROM ${this.#t} WHERE rf_doc IN (${placeholders(documentIds.length)})`,
      args: [...documentIds],
    });
    return rows.map((r) => this.#listed(r, withEmbeddings));
  }

  protected override async _count(documentId: string, versionId: string): Promise<number> {
    return (await this._countMany([{ documentId, versionId }]))[0] ?? 0;
  }

  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const { clause, args } = refsClause(refs);
    const rows = await this.#run('counting chunks', {
      sql: `SELECT rf_doc, rf_version, count(*) AS n FROM ${this.#t} WHERE ${clause} GROUP BY rf_doc, rf_version`,
      args,
    });
    const counts = new Map(rows.map((r) => [`${r.rf_doc}\u0000${r.rf_version}`, Number(r.n)]));
    return refs.map((r) => counts.get(`${r.documentId}\u0000${r.versionId}`) ?? 0);
  }

  protected async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const q = JSON.stringify(vector);
    const args: InArgs = [q];
    const where = viewClauses(filter.view, args);
    for (const [column, value] of [
      ['rf_doc', filter.documentId],
      ['rf_version', filter.versionId],
      [`metadata ->> '$.${FIELDS.sourceId}'`, filter.sourceId],
    ] as const) {
      if (value === undefined) continue;
      args.push(value);
      where.push(`${column} = ?${args.length}`);
    }
    if (filter.access !== undefined) {
      // The rf_access JSON array holds any of the reader's tokens as an element.
      const marks = readerAccessTokens(filter.access).map((t) => {
        args.push(t);
        return `?${args.length}`;
      });
      where.push(
        `EXISTS (SELECT 1 FROM json_each(metadata, '$.${FIELDS.access}') WHERE json_each.value IN (${marks.join(', ')}))`,
      );
    }
    const condition = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
    // A document-scoped query reads a handful of rows through the key index, so it stays exact
    // even with `search: 'approximate'` (that is what verification's smoke query relies on).
    const scoped = filter.documentId !== undefined;
    let sql: string;
    if (this.#approximate && !scoped) {
      // vector_top_k filters nothing: fetch more candidates than k, filter, then rank.
      args.push(Math.max(k * 4, 64), k);
      sql = `SELECT t.id, t.content, t.metadata, vector_distance_cos(t.embedding, vector32(?1)) AS distance
               FROM vector_top_k('${this.#index}', vector32(?1), ?${args.length - 1}) AS top
               JOIN ${this.#t} AS t ON t.rowid = top.id
               ${condition}
              ORDER BY distance, t.id LIMIT ?${args.length}`;
    } else {
      args.push(k);
      sql = `SELECT id, content, metadata, vector_distance_cos(embedding, vector32(?1)) AS distance
               FROM ${this.#t} ${condition}
              ORDER BY distance, id LIMIT ?${args.length}`;
    }
    const rows = await this.#run('querying', { sql, args });
    return rows.map((r): QueryHit => {
      const { id, text, metadata } = this.#listed(r, false);
      const d = Number(r.distance);
      return { id, text, metadata, score: Number.isFinite(d) ? 1 - d : 0 };
    });
  }

  /**
   * A removal's deletes made physical: the WAL is checkpointed and truncated, and VACUUM
   * rewrites the file without the freed pages (a local file; a remote libSQL server decides
   * for itself).
   */
  protected override async _compact(): Promise<CompactReport> {
    if (!this.#options.url.startsWith('file:'))
      return {
        reclaimed: false,
        note: `libSQL at a server: rows deleted; the server reclaims pages itself`,
      };
    await this.#run('checkpointing the WAL', 'PRAGMA wal_checkpoint(TRUNCATE)');
    await this.#run('vacuuming', 'VACUUM');
    await this.#run('checkpointing the WAL', 'PRAGMA wal_checkpoint(TRUNCATE)');
    return { reclaimed: true, note: 'libSQL: WAL truncated, file vacuumed (freed pages gone)' };
  }

  /** Drops the chunk table (its indexes, the vector index's included) and its epoch table, in one transaction. */
  protected override async _dropNamespace(): Promise<void> {
    await this.#write('dropping the namespace', [
      `DROP TABLE IF EXISTS ${this.#t}`,
      `DROP TABLE IF EXISTS ${this.#e}`,
    ]);
  }

  protected async _close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    client?.close();
  }
}

/** An F32_BLOB is little-endian float32 values (libSQL appends no type byte for F32). */
function decodeF32(blob: unknown): number[] {
  const bytes = blob instanceof ArrayBuffer ? new Uint8Array(blob) : (blob as Uint8Array);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: number[] = [];
  for (let i = 0; i + 4 <= bytes.byteLength; i += 4) out.push(view.getFloat32(i, true));
  return out;
}

function placeholders(n: number): string {
  return new Array(n).fill('?').join(', ');
}

function refsClause(refs: readonly VersionRef[]): { clause: string; args: InArgs } {
  const args: InArgs = [];
  for (const r of refs) args.push(r.documentId, r.versionId);
  return {
    clause: `(rf_doc, rf_version) IN (VALUES ${new Array(refs.length).fill('(?, ?)').join(', ')})`,
    args,
  };
}

/** SQL conditions selecting `view`; the same semantics as core's `inView`. */
export function viewClauses(view: ViewSelector, args: InArgs): string[] {
  if (view.kind === 'all') return [];
  if (view.kind === 'flag') return [`metadata ->> '$.${FIELDS.current}' = 1`];
  args.push(view.epoch, view.epoch);
  return [
    `metadata ->> '$.${FIELDS.from}' <= ?${args.length - 1}`,
    `metadata ->> '$.${FIELDS.to}' > ?${args.length}`,
  ];
}

/** JSON-options factory used by `ConnectorSpec` (child processes). */
export function createLibSqlConnector(options: LibSqlConnectorOptions): LibSqlConnector {
  return new LibSqlConnector(options);
}

/**
 * The registry factory (`connector: { store: 'libsql', ...options }` in a ragfresh config):
 * `url` defaults to `file:<dataDir>/libsql.db` and `table` to `ragfresh`; a relative
 * `file:` URL is relative to the config file's folder. Unknown keys and wrong types are one
 * INVALID_CONFIG line naming `connector.<key>`.
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  context: ConnectorFactoryContext,
): LibSqlConnector {
  const spec = {
    url: 'string',
    table: 'string',
    search: 'string',
    vectorIndex: 'boolean',
    maxWriteBatch: 'integer',
    busyTimeoutMs: 'integer',
  } as const;
  const checked = checkConnectorOptions<LibSqlConnectorOptions>('libsql', options, spec);
  const given = checked.url;
  const url =
    given === undefined
      ? `file:${resolvePath(context.dataDir, 'libsql.db')}`
      : given.startsWith('file:') && !given.startsWith('file:/')
        ? `file:${resolvePath(context.baseDir, given.slice('file:'.length))}`
        : given;
  return buildConnector(
    'libsql',
    Object.keys(spec),
    () => new LibSqlConnector({ ...checked, url, table: checked.table ?? 'ragfresh' }),
  );
}

/**
 * LangChain `LibSQLVectorStore` filter selecting the snapshot of `epoch`: `rf_from <= epoch < rf_to`
 * (its `SqliteWhereBuilder` shape: one `{ operator, value }` per metadata key, joined by AND).
 */
export function langchainEpochFilter(epoch: number): {
  readonly rf_from: { readonly operator: '<='; readonly value: number };
  readonly rf_to: { readonly operator: '>'; readonly value: number };
} {
  return { rf_from: { operator: '<=', value: epoch }, rf_to: { operator: '>', value: epoch } };
}

/** LangChain `LibSQLVectorStore` filter for the `rf_current` view (atomic per batch on this store). */
export const LANGCHAIN_CURRENT_FILTER: {
  readonly rf_current: { readonly operator: '='; readonly value: true };
} = Object.freeze({ rf_current: Object.freeze({ operator: '=', value: true }) });

/** Reads the published epoch a reader should filter on, with any `@libsql/client` client. */
export async function readLibSqlEpoch(
  db: { execute(sql: string): Promise<{ rows: ArrayLike<Record<string, unknown>> }> },
  table: string,
): Promise<number> {
  if (!IDENTIFIER.test(table)) throw new TypeError(`invalid table name ${JSON.stringify(table)}`);
  const res = await db.execute(`SELECT epoch FROM "${table}_rf_epoch"`);
  const epoch = res.rows[0]?.epoch;
  if (typeof epoch !== 'number') throw new TypeError(`${table}_rf_epoch holds no epoch`);
  return epoch;
}
