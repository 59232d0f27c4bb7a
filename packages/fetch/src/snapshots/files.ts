import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { RagfreshError, sha256Hex } from '@ragfresh/core';
import {
  assertDigest,
  type RawSnapshot,
  type RawSnapshotEntry,
  type RawSnapshotMeta,
} from './store.js';

const gunzipAsync = promisify(gunzip);

/**
 * The file-per-snapshot layout written before packs (issue 37): `<root>/ab/cdef….gz` (gzip of
 * the body, named by its sha256) and `<root>/ab/cdef….json` (the sidecar: digest and the latest
 * observation). Nothing writes it any more; `FileRawSnapshotStore` still reads, lists and
 * deletes it, so a data dir from an older release keeps its snapshots without a migration step.
 */
export class LegacySnapshotFiles {
  constructor(readonly root: string) {}

  pathOf(digest: string): string {
    assertDigest(digest);
    return join(this.root, digest.slice(0, 2), `${digest.slice(2)}.gz`);
  }

  sidecarOf(digest: string): string {
    return this.pathOf(digest).replace(/\.gz$/, '.json');
  }

  async has(digest: string): Promise<boolean> {
    try {
      await stat(this.pathOf(digest));
      return true;
    } catch {
      return false;
    }
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
      meta = await this.#sidecar(digest);
    } catch (cause) {
      throw new RagfreshError(
        'STATE_CORRUPT',
        `raw snapshot sidecar ${this.sidecarOf(digest)} is missing or unreadable; refetch the page.`,
        { scope: 'fetch', cause },
      );
    }
    return { digest, body: new Uint8Array(body), meta };
  }

  async #sidecar(digest: string): Promise<RawSnapshotMeta> {
    const { digest: _d, ...meta } = JSON.parse(
      await readFile(this.sidecarOf(digest), 'utf8'),
    ) as RawSnapshotMeta & { digest?: string };
    return meta;
  }

  /** Removes both files of `digest`; true when its body was there. */
  async delete(digest: string): Promise<boolean> {
    const had = await this.has(digest);
    await rm(this.pathOf(digest), { force: true });
    await rm(this.sidecarOf(digest), { force: true });
    return had;
  }

  /** Every snapshot with a readable sidecar, in directory order (the caller sorts). */
  async *entries(): AsyncIterable<RawSnapshotEntry> {
    const shards = await readdir(this.root).catch(() => [] as string[]);
    for (const shard of shards) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const name of await readdir(join(this.root, shard)).catch(() => [] as string[])) {
        if (!name.endsWith('.json')) continue;
        const digest = `${shard}${name.slice(0, -'.json'.length)}`;
        if (!/^[0-9a-f]{64}$/.test(digest)) continue;
        try {
          const meta = await this.#sidecar(digest);
          if (typeof meta.url === 'string' && typeof meta.fetchedAt === 'string') {
            const size = async (path: string) => (await stat(path).catch(() => undefined))?.size;
            const bytes =
              ((await size(this.pathOf(digest))) ?? 0) +
              ((await size(this.sidecarOf(digest))) ?? 0);
            yield { digest, meta, bytes };
          }
        } catch {
          // A sidecar being written (or damaged) is skipped here; `get` reports damage when read.
        }
      }
    }
  }
}
