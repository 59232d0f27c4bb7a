import * as lancedb from '@lancedb/lancedb';
import {
  Connector,
  type ConnectorCapabilities,
  FIELDS,
  type FlatMetadata,
  isRagfreshError,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  RagfreshError,
  type StoredChunk,
  type ValidityPatch,
} from '@ragfresh/core';
import { Bool, Field, FixedSizeList, Float32, Int64, Schema, Utf8 } from 'apache-arrow';

export interface LanceDbConnectorOptions {
  /** Directory of the LanceDB database (created when missing). */
  readonly path: string;
  /** Table holding the chunks of one index: letters, digits, `_`, `-`, `.`. */
  readonly table: string;
  /** Chunks core sends per `_upsert` call; each call is one commit. */
  readonly maxWriteBatch?: number;
  /**
   * Compact the table after this many commits by this connector (default 100; 0 = never).
   * Every update/delete adds a fragment; without compaction per-document operations slow
   * down linearly with the number of commits.
   */
  readonly optimizeEvery?: number;
}

/** Marks a table as written by ragfresh (Arrow schema metadata `rf_schema`). */
export const LANCEDB_SCHEMA_MARK = 'ragfresh/1';
/** Suffix of the one-row table that holds the published epoch. */
export const EPOCH_TABLE_SUFFIX = '__rf_epoch';
/** Column holding the chunk's full flat metadata as JSON (validity columns override it on read). */
export const METADATA_COLUMN = 'metadata';

/** Real columns: text and vector for LangChain-style readers, rf_* for filters. */
const COLUMNS = {
  id: 'id',
  text: 'text',
  vector: 'vector',
  metadata: METADATA_COLUMN,
  documentId: FIELDS.documentId,
  versionId: FIELDS.versionId,
  sourceId: FIELDS.sourceId,
  from: FIELDS.from,
  to: FIELDS.to,
  current: FIELDS.current,
} as const;

const TABLE_NAME = /^[A-Za-z0-9_.-]{1,200}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const INT64_SAFE = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n);

export function lanceDbCapabilities(maxWriteBatch = 10_000): ConnectorCapabilities {
  return {
    store: 'lancedb',
    promotion: 'snapshot',
    flagPromotion: 'overlap',
    visibility: { mode: 'immediate' },
    maxWriteBatch,
    epochInStore: true,
    idForm: 'chunk-id',
  };
}

/** A SQL string literal: single quotes doubled; nothing else is special in Lance's SQL. */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** Lance SQL predicate for a ragfresh filter (`undefined` = everything). */
export function lanceWhere(
  filter: QueryFilter | { documentId?: string; versionId?: string },
): string | undefined {
  const clauses: string[] = [];
  if ('view' in filter) {
    const view = filter.view;
    if (view.kind === 'epoch') {
      clauses.push(
        `${COLUMNS.from} <= ${Math.trunc(view.epoch)}`,
        `${COLUMNS.to} > ${Math.trunc(view.epoch)}`,
      );
    } else if (view.kind === 'flag') {
      clauses.push(`${COLUMNS.current} = true`);
    }
    if (filter.sourceId !== undefined)
      clauses.push(`${COLUMNS.sourceId} = ${sqlString(filter.sourceId)}`);
  }
  if (filter.documentId !== undefined)
    clauses.push(`${COLUMNS.documentId} = ${sqlString(filter.documentId)}`);
  if (filter.versionId !== undefined)
    clauses.push(`${COLUMNS.versionId} = ${sqlString(filter.versionId)}`);
  return clauses.length === 0 ? undefined : clauses.join(' AND ');
}

/** The predicate a plain LanceDB reader adds to see the snapshot view of published epoch `epoch`. */
export function epochViewWhere(epoch: number): string {
  return lanceWhere({ view: { kind: 'epoch', epoch } })!;
}

function chunkSchema(dims: number): Schema {
  return new Schema(
    [
      new Field(COLUMNS.id, new Utf8(), false),
      new Field(COLUMNS.text, new Utf8(), false),
      new Field(
        COLUMNS.vector,
        new FixedSizeList(dims, new Field('item', new Float32(), true)),
        false,
      ),
      new Field(COLUMNS.metadata, new Utf8(), false),
      new Field(COLUMNS.documentId, new Utf8(), false),
      new Field(COLUMNS.versionId, new Utf8(), false),
      new Field(COLUMNS.sourceId, new Utf8(), false),
      new Field(COLUMNS.from, new Int64(), false),
      new Field(COLUMNS.to, new Int64(), false),
      new Field(COLUMNS.current, new Bool(), false),
    ],
    new Map([
      ['rf_schema', LANCEDB_SCHEMA_MARK],
      ['rf_dimensions', String(dims)],
    ]),
  );
}

function epochSchema(table: string): Schema {
  return new Schema(
    [new Field('id', new Utf8(), false), new Field('epoch', new Int64(), false)],
    new Map([
      ['rf_schema', LANCEDB_SCHEMA_MARK],
      ['rf_epoch_of', table],
    ]),
  );
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const isNotFound = (err: unknown) => /was not found|not found/i.test(message(err));

type Row = Record<string, unknown>;

/**
 * Embedded LanceDB connector: one table per index, every write one Lance commit
 * (`mergeInsert` on id, `update ... where`, `delete where`), readers opened with
 * `readConsistencyInterval: 0` so every read checks for the latest commit. The published
 * epoch lives in the one-row table `<table>__rf_epoch`, advanced by a conditional update.
 */
export class LanceDbConnector extends Connector {
  readonly #options: LanceDbConnectorOptions;
  #db: lancedb.Connection | undefined;
  #table: lancedb.Table | undefined;
  #epochTable: lancedb.Table | undefined;
  #commits = 0;
  #advances = 0;

  constructor(options: LanceDbConnectorOptions) {
    super(lanceDbCapabilities(options.maxWriteBatch));
    if (typeof options.table !== 'string' || !TABLE_NAME.test(options.table)) {
      throw new RagfreshError(
        'INVALID_CONFIG',
        `table name ${JSON.stringify(options.table)} is invalid; use 1-200 letters, digits, '_', '-' or '.'.`,
        { scope: 'lancedb' },
      );
    }
    if (typeof options.path !== 'string' || options.path === '') {
      throw new RagfreshError(
        'INVALID_CONFIG',
        'path must name the LanceDB directory, e.g. .ragfresh/lancedb.',
        {
          scope: 'lancedb',
        },
      );
    }
    if (
      options.optimizeEvery !== undefined &&
      (!Number.isSafeInteger(options.optimizeEvery) || options.optimizeEvery < 0)
    ) {
      throw new RagfreshError(
        'INVALID_CONFIG',
        `optimizeEvery must be a non-negative integer, got ${options.optimizeEvery}.`,
        {
          scope: 'lancedb',
        },
      );
    }
    this.#options = options;
  }

  get tableName(): string {
    return this.#options.table;
  }

  get epochTableName(): string {
    return `${this.#options.table}${EPOCH_TABLE_SUFFIX}`;
  }

  async #call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isRagfreshError(err)) throw err;
      throw this.error(
        'STORE_REJECTED',
        `LanceDB rejected ${what} on ${this.#options.path}: ${message(err).split('\n')[0]!.slice(0, 300)}`,
        err,
      );
    }
  }

  /**
   * Best-effort compaction. It rewrites fragments without changing any row, so readers see
   * the same data; a conflict with another process's commit just skips this round.
   */
  async #optimize(table: lancedb.Table): Promise<void> {
    try {
      await table.optimize();
    } catch {
      // A concurrent commit won; the next round compacts.
    }
  }

  async #committed(): Promise<void> {
    const every = this.#options.optimizeEvery ?? 100;
    this.#commits += 1;
    if (every > 0 && this.#commits % every === 0) await this.#optimize(this.#main());
  }

  #main(): lancedb.Table {
    if (this.#table === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    return this.#table;
  }

  #epochs(): lancedb.Table {
    if (this.#epochTable === undefined)
      throw this.error('NOT_OPEN', 'connector is not open; call open({ dimensions }) first.');
    return this.#epochTable;
  }

  async #openOrCreate(
    db: lancedb.Connection,
    name: string,
    create: () => Promise<lancedb.Table>,
  ): Promise<lancedb.Table> {
    try {
      return await db.openTable(name);
    } catch (err) {
      if (!isNotFound(err))
        throw this.error(
          'STORE_UNREACHABLE',
          `cannot open table ${name} in ${this.#options.path}: ${message(err).split('\n')[0]}; check the path and its permissions.`,
          err,
        );
    }
    try {
      return await create();
    } catch (err) {
      // Another process created it first ("already exists", or a commit conflict on version 1):
      // Lance commits the first version with put-if-absent, so theirs stands and we open it.
      try {
        return await db.openTable(name);
      } catch {
        throw this.error(
          'STORE_UNREACHABLE',
          `cannot create table ${name} in ${this.#options.path}: ${message(err).split('\n')[0]}; check the path is a writable directory.`,
          err,
        );
      }
    }
  }

  protected async _open(options: OpenOptions): Promise<void> {
    const dims = options.dimensions;
    const path = this.#options.path;
    let db: lancedb.Connection;
    try {
      db = await lancedb.connect(path, { readConsistencyInterval: 0 });
      await db.tableNames();
    } catch (err) {
      throw this.error(
        'STORE_UNREACHABLE',
        `cannot open the LanceDB directory ${path}: ${message(err).split('\n')[0]}; give a writable directory path.`,
        err,
      );
    }
    const name = this.#options.table;
    const table = await this.#openOrCreate(db, name, () =>
      db.createEmptyTable(name, chunkSchema(dims), { mode: 'create' }),
    );
    const schema = await this.#call(`reading the schema of ${name}`, () => table.schema());
    const fieldNames = new Set(schema.fields.map((f) => f.name));
    const missing = Object.values(COLUMNS).filter((c) => !fieldNames.has(c));
    if (schema.metadata.get('rf_schema') !== LANCEDB_SCHEMA_MARK || missing.length > 0) {
      const rows = await this.#call(`counting ${name}`, () => table.countRows());
      table.close();
      throw this.error(
        'FOREIGN_DATA',
        `table ${name} in ${path} was not created by ragfresh (${rows} rows${missing.length > 0 ? `, no ${missing.join(', ')} columns` : ''}); choose another table name, or drop it if it is disposable.`,
      );
    }
    const vectorType = schema.fields.find((f) => f.name === COLUMNS.vector)?.type;
    // Duck-typed: the Arrow classes of lancedb's copy need not be ours.
    const listSize = (vectorType as { listSize?: unknown } | undefined)?.listSize;
    const stored =
      typeof listSize === 'number' ? listSize : Number(schema.metadata.get('rf_dimensions'));
    if (stored !== dims) {
      table.close();
      throw this.error(
        'DIMENSION_MISMATCH',
        `table ${name} in ${path} holds ${stored}-dimension vectors, asked for ${dims}; use the embeddings the table was built with, or a new table.`,
      );
    }
    const epochName = this.epochTableName;
    const epochTable = await this.#openOrCreate(db, epochName, async () => {
      const initial = lancedb.makeArrowTable([{ id: 'epoch', epoch: 0 }], {
        schema: epochSchema(name),
      });
      return db.createTable(epochName, initial, { mode: 'create' });
    });
    const epochMeta = await this.#call(`reading the schema of ${epochName}`, () =>
      epochTable.schema(),
    );
    if (epochMeta.metadata.get('rf_epoch_of') !== name) {
      table.close();
      epochTable.close();
      throw this.error(
        'FOREIGN_DATA',
        `table ${epochName} in ${path} was not created by ragfresh; ragfresh keeps the published epoch there. Rename or drop it, or choose another table name.`,
      );
    }
    this.#db = db;
    this.#table = table;
    this.#epochTable = epochTable;
  }

  #rows(chunks: readonly StoredChunk[]): Row[] {
    return chunks.map((c) => {
      if (LONE_SURROGATE.test(c.id) || LONE_SURROGATE.test(c.text)) {
        throw this.error(
          'INVALID_METADATA',
          `chunk ${JSON.stringify(c.id)} has text with an unpaired UTF-16 surrogate, which UTF-8 columns cannot hold; fix the text encoding upstream.`,
        );
      }
      for (const [key, value] of Object.entries(c.metadata)) {
        if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
          throw this.error(
            'INVALID_METADATA',
            `chunk ${c.id} metadata field ${JSON.stringify(key)} has an unpaired UTF-16 surrogate, which UTF-8 columns cannot hold; fix the text encoding upstream.`,
          );
        }
      }
      const m = c.metadata;
      if (!INT64_SAFE(m[FIELDS.from]) || !INT64_SAFE(m[FIELDS.to])) {
        throw this.error(
          'INVALID_METADATA',
          `chunk ${c.id} has a non-integer ${FIELDS.from}/${FIELDS.to}; validity bounds are integer epochs (Int64 columns).`,
        );
      }
      const source = m[FIELDS.sourceId];
      if (source !== undefined && typeof source !== 'string') {
        throw this.error(
          'INVALID_METADATA',
          `chunk ${c.id} has a non-string ${FIELDS.sourceId}; it is a string column.`,
        );
      }
      return {
        [COLUMNS.id]: c.id,
        [COLUMNS.text]: c.text,
        [COLUMNS.vector]: [...c.embedding],
        [COLUMNS.metadata]: JSON.stringify(m),
        [COLUMNS.documentId]: m[FIELDS.documentId],
        [COLUMNS.versionId]: m[FIELDS.versionId],
        [COLUMNS.sourceId]: source ?? '',
        [COLUMNS.from]: m[FIELDS.from],
        [COLUMNS.to]: m[FIELDS.to],
        [COLUMNS.current]: m[FIELDS.current] === true,
      };
    });
  }

  protected async _upsert(chunks: readonly StoredChunk[]): Promise<void> {
    const rows = this.#rows(chunks);
    const table = this.#main();
    await this.#call(`upserting ${rows.length} chunks into ${this.#options.table}`, () =>
      table.mergeInsert(COLUMNS.id).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows),
    );
    await this.#committed();
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
  ): Promise<void> {
    const values: Record<string, string> = {};
    if (patch.to !== undefined) values[COLUMNS.to] = String(patch.to);
    if (patch.current !== undefined) values[COLUMNS.current] = patch.current ? 'true' : 'false';
    const where = lanceWhere({ documentId, versionId })!;
    // One commit for the whole version; only the validity columns change.
    await this.#call(`patching validity of ${documentId} ${versionId}`, () =>
      this.#main().update({ where, valuesSql: values }),
    );
    await this.#committed();
  }

  protected async _readEpoch(): Promise<number> {
    const rows = await this.#call('reading the published epoch', () =>
      this.#epochs().query().where(`id = 'epoch'`).select(['epoch']).toArray(),
    );
    if (rows.length === 0) return 0;
    return Number((rows[0] as Row).epoch);
  }

  /**
   * Compare-and-set: `UPDATE epoch SET epoch = next WHERE epoch = expected` is one Lance
   * commit; a concurrent commit makes Lance re-run the predicate on the new version, so
   * exactly one publisher updates the row and the others see zero rows updated.
   */
  protected async _advanceEpoch(expected: number, next: number): Promise<void> {
    let updated: number;
    try {
      const result = await this.#epochs().update({
        where: `id = 'epoch' AND epoch = ${Math.trunc(expected)}`,
        valuesSql: { epoch: String(Math.trunc(next)) },
      });
      updated = result.rowsUpdated;
    } catch (err) {
      if (!/conflict|retr/i.test(message(err)))
        throw this.error(
          'STORE_REJECTED',
          `LanceDB rejected the epoch advance: ${message(err).split('\n')[0]}`,
          err,
        );
      updated = 0;
    }
    if (updated === 1) {
      // Each advance adds a fragment to the one-row table; keep reads of it constant-time.
      this.#advances += 1;
      if (this.#advances % 100 === 0) await this.#optimize(this.#epochs());
      return;
    }
    const current = await this._readEpoch();
    throw this.error(
      'EPOCH_CONFLICT',
      `published epoch is ${current}, expected ${expected}; another publisher moved it. Re-read the epoch and retry.`,
    );
  }

  protected async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    const where = lanceWhere({ documentId, versionId })!;
    await this.#call(`deleting ${documentId} ${versionId}`, () => this.#main().delete(where));
    await this.#committed();
  }

  protected async _deleteDocuments(documentIds: readonly string[]): Promise<void> {
    for (let i = 0; i < documentIds.length; i += 500) {
      const part = documentIds.slice(i, i + 500);
      await this.#call(`deleting ${part.length} documents`, () =>
        this.#main().delete(`${COLUMNS.documentId} IN (${part.map(sqlString).join(', ')})`),
      );
      await this.#committed();
    }
  }

  #decode(row: Row): { id: string; text: string; metadata: FlatMetadata } {
    const parsed = JSON.parse(String(row[COLUMNS.metadata])) as Record<
      string,
      string | number | boolean
    >;
    // The validity columns are the truth; the JSON keeps what was written at stage time.
    parsed[FIELDS.from] = Number(row[COLUMNS.from]);
    parsed[FIELDS.to] = Number(row[COLUMNS.to]);
    parsed[FIELDS.current] = row[COLUMNS.current] === true;
    return { id: String(row[COLUMNS.id]), text: String(row[COLUMNS.text]), metadata: parsed };
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const where = lanceWhere(versionId === undefined ? { documentId } : { documentId, versionId })!;
    const columns: string[] = [
      COLUMNS.id,
      COLUMNS.text,
      COLUMNS.metadata,
      COLUMNS.from,
      COLUMNS.to,
      COLUMNS.current,
    ];
    if (withEmbeddings) columns.push(COLUMNS.vector);
    const rows = (await this.#call(`listing ${documentId}`, () =>
      this.#main().query().where(where).select(columns).toArray(),
    )) as Row[];
    return rows.map((row) => {
      const base = this.#decode(row);
      return withEmbeddings
        ? { ...base, embedding: Array.from(row[COLUMNS.vector] as Iterable<number>) }
        : base;
    });
  }

  protected override async _count(documentId: string, versionId: string): Promise<number> {
    return this.#call(`counting ${documentId} ${versionId}`, () =>
      this.#main().countRows(lanceWhere({ documentId, versionId })),
    );
  }

  protected async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const where = lanceWhere(filter);
    const rows = (await this.#call('querying', () => {
      let q = this.#main()
        .vectorSearch([...vector])
        .distanceType('cosine')
        .select([
          COLUMNS.id,
          COLUMNS.text,
          COLUMNS.metadata,
          COLUMNS.from,
          COLUMNS.to,
          COLUMNS.current,
          '_distance',
        ])
        .limit(k);
      if (where !== undefined) q = q.where(where);
      return q.toArray();
    })) as Row[];
    return rows.map((row) => ({ ...this.#decode(row), score: 1 - Number(row._distance) }));
  }

  protected async _close(): Promise<void> {
    this.#table?.close();
    this.#epochTable?.close();
    this.#db?.close();
    this.#table = undefined;
    this.#epochTable = undefined;
    this.#db = undefined;
  }
}

/** JSON-options factory used by `ConnectorSpec` (child processes) and the refresh engine. */
export function createLanceDbConnector(options: LanceDbConnectorOptions): LanceDbConnector {
  return new LanceDbConnector(options);
}
