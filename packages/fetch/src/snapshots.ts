import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { type IsoTime, RagfreshError, sha256Hex } from '@ragfresh/core';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** What is known about the fetch that produced a raw body (the JSON sidecar). */
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

/** One stored snapshot as a listing sees it (no body): what retention and removal decide on. */
export interface RawSnapshotEntry {
  readonly digest: string;
  /** The sidecar (undefined when it is missing or unreadable). */
  readonly meta: RawSnapshotMeta | undefined;
  /** Bytes on disk (body and sidecar). */
  readonly bytes: number;
  /** When the body was last written (its first observation). */
  readonly storedAt: IsoTime;
}

/**
 * Content-addressed raw bodies, so extraction can be re-run without refetching. `put` is
 * idempotent per digest (the body is stored once; the sidecar keeps the latest observation).
 */
export interface RawSnapshotStore {
  /** Stores `body` and returns its digest (sha256 hex). */
  put(body: Uint8Array, meta: RawSnapshotMeta): Promise<string>;
  get(digest: string): Promise<RawSnapshot | undefined>;
  has(digest: string): Promise<boolean>;
  /** Every stored snapshot, streamed (retention and removal requests read it). */
  entries(): AsyncIterable<RawSnapshotEntry>;
  /** Deletes a snapshot's body and sidecar; an absent one is a no-op. */
  delete(digest: string): Promise<void>;
}

const DIGEST = /^[0-9a-f]{64}$/;

function assertDigest(digest: string): void {
  if (!DIGEST.test(digest)) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `raw snapshot digest must be 64 lower-case hex characters, got ${JSON.stringify(digest)}.`,
      { scope: 'fetch' },
    );
  }
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

  async *entries(): AsyncIterable<RawSnapshotEntry> {
    for (const s of [...this.#items.values()])
      yield {
        digest: s.digest,
        meta: s.meta,
        bytes: s.body.byteLength,
        storedAt: s.meta.fetchedAt,
      };
  }

  async delete(digest: string): Promise<void> {
    this.#items.delete(digest);
  }

  get size(): number {
    return this.#items.size;
  }
}

async function writeAtomic(path: string, data: Uint8Array | string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Snapshots on disk: `<root>/ab/cdef….gz` (gzip of the body, named by its sha256) and
 * `<root>/ab/cdef….json` (the sidecar). Every file is written to a temporary name and renamed,
 * so a crash never leaves a truncated snapshot under a digest name. Default root `.ragfresh/raw`.
 */
export class FileRawSnapshotStore implements RawSnapshotStore {
  constructor(readonly root: string = join('.ragfresh', 'raw')) {}

  /** Path of the gzip body for `digest`. */
  pathOf(digest: string): string {
    assertDigest(digest);
    return join(this.root, digest.slice(0, 2), `${digest.slice(2)}.gz`);
  }

  sidecarOf(digest: string): string {
    return this.pathOf(digest).replace(/\.gz$/, '.json');
  }

  async put(body: Uint8Array, meta: RawSnapshotMeta): Promise<string> {
    const digest = sha256Hex(body);
    const path = this.pathOf(digest);
    if (!(await this.has(digest))) await writeAtomic(path, await gzipAsync(body));
    await writeAtomic(this.sidecarOf(digest), `${JSON.stringify({ digest, ...meta }, null, 2)}\n`);
    return digest;
  }

  async get(digest: string): Promise<RawSnapshot | undefined> {
    const path = this.pathOf(digest);
    let packed: Buffer;
    try {
      packed = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const body = await gunzipAsync(packed);
    if (sha256Hex(body) !== digest) {
      throw new RagfreshError(
        'STATE_CORRUPT',
        `raw snapshot ${path} does not match its digest; delete it and refetch the page.`,
        { scope: 'fetch' },
      );
    }
    let meta: RawSnapshotMeta;
    try {
      const { digest: _d, ...rest } = JSON.parse(
        await readFile(this.sidecarOf(digest), 'utf8'),
      ) as RawSnapshotMeta & { digest?: string };
      meta = rest;
    } catch (cause) {
      throw new RagfreshError(
        'STATE_CORRUPT',
        `raw snapshot sidecar ${this.sidecarOf(digest)} is missing or unreadable; refetch the page.`,
        { scope: 'fetch', cause },
      );
    }
    return { digest, body: new Uint8Array(body), meta };
  }

  async has(digest: string): Promise<boolean> {
    try {
      await stat(this.pathOf(digest));
      return true;
    } catch {
      return false;
    }
  }

  async delete(digest: string): Promise<void> {
    await rm(this.pathOf(digest), { force: true });
    await rm(this.sidecarOf(digest), { force: true });
  }

  /** One directory of the 256 at a time: memory stays bounded by one directory's names. */
  async *entries(): AsyncIterable<RawSnapshotEntry> {
    let dirs: string[];
    try {
      dirs = (await readdir(this.root)).filter((d) => /^[0-9a-f]{2}$/.test(d)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const dir of dirs) {
      const names = (await readdir(join(this.root, dir))).filter((n) =>
        /^[0-9a-f]{62}\.gz$/.test(n),
      );
      for (const name of names.sort()) {
        const digest = `${dir}${name.slice(0, 62)}`;
        let body: Awaited<ReturnType<typeof stat>>;
        try {
          body = await stat(this.pathOf(digest));
        } catch {
          continue; // deleted meanwhile
        }
        let meta: RawSnapshotMeta | undefined;
        let sidecarBytes = 0;
        try {
          const text = await readFile(this.sidecarOf(digest), 'utf8');
          sidecarBytes = Buffer.byteLength(text);
          const { digest: _d, ...rest } = JSON.parse(text) as RawSnapshotMeta & { digest?: string };
          meta = rest;
        } catch {
          meta = undefined;
        }
        yield {
          digest,
          meta,
          bytes: Number(body.size) + sidecarBytes,
          storedAt: body.mtime.toISOString(),
        };
      }
    }
  }
}
