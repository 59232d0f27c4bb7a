import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { ConnectorFactoryContext } from '@ragfresh/core';

// Where the connector keeps its files, and the epoch file beside the epoch table's versions:
// what the connector (index.ts) and its light epoch probe (probe.ts) share. No LanceDB import
// here, nor any other runtime import from a package: the probe must load in a few milliseconds.

/** Suffix of the one-row table that holds the published epoch. */
export const EPOCH_TABLE_SUFFIX = '__rf_epoch';
/** The table name when the options give none. */
export const DEFAULT_TABLE = 'ragfresh';
/** Table names LanceDB accepts: letters, digits, `_`, `-`, `.`. */
export const TABLE_NAME = /^[A-Za-z0-9_.-]{1,200}$/;

/** The registry factory's options and their kinds (`checkConnectorOptions`). */
export const LANCEDB_OPTION_KINDS = {
  path: 'string',
  table: 'string',
  maxWriteBatch: 'integer',
  compactAtFragments: 'integer',
  retainVersionsMs: 'integer',
  indexCacheBytes: 'integer',
  metadataCacheBytes: 'integer',
} as const;

/** The directory and table the registry factory opens for `path` and `table` as written. */
export function lanceDbLocation(
  given: { readonly path?: string | undefined; readonly table?: string | undefined },
  context: ConnectorFactoryContext,
): { readonly path: string; readonly table: string } {
  const path =
    given.path === undefined
      ? resolve(context.dataDir, 'lancedb')
      : isAbsolute(given.path)
        ? given.path
        : resolve(context.baseDir, given.path);
  return { path, table: given.table ?? DEFAULT_TABLE };
}

/** The table of `forNamespace(suffix)`. */
export function namespacedTable(table: string, suffix: string): string {
  return `${table}__${suffix}`;
}

/** The folder Lance keeps a table in. */
export function tableDir(path: string, table: string): string {
  return join(path, `${table}.lance`);
}

/**
 * The epoch file: `<path>/<table>__rf_epoch.lance/ragfresh-epoch.json`, inside the epoch table's
 * folder, so deleting, moving or restoring the folder takes it along. Lance's cleanup leaves
 * files it does not know alone (checked by the connector's tests).
 */
export const EPOCH_FILE = 'ragfresh-epoch.json';
const EPOCH_FILE_FORMAT = 'ragfresh-lancedb-epoch/1';

/** The epoch file of the epoch table of `table` in `path`. */
export function epochFilePath(path: string, table: string): string {
  return join(tableDir(path, `${table}${EPOCH_TABLE_SUFFIX}`), EPOCH_FILE);
}

/**
 * What the epoch file says: the epoch table at Lance version `version` (whose manifest is the
 * file `manifest` of `_versions/`, with that SHA-256) holds the published epoch `epoch`.
 */
export interface EpochFile {
  readonly format: typeof EPOCH_FILE_FORMAT;
  readonly epoch: number;
  readonly version: number;
  readonly manifest: string;
  readonly sha256: string;
}

const U64_MAX = (1n << 64n) - 1n;

/**
 * The table versions in a `_versions/` listing. Lance names a version's manifest `<n>.manifest`
 * (V1 naming) or, since its V2 naming (what LanceDB 0.31 writes), `<2^64-1-n>.manifest` padded
 * to 20 digits, so the newest sorts first. Other files (the latest-version hint, temporaries)
 * are not versions.
 */
export function manifestVersions(names: readonly string[]): Map<number, string> {
  const versions = new Map<number, string>();
  for (const name of names) {
    const m = /^(\d+)\.manifest$/.exec(name);
    if (m === null) continue;
    const n = m[1]!.length === 20 ? U64_MAX - BigInt(m[1]!) : BigInt(m[1]!);
    if (n >= 0n && n <= BigInt(Number.MAX_SAFE_INTEGER)) versions.set(Number(n), name);
  }
  return versions;
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/**
 * Records that the epoch table in `dir` holds `epoch` at Lance version `version`: written to a
 * temporary file and renamed, so a reader sees the old file or the new one, never half of one.
 * False (nothing written) when that version's manifest is not there.
 */
export function writeEpochFile(dir: string, epoch: number, version: number): boolean {
  const manifest = manifestVersions(readdirSync(join(dir, '_versions'))).get(version);
  if (manifest === undefined) return false;
  const record: EpochFile = {
    format: EPOCH_FILE_FORMAT,
    epoch,
    version,
    manifest,
    sha256: sha256(join(dir, '_versions', manifest)),
  };
  const file = join(dir, EPOCH_FILE);
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record)}\n`);
  renameSync(tmp, file);
  return true;
}

function parseEpochFile(text: string): EpochFile | undefined {
  const r = JSON.parse(text) as Partial<EpochFile> | null;
  if (r === null || typeof r !== 'object' || r.format !== EPOCH_FILE_FORMAT) return undefined;
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  if (!count(r.epoch) || !count(r.version)) return undefined;
  if (typeof r.manifest !== 'string' || typeof r.sha256 !== 'string') return undefined;
  return r as EpochFile;
}

const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';
/** False only when nothing is there (ENOENT); any other failure throws. */
const exists = (p: string) => statSync(p, { throwIfNoEntry: false }) !== undefined;

/**
 * The published epoch of the epoch table of `table` in `path`, from the files alone, or
 * undefined when the files cannot say for certain:
 * - no LanceDB folder, or no epoch table in it: 0, what opening the store would read (it creates
 *   an empty epoch table there);
 * - no chunk table, no epoch file, or one of another format: undefined;
 * - the epoch file names a version that is not the newest in `_versions/` (a commit after it,
 *   a `restore`, an older copy of the folder put back, cleanup took it): undefined;
 * - the manifest of that version is not the one the file hashed (the table was recreated and
 *   reached the same version number): undefined;
 * - else the file's epoch.
 */
export function epochFromFiles(path: string, table: string): number | undefined {
  const epochDir = tableDir(path, `${table}${EPOCH_TABLE_SUFFIX}`);
  try {
    if (!exists(path) || !exists(epochDir)) return 0;
    if (!exists(tableDir(path, table))) return undefined;
    let record: EpochFile | undefined;
    try {
      record = parseEpochFile(readFileSync(join(epochDir, EPOCH_FILE), 'utf8'));
    } catch (err) {
      if (missing(err) || err instanceof SyntaxError) return undefined;
      throw err;
    }
    if (record === undefined) return undefined;
    const versions = manifestVersions(readdirSync(join(epochDir, '_versions')));
    let newest = -1;
    for (const v of versions.keys()) newest = Math.max(newest, v);
    if (newest !== record.version || versions.get(newest) !== record.manifest) return undefined;
    if (sha256(join(epochDir, '_versions', record.manifest)) !== record.sha256) return undefined;
    return record.epoch;
  } catch {
    // Unreadable (permissions, a file where a folder should be): the full read says what.
    return undefined;
  }
}
