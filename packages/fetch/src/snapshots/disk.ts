import { randomBytes } from 'node:crypto';
import {
  type FileHandle,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { RagfreshError, sha256Hex } from '@ragfresh/core';
import { LegacySnapshotFiles } from './files.js';
import {
  decodeIndex,
  encodeFrame,
  encodeIndex,
  type FrameLoc,
  frameBytes,
  INDEX_SUFFIX,
  PACK_SUFFIX,
  packName,
  packWriterPid,
  readFrame,
  scanFrames,
} from './pack.js';
import {
  assertDigest,
  byAge,
  olderThan,
  type RawSnapshot,
  type RawSnapshotEntry,
  type RawSnapshotListOptions,
  type RawSnapshotMeta,
  type RawSnapshotStore,
} from './store.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** A writer rolls over to a new pack past this size, so a rewrite (delete) stays bounded. */
export const PACK_MAX_BYTES = 64 * 1024 * 1024;

/** What the index knows of one digest: its body frame, its latest observation, every frame. */
interface Entry {
  body: FrameLoc | undefined;
  meta: FrameLoc;
  frames: FrameLoc[];
}

interface PackState {
  /** Where the intact frames scanned so far end. */
  scanned: number;
  /** Has a sealed index, or is this process's own writer: no frames beyond `scanned` to find. */
  complete: boolean;
}

interface Pending {
  readonly frame: Buffer;
  readonly digest: string;
  readonly headerBytes: number;
  readonly bodyBytes: number;
  readonly fetchedAt: string;
  readonly done: (err?: unknown) => void;
}

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function writeAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

function corrupt(what: string): RagfreshError {
  return new RagfreshError('STATE_CORRUPT', `${what}; delete the snapshot and refetch the page.`, {
    scope: 'fetch',
  });
}

/**
 * Raw snapshots on disk, in append-only packs: `<root>/packs/<time>-<pid>-<random>.pack` (see
 * pack.ts for the frame format), one pack per writing process at a time, rolled over at
 * `PACK_MAX_BYTES`. A `put` is one appended frame (concurrent puts share one write), never a
 * file per page; `put` resolves once its frame is written, and a digest already kept only adds
 * a small observation frame. The index (digest → frames) lives in memory, built from the packs'
 * sealed indexes plus a scan of unsealed packs, and is refreshed from disk when a digest is not
 * found (another process may have written it). `delete` rewrites the packs holding a digest
 * without it (a pack another live process is still writing is refused with LEASE_HELD).
 * Snapshots of the older file-per-page layout under `<root>` (`ab/cdef….gz` + `.json`) are
 * read, listed and deleted as before. Default root `.ragfresh/raw`.
 */
export class FileRawSnapshotStore implements RawSnapshotStore {
  readonly #packDir: string;
  readonly #legacy: LegacySnapshotFiles;
  readonly #entries = new Map<string, Entry>();
  readonly #packs = new Map<string, PackState>();
  #loaded: Promise<void> | undefined;
  #writer: { name: string; fh: FileHandle; size: number; frames: FrameLoc[] } | undefined;
  #pending: Pending[] = [];
  /** Every write to disk (appends, seals, rewrites) runs through this chain, one at a time. */
  #serial: Promise<void> = Promise.resolve();
  #flushQueued = false;
  readonly #bodiesInFlight = new Set<string>();
  #closed = false;

  constructor(readonly root: string = join('.ragfresh', 'raw')) {
    this.#packDir = join(root, 'packs');
    this.#legacy = new LegacySnapshotFiles(root);
  }

  async put(body: Uint8Array, meta: RawSnapshotMeta): Promise<string> {
    this.#assertOpen();
    const digest = sha256Hex(body);
    await this.#load();
    const needBody =
      this.#entries.get(digest)?.body === undefined && !this.#bodiesInFlight.has(digest);
    if (needBody) this.#bodiesInFlight.add(digest);
    try {
      const gz = needBody ? await gzipAsync(body) : new Uint8Array(0);
      const header = Buffer.from(JSON.stringify({ digest, ...meta }), 'utf8');
      await new Promise<void>((resolve, reject) => {
        this.#pending.push({
          frame: encodeFrame(header, gz),
          digest,
          headerBytes: header.byteLength,
          bodyBytes: gz.byteLength,
          fetchedAt: meta.fetchedAt,
          done: (err) => (err === undefined ? resolve() : reject(err)),
        });
        this.#queueFlush();
      });
    } finally {
      if (needBody) this.#bodiesInFlight.delete(digest);
    }
    return digest;
  }

  async get(digest: string): Promise<RawSnapshot | undefined> {
    assertDigest(digest);
    await this.#load();
    for (let attempt = 0; attempt < 2; attempt++) {
      let entry = this.#entries.get(digest);
      if (entry?.body === undefined) {
        await this.#refresh();
        entry = this.#entries.get(digest);
      }
      if (entry?.body === undefined) break;
      try {
        return await this.#read(digest, entry.body, entry.meta);
      } catch (err) {
        // A pack another process rewrote (a delete) since this index read it: look again.
        if (!isMissing(err) || attempt === 1) throw err;
        await this.#refresh();
      }
    }
    return this.#legacy.get(digest);
  }

  async has(digest: string): Promise<boolean> {
    assertDigest(digest);
    await this.#load();
    if (this.#entries.get(digest)?.body !== undefined) return true;
    await this.#refresh();
    if (this.#entries.get(digest)?.body !== undefined) return true;
    return this.#legacy.has(digest);
  }

  async delete(digests: readonly string[]): Promise<number> {
    this.#assertOpen();
    const wanted = new Set(digests);
    for (const d of wanted) assertDigest(d);
    await this.#load();
    return this.#serially(async () => {
      await this.#flush();
      await this.#refresh();
      const packs = new Set<string>();
      let found = 0;
      for (const d of wanted) {
        const entry = this.#entries.get(d);
        if (entry !== undefined) for (const f of entry.frames) packs.add(f.pack);
        const inPack = entry?.body !== undefined;
        const inLegacy = await this.#legacy.delete(d);
        if (inPack || inLegacy) found++;
      }
      for (const pack of packs) await this.#rewrite(pack, wanted);
      for (const d of wanted) this.#entries.delete(d);
      return found;
    });
  }

  async *list(options?: RawSnapshotListOptions): AsyncIterable<RawSnapshotEntry> {
    await this.#load();
    await this.#refresh();
    const out: RawSnapshotEntry[] = [];
    const handles = new Map<string, FileHandle>();
    try {
      for (const [digest, entry] of this.#entries) {
        if (entry.body === undefined) continue;
        let fh = handles.get(entry.meta.pack);
        if (fh === undefined) {
          fh = await open(join(this.#packDir, entry.meta.pack), 'r').catch(() => undefined);
          if (fh === undefined) continue;
          handles.set(entry.meta.pack, fh);
        }
        const frame = await readFrame(fh, entry.meta.offset, true);
        if (frame !== undefined)
          out.push({
            digest,
            meta: this.#meta(frame.header),
            bytes: entry.frames.reduce((n, f) => n + frameBytes(f), 0),
          });
      }
    } finally {
      for (const fh of handles.values()) await fh.close();
    }
    for await (const e of this.#legacy.entries()) if (!this.#entries.has(e.digest)) out.push(e);
    for (const e of out.sort(byAge)) if (olderThan(e, options)) yield e;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#serially(async () => {
      await this.#flush();
      await this.#seal();
    });
    this.#closed = true;
  }

  #assertOpen(): void {
    if (this.#closed)
      throw new RagfreshError('NOT_OPEN', 'the raw snapshot store is closed.', { scope: 'fetch' });
  }

  #serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#serial.then(fn);
    this.#serial = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  #queueFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    void this.#serially(async () => {
      this.#flushQueued = false;
      await this.#flush();
    });
  }

  /** Writes every pending frame in one `writev` at the end of this process's pack. */
  async #flush(): Promise<void> {
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    try {
      const w = await this.#openWriter();
      await w.fh.writev(
        batch.map((p) => p.frame),
        w.size,
      );
      let offset = w.size;
      for (const p of batch) {
        const loc: FrameLoc = {
          pack: w.name,
          offset,
          headerBytes: p.headerBytes,
          bodyBytes: p.bodyBytes,
          digest: p.digest,
          fetchedAt: p.fetchedAt,
        };
        offset += p.frame.byteLength;
        w.frames.push(loc);
        this.#apply(loc);
      }
      w.size = offset;
      this.#packs.set(w.name, { scanned: offset, complete: true });
      for (const p of batch) p.done();
      if (w.size >= PACK_MAX_BYTES) await this.#seal();
    } catch (err) {
      for (const p of batch) p.done(err);
    }
  }

  async #openWriter() {
    if (this.#writer !== undefined) return this.#writer;
    await mkdir(this.#packDir, { recursive: true });
    const name = packName(randomBytes(4).toString('hex'));
    const fh = await open(join(this.#packDir, name), 'wx');
    this.#writer = { name, fh, size: 0, frames: [] };
    this.#packs.set(name, { scanned: 0, complete: true });
    return this.#writer;
  }

  /** Closes this process's pack with its index; the next put starts a new one. */
  async #seal(): Promise<void> {
    const w = this.#writer;
    if (w === undefined) return;
    this.#writer = undefined;
    await w.fh.sync();
    await w.fh.close();
    await writeAtomic(
      join(this.#packDir, w.name.replace(PACK_SUFFIX, INDEX_SUFFIX)),
      encodeIndex(w.size, w.frames),
    );
  }

  #apply(loc: FrameLoc): void {
    const entry = this.#entries.get(loc.digest);
    if (entry === undefined) {
      this.#entries.set(loc.digest, {
        body: loc.bodyBytes > 0 ? loc : undefined,
        meta: loc,
        frames: [loc],
      });
      return;
    }
    entry.frames.push(loc);
    if (loc.bodyBytes > 0 && entry.body === undefined) entry.body = loc;
    if (loc.fetchedAt >= entry.meta.fetchedAt) entry.meta = loc;
  }

  #load(): Promise<void> {
    this.#loaded ??= this.#refresh();
    return this.#loaded;
  }

  /** Reads packs this index has not seen (or not to their end) and forgets vanished ones. */
  async #refresh(): Promise<void> {
    let names: string[];
    try {
      names = (await readdir(this.#packDir)).filter((n) => n.endsWith(PACK_SUFFIX));
    } catch (err) {
      if (isMissing(err)) names = [];
      else throw err;
    }
    const present = new Set(names);
    for (const known of [...this.#packs.keys()])
      if (!present.has(known) && known !== this.#writer?.name) this.#forget(known);
    for (const name of names.sort()) {
      const state = this.#packs.get(name);
      if (state?.complete === true) continue;
      const path = join(this.#packDir, name);
      let from = state?.scanned ?? 0;
      let complete = false;
      if (state === undefined) {
        const index = await readFile(path.replace(PACK_SUFFIX, INDEX_SUFFIX), 'utf8')
          .then((text) => decodeIndex(name, text))
          .catch(() => undefined);
        if (index !== undefined) {
          for (const f of index.frames) this.#apply(f);
          from = index.bytes;
          complete = true;
        }
      }
      const fh = await open(path, 'r').catch((err: unknown) => {
        if (isMissing(err)) return undefined;
        throw err;
      });
      if (fh === undefined) continue;
      try {
        const { frames, end } = await scanFrames(fh, name, from);
        for (const f of frames) this.#apply(f);
        this.#packs.set(name, { scanned: end, complete: complete && frames.length === 0 });
      } finally {
        await fh.close();
      }
    }
  }

  #forget(pack: string): void {
    this.#packs.delete(pack);
    for (const [digest, entry] of this.#entries) {
      if (!entry.frames.some((f) => f.pack === pack)) continue;
      const frames = entry.frames.filter((f) => f.pack !== pack);
      this.#entries.delete(digest);
      for (const f of frames) this.#apply(f);
    }
  }

  async #read(digest: string, bodyAt: FrameLoc, metaAt: FrameLoc): Promise<RawSnapshot> {
    const fh = await open(join(this.#packDir, bodyAt.pack), 'r');
    let packed: Buffer;
    let metaHeader: Buffer;
    try {
      const frame = await readFrame(fh, bodyAt.offset);
      if (frame === undefined) throw corrupt(`raw snapshot ${digest} in ${bodyAt.pack} is damaged`);
      packed = frame.body;
      metaHeader = frame.header;
    } finally {
      await fh.close();
    }
    if (metaAt !== bodyAt) {
      const mh = await open(join(this.#packDir, metaAt.pack), 'r');
      try {
        metaHeader = (await readFrame(mh, metaAt.offset, true))?.header ?? metaHeader;
      } finally {
        await mh.close();
      }
    }
    const body = await gunzipAsync(packed);
    if (sha256Hex(body) !== digest)
      throw corrupt(`raw snapshot ${digest} in ${bodyAt.pack} does not match its digest`);
    return { digest, body: new Uint8Array(body), meta: this.#meta(metaHeader) };
  }

  #meta(header: Buffer): RawSnapshotMeta {
    const { digest: _d, ...meta } = JSON.parse(header.toString('utf8')) as RawSnapshotMeta & {
      digest: string;
    };
    return meta;
  }

  /**
   * Replaces `pack` by a new pack holding only what is still wanted from it: the body and latest
   * observation of every digest not in `dropped` (superseded observations go too). The new pack
   * and its index are complete on disk before the old pack is unlinked.
   */
  async #rewrite(pack: string, dropped: ReadonlySet<string>): Promise<void> {
    if (pack === this.#writer?.name) await this.#seal();
    const writer = packWriterPid(pack);
    const sealed = await stat(join(this.#packDir, pack.replace(PACK_SUFFIX, INDEX_SUFFIX)))
      .then(() => true)
      .catch(() => false);
    if (!sealed && writer !== undefined && writer !== process.pid && alive(writer))
      throw new RagfreshError(
        'LEASE_HELD',
        `raw snapshot pack ${pack} is still being written by process ${writer}; run the deletion again once that process has ended.`,
        { scope: 'fetch' },
      );
    const keep: FrameLoc[] = [];
    for (const [digest, entry] of this.#entries) {
      if (dropped.has(digest)) continue;
      if (entry.body?.pack === pack) keep.push(entry.body);
      if (entry.meta.pack === pack && entry.meta !== entry.body) keep.push(entry.meta);
    }
    keep.sort((a, b) => a.offset - b.offset);
    const oldPath = join(this.#packDir, pack);
    const oldIndex = oldPath.replace(PACK_SUFFIX, INDEX_SUFFIX);
    if (keep.length > 0) {
      const name = packName(randomBytes(4).toString('hex'));
      const path = join(this.#packDir, name);
      const tmp = `${path}.tmp`;
      const src = await open(oldPath, 'r');
      const dst = await open(tmp, 'wx');
      const moved: FrameLoc[] = [];
      try {
        let offset = 0;
        for (const f of keep) {
          const bytes = Buffer.alloc(frameBytes(f));
          await src.read(bytes, 0, bytes.byteLength, f.offset);
          await dst.write(bytes, 0, bytes.byteLength, offset);
          moved.push({ ...f, pack: name, offset });
          offset += bytes.byteLength;
        }
        await dst.sync();
        await dst.close();
        await writeAtomic(path.replace(PACK_SUFFIX, INDEX_SUFFIX), encodeIndex(offset, moved));
        await rename(tmp, path);
        this.#packs.set(name, { scanned: offset, complete: true });
      } catch (err) {
        await dst.close().catch(() => {});
        await rm(tmp, { force: true });
        throw err;
      } finally {
        await src.close();
      }
      await rm(oldPath, { force: true });
      await rm(oldIndex, { force: true });
      this.#forget(pack);
      for (const f of moved) this.#apply(f);
    } else {
      await rm(oldPath, { force: true });
      await rm(oldIndex, { force: true });
      this.#forget(pack);
    }
  }
}
