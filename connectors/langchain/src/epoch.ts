import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { RagfreshError } from '@ragfresh/core';

/**
 * Where the published epoch lives when the vector store cannot hold it. `compareAndSet` must be
 * exclusive: of two callers moving the same `expected`, at most one gets `true`.
 */
export interface EpochStore {
  /** Shown in messages and reports, e.g. `file /var/lib/rag/docs.epoch.json`. */
  readonly description: string;
  read(): Promise<number>;
  compareAndSet(expected: number, next: number): Promise<boolean>;
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

/**
 * The epoch in a small JSON file on local disk: read by a whole-file read (writes are
 * write-then-rename, so a reader sees the old or the new file), moved under a lock directory
 * (`mkdir` is atomic) whose owner pid is checked, so a publisher killed while holding it does
 * not block the next one. Exclusive between processes on one machine's filesystem; not on
 * network filesystems that do not make `mkdir`/`rename` atomic.
 */
export function fileEpochStore(path: string): EpochStore {
  const lock = `${path}.lock`;
  const read = (): number => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    const parsed = JSON.parse(text) as { epoch?: unknown; format?: unknown };
    if (parsed.format !== FORMAT || !Number.isSafeInteger(parsed.epoch)) {
      throw new RagfreshError(
        'FOREIGN_DATA',
        `${path} is not a ragfresh epoch file (expected {"format":"${FORMAT}","epoch":n}); use another epoch path.`,
        { scope: 'langchain' },
      );
    }
    return parsed.epoch as number;
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
  return {
    description: `file ${path}`,
    async read() {
      return read();
    },
    async compareAndSet(expected, next) {
      await acquire();
      try {
        if (read() !== expected) return false;
        const tmp = `${path}.${process.pid}.tmp`;
        writeFileSync(tmp, JSON.stringify({ format: FORMAT, epoch: next }));
        renameSync(tmp, path);
        return true;
      } finally {
        rmSync(lock, { recursive: true, force: true });
      }
    },
  };
}
