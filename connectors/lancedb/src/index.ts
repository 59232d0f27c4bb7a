import * as lancedb from '@lancedb/lancedb';
import {
  buildConnector,
  type CompactReport,
  Connector,
  type ConnectorCapabilities,
  type ConnectorFactoryContext,
  checkConnectorOptions,
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
} from '@ragfresh/core';
import { Bool, Field, FixedSizeList, Float32, Int64, List, Schema, Utf8 } from 'apache-arrow';
import {
  EPOCH_TABLE_SUFFIX,
  LANCEDB_OPTION_KINDS,
  lanceDbLocation,
  namespacedTable,
  TABLE_NAME,
  tableDir,
  writeEpochFile,
} from './layout.js';

export { EPOCH_FILE, EPOCH_TABLE_SUFFIX, epochFilePath } from './layout.js';

export interface LanceDbConnectorOptions {
  /** Directory of the LanceDB database (created when missing). */
  readonly path: string;
  /** Table holding the chunks of one index: letters, digits, `_`, `-`, `.`. */
  readonly table: string;
  /** Chunks core sends per `_upsert` call; each call is one commit. */
  readonly maxWriteBatch?: number;
  /**
   * Compact (and clean up old versions) once the table has this many fragments (default 32;
   * 0 = never). Every write adds a fragment that the document index does not cover yet, and
   * every filtered call scans the uncovered fragments; compaction also brings them into the
   * index.
   */
  readonly compactAtFragments?: number;
  /**
   * How long a replaced table version is kept before cleanup removes its files (default 10 s).
   * A reader holds the version it started a query on; this is how long such a query may run.
   */
  readonly retainVersionsMs?: number;
  /**
   * Bytes LanceDB may keep in its index cache (default 64 MiB; LanceDB's own default is 6 GiB).
   * Index pages read by filtered calls are cached here; the document index of a table of
   * millions of chunks is a few MiB.
   */
  readonly indexCacheBytes?: number;
  /**
   * Bytes LanceDB may keep in its metadata cache (default 64 MiB; LanceDB's own default is
   * 1 GiB). Every commit adds a manifest and file metadata that readers at consistency 0 load,
   * so unbounded this cache grows with the writes of a long run (issue 37).
   */
  readonly metadataCacheBytes?: number;
}

/** The connector's cache bounds when the options give none (see `LanceDbConnectorOptions`). */
export const DEFAULT_INDEX_CACHE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_METADATA_CACHE_BYTES = 64 * 1024 * 1024;

/** What the connector's automatic maintenance did since `open` (for benchmarks and tests). */
export interface LanceDbMaintenanceStats {
  /** `optimize` runs on the chunk table (compaction + index update + cleanup). */
  readonly optimizations: number;
  readonly fragmentsRemoved: number;
  readonly fragmentsAdded: number;
  /** Table versions and bytes that cleanup removed (chunk and epoch tables). */
  readonly versionsRemoved: number;
  readonly bytesRemoved: number;
  /** Fragment counts read (`stats()`) to decide whether to compact. */
  readonly fragmentChecks: number;
}

/** Marks a table as written by ragfresh (Arrow schema metadata `rf_schema`). */
export const LANCEDB_SCHEMA_MARK = 'ragfresh/1';
/** Column holding the chunk's full flat metadata as JSON (validity columns override it on read). */
export const METADATA_COLUMN = 'metadata';
/** Name of the BTREE index on the document column, created at open. */
export const DOCUMENT_INDEX = 'rf_doc_idx';

const DEFAULT_COMPACT_AT_FRAGMENTS = 32;
const DEFAULT_RETAIN_VERSIONS_MS = 10_000;
/** The one-row epoch table gains a fragment per advance; compact it this often. */
const EPOCH_COMPACT_EVERY = 64;

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
/**
 * The access list column (List<Utf8>, nullable): tables created before access scope gain it at
 * open, null in their old rows, which `array_has_any` then matches for no reader.
 */
const ACCESS_COLUMN = FIELDS.access;

function accessField(): Field {
  return new Field(ACCESS_COLUMN, new List(new Field('item', new Utf8(), true)), true);
}

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
    scan: true,
    // The fence is a row of the epoch table; LanceDB has no transaction spanning two tables,
    // so the base class checks it before each fenced write (see docs/connectors/lancedb.md).
    fencing: 'client',
  };
}

/** The access column's value: the stored list, or null for a chunk without one (no reader sees it). */
function accessList(v: unknown): string[] | null {
  return Array.isArray(v) ? v.map(String) : null;
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
    if (filter.access !== undefined) {
      const tokens = readerAccessTokens(filter.access).map(sqlString).join(', ');
      clauses.push(`array_has_any(${ACCESS_COLUMN}, make_array(${tokens}))`);
    }
  }
  if (filter.documentId !== undefined)
    clauses.push(`${COLUMNS.documentId} = ${sqlString(filter.documentId)}`);
  if (filter.versionId !== undefined)
    clauses.push(`${COLUMNS.versionId} = ${sqlString(filter.versionId)}`);
  return clauses.length === 0 ? undefined : clauses.join(' AND ');
}

/**
 * Predicate matching exactly the given (document, version) pairs. The leading
 * `rf_doc IN (...)` is what the document index answers; the per-document version lists refine it.
 */
export function versionsWhere(refs: readonly VersionRef[]): string {
  const documents = [...new Set(refs.map((r) => r.documentId))].map(sqlString).join(', ');
  return `${COLUMNS.documentId} IN (${documents}) AND (${refsCondition(refs)})`;
}

/**
 * SQL for the new values of one `update` that applies several validity patches. Lance's SQL
 * has no CASE, so a per-row choice is arithmetic on booleans: `CAST(cond AS BIGINT) * value`.
 * Rows the `where` matches but no patch names a field for keep that field.
 */
export function validityValuesSql(patches: readonly VersionPatch[]): Record<string, string> {
  const values: Record<string, string> = {};
  const toGroups = new Map<number, VersionRef[]>();
  const keepTo: VersionRef[] = [];
  const on: VersionRef[] = [];
  const off: VersionRef[] = [];
  const keepCurrent: VersionRef[] = [];
  for (const p of patches) {
    if (p.patch.to === undefined) keepTo.push(p);
    else toGroups.set(p.patch.to, [...(toGroups.get(p.patch.to) ?? []), p]);
    if (p.patch.current === undefined) keepCurrent.push(p);
    else (p.patch.current ? on : off).push(p);
  }
  const matches = (refs: readonly VersionRef[]) => `(${refsCondition(refs)})`;
  if (toGroups.size === 1 && keepTo.length === 0) {
    values[COLUMNS.to] = String(Math.trunc([...toGroups.keys()][0]!));
  } else if (toGroups.size > 0) {
    const terms = [...toGroups].map(
      ([to, refs]) => `CAST(${matches(refs)} AS BIGINT) * ${Math.trunc(to)}`,
    );
    if (keepTo.length > 0) terms.push(`CAST(${matches(keepTo)} AS BIGINT) * ${COLUMNS.to}`);
    values[COLUMNS.to] = terms.join(' + ');
  }
  if (on.length > 0 || off.length > 0) {
    if (keepCurrent.length === 0 && (on.length === 0 || off.length === 0)) {
      values[COLUMNS.current] = on.length > 0 ? 'true' : 'false';
    } else if (keepCurrent.length === 0) {
      values[COLUMNS.current] = matches(on);
    } else {
      const kept =
        off.length === 0 ? COLUMNS.current : `(${COLUMNS.current} AND NOT ${matches(off)})`;
      values[COLUMNS.current] = on.length === 0 ? kept : `${matches(on)} OR ${kept}`;
    }
  }
  return values;
}

/** `(rf_doc = 'd' AND rf_version IN (...)) OR ...` without the index-friendly prefix. */
function refsCondition(refs: readonly VersionRef[]): string {
  const byDocument = new Map<string, string[]>();
  for (const r of refs)
    byDocument.set(r.documentId, [...(byDocument.get(r.documentId) ?? []), r.versionId]);
  return [...byDocument]
    .map(
      ([d, vs]) =>
        `(${COLUMNS.documentId} = ${sqlString(d)} AND ${COLUMNS.versionId} IN (${vs.map(sqlString).join(', ')}))`,
    )
    .join(' OR ');
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
      accessField(),
    ],
    new Map([
      ['rf_schema', LANCEDB_SCHEMA_MARK],
      ['rf_dimensions', String(dims)],
    ]),
  );
}

/** The epoch record's space column (nullable: fence rows and moves before spaces name none). */
const EPOCH_SPACE_COLUMN = 'space';

function epochSchema(table: string): Schema {
  return new Schema(
    [
      new Field('id', new Utf8(), false),
      new Field('epoch', new Int64(), false),
      new Field(EPOCH_SPACE_COLUMN, new Utf8(), true),
    ],
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
  #advances = 0;
  /** Fragments at the last `stats()` plus commits since: an upper bound (a commit adds at most one). */
  #fragmentsBound = 0;
  #maintenance = {
    optimizations: 0,
    fragmentsRemoved: 0,
    fragmentsAdded: 0,
    versionsRemoved: 0,
    bytesRemoved: 0,
    fragmentChecks: 0,
  };

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
    for (const key of [
      'compactAtFragments',
      'retainVersionsMs',
      'indexCacheBytes',
      'metadataCacheBytes',
    ] as const) {
      const value = options[key];
      if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
        throw new RagfreshError(
          'INVALID_CONFIG',
          `${key} must be a non-negative integer, got ${value}.`,
          { scope: 'lancedb' },
        );
      }
    }
    this.#options = options;
  }

  protected override _forNamespace(suffix: string): LanceDbConnector {
    return new LanceDbConnector({
      ...this.#options,
      table: namespacedTable(this.#options.table, suffix),
    });
  }

  get tableName(): string {
    return this.#options.table;
  }

  get epochTableName(): string {
    return `${this.#options.table}${EPOCH_TABLE_SUFFIX}`;
  }

  /** What automatic maintenance did since this connector opened. */
  get maintenanceStats(): LanceDbMaintenanceStats {
    return { ...this.#maintenance };
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
   * Compaction, index update and cleanup of versions older than the retention, in one
   * `optimize`. It rewrites fragments without changing any row, so readers see the same data;
   * it is best-effort: a conflict with another process's commit skips this round.
   */
  async #optimize(table: lancedb.Table): Promise<void> {
    try {
      const cleanupOlderThan = await this.#cleanupCutoff(table);
      const done = await table.optimize({ cleanupOlderThan });
      const m = this.#maintenance;
      if (table === this.#table) {
        m.optimizations += 1;
        m.fragmentsRemoved += done.compaction.fragmentsRemoved;
        m.fragmentsAdded += done.compaction.fragmentsAdded;
      }
      m.versionsRemoved += done.prune.oldVersionsRemoved;
      m.bytesRemoved += done.prune.bytesRemoved;
    } catch {
      // A concurrent commit won; the next round compacts.
    }
    if (table === this.#epochTable) await this.#recordEpoch();
  }

  /**
   * After each commit on the epoch table: the epoch file (layout.ts) names the epoch and the
   * table version holding it, for the light probe (`@ragfresh/connector-lancedb/probe`). The
   * version is read before and after the epoch: a commit in between (another process) skips
   * the write, so the file never pairs an epoch with a version that does not hold it. Best
   * effort: a file not written, or left behind by a later commit, makes the probe answer
   * undefined (the reader opens the store), never a wrong epoch.
   */
  async #recordEpoch(): Promise<void> {
    const table = this.#epochs();
    try {
      const version = await table.version();
      const epoch = await this._readEpoch();
      if ((await table.version()) !== version) return;
      writeEpochFile(tableDir(this.#options.path, this.epochTableName), epoch, version);
    } catch {
      // Only the readers' fast path; they fall back to reading the table.
    }
  }

  /**
   * Lance removes versions *created* before the cutoff, but a reader holds a version from when
   * it became current until its query ends, i.e. until it was *replaced* plus a query's length.
   * So the cutoff is the creation time of the version that was current `retainVersionsMs` ago:
   * it and everything after it stay; what was replaced before then goes.
   */
  async #cleanupCutoff(table: lancedb.Table): Promise<Date> {
    const horizon = Date.now() - (this.#options.retainVersionsMs ?? DEFAULT_RETAIN_VERSIONS_MS);
    let cutoff: number | undefined;
    for (const v of await table.listVersions()) {
      const created = v.timestamp.getTime();
      if (created <= horizon && (cutoff === undefined || created > cutoff)) cutoff = created;
    }
    return new Date(cutoff === undefined ? horizon : cutoff - 1);
  }

  /**
   * After each commit: compact once the table holds `compactAtFragments` fragments. The count
   * is read (`stats()`, which grows with the fragment count) only when the upper bound kept
   * here reaches the threshold, so most commits cost nothing extra.
   */
  async #committed(): Promise<void> {
    const limit = this.#options.compactAtFragments ?? DEFAULT_COMPACT_AT_FRAGMENTS;
    if (limit === 0) return;
    this.#fragmentsBound += 1;
    if (this.#fragmentsBound < limit) return;
    await this.#checkFragments(limit);
  }

  async #checkFragments(limit: number): Promise<void> {
    const table = this.#main();
    this.#maintenance.fragmentChecks += 1;
    let fragments: number;
    try {
      fragments = (await table.stats()).fragmentStats.numFragments;
    } catch {
      return; // Maintenance never fails a write; the next commit checks again.
    }
    if (fragments >= limit) {
      await this.#optimize(table);
      try {
        fragments = (await table.stats()).fragmentStats.numFragments;
      } catch {
        fragments = 0;
      }
    }
    this.#fragmentsBound = fragments;
  }

  /**
   * Runs maintenance now: compaction, index update, cleanup of versions older than the
   * retention, on both tables. Automatic maintenance makes this unnecessary; call it to reclaim
   * disk at a quiet moment (e.g. at the end of a refresh, once the retention has passed).
   */
  async maintain(): Promise<void> {
    await this.#optimize(this.#main());
    await this.#optimize(this.#epochs());
    try {
      this.#fragmentsBound = (await this.#main().stats()).fragmentStats.numFragments;
    } catch {
      // Keep the bound; the next commit checks again.
    }
  }

  /**
   * The document index, created at open when missing (a table created by an older release has
   * none). Lance answers a filter from the index for the fragments it covers and scans the
   * others, so rows written since the last `optimize` are found too; `optimize` extends the
   * index over them.
   */
  async #ensureDocumentIndex(table: lancedb.Table): Promise<void> {
    const has = async () =>
      (await table.listIndices()).some(
        (i) => i.columns.length === 1 && i.columns[0] === COLUMNS.documentId,
      );
    if (await this.#call('listing indexes', has)) return;
    try {
      await table.createIndex(COLUMNS.documentId, {
        config: lancedb.Index.btree(),
        name: DOCUMENT_INDEX,
        replace: false,
      });
    } catch (err) {
      // Another process created it at the same moment: fine. Anything else is a real refusal.
      if (!(await this.#call('listing indexes', has))) {
        throw this.error(
          'STORE_REJECTED',
          `LanceDB refused to create the ${COLUMNS.documentId} index on ${this.#options.table}: ${message(err).split('\n')[0]}`,
          err,
        );
      }
    }
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
      const session = new lancedb.Session(
        BigInt(this.#options.indexCacheBytes ?? DEFAULT_INDEX_CACHE_BYTES),
        BigInt(this.#options.metadataCacheBytes ?? DEFAULT_METADATA_CACHE_BYTES),
      );
      db = await lancedb.connect(path, { readConsistencyInterval: 0, session });
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
    if (!fieldNames.has(ACCESS_COLUMN)) {
      // By SQL: lancedb's own Arrow copy need not accept our Field instances.
      await this.#call(`adding the ${ACCESS_COLUMN} column to ${name}`, () =>
        table.addColumns([{ name: ACCESS_COLUMN, valueSql: "arrow_cast(NULL, 'List(Utf8)')" }]),
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
      const initial = lancedb.makeArrowTable(
        [{ id: 'epoch', epoch: 0, [EPOCH_SPACE_COLUMN]: null }],
        {
          schema: epochSchema(name),
        },
      );
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
    if (!epochMeta.fields.some((f) => f.name === EPOCH_SPACE_COLUMN))
      // An epoch table from before the record named its space: null until the next move.
      await epochTable
        .addColumns([{ name: EPOCH_SPACE_COLUMN, valueSql: "arrow_cast(NULL, 'Utf8')" }])
        .catch(async (err: unknown) => {
          // Another process opening the same table at once added it first: theirs stands.
          const now = await this.#call(`reading the schema of ${epochName}`, () =>
            epochTable.schema(),
          );
          if (!now.fields.some((f) => f.name === EPOCH_SPACE_COLUMN))
            throw this.error(
              'STORE_REJECTED',
              `LanceDB rejected adding the ${EPOCH_SPACE_COLUMN} column to ${epochName}: ${message(err).split('\n')[0]}`,
              err,
            );
        });
    await this.#ensureDocumentIndex(table);
    this.#db = db;
    this.#table = table;
    this.#epochTable = epochTable;
    this.#fragmentsBound = (
      await this.#call(`reading the stats of ${name}`, () => table.stats())
    ).fragmentStats.numFragments;
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
        [ACCESS_COLUMN]: accessList(m[FIELDS.access]),
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
    await this._patchValidityMany([{ documentId, versionId, patch }]);
  }

  /**
   * One `update` (one commit) for every listed version: only the validity columns change, each
   * row getting its own version's patch; the JSON metadata, text and vector stay as written.
   * One commit also means a flag reader sees every document of the call flip at once.
   */
  protected override async _patchValidityMany(patches: readonly VersionPatch[]): Promise<void> {
    const where = versionsWhere(patches);
    const valuesSql = validityValuesSql(patches);
    await this.#call(`patching validity of ${patches.length} versions`, () =>
      this.#main().update({ where, valuesSql }),
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

  /** The space the epoch row names (its `space` column), undefined while it names none. */
  protected override async _readEpochSpace(): Promise<string | undefined> {
    const rows = await this.#call('reading the space of the published epoch', () =>
      this.#epochs().query().where(`id = 'epoch'`).select([EPOCH_SPACE_COLUMN]).toArray(),
    );
    const space = (rows[0] as Row | undefined)?.[EPOCH_SPACE_COLUMN];
    return typeof space === 'string' && space !== '' ? space : undefined;
  }

  /** The newest fence: the `fence` row of the epoch table (its `epoch` column holds it). */
  protected override async _readFence(): Promise<number> {
    const rows = await this.#call('reading the fence', () =>
      this.#epochs().query().where(`id = 'fence'`).select(['epoch']).toArray(),
    );
    return rows.reduce((max, r) => Math.max(max, Number((r as Row).epoch)), 0);
  }

  /** A conditional update of the fence row (added on the first raise), then a read-back. */
  protected override async _raiseFence(fence: number): Promise<void> {
    const f = Math.trunc(fence);
    const { rowsUpdated } = await this.#call('raising the fence', () =>
      this.#epochs().update({
        where: `id = 'fence' AND epoch <= ${f}`,
        valuesSql: { epoch: String(f) },
      }),
    );
    if (rowsUpdated === 0) {
      const held = await this._readFence();
      if (held > f) throw this.staleFence(fence, held);
      await this.#call('adding the fence', () => this.#epochs().add([{ id: 'fence', epoch: f }]));
    }
    const held = await this._readFence();
    if (held > f) throw this.staleFence(fence, held);
    await this.#recordEpoch();
  }

  /**
   * Compare-and-set: `UPDATE epoch SET epoch = next WHERE epoch = expected` is one Lance
   * commit; a concurrent commit makes Lance re-run the predicate on the new version, so
   * exactly one publisher updates the row and the others see zero rows updated.
   */
  protected async _advanceEpoch(
    expected: number,
    next: number,
    _fence?: number,
    space?: string,
  ): Promise<void> {
    let updated: number;
    try {
      // The space in the same commit as the epoch; a move naming none keeps the stored one.
      const result = await this.#epochs().update({
        where: `id = 'epoch' AND epoch = ${Math.trunc(expected)}`,
        valuesSql: {
          epoch: String(Math.trunc(next)),
          ...(space === undefined ? {} : { [EPOCH_SPACE_COLUMN]: sqlString(space) }),
        },
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
      if (this.#advances % EPOCH_COMPACT_EVERY === 0) await this.#optimize(this.#epochs());
      else await this.#recordEpoch();
      return;
    }
    const current = await this._readEpoch();
    throw this.error(
      'EPOCH_CONFLICT',
      `published epoch is ${current}, expected ${expected}; another publisher moved it. Re-read the epoch and retry.`,
    );
  }

  protected async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    await this._deleteVersions([{ documentId, versionId }]);
  }

  /** One `delete` (one commit) for every listed version. */
  protected override async _deleteVersions(refs: readonly VersionRef[]): Promise<void> {
    const where = versionsWhere(refs);
    await this.#call(`deleting ${refs.length} versions`, () => this.#main().delete(where));
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

  #listColumns(withEmbeddings: boolean): string[] {
    const columns: string[] = [
      COLUMNS.id,
      COLUMNS.text,
      COLUMNS.metadata,
      COLUMNS.from,
      COLUMNS.to,
      COLUMNS.current,
    ];
    if (withEmbeddings) columns.push(COLUMNS.vector);
    return columns;
  }

  async #scan(what: string, where: string, withEmbeddings: boolean): Promise<ListedChunk[]> {
    const rows = (await this.#call(what, () =>
      this.#main().query().where(where).select(this.#listColumns(withEmbeddings)).toArray(),
    )) as Row[];
    return rows.map((row) => {
      const base = this.#decode(row);
      return withEmbeddings
        ? { ...base, embedding: Array.from(row[COLUMNS.vector] as Iterable<number>) }
        : base;
    });
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const where = lanceWhere(versionId === undefined ? { documentId } : { documentId, versionId })!;
    return this.#scan(`listing ${documentId}`, where, withEmbeddings);
  }

  /** One filtered scan (answered by the document index) for every listed document. */
  protected override async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const where = `${COLUMNS.documentId} IN (${documentIds.map(sqlString).join(', ')})`;
    return this.#scan(`listing ${documentIds.length} documents`, where, withEmbeddings);
  }

  protected override async _count(documentId: string, versionId: string): Promise<number> {
    return this.#call(`counting ${documentId} ${versionId}`, () =>
      this.#main().countRows(lanceWhere({ documentId, versionId })),
    );
  }

  /** One filtered scan of the two key columns for every listed version, counted here. */
  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const rows = (await this.#call(`counting ${refs.length} versions`, () =>
      this.#main()
        .query()
        .where(versionsWhere(refs))
        .select([COLUMNS.documentId, COLUMNS.versionId])
        .toArray(),
    )) as Row[];
    const counts = new Map<string, number>();
    for (const row of rows) {
      const key = `${String(row[COLUMNS.documentId])}\u0000${String(row[COLUMNS.versionId])}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return refs.map((r) => counts.get(`${r.documentId}\u0000${r.versionId}`) ?? 0);
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

  /**
   * One page of every stored chunk by id order: `id > cursor ORDER BY id LIMIT pageSize` (Lance
   * keeps only the top `pageSize` rows while it sorts, so memory is one page whatever the table
   * size). The cursor is the last id of the page, so a commit or a compaction between two pages
   * cannot repeat or skip a chunk that existed when the scan started and still exists.
   */
  protected override async _scan(
    cursor: string | undefined,
    pageSize: number,
  ): Promise<{ chunks: ListedChunk[]; next?: string }> {
    const rows = (await this.#call('scanning the chunks', () => {
      let q = this.#main().query();
      if (cursor !== undefined) q = q.where(`${COLUMNS.id} > ${sqlString(cursor)}`);
      return q
        .select(this.#listColumns(false))
        .orderBy({ columnName: COLUMNS.id, ascending: true, nullsFirst: false })
        .limit(pageSize)
        .toArray();
    })) as Row[];
    const chunks = rows.map((row) => this.#decode(row));
    return rows.length < pageSize ? { chunks } : { chunks, next: chunks[chunks.length - 1]!.id };
  }

  /**
   * A removal's deletes made physical: compaction rewrites every fragment holding deleted rows
   * (Lance rewrites fragments under its target size, and larger ones past 10 % deleted rows)
   * and cleanup removes every older table version and unreferenced file now, not after
   * `retainVersionsMs` — a reader still on an old version may fail its query once.
   */
  protected override async _compact(): Promise<CompactReport> {
    const before = { ...this.#maintenance };
    const cleanupOlderThan = new Date(Date.now() + 1_000);
    for (const table of [this.#main(), this.#epochTable]) {
      if (table === undefined) continue;
      const done = await this.#call('compacting after a removal', () =>
        table.optimize({ cleanupOlderThan, deleteUnverified: true }),
      );
      this.#maintenance.versionsRemoved += done.prune.oldVersionsRemoved;
      this.#maintenance.bytesRemoved += done.prune.bytesRemoved;
    }
    // Cleanup removed every older version, the one the epoch file named among them.
    if (this.#epochTable !== undefined) await this.#recordEpoch();
    return {
      reclaimed: true,
      note: `LanceDB: fragments compacted, ${this.#maintenance.versionsRemoved - before.versionsRemoved} old table versions (${this.#maintenance.bytesRemoved - before.bytesRemoved} bytes) removed`,
    };
  }

  /** Drops the chunk table and `<table>__rf_epoch` (both there: `open` made sure). */
  protected override async _dropNamespace(): Promise<void> {
    const db = this.#db!;
    this.#table?.close();
    this.#epochTable?.close();
    this.#table = undefined;
    this.#epochTable = undefined;
    for (const name of [this.#options.table, this.epochTableName])
      await this.#call(`dropping table ${name}`, () => db.dropTable(name));
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

/**
 * The registry factory (`connector: { store: 'lancedb', ...options }` in a ragfresh config, and
 * the default store): `path` defaults to `<dataDir>/lancedb` (a relative path is relative to the
 * config file's folder) and `table` to `ragfresh`. Unknown keys and wrong types are one
 * INVALID_CONFIG line naming `connector.<key>`.
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  context: ConnectorFactoryContext,
): LanceDbConnector {
  const given = checkConnectorOptions<LanceDbConnectorOptions>(
    'lancedb',
    options,
    LANCEDB_OPTION_KINDS,
  );
  return buildConnector(
    'lancedb',
    Object.keys(LANCEDB_OPTION_KINDS),
    () => new LanceDbConnector({ ...given, ...lanceDbLocation(given, context) }),
  );
}
