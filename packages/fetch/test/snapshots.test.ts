import { spawn } from 'node:child_process';
import {
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  truncate,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { sha256Hex } from '@ragfresh/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FileRawSnapshotStore,
  MemoryRawSnapshotStore,
  type RawSnapshotMeta,
  type RawSnapshotStore,
} from '../src/index.js';
import { startServer, testFetcher } from './helpers.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ragfresh-raw-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const meta = {
  url: 'https://example.org/a',
  finalUrl: 'https://example.org/a/',
  status: 200,
  fetchedAt: '2026-11-30T03:00:00.000Z',
  headers: { 'content-type': 'text/html', etag: '"x"' },
  contentType: 'text/html',
};

const bytes = (s: string) => new TextEncoder().encode(s);
const packsOf = async (root: string) =>
  (await readdir(join(root, 'packs')).catch(() => [] as string[])).sort();
const packFiles = async (root: string) => (await packsOf(root)).filter((n) => n.endsWith('.pack'));
async function listed(store: RawSnapshotStore, before?: string) {
  const out: { digest: string; meta: RawSnapshotMeta }[] = [];
  for await (const e of store.list(before === undefined ? {} : { fetchedBefore: before }))
    out.push(e);
  return out;
}

/** A snapshot in the file-per-page layout releases before issue 37 wrote. */
async function writeLegacy(root: string, body: string, m: RawSnapshotMeta): Promise<string> {
  const digest = sha256Hex(body);
  await mkdir(join(root, digest.slice(0, 2)), { recursive: true });
  await writeFile(join(root, digest.slice(0, 2), `${digest.slice(2)}.gz`), gzipSync(body));
  await writeFile(
    join(root, digest.slice(0, 2), `${digest.slice(2)}.json`),
    JSON.stringify({ digest, ...m }, null, 2),
  );
  return digest;
}

describe('FileRawSnapshotStore (packs)', () => {
  it('appends every put to one pack, content-addressed; a known body adds only its observation', async () => {
    const root = join(dir, 'raw');
    const store = new FileRawSnapshotStore(root);
    const digests = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        store.put(bytes(`<p>page ${i}</p>`), { ...meta, url: `https://example.org/${i}` }),
      ),
    );
    expect(digests[7]).toBe(sha256Hex('<p>page 7</p>'));
    // 50 snapshots, one pack file: no file (or directory) per page.
    const [pack, ...others] = await packsOf(root);
    expect(others).toEqual([]);
    expect(pack).toMatch(/\.pack$/);
    expect((await readdir(root)).sort()).toEqual(['packs']);
    const size = (await readFile(join(root, 'packs', pack!))).byteLength;
    expect(
      await store.put(bytes('<p>page 7</p>'), {
        ...meta,
        url: 'https://example.org/7',
        fetchedAt: '2026-11-30T04:00:00.000Z',
      }),
    ).toBe(digests[7]);
    const grown = (await readFile(join(root, 'packs', pack!))).byteLength - size;
    expect(grown).toBeLessThan(400); // an observation frame, not the body again
    const got = await store.get(digests[7]!);
    expect(new TextDecoder().decode(got!.body)).toBe('<p>page 7</p>');
    expect(got?.meta).toEqual({
      ...meta,
      url: 'https://example.org/7',
      fetchedAt: '2026-11-30T04:00:00.000Z',
    });
    expect(await store.has(digests[3]!)).toBe(true);
    await store.close();
    // A sealed pack has its index; a new process (a new store) reads it and finds everything.
    expect(await packsOf(root)).toEqual([pack, pack!.replace(/\.pack$/, '.idx')].sort());
    const again = new FileRawSnapshotStore(root);
    expect((await again.get(digests[49]!))?.meta.url).toBe('https://example.org/49');
    expect((await listed(again)).length).toBe(50);
    await again.close();
  });

  it('a torn frame at the end of an unsealed pack (a crash mid-write) is skipped; earlier ones read', async () => {
    const root = join(dir, 'raw');
    const store = new FileRawSnapshotStore(root);
    const a = await store.put(bytes('first body'), meta);
    const b = await store.put(bytes('second body'), { ...meta, url: 'https://example.org/b' });
    // No close: the writer "crashed"; cut the last frame short.
    const [pack] = await packsOf(root);
    const path = join(root, 'packs', pack!);
    await truncate(path, (await readFile(path)).byteLength - 5);
    const reader = new FileRawSnapshotStore(root);
    expect(new TextDecoder().decode((await reader.get(a))!.body)).toBe('first body');
    expect(await reader.get(b)).toBeUndefined();
    expect(await reader.has(b)).toBe(false);
    // The reader writes its own pack; the page is refetched and kept again.
    expect(await reader.put(bytes('second body'), meta)).toBe(b);
    expect((await reader.get(b))?.meta.url).toBe(meta.url);
    await reader.close();
  });

  it('refuses a damaged body with STATE_CORRUPT and a malformed digest with INVALID_ARGUMENT', async () => {
    const root = join(dir, 'raw');
    const store = new FileRawSnapshotStore(root);
    const missing = sha256Hex('nothing');
    expect(await store.get(missing)).toBeUndefined();
    expect(await store.has(missing)).toBe(false);
    const digest = await store.put(bytes('original body, long enough to find'), meta);
    await store.close();
    const [pack] = await packFiles(root);
    const path = join(root, 'packs', pack!);
    const raw = await readFile(path);
    raw[raw.byteLength - 3] = raw[raw.byteLength - 3]! ^ 0xff;
    await writeFile(path, raw);
    const reader = new FileRawSnapshotStore(root);
    await expect(reader.get(digest)).rejects.toMatchObject({ code: 'STATE_CORRUPT' });
    await expect(reader.get('../etc/passwd')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await reader.close();
  });

  it('another process sees what a writer has put, without either closing', async () => {
    const root = join(dir, 'raw');
    const writer = new FileRawSnapshotStore(root);
    const reader = new FileRawSnapshotStore(root);
    expect(await reader.has(sha256Hex('later'))).toBe(false);
    const d = await writer.put(bytes('later'), meta);
    expect((await reader.get(d))?.meta.url).toBe(meta.url);
    await writer.close();
    await reader.close();
  });

  it('delete rewrites the pack without the digest: its bytes leave the disk, the others stay', async () => {
    const root = join(dir, 'raw');
    const store = new FileRawSnapshotStore(root);
    const keep = await store.put(bytes('keep me'), { ...meta, url: 'https://example.org/keep' });
    const gone = await store.put(bytes('purge me'), {
      ...meta,
      url: 'https://example.org/purge-me',
    });
    await store.put(bytes('purge me'), {
      ...meta,
      url: 'https://example.org/purge-me',
      fetchedAt: '2026-12-01T00:00:00.000Z',
    });
    expect(await store.delete([gone, sha256Hex('never kept')])).toBe(1);
    expect(await store.get(gone)).toBeUndefined();
    expect(await store.has(gone)).toBe(false);
    expect(new TextDecoder().decode((await store.get(keep))!.body)).toBe('keep me');
    for (const name of await packsOf(root))
      expect((await readFile(join(root, 'packs', name))).toString('latin1')).not.toContain(
        'purge-me',
      );
    // The store goes on writing after a delete sealed its pack.
    const more = await store.put(bytes('after the purge'), meta);
    await store.close();
    const again = new FileRawSnapshotStore(root);
    expect((await listed(again)).map((e) => e.digest).sort()).toEqual([keep, more].sort());
    expect(await again.delete([gone])).toBe(0);
    await again.close();
  });

  it('refuses to rewrite a pack that another live process is still writing (LEASE_HELD)', async () => {
    const root = join(dir, 'raw');
    const store = new FileRawSnapshotStore(root);
    const d = await store.put(bytes('held'), meta);
    const [pack] = await packsOf(root);
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], {
      stdio: 'ignore',
    });
    try {
      const foreign = pack!.replace(/-\d+-/, `-${child.pid}-`);
      await copyFile(join(root, 'packs', pack!), join(root, 'packs', foreign));
      await rm(join(root, 'packs', pack!));
      const other = new FileRawSnapshotStore(root);
      expect(await other.has(d)).toBe(true);
      await expect(other.delete([d])).rejects.toMatchObject({ code: 'LEASE_HELD' });
      expect(await other.has(d)).toBe(true);
      await other.close();
    } finally {
      child.kill();
    }
  });

  it('lists by age, oldest first, with a cut-off', async () => {
    const store = new FileRawSnapshotStore(join(dir, 'raw'));
    const late = await store.put(bytes('late'), { ...meta, fetchedAt: '2026-11-30T05:00:00.000Z' });
    const early = await store.put(bytes('early'), {
      ...meta,
      fetchedAt: '2026-11-30T01:00:00.000Z',
    });
    expect((await listed(store)).map((e) => e.digest)).toEqual([early, late]);
    expect((await listed(store, '2026-11-30T03:00:00.000Z')).map((e) => e.digest)).toEqual([early]);
    await store.close();
  });

  it('reads, lists and deletes snapshots of the file-per-page layout (a data dir from before packs)', async () => {
    const root = join(dir, 'raw');
    const old = await writeLegacy(root, '<p>kept before packs</p>', {
      ...meta,
      fetchedAt: '2026-11-01T00:00:00.000Z',
    });
    const store = new FileRawSnapshotStore(root);
    expect(await store.has(old)).toBe(true);
    expect(new TextDecoder().decode((await store.get(old))!.body)).toBe('<p>kept before packs</p>');
    const fresh = await store.put(bytes('new'), meta);
    expect((await listed(store)).map((e) => e.digest)).toEqual([old, fresh]);
    // Seen again, the body goes into the pack; the pack's observation is the newer one.
    await store.put(bytes('<p>kept before packs</p>'), meta);
    expect((await store.get(old))?.meta.fetchedAt).toBe(meta.fetchedAt);
    expect(await store.delete([old])).toBe(1);
    expect(await store.has(old)).toBe(false);
    expect((await readdir(root)).sort()).toEqual([old.slice(0, 2), 'packs']);
    expect(await readdir(join(root, old.slice(0, 2)))).toEqual([]);
    await store.close();
  });
});

describe('MemoryRawSnapshotStore', () => {
  it('deletes and lists like the disk store', async () => {
    const store = new MemoryRawSnapshotStore();
    const a = await store.put(bytes('a'), { ...meta, fetchedAt: '2026-11-30T02:00:00.000Z' });
    const b = await store.put(bytes('b'), meta);
    expect((await listed(store)).map((e) => e.digest)).toEqual([a, b]);
    expect(await store.delete([a, a])).toBe(1);
    expect(await store.has(a)).toBe(false);
    expect(store.size).toBe(1);
  });
});

describe('Fetcher with a snapshot store', () => {
  it('stores every ok body with its final URL, headers and fetch time, keyed by rawDigest', async () => {
    const s = await startServer((req, res) => {
      if (req.url === '/old') {
        res.writeHead(301, { location: '/new' });
        res.end();
        return;
      }
      if (req.url === '/missing') {
        res.writeHead(404, { 'content-type': 'text/html' });
        res.end('nope');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag: '"e1"' });
      res.end('<p>snapshot me</p>');
    });
    const snapshots = new MemoryRawSnapshotStore();
    const f = testFetcher({ snapshots });
    const r = await f.fetch(`${s.origin}/old`);
    expect(r.outcome).toBe('ok');
    if (r.outcome !== 'ok') throw new Error('expected ok');
    const snap = await snapshots.get(r.rawDigest);
    expect(snap?.digest).toBe(sha256Hex('<p>snapshot me</p>'));
    expect(new TextDecoder().decode(snap!.body)).toBe('<p>snapshot me</p>');
    expect(snap?.meta).toMatchObject({
      url: `${s.origin}/old`,
      finalUrl: `${s.origin}/new`,
      status: 200,
      fetchedAt: r.fetchedAt,
    });
    expect(snap?.meta.headers.etag).toBe('"e1"');
    expect((await f.fetch(`${s.origin}/missing`)).outcome).toBe('gone');
    expect(snapshots.size).toBe(1);
    await f.close();
    await s.close();
  });
});
