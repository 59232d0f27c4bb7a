import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { RagfreshError } from '@ragfresh/core';

/**
 * Where the published epoch lives when the vector store cannot hold it. `compareAndSet` must be
 * exclusive: of two callers moving the same `expected`, at most one gets `true`.
 *
 * The fence methods are optional (an EpochStore written before them keeps working, with
 * `fencing: 'none'`). With both, the store also keeps the publisher lease's newest fence: the
 * connector refuses every write under an older one (checked before the write: `client`).
 *
 * `readSpace` is optional too: implementing it declares that the record also names the
 * embedding space of the move that set it (the connector's `epochSpace`), and `compareAndSet`
 * must then keep its `space` in the same exclusive write, keeping the held one when given none.
 */
export interface EpochStore {
  /** Shown in messages and reports, e.g. `file /var/lib/rag/docs.epoch.json`. */
  readonly description: string;
  read(): Promise<number>;
  /**
   * With `fence`: also `false` when the store holds a newer fence; on success the record keeps
   * `fence` beside the epoch. With `space` (passed only to a store with `readSpace`): on
   * success the record names it.
   */
  compareAndSet(expected: number, next: number, fence?: number, space?: string): Promise<boolean>;
  /** The newest fence held; 0 when none. */
  readFence?(): Promise<number>;
  /** Keeps `fence` as the newest unless a newer one is held (then `false`, nothing changes). */
  raiseFence?(fence: number): Promise<boolean>;
  /** The space the record names: the `space` of the last move that gave one, else undefined. */
  readSpace?(): Promise<string | undefined>;
}

/** Whether an EpochStore keeps the fence (both optional methods). */
export function keepsFence(
  store: EpochStore,
): store is EpochStore & Required<Pick<EpochStore, 'readFence' | 'raiseFence'>> {
  return typeof store.readFence === 'function' && typeof store.raiseFence === 'function';
}

/** Whether an EpochStore names the embedding space beside the epoch (`readSpace`). */
export function keepsSpace(
  store: EpochStore,
): store is EpochStore & Required<Pick<EpochStore, 'readSpace'>> {
  return typeof store.readSpace === 'function';
}

const FORMAT = 'ragfresh-langchain-epoch/1';
const LOCK_WAIT_MS = 10_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface EpochRecord {
  readonly epoch: number;
  readonly fence: number;
  /** Absent until a move names one (and in files written before the record named it). */
  readonly space?: string;
}

/**
 * The epoch (the newest fence, and the space of the last move that named one) in a small JSON
 * file on local disk: read by a whole-file
 * read (writes are write-then-rename, so a reader sees the old or the new file), changed under
 * a lock directory (`mkdir` is atomic) whose owner pid is checked, so a publisher killed while
 * holding it does not block the next one. Exclusive between processes on one machine's
 * filesystem; not on network filesystems that do not make `mkdir`/`rename` atomic.
 */
export function fileEpochStore(path: string): Required<EpochStore> {
  const lock = `${path}.lock`;
  const read = (): EpochRecord => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { epoch: 0, fence: 0 };
      throw err;
    }
    const parsed = JSON.parse(text) as {
      epoch?: unknown;
      format?: unknown;
      fence?: unknown;
      space?: unknown;
    };
    const fence = parsed.fence ?? 0;
    if (
      parsed.format !== FORMAT ||
      !Number.isSafeInteger(parsed.epoch) ||
      !Number.isSafeInteger(fence) ||
      (parsed.space !== undefined && typeof parsed.space !== 'string')
    ) {
      throw new RagfreshError(
        'FOREIGN_DATA',
        `${path} is not a ragfresh epoch file (expected {"format":"${FORMAT}","epoch":n,"fence":n,"space"?:"es_…"}); use another epoch path.`,
        { scope: 'langchain' },
      );
    }
    return {
      epoch: parsed.epoch as number,
      fence: fence as number,
      ...(typeof parsed.space === 'string' ? { space: parsed.space } : {}),
    };
  };
  const write = (record: EpochRecord): void => {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ format: FORMAT, ...record }));
    renameSync(tmp, path);
  };
  const acquire = async (): Promise<void> => {
    const deadline = Date.now() + LOCK_WAIT_MS;
    mkdirSync(dirname(path), { recursive: true });
    for (;;) {
      try {
        mkdirSync(lock);
        writeFileSync(`${lock}/owner`, String(process.pid));
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      let owner = Number.NaN;
      try {
        owner = Number(readFileSync(`${lock}/owner`, 'utf8'));
      } catch {
        // The owner is between mkdir and writing its pid; wait.
      }
      if (Number.isSafeInteger(owner) && owner !== process.pid && !alive(owner)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new RagfreshError(
          'STORE_UNREACHABLE',
          `the epoch lock ${lock} stayed held for ${LOCK_WAIT_MS} ms; if no publisher is running, remove it.`,
          { scope: 'langchain' },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  /** Runs `change` on the record under the lock; writes what it returns, unless undefined. */
  const locked = async (change: (r: EpochRecord) => EpochRecord | undefined): Promise<boolean> => {
    await acquire();
    try {
      const next = change(read());
      if (next === undefined) return false;
      write(next);
      return true;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  };
  return {
    description: `file ${path}`,
    async read() {
      return read().epoch;
    },
    compareAndSet(expected, next, fence, space) {
      return locked((r) => {
        if (r.epoch !== expected || (fence !== undefined && r.fence > fence)) return undefined;
        // The space in the same locked rewrite as the epoch; a move naming none keeps it.
        const named = space ?? r.space;
        return {
          epoch: next,
          fence: Math.max(r.fence, fence ?? 0),
          ...(named === undefined ? {} : { space: named }),
        };
      });
    },
    async readFence() {
      return read().fence;
    },
    raiseFence(fence) {
      return locked((r) => (r.fence > fence ? undefined : { ...r, fence }));
    },
    async readSpace() {
      return read().space;
    },
  };
}
