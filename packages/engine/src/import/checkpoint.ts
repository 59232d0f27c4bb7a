import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RagfreshError } from '@ragfresh/core';
import type { ExportCoverage } from './row.js';

/**
 * When the `--since` checkpoint of a source (the time the next changed-page crawl asks for)
 * may move: `never` (the default: every crawl starts from where the user says), or
 * `complete-coverage` (only after an export whose coverage is proven complete).
 */
export type CheckpointPolicy = 'never' | 'complete-coverage';

export interface Checkpoint {
  readonly sourceId: string;
  /** Ask the next crawl for pages changed since this time. */
  readonly since: string;
  readonly advancedAt: string;
  /** What the checkpoint was derived from. */
  readonly basis: string;
}

export interface CheckpointDecision {
  readonly advance: boolean;
  readonly since?: string;
  readonly reasons: readonly string[];
}

export interface CheckpointInput {
  readonly policy: CheckpointPolicy;
  readonly previous?: Checkpoint;
  readonly coverage: ExportCoverage;
  /** The `--since` the export's crawl was asked for; a crawl from later than the checkpoint leaves a gap. */
  readonly crawledSince?: string;
  /** When the crawl started: the only time the export speaks for. */
  readonly crawlStartedAt?: string;
  /** Kept behind the crawl start, for pages changed while the crawl ran and for clock skew. Default 1 h. */
  readonly overlapMs?: number;
  /** Rows of the export the import refused or could not read: the next crawl must ask for them again. */
  readonly notImported?: number;
}

/**
 * Decides whether the checkpoint advances. The largest `loadedTime` of an export is never the
 * basis: a crawl that stopped at a page limit has late `loadedTime`s and still missed pages.
 */
export function decideCheckpoint(input: CheckpointInput): CheckpointDecision {
  const reasons: string[] = [];
  if (input.policy !== 'complete-coverage')
    reasons.push('checkpoint policy is "never"; pass --checkpoint complete-coverage to advance it');
  if (!input.coverage.complete)
    reasons.push(...input.coverage.reasons.map((r) => `partial export: ${r}`));
  if ((input.notImported ?? 0) > 0)
    reasons.push(
      `${input.notImported} ${input.notImported === 1 ? 'row was' : 'rows were'} refused or unreadable; the next crawl must ask for them again`,
    );
  if (input.crawlStartedAt === undefined)
    reasons.push(
      'the crawl start time is unknown (--crawl-started-at); the largest loadedTime proves nothing',
    );
  const prev = input.previous?.since;
  if (
    prev !== undefined &&
    (input.crawledSince === undefined || Date.parse(input.crawledSince) > Date.parse(prev))
  )
    reasons.push(
      `the crawl was not asked for changes since the checkpoint ${prev} (--since), so it may have a gap`,
    );
  if (reasons.length > 0) return { advance: false, reasons };
  const since = new Date(
    Date.parse(input.crawlStartedAt!) - (input.overlapMs ?? 3_600_000),
  ).toISOString();
  if (prev !== undefined && Date.parse(since) <= Date.parse(prev))
    return { advance: false, reasons: [`the checkpoint ${prev} is already at or after ${since}`] };
  return { advance: true, since, reasons: [] };
}

/** Checkpoints as one small JSON file per source, replaced atomically. */
export class FileCheckpointStore {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  #file(sourceId: string): string {
    return join(this.#dir, `${sourceId}.checkpoint.json`);
  }

  async get(sourceId: string): Promise<Checkpoint | undefined> {
    try {
      return JSON.parse(await readFile(this.#file(sourceId), 'utf8')) as Checkpoint;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new RagfreshError(
        'INTERNAL',
        `checkpoint of ${sourceId} is unreadable; remove ${this.#file(sourceId)} to start over.`,
        { scope: 'import', cause: err },
      );
    }
  }

  async put(c: Checkpoint): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
    const tmp = `${this.#file(c.sourceId)}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(c, null, 2)}\n`);
    await rename(tmp, this.#file(c.sourceId));
  }
}
