import {
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import Keyv from 'keyv';
import { afterAll, describe, expect, it } from 'vitest';
import {
  isRagfreshError,
  KeyvSqlite,
  moveCorruptStateAside,
  openStateStore,
  PUBLISHER_LEASE,
  type SqliteStateBackend,
} from '../src/index.js';
import { describeStateStore, doc, journal, randomNamespace } from './state.suite.js';

const dir = mkdtempSync(join(tmpdir(), 'ragfresh-state-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'shared.sqlite');

describeStateStore('sqlite', (namespace) => openStateStore(`sqlite:${file}`, { namespace }));

describe('openStateStore', () => {
  it('opens sqlite: at .ragfresh/state.sqlite under cwd, creating the directory', async () => {
    const cwd = mkdtempSync(join(dir, 'cwd-'));
    const store = await openStateStore('sqlite:', { cwd });
    await store.putDocument(doc('d1', 's1'));
    await store.close();
    expect(existsSync(join(cwd, '.ragfresh', 'state.sqlite'))).toBe(true);
    const again = await openStateStore('sqlite', { cwd });
    expect((await again.getDocument('d1'))?.sourceId).toBe('s1');
    await again.close();
  });

  it('opens a nested relative path and uses WAL with a busy timeout', async () => {
    const cwd = mkdtempSync(join(dir, 'cwd-'));
    const store = await openStateStore('sqlite:deep/er/state.db', {
      cwd,
      namespace: 'x',
      busyTimeoutMs: 1234,
    });
    expect(store.kind).toBe('sqlite');
    const { db } = (store.backend as SqliteStateBackend).adapter;
    expect(db.location()).toBe(join(cwd, 'deep/er/state.db'));
    expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect(db.prepare('PRAGMA busy_timeout').get()).toEqual({ timeout: 1234 });
    expect(db.prepare('PRAGMA synchronous').get()).toEqual({ synchronous: 1 });
    await store.close();
  });

  it('keeps namespaces apart in one file', async () => {
    const [a, b] = [
      await openStateStore(`sqlite:${file}`, { namespace: randomNamespace() }),
      await openStateStore(`sqlite:${file}`, { namespace: randomNamespace() }),
    ];
    await a.putDocument(doc('d1', 's1'));
    expect(await b.getDocument('d1')).toBeUndefined();
    expect((await a.acquireLease(PUBLISHER_LEASE, 'a', 10_000))?.fence).toBe(1);
    expect((await b.acquireLease(PUBLISHER_LEASE, 'b', 10_000))?.fence).toBe(1);
    await Promise.all([a.close(), b.close()]);
  });

  it('rejects an unknown or malformed spec with INVALID_CONFIG and one line', async () => {
    for (const spec of [
      'mysql://localhost/db',
      '',
      'state.sqlite',
      'redis://',
      'postgres:///nohost',
    ]) {
      const error = await openStateStore(spec).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isRagfreshError(error, 'INVALID_CONFIG'), `spec ${JSON.stringify(spec)}`).toBe(true);
      expect((error as Error).message).not.toContain('\n');
    }
    const withPassword = await openStateStore('mongodb://user:secret@host/db').catch(
      (e: Error) => e,
    );
    expect((withPassword as Error).message).not.toContain('secret');
  });

  it('reports an unreachable server as STORE_UNREACHABLE, without the password', async () => {
    const redis = await openStateStore('redis://:hunter2@127.0.0.1:1', {
      connectTimeoutMs: 500,
    }).catch((e: Error) => e);
    expect(isRagfreshError(redis, 'STORE_UNREACHABLE')).toBe(true);
    expect((redis as Error).message).not.toContain('hunter2');
    const pg = await openStateStore('postgres://u:hunter2@127.0.0.1:1/db', {
      connectTimeoutMs: 500,
    }).catch((e: Error) => e);
    expect(isRagfreshError(pg, 'STORE_UNREACHABLE')).toBe(true);
    expect((pg as Error).message).not.toContain('hunter2');
  });

  it('survives a reopen: records, journal and fence are durable', async () => {
    const namespace = randomNamespace();
    const first = await openStateStore(`sqlite:${file}`, { namespace });
    const lease = await first.acquireLease(PUBLISHER_LEASE, 'a', 60_000);
    await first.putJournal(journal(lease!.fence));
    await first.putDocument(doc('d1', 's1'));
    await first.close();
    const second = await openStateStore(`sqlite:${file}`, { namespace });
    expect(await second.getJournal()).toEqual(journal(lease!.fence));
    expect(await second.currentFence(PUBLISHER_LEASE)).toBe(lease!.fence);
    expect((await second.acquireLease(PUBLISHER_LEASE, 'a', 60_000))?.fence).toBe(lease!.fence + 1);
    await second.close();
  });
});

describe('a damaged state file', () => {
  const filled = async (name: string) => {
    const path = join(mkdtempSync(join(dir, 'corrupt-')), name);
    const store = await openStateStore(`sqlite:${path}`);
    for (let i = 0; i < 200; i++) await store.putDocument(doc(`d${i}`, 's1'));
    await store.close();
    return path;
  };
  const code = (err: unknown) => (isRagfreshError(err) ? err.code : String(err));

  it('is STATE_CORRUPT naming `ragfresh recover` (garbage bytes, a truncated file); a missing directory is not', async () => {
    const garbage = await filled('garbage.sqlite');
    writeFileSync(garbage, Buffer.alloc(32 * 1024, 'not sqlite '));
    const refused = await openStateStore(`sqlite:${garbage}`).catch((e: unknown) => e);
    expect(code(refused)).toBe('STATE_CORRUPT');
    expect((refused as Error).message).toMatch(
      /state file ".*garbage\.sqlite" is corrupt \(file is not a database\); run `ragfresh recover`/,
    );
    const truncated = await filled('truncated.sqlite');
    truncateSync(truncated, Math.floor(statSync(truncated).size / 2));
    const seen = await (async () => {
      const store = await openStateStore(`sqlite:${truncated}`);
      try {
        for await (const _ of store.listDocuments());
        return 'read';
      } finally {
        await store.close();
      }
    })().catch(code);
    expect(seen).toBe('STATE_CORRUPT');
    // Control: the same file intact reads back, and an unusable path stays STORE_UNREACHABLE.
    const intact = await openStateStore(`sqlite:${await filled('intact.sqlite')}`);
    let n = 0;
    for await (const _ of intact.listDocuments()) n++;
    await intact.close();
    expect(n).toBe(200);
    writeFileSync(join(dir, 'a-file'), '');
    const badPath = await openStateStore(`sqlite:${join(dir, 'a-file', 'state.sqlite')}`).catch(
      code,
    );
    expect(badPath).toBe('STORE_UNREACHABLE');
  });

  it('moveCorruptStateAside renames the file and its WAL, never deleting them', async () => {
    const path = await filled('aside.sqlite');
    writeFileSync(`${path}-wal`, 'wal bytes');
    writeFileSync(path, 'garbage');
    const moved = moveCorruptStateAside(`sqlite:${path}`, {
      now: new Date('2026-12-03T12:00:00Z'),
    });
    expect(moved).toEqual({ from: path, to: `${path}.corrupt-2026-12-03T12-00-00-000Z` });
    expect(existsSync(path)).toBe(false);
    expect(readFileSync(moved!.to, 'utf8')).toBe('garbage');
    expect(readFileSync(`${moved!.to}-wal`, 'utf8')).toBe('wal bytes');
    expect(moveCorruptStateAside(`sqlite:${path}`)).toBeUndefined();
    expect(moveCorruptStateAside('redis://127.0.0.1:6379')).toBeUndefined();
  });
});

describe('KeyvSqlite as a plain keyv adapter', () => {
  it('works under new Keyv(): get/set/delete, namespaces, iterator, TTL', async () => {
    const store = new KeyvSqlite({ path: join(dir, 'keyv.sqlite') });
    const a = new Keyv({ store, namespace: 'a' });
    const b = new Keyv({
      store: new KeyvSqlite({ path: join(dir, 'keyv.sqlite') }),
      namespace: 'b',
    });
    await a.set('k1', { n: 1 });
    await a.set('k2', 'two');
    await b.set('k1', 'other');
    await a.set('short', 1, 1);
    expect(await a.get('k1')).toEqual({ n: 1 });
    expect(await b.get('k1')).toBe('other');
    await new Promise((r) => setTimeout(r, 10));
    expect(await a.get('short')).toBeUndefined();
    const seen: Array<[string, unknown]> = [];
    for await (const entry of a.iterator!(undefined)) seen.push(entry as [string, unknown]);
    expect(seen.sort()).toEqual([
      ['k1', { n: 1 }],
      ['k2', 'two'],
    ]);
    expect(await a.delete('k1')).toBe(true);
    await a.clear();
    expect(await a.get('k2')).toBeUndefined();
    expect(await b.get('k1')).toBe('other');
    await a.disconnect();
    await b.disconnect();
  });
});

// Real parallelism for SQLite: worker threads, each with its own connection to one file.
// Workers load the TypeScript source directly (Node strips the types); a resolve hook maps
// the `.js` import specifiers of the source to their `.ts` files.
const WORKER = `
const { workerData, parentPort } = require('node:worker_threads');
const { register } = require('node:module');
register('data:text/javascript,' + encodeURIComponent(
  'export async function resolve(s, c, next) { try { return await next(s, c); } catch (e) {' +
  ' if (s.endsWith(".js") && (s.startsWith(".") || s.startsWith("file:"))) return next(s.slice(0, -3) + ".ts", c); throw e; } }'));
(async () => {
  const { SqliteStateBackend } = await import(workerData.module);
  const backend = new SqliteStateBackend({ path: workerData.path, busyTimeoutMs: 10000 });
  const wins = [];
  const fences = [];
  const gate = new Int32Array(workerData.gate);
  Atomics.add(gate, 0, 1);
  while (Atomics.load(gate, 0) < workerData.workers) Atomics.wait(gate, 0, Atomics.load(gate, 0), 5);
  for (let round = 0; round < workerData.rounds; round++) {
    const won = await backend.acquireLease('ns:lease:race-' + round, 'race-' + round, 'w' + workerData.id, 60000);
    if (won) wins.push(round);
    const shared = await backend.acquireLease('ns:lease:shared', 'shared', 'w' + workerData.id, 1);
    if (shared) fences.push(shared.fence);
  }
  await backend.close();
  parentPort.postMessage({ wins, fences });
})().catch((error) => { parentPort.postMessage({ error: String(error && error.stack || error) }); });
`;

describe('SQLite lease under real parallelism', () => {
  it('grants each lease to exactly one of four worker threads, with unique fences', async () => {
    const path = join(dir, 'race.sqlite');
    const module = pathToFileURL(
      fileURLToPath(new URL('../src/state/sqlite.ts', import.meta.url)),
    ).href;
    const workers = 4;
    const rounds = 60;
    const gate = new SharedArrayBuffer(4);
    const results = await Promise.all(
      Array.from(
        { length: workers },
        (_, id) =>
          new Promise<{ wins: number[]; fences: number[]; error?: string }>((resolve, reject) => {
            const worker = new Worker(WORKER, {
              eval: true,
              workerData: { module, path, id, rounds, workers, gate },
            });
            worker.once('message', (m) => {
              resolve(m);
              void worker.terminate();
            });
            worker.once('error', reject);
          }),
      ),
    );
    for (const r of results) expect(r.error).toBeUndefined();
    const wins = results.flatMap((r) => r.wins).sort((a, b) => a - b);
    expect(wins).toEqual(Array.from({ length: rounds }, (_, i) => i));
    const fences = results.flatMap((r) => r.fences);
    expect(new Set(fences).size).toBe(fences.length);
    expect(Math.max(...fences)).toBe(fences.length);
  });
});
