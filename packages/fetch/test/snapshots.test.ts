import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { sha256Hex } from '@ragfresh/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileRawSnapshotStore, MemoryRawSnapshotStore } from '../src/index.js';
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

describe('FileRawSnapshotStore', () => {
  it('stores gzip bodies under ab/cdef….gz with a JSON sidecar, content-addressed', async () => {
    const store = new FileRawSnapshotStore(join(dir, '.ragfresh', 'raw'));
    const body = new TextEncoder().encode('<p>raw body</p>');
    const digest = await store.put(body, meta);
    expect(digest).toBe(sha256Hex(body));
    const path = join(dir, '.ragfresh', 'raw', digest.slice(0, 2), `${digest.slice(2)}.gz`);
    expect(store.pathOf(digest)).toBe(path);
    expect(gunzipSync(await readFile(path)).toString()).toBe('<p>raw body</p>');
    const sidecar = JSON.parse(await readFile(path.replace(/\.gz$/, '.json'), 'utf8'));
    expect(sidecar).toEqual({ digest, ...meta });
    expect(await store.has(digest)).toBe(true);
    expect(await store.get(digest)).toEqual({ digest, body: new Uint8Array(body), meta });
    // Idempotent; no temporary files left behind.
    expect(await store.put(body, { ...meta, fetchedAt: '2026-11-30T04:00:00.000Z' })).toBe(digest);
    const files = await readdir(join(dir, '.ragfresh', 'raw', digest.slice(0, 2)));
    expect(files.sort()).toEqual([`${digest.slice(2)}.gz`, `${digest.slice(2)}.json`]);
    expect((await store.get(digest))?.meta.fetchedAt).toBe('2026-11-30T04:00:00.000Z');
  });

  it('returns undefined for an unknown digest and refuses a corrupt snapshot with STATE_CORRUPT', async () => {
    const store = new FileRawSnapshotStore(dir);
    const missing = sha256Hex('nothing');
    expect(await store.get(missing)).toBeUndefined();
    expect(await store.has(missing)).toBe(false);
    const digest = await store.put(new TextEncoder().encode('original'), meta);
    const { gzipSync } = await import('node:zlib');
    await writeFile(store.pathOf(digest), gzipSync('tampered'));
    await expect(store.get(digest)).rejects.toMatchObject({ code: 'STATE_CORRUPT' });
    await expect(store.get('../etc/passwd')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
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
