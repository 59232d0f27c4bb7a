// pnpm bench:snapshots — issue 37 item 3: raw snapshots as a file per page (the layout before
// packs: a gzip body and a JSON sidecar, each written to a temporary name and renamed) against
// the append-only packs of `FileRawSnapshotStore`, on the simulated web's pages. Each layout
// stores the same bodies with PUT_CONCURRENCY puts in flight (as the fetcher's pool does),
// in a fresh directory; CPU is this process's user + system time (libuv's gzip threads
// included). Then every snapshot is read back once (what reextract and repair do).
//
// PAGES (2000), PUT_CONCURRENCY (32), ROUNDS (3; the median round is printed).
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { sha256Hex } from '@ragfresh/core';
import { FileRawSnapshotStore, type RawSnapshotMeta } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';

const PAGES = Number(process.env.PAGES ?? 2000);
const CONCURRENCY = Number(process.env.PUT_CONCURRENCY ?? 32);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

interface Page {
  readonly body: Uint8Array;
  readonly meta: RawSnapshotMeta;
}

/** The file-per-page writer the store had before packs, as the baseline. */
async function writeOneFile(path: string, data: Uint8Array | string): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, path);
}
async function filePerPagePut(root: string, page: Page): Promise<void> {
  const digest = sha256Hex(page.body);
  const path = join(root, digest.slice(0, 2), `${digest.slice(2)}.gz`);
  const exists = await stat(path).then(
    () => true,
    () => false,
  );
  if (!exists) await writeOneFile(path, await gzipAsync(page.body));
  await writeOneFile(
    path.replace(/\.gz$/, '.json'),
    `${JSON.stringify({ digest, ...page.meta }, null, 2)}\n`,
  );
}

async function pool<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

async function countFiles(path: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const e of await readdir(path, { withFileTypes: true })) {
    const p = join(path, e.name);
    if (e.isDirectory()) {
      const sub = await countFiles(p);
      files += sub.files;
      bytes += sub.bytes;
    } else {
      files++;
      bytes += (await stat(p)).blocks * 512;
    }
  }
  return { files, bytes };
}

function cpuNow(): number {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
}

interface Row {
  layout: string;
  putCpuMs: number;
  putWallMs: number;
  readCpuMs: number;
  files: number;
  bytes: number;
}

async function measure(
  layout: string,
  pages: readonly Page[],
  open: (root: string) => {
    put(p: Page): Promise<void>;
    read(p: Page): Promise<void>;
    close(): Promise<void>;
  },
): Promise<Row> {
  const root = await mkdtemp(join(tmpdir(), 'ragfresh-bench-snapshots-'));
  try {
    const store = open(root);
    const c0 = cpuNow();
    const t0 = performance.now();
    await pool(pages, (p) => store.put(p));
    await store.close();
    const putCpuMs = cpuNow() - c0;
    const putWallMs = performance.now() - t0;
    const reader = open(root);
    const c1 = cpuNow();
    await pool(pages, (p) => reader.read(p));
    await reader.close();
    const readCpuMs = cpuNow() - c1;
    return { layout, putCpuMs, putWallMs, readCpuMs, ...(await countFiles(root)) };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

const sim = await startSimWeb({ seed: 37, hosts: 10, pagesPerHost: Math.ceil(PAGES / 10) });
const pages: Page[] = [];
try {
  for (const url of sim.urls().slice(0, PAGES)) {
    const res = await fetch(url);
    const body = new Uint8Array(await res.arrayBuffer());
    pages.push({
      body,
      meta: {
        url,
        finalUrl: url,
        status: res.status,
        fetchedAt: new Date().toISOString(),
        headers: Object.fromEntries(res.headers),
        contentType: res.headers.get('content-type') ?? 'text/html',
      },
    });
  }
} finally {
  await sim.stop();
}

const layouts = {
  'file per page (before)': (root: string) => ({
    put: (p: Page) => filePerPagePut(root, p),
    // What the old store's get did: both files, gunzip, the digest check, the sidecar parsed.
    read: async (p: Page) => {
      const d = sha256Hex(p.body);
      const body = await gunzipAsync(await readFile(join(root, d.slice(0, 2), `${d.slice(2)}.gz`)));
      if (sha256Hex(body) !== d) throw new Error('digest mismatch');
      JSON.parse(await readFile(join(root, d.slice(0, 2), `${d.slice(2)}.json`), 'utf8'));
    },
    close: async () => {},
  }),
  'packs (FileRawSnapshotStore)': (root: string) => {
    const store = new FileRawSnapshotStore(root);
    return {
      put: async (p: Page) => {
        await store.put(p.body, p.meta);
      },
      read: async (p: Page) => {
        await store.get(sha256Hex(p.body));
      },
      close: () => store.close(),
    };
  },
};

const rows: Row[] = [];
for (const [name, open] of Object.entries(layouts)) {
  const runs: Row[] = [];
  for (let i = 0; i < ROUNDS; i++) runs.push(await measure(name, pages, open));
  runs.sort((a, b) => a.putCpuMs - b.putCpuMs);
  rows.push(runs[Math.floor(runs.length / 2)]!);
}
const gzipRows: string[] = [];
for (const level of [1, 6]) {
  let bytes = 0;
  const gz0 = cpuNow();
  await pool(pages, async (p) => {
    const n = (await gzipAsync(p.body, { level })).byteLength;
    bytes += n;
  });
  gzipRows.push(
    `| gzip level ${level} alone${level === 6 ? ' (the default; part of both puts)' : ''} | ${((cpuNow() - gz0) / pages.length).toFixed(3)} | | | | ${(bytes / 1024 / 1024).toFixed(1)} (bodies only) |`,
  );
}

const bodyBytes = pages.reduce((n, p) => n + p.body.byteLength, 0);
console.log(
  `\nraw snapshots: ${pages.length} simulated pages (${(bodyBytes / pages.length / 1024).toFixed(1)} KiB mean body), ${CONCURRENCY} puts in flight, median of ${ROUNDS} rounds; node ${process.version}\n`,
);
console.log(
  '| layout | put CPU ms/page | put wall ms/page | read-back CPU ms/page (get, in the new process) | files on disk | MiB on disk |',
);
console.log('|---|--:|--:|--:|--:|--:|');
for (const r of rows)
  console.log(
    `| ${r.layout} | ${(r.putCpuMs / pages.length).toFixed(3)} | ${(r.putWallMs / pages.length).toFixed(3)} | ${(r.readCpuMs / pages.length).toFixed(3)} | ${r.files} | ${(r.bytes / 1024 / 1024).toFixed(1)} |`,
  );
for (const r of gzipRows) console.log(r);
