import { type IsoTime, RagfreshError, sha256Hex } from '@ragfresh/core';

/** What is known about the fetch that produced a raw body. */
export interface RawSnapshotMeta {
  readonly url: string;
  readonly finalUrl: string;
  readonly status: number;
  readonly fetchedAt: IsoTime;
  readonly headers: Readonly<Record<string, string>>;
  readonly contentType?: string;
  readonly region?: string;
}

export interface RawSnapshot {
  /** sha256 hex of `body` (the content-decoded bytes, before charset decoding). */
  readonly digest: string;
  readonly body: Uint8Array;
  readonly meta: RawSnapshotMeta;
}

/** One kept snapshot as `list` reports it: its digest and its latest observation. */
export interface RawSnapshotEntry {
  readonly digest: string;
  readonly meta: RawSnapshotMeta;
  /** Bytes it keeps on disk (every frame of it, or the body file and sidecar); what gc frees. */
  readonly bytes: number;
}

export interface RawSnapshotListOptions {
  /** Only snapshots whose latest observation is strictly older than this time. */
  readonly fetchedBefore?: IsoTime;
}

/**
 * Content-addressed raw bodies, so extraction can be re-run without refetching. `put` is
 * idempotent per digest (the body is stored once; the latest observation's meta wins).
 */
export interface RawSnapshotStore {
  /** Stores `body` and returns its digest (sha256 hex); durable on disk when it resolves. */
  put(body: Uint8Array, meta: RawSnapshotMeta): Promise<string>;
  get(digest: string): Promise<RawSnapshot | undefined>;
  has(digest: string): Promise<boolean>;
  /**
   * Removes the snapshots (body and every observation) of these digests from wherever they
   * are kept; resolves with how many were present. Unknown digests are fine.
   */
  delete(digests: readonly string[]): Promise<number>;
  /** Every kept snapshot, oldest latest observation first. */
  list(options?: RawSnapshotListOptions): AsyncIterable<RawSnapshotEntry>;
  /** Finishes pending writes and releases files; the store may not be used afterwards. */
  close(): Promise<void>;
}

const DIGEST = /^[0-9a-f]{64}$/;

export function assertDigest(digest: string): void {
  if (!DIGEST.test(digest)) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `raw snapshot digest must be 64 lower-case hex characters, got ${JSON.stringify(digest)}.`,
      { scope: 'fetch' },
    );
  }
}

/** Oldest first, then by digest: one order for every store's `list`. */
export function byAge(a: RawSnapshotEntry, b: RawSnapshotEntry): number {
  return a.meta.fetchedAt.localeCompare(b.meta.fetchedAt) || a.digest.localeCompare(b.digest);
}

export function olderThan(entry: RawSnapshotEntry, options: RawSnapshotListOptions = {}): boolean {
  return options.fetchedBefore === undefined || entry.meta.fetchedAt < options.fetchedBefore;
}

/** Snapshots in memory (tests, short-lived runs). */
export class MemoryRawSnapshotStore implements RawSnapshotStore {
  readonly #items = new Map<string, RawSnapshot>();

  async put(body: Uint8Array, meta: RawSnapshotMeta): Promise<string> {
    const digest = sha256Hex(body);
    this.#items.set(digest, { digest, body: Uint8Array.from(body), meta });
    return digest;
  }

  async get(digest: string): Promise<RawSnapshot | undefined> {
    return this.#items.get(digest);
  }

  async has(digest: string): Promise<boolean> {
    return this.#items.has(digest);
  }

  async delete(digests: readonly string[]): Promise<number> {
    let n = 0;
    for (const d of new Set(digests)) if (this.#items.delete(d)) n++;
    return n;
  }

  async *list(options?: RawSnapshotListOptions): AsyncIterable<RawSnapshotEntry> {
    const entries = [...this.#items.values()].map(({ digest, meta, body }) => ({
      digest,
      meta,
      bytes: body.byteLength,
    }));
    for (const e of entries.sort(byAge)) if (olderThan(e, options)) yield e;
  }

  async close(): Promise<void> {}

  get size(): number {
    return this.#items.size;
  }
}
