import {
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { RagfreshError } from './errors.js';
import { sha256Hex, stableStringify } from './hash.js';
import type { IsoTime } from './model.js';

/**
 * What governance acts are recorded. Other features append their own (`access-changed`,
 * `register-changed`, `migration`) through the same `AuditLog.append`.
 */
export type AuditAction =
  | 'removed'
  | 'removal-undone'
  | 'review-approved'
  | 'review-rejected'
  | 'access-changed'
  | 'register-changed'
  | 'migration'
  | (string & {});

/** One act, as a caller states it. Never put page text or a removed URL in it. */
export interface AuditEvent {
  readonly action: AuditAction;
  /** Who did it: a user name, or `auto-policy:<name>` / `engine:<why>`. */
  readonly by: string;
  readonly reason?: string;
  /** The documentIds the act touched (a removed URL is named only by its documentId). */
  readonly documents?: readonly string[];
  /** Flat facts of the act (counts, epoch, source, match kind). */
  readonly details?: Readonly<Record<string, string | number | boolean>>;
}

/** One line of the log: the event, its place in the chain and the hash that seals it. */
export interface AuditEntry extends AuditEvent {
  readonly seq: number;
  readonly at: IsoTime;
  /** `hash` of the entry before (GENESIS for the first). */
  readonly prev: string;
  /** sha256 of the entry's canonical JSON without `hash`. */
  readonly hash: string;
}

export const AUDIT_GENESIS = '0'.repeat(64);

/** The append side other features call; `FileAuditLog` is the CLI's. */
export interface AuditLog {
  append(event: AuditEvent): Promise<AuditEntry>;
}

export type AuditVerdict =
  | { readonly ok: true; readonly entries: readonly AuditEntry[] }
  | {
      readonly ok: false;
      readonly entries: readonly AuditEntry[];
      /** 1-based line number of the first entry that breaks the chain. */
      readonly line: number;
      readonly problem: string;
    };

function sealOf(entry: Omit<AuditEntry, 'hash'>): string {
  return sha256Hex(stableStringify(entry));
}

/** Builds the next entry of a chain (pure: the caller writes it). */
export function chainAuditEntry(
  event: AuditEvent,
  previous: Pick<AuditEntry, 'seq' | 'hash'> | undefined,
  at: IsoTime,
): AuditEntry {
  const body: Omit<AuditEntry, 'hash'> = {
    seq: (previous?.seq ?? 0) + 1,
    at,
    action: event.action,
    by: event.by,
    ...(event.reason === undefined ? {} : { reason: event.reason }),
    ...(event.documents === undefined ? {} : { documents: [...event.documents] }),
    ...(event.details === undefined ? {} : { details: { ...event.details } }),
    prev: previous?.hash ?? AUDIT_GENESIS,
  };
  return { ...body, hash: sealOf(body) };
}

/**
 * Checks every line: JSON, its sequence number, that it names the hash of the line before,
 * and that its own hash seals its content. Stops at the first break (an edited, removed,
 * reordered or inserted entry breaks the chain at or after it).
 */
export function verifyAuditLines(lines: readonly string[]): AuditVerdict {
  const entries: AuditEntry[] = [];
  let previous: AuditEntry | undefined;
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '' && i === lines.length - 1) break;
    const fail = (problem: string): AuditVerdict => ({ ok: false, entries, line: i + 1, problem });
    let entry: AuditEntry;
    try {
      entry = JSON.parse(line) as AuditEntry;
    } catch {
      return fail('is not JSON');
    }
    if (typeof entry !== 'object' || entry === null || typeof entry.hash !== 'string')
      return fail('is not an audit entry');
    const expectedSeq = (previous?.seq ?? 0) + 1;
    if (entry.seq !== expectedSeq) return fail(`has seq ${entry.seq}, expected ${expectedSeq}`);
    const expectedPrev = previous?.hash ?? AUDIT_GENESIS;
    if (entry.prev !== expectedPrev)
      return fail(
        `names prev ${String(entry.prev).slice(0, 12)}…, not the hash of the entry before`,
      );
    const { hash, ...body } = entry;
    if (sealOf(body) !== hash) return fail('does not match its hash (its content was changed)');
    entries.push(entry);
    previous = entry;
  }
  return { ok: true, entries };
}

const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 5_000;

/**
 * Append-only JSON lines in one file (`<dataDir>/audit.jsonl`). Each append reads the last
 * line for its hash and writes one line under a lock file (`<file>.lock`, created exclusively),
 * so processes sharing the data dir extend one chain instead of forking it.
 */
export class FileAuditLog implements AuditLog {
  readonly path: string;
  readonly #now: () => Date;

  constructor(path: string, options: { readonly now?: () => Date } = {}) {
    this.path = path;
    this.#now = options.now ?? (() => new Date());
  }

  async append(event: AuditEvent): Promise<AuditEntry> {
    const release = await this.#lock();
    try {
      const last = this.#lastEntry();
      const entry = chainAuditEntry(event, last, this.#now().toISOString());
      const fd = openSync(this.path, 'a');
      try {
        writeSync(fd, `${JSON.stringify(entry)}\n`);
      } finally {
        closeSync(fd);
      }
      return entry;
    } finally {
      release();
    }
  }

  /** Every line of the log (an absent log is an empty one). */
  lines(): string[] {
    if (!existsSync(this.path)) return [];
    return readFileSync(this.path, 'utf8').split('\n');
  }

  verify(): AuditVerdict {
    return verifyAuditLines(this.lines());
  }

  #lastEntry(): AuditEntry | undefined {
    const lines = this.lines().filter((l) => l.trim() !== '');
    const last = lines.at(-1);
    if (last === undefined) return undefined;
    try {
      return JSON.parse(last) as AuditEntry;
    } catch (cause) {
      throw new RagfreshError(
        'STATE_CORRUPT',
        `audit log ${this.path} ends in a line that is not JSON; run \`ragfresh audit\` to find the damage, restore the file from a backup.`,
        { scope: 'audit', cause },
      );
    }
  }

  async #lock(): Promise<() => void> {
    const lock = `${this.path}.lock`;
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        closeSync(openSync(lock, 'wx'));
        return () => rmSync(lock, { force: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        // A lock left by a killed process is taken over once it is clearly stale.
        try {
          if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) rmSync(lock, { force: true });
        } catch {
          // Released meanwhile.
        }
        if (Date.now() > deadline)
          throw new RagfreshError(
            'LEASE_HELD',
            `audit log ${this.path} is locked by another process (${lock}); retry, or delete the lock file if no ragfresh process runs.`,
            { scope: 'audit' },
          );
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }
}
