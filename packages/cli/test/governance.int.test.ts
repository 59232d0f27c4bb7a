import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { documentId } from '@ragfresh/core';
import type { GcReport } from '@ragfresh/engine/governance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, resolveConfig } from '../src/config.js';
import { gcCommand } from '../src/governance.js';
import { openConnector, openRuntime } from '../src/runtime.js';

// The removal, audit and as-of acceptance, through the built CLI, on real embedded stores
// whose files live under the data dir: LanceDB (the whole flow) and libSQL (the purge).
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

// The removed page's words: none of them occurs anywhere else.
const SECRET = 'Quokkavelt zirconium ballad of Marisoleth';
const OLD_B = 'Tariff schedule nineteen lists the ferry crossings of Halvemoor';
const NEW_B = 'Tariff schedule twenty replaces the ferry crossings with a bridge at Ostrand';

function page(title: string, body: string): string {
  const para = `<p>${body}. ${body} again, so the page is long enough to be a document. ${body}, a third time, with more words around it to pass every size check.</p>`;
  return `<!doctype html><html><head><title>${title}</title></head><body><main><h1>${title}</h1>${para.repeat(4)}</main></body></html>`;
}

interface Site {
  readonly server: Server;
  readonly origin: string;
  readonly pages: Map<string, string>;
  readonly log: string[];
}

async function startSite(): Promise<Site> {
  const pages = new Map<string, string>([
    ['/secret', page('Secret page', SECRET)],
    ['/b', page('Ferry tariffs', OLD_B)],
    ['/c', page('Opening hours', 'The library opens at nine and closes at dusk on weekdays')],
    ['/d', page('Contact', 'Write to the harbour office for lost property and permits')],
  ]);
  const log: string[] = [];
  const server = createServer((req, res) => {
    log.push(req.url ?? '');
    const body = pages.get(req.url ?? '');
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      return;
    }
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { server, origin: `http://127.0.0.1:${port}`, pages, log };
}

function cli(
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      // One process per command: the heap re-exec is proven in bin.int.test.ts.
      { cwd, encoding: 'utf8', timeout: 120_000, env: { ...process.env, RAGFRESH_NO_REEXEC: '1' } },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** Every file under `dir` whose bytes (gunzipped too, for .gz) contain `needle`. */
function filesContaining(dir: string, needle: string): string[] {
  const hits: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else {
        const bytes = readFileSync(p);
        const texts = [bytes];
        if (name.endsWith('.gz')) texts.push(gunzipSync(bytes));
        if (texts.some((b) => b.includes(needle))) hits.push(p);
      }
    }
  };
  walk(dir);
  return hits;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const STORES = {
  lancedb: () => ({ store: 'lancedb', path: 'data/lance', table: 'gov' }),
  libsql: () => ({ store: 'libsql', url: 'file:data/index.db' }),
} as const;

/** As-of on an edited page: the earlier version then, the new one now; past retention, one line. */
async function asOfChecks(dir: string, site: Site): Promise<void> {
  await sleep(1_100);
  const between = new Date().toISOString();
  await sleep(1_100);
  site.pages.set('/b', page('Ferry tariffs', NEW_B));
  expect((await cli(['refresh', '--all'], dir)).stderr).toBe('');

  // As-of: the earlier version of the edited page; now: the new one.
  const asOf = await cli(['query', OLD_B, '-k', '3', '--json', '--as-of', between], dir);
  expect(asOf.code, asOf.stderr).toBe(0);
  const oldHits = JSON.parse(asOf.stdout) as { text: string }[];
  expect(oldHits.some((h) => h.text.includes('nineteen'))).toBe(true);
  expect(oldHits.some((h) => h.text.includes('Ostrand'))).toBe(false);
  const nowHits = JSON.parse((await cli(['query', OLD_B, '-k', '3', '--json'], dir)).stdout) as {
    text: string;
  }[];
  expect(nowHits.some((h) => h.text.includes('Ostrand'))).toBe(true);
  expect(nowHits.some((h) => h.text.includes('nineteen'))).toBe(false);
  const inspectOld = await cli(['inspect', `${site.origin}/b`, '--as-of', between, '--json'], dir);
  const inspectNow = await cli(['inspect', `${site.origin}/b`, '--json'], dir);
  const nowVersion = (
    JSON.parse(inspectNow.stdout) as { record: { currentVersionId: string } }[]
  )[0]!.record.currentVersionId;
  const oldVersion = (JSON.parse(inspectOld.stdout) as { versionId: string }[])[0]!.versionId;
  expect(oldVersion).toMatch(/^v[0-9a-f]{24}$/);
  expect(oldVersion).not.toBe(nowVersion);
  // Past the retention: one line says so.
  const tooOld = await cli(
    ['query', OLD_B, '--as-of', new Date(Date.now() - 2 * 86_400_000).toISOString()],
    dir,
  );
  expect(tooOld.code).toBe(1);
  expect(tooOld.stderr.trim().split('\n')).toHaveLength(1);
  expect(tooOld.stderr).toMatch(/past the retention window \(1d\)/);
}

describe.each(Object.keys(STORES) as (keyof typeof STORES)[])('governance on %s', (store) => {
  let dir: string;
  let site: Site;
  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first.`);
    dir = mkdtempSync(join(tmpdir(), `ragfresh-gov-${store}-`));
    site = await startSite();
    const config = {
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: 'data',
      sources: [{ id: 'site', urls: ['/secret', '/b', '/c', '/d'].map((p) => site.origin + p) }],
      connector: STORES[store](),
      embeddings: { kind: 'hashing', dimensions: 64 },
      fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      retireGrace: 0,
      retention: '1d',
      boilerplate: false,
    };
    writeFileSync(join(dir, 'ragfresh.config.json'), JSON.stringify(config));
  });
  afterAll(async () => {
    await new Promise((r) => site.server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('remove purges the page from every file, query and scan; the refresh skips it; as-of reads the earlier version; the audit chain catches tampering', async () => {
    const first = await cli(['refresh', '--all'], dir);
    expect(first.stderr).toBe('');
    const data = join(dir, 'data');
    // Control: the scan finds the page's words before the removal.
    expect(filesContaining(data, SECRET).length).toBeGreaterThan(0);

    // The whole flow on LanceDB; the purge and the skipped refetch on every store.
    if (store === 'lancedb') await asOfChecks(dir, site);

    // Remove: one epoch, then purged.
    const removed = await cli(
      ['remove', `${site.origin}/secret`, '--reason', 'takedown request 42', '--by', 'alice'],
      dir,
    );
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/removed 1 document\(s\) at epoch \d+ \(1 were current\)/);
    expect(filesContaining(data, SECRET)).toEqual([]);
    const q = await cli(['query', SECRET, '-k', '10', '--json'], dir);
    expect(
      (JSON.parse(q.stdout) as { text: string }[]).some((h) => h.text.includes('Quokkavelt')),
    ).toBe(false);
    const connector = await openConnector(await loadConfig(undefined, dir));
    try {
      let scanned = 0;
      for await (const chunks of connector.scanChunks())
        for (const c of chunks) {
          scanned++;
          expect(c.text).not.toContain('Quokkavelt');
        }
      expect(scanned).toBeGreaterThan(0);
    } finally {
      await connector.close();
    }

    // The next refresh does not fetch it; the others are fetched.
    site.log.length = 0;
    expect((await cli(['refresh', '--all'], dir)).stderr).toBe('');
    expect(site.log).not.toContain('/secret');
    expect(site.log).toContain('/c');

    if (store !== 'lancedb') return;
    // Undo: fetched again.
    const undo = await cli(['remove', '--undo', `${site.origin}/secret`, '--by', 'bob'], dir);
    expect(undo.code, undo.stderr).toBe(0);
    site.log.length = 0;
    await cli(['refresh', '--all'], dir);
    expect(site.log).toContain('/secret');

    // Audit: the chain verifies; an edited entry breaks it with one line naming it.
    const audit = await cli(['audit', `${site.origin}/secret`], dir);
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout).toMatch(/removed\s+alice\s+takedown request 42/);
    expect(audit.stdout).toMatch(/removal-undone\s+bob/);
    const logFile = join(data, 'audit.jsonl');
    const lines = readFileSync(logFile, 'utf8').split('\n');
    lines[0] = lines[0]!.replace('"by":"alice"', '"by":"mallory"');
    writeFileSync(logFile, lines.join('\n'));
    const tampered = await cli(['audit'], dir);
    expect(tampered.code).toBe(1);
    expect(tampered.stderr.trim().split('\n')).toHaveLength(1);
    expect(tampered.stderr).toMatch(/broken at line 1: the entry does not match its hash/);
  }, 120_000);
});

it('gc: past the retention, a replaced version and its unreferenced snapshot go (dry-run first lists them with sizes); a current version keeps its snapshot', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-gc-'));
  const site = await startSite();
  let now = Date.now();
  const config = resolveConfig(
    {
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: 'data',
      sources: [{ id: 'site', urls: ['/b', '/c'].map((p) => site.origin + p) }],
      connector: { store: 'lancedb', path: 'data/lance', table: 'gc' },
      embeddings: { kind: 'hashing', dimensions: 64 },
      fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      retireGrace: 0,
      retention: '1d',
      boilerplate: false,
    },
    dir,
  );
  const rt = await openRuntime(config, { now: () => new Date(now) });
  try {
    await rt.engine.refresh({ all: true });
    const bId = documentId('site', `${site.origin}/b`);
    const cId = documentId('site', `${site.origin}/c`);
    const oldB = (await rt.state.getDocument(bId))!;
    site.pages.set('/b', page('Ferry tariffs', NEW_B));
    await rt.engine.refresh({ all: true });
    const newB = (await rt.state.getDocument(bId))!;
    expect(newB.currentVersionId).not.toBe(oldB.currentVersionId);
    // One more epoch: a retired version is deleted only once the epoch is past its retirement.
    const oldC = (await rt.state.getDocument(cId))!;
    site.pages.set('/c', page('Opening hours', 'The library now opens at ten on weekdays'));
    await rt.engine.refresh({ all: true });
    // Within the retention the replaced version stays stored (as-of reads it).
    const versions = () =>
      rt.connector.listChunks(bId).then((cs) => new Set(cs.map((c) => c.metadata.rf_version)));
    expect(await versions()).toEqual(new Set([oldB.currentVersionId, newB.currentVersionId]));
    // Snapshots live in packs (one file for many); the store says which digests it keeps.
    const kept = (digest: string) => rt.snapshots!.has(digest);
    const out: string[] = [];
    const print = (s: string) => void out.push(s);
    expect(await gcCommand(rt, { dryRun: true, json: true }, print)).toBe(0);
    expect(JSON.parse(out.pop()!)).toMatchObject({ snapshots: [], retired: [] });

    now += 2 * 86_400_000;
    expect(await gcCommand(rt, { dryRun: true, json: true }, print)).toBe(0);
    const dry = JSON.parse(out.pop()!) as GcReport;
    expect(dry.snapshots.map((s) => s.digest).sort()).toEqual(
      [oldB.rawDigest, oldC.rawDigest].sort(),
    );
    expect(dry.snapshotBytes).toBe(dry.snapshots[0]!.bytes + dry.snapshots[1]!.bytes);
    expect(dry.snapshotBytes).toBeGreaterThan(0);
    expect(dry.snapshotsNeeded).toBe(2);
    expect(dry.retired.map((r) => r.versionId)).toEqual([oldB.currentVersionId]);
    expect(dry.retiredChunks).toBeGreaterThan(0);
    expect(await kept(oldB.rawDigest!)).toBe(true);

    expect(await gcCommand(rt, { dryRun: false, json: false }, print)).toBe(0);
    expect(out.pop()).toMatch(/^gc deleted 2 raw snapshot\(s\) .* and 1 retired version\(s\)/);
    expect(await kept(oldB.rawDigest!)).toBe(false);
    expect(await kept(newB.rawDigest!)).toBe(true);
    expect(await kept((await rt.state.getDocument(cId))!.rawDigest!)).toBe(true);
    expect(await versions()).toEqual(new Set([newB.currentVersionId]));
  } finally {
    await rt.close();
    await new Promise((r) => site.server.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
