import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { documentId, FIELDS, openStateStore } from '@ragfresh/core';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRuntime, resolveConfig } from '../src/index.js';

// Runs the built CLI (build first: `npx -y pnpm@10 exec tsc -b`) on LanceDB and SQLite state.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

/**
 * Runs the built CLI asynchronously: the simulated web answers from this process, so a
 * synchronous spawn would block the very server the CLI fetches from.
 */
function cli(
  dir: string,
  ...args: string[]
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [BIN, ...args, '--quiet'], { cwd: dir });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.stderr.on('data', (d) => {
      err += String(d);
    });
    child.on('close', (code) => resolveRun({ code, out, err }));
  });
}

const HOSTILE: Record<string, { body: Buffer; headers?: Record<string, string> }> = {
  '/empty': { body: Buffer.alloc(0) },
  '/zeros.gz': {
    body: gzipSync(Buffer.alloc(10 * 1024 * 1024)),
    headers: { 'content-encoding': 'gzip' },
  },
  '/nest10k': { body: Buffer.from(`<html><body>${'<div>'.repeat(10_000)}x</body></html>`) },
  '/nest100k': { body: Buffer.from(`<html><body>${'<div>'.repeat(100_000)}x</body></html>`) },
  '/line5mb': {
    body: Buffer.from(`<html><body><p>${'lorem ipsum dolor '.repeat(290_000)}</p></body></html>`),
  },
};

/** Documents the state calls current: how many have exactly one visible version, two, or none. */
async function consistency(dir: string, config: object) {
  const rt = await openRuntime(resolveConfig(config, dir), { role: 'read' });
  try {
    const epoch = await rt.connector.readEpoch();
    const shape = { one: 0, two: 0, none: 0 };
    for await (const r of rt.state.listDocuments()) {
      if (r.currentVersionId === undefined || r.status === 'tombstoned') continue;
      const visible = (await rt.connector.listChunks(r.documentId)).filter(
        (c) => Number(c.metadata[FIELDS.from]) <= epoch && epoch < Number(c.metadata[FIELDS.to]),
      );
      const n = new Set(visible.map((c) => c.metadata[FIELDS.versionId])).size;
      if (n === 1) shape.one++;
      else if (n === 0) shape.none++;
      else shape.two++;
    }
    return shape;
  } finally {
    await rt.close();
  }
}

/** Runs the CLI again while a killed run's lease (2 s in those runs) has not expired yet (exit 6). */
async function cliAfterKill(dir: string, ...args: string[]) {
  for (;;) {
    const r = await cli(dir, ...args);
    if (r.code !== 6) return r;
    await new Promise((res) => setTimeout(res, 500));
  }
}

/** Starts the CLI and SIGKILLs it once `ready()` holds (or after `ms`). */
async function killDuring(dir: string, args: string[], ready: () => boolean, ms = 20_000) {
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args, '--quiet'], {
    cwd: dir,
    stdio: 'ignore',
    // A short lease, so the run after the kill does not wait a minute for it to expire.
    env: { ...process.env, RAGFRESH_LEASE_TTL_MS: '2000' },
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const started = Date.now();
  while (child.exitCode === null && !ready() && Date.now() - started < ms)
    await new Promise((r) => setTimeout(r, 5));
  child.kill('SIGKILL');
  return exited;
}

describe('ragfresh CLI: fault isolation, reconciliation, deletion safety and exit codes (LanceDB)', () => {
  let sim: SimWeb;
  let server: Server;
  let dir: string;
  let urls: string[];
  let hostile: string[];
  let config: Record<string, unknown>;
  const write = (extra: Record<string, unknown> = {}) => {
    config = {
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: join(dir, 'data'),
      sources: [{ id: 'docs', urls: [...urls, ...hostile], every: '1h' }],
      connector: { store: 'lancedb' },
      embeddings: { kind: 'hashing', dimensions: 64 },
      fetch: { minIntervalMs: 0, allow: ['127.0.0.1'], robots: false },
      deletion: { goneChecks: 1, minGoneAge: 0, autoApprove: true },
      ...extra,
    };
    writeFileSync(join(dir, 'ragfresh.config.json'), JSON.stringify(config));
  };

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first (tsc -b).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-safety-'));
    sim = await startSimWeb({ seed: 7, hosts: 1, pagesPerHost: 10 });
    urls = sim.urls();
    server = createServer((req, res) => {
      const bad = HOSTILE[req.url ?? ''];
      if (bad === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'text/html', ...bad.headers }).end(bad.body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    hostile = Object.keys(HOSTILE).map((p) => `${base}${p}`);
    write();
  });
  afterAll(async () => {
    await sim.stop();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('a source that never indexed anything exits 3', async () => {
    const r = await cli(dir, 'status');
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/VIOLATED/);
  });

  it('hostile pages beside healthy ones: the healthy pages publish, each bad page is degraded with its reason, exit 0', async () => {
    const r = await cli(dir, 'refresh', '--all');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/empty-body/);
    expect(r.out).toMatch(/page-too-deep: elements nest 10000 levels/);
    expect(r.out).toMatch(/page-too-deep: elements nest 100000 levels/);
    expect(r.out).toMatch(/page-too-large/);
    const report = JSON.parse((await cli(dir, 'status', '--json')).out) as Array<{
      counts: Record<string, number>;
    }>;
    expect(report[0]!.counts.healthy).toBe(urls.length);
    expect(report[0]!.counts.degraded).toBe(hostile.length);
  });

  it('a refusal by the SSRF guard names fetch.allow', async () => {
    const other = mkdtempSync(join(tmpdir(), 'ragfresh-ssrf-'));
    writeFileSync(
      join(other, 'ragfresh.config.json'),
      JSON.stringify({ ...config, dataDir: join(other, 'data'), fetch: { minIntervalMs: 0 } }),
    );
    const r = await cli(other, 'refresh', '--all');
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/ssrf-refused: .*fetch\.allow/);
    expect(r.out).not.toMatch(/ssrf-refused: HTTP 0/);
    rmSync(other, { recursive: true, force: true });
  });

  it('another run holding the lease exits 6 and says until when', async () => {
    const state = await openStateStore(`sqlite:${join(dir, 'data', 'state.sqlite')}`);
    const lease = await state.acquireLease('publisher', 'someone-else', 60_000);
    try {
      const r = await cli(dir, 'refresh', '--all');
      expect(r.code).toBe(6);
      expect(r.err).toMatch(/holds the publish lease: nothing was done\. .*expires by 20\d\d-/);
    } finally {
      await state.releaseLease(lease!);
      await state.close();
    }
  });

  it('a 60 % URL list under autoApprove removes nothing: one held alert; one unlisted page is review pending (exit 5), withdrawn when listed again', async () => {
    write({ sources: [{ id: 'docs', urls: [...urls.slice(0, 6), ...hostile], every: '1h' }] });
    const held = await cli(dir, 'refresh', '--all');
    expect(held.out).toMatch(/mass-removal-held: this run would propose removing 4 of 10/);
    expect((await cli(dir, 'review', 'list')).out).toMatch(/review queue is empty/);
    expect(held.code).toBe(5);
    write({ sources: [{ id: 'docs', urls: [...urls.slice(0, 9), ...hostile], every: '1h' }] });
    const one = await cli(dir, 'refresh', '--all');
    expect(one.code).toBe(5);
    expect((await cli(dir, 'status')).out).toMatch(
      /review pending 1 deletion\/unlisted-but-answering/,
    );
    write();
    const back = await cli(dir, 'refresh', '--all');
    expect(back.code).toBe(0);
    expect((await cli(dir, 'review', 'list', '--all')).out).toMatch(
      /unlisted-but-answering\s+withdrawn/,
    );
  });

  it('a confirmed-gone page is removed and its tombstone mirrored beside the raw snapshots', async () => {
    sim.mutate(urls[8]!, 'delete404');
    expect((await cli(dir, 'refresh', '--all')).code).toBe(0);
    const mirror = JSON.parse(readFileSync(join(dir, 'data', 'tombstones.json'), 'utf8'));
    expect(mirror.tombstones.map((t: { url: string }) => t.url)).toEqual([urls[8]]);
  });

  it('the LanceDB folder deleted between two runs: detected, then repaired from raw snapshots with no refetch', async () => {
    rmSync(join(dir, 'data', 'lancedb'), { recursive: true, force: true });
    sim.clearLog();
    const r = await cli(dir, 'refresh', '--all');
    expect(r.out).toMatch(
      /store-lost: .*9 documents republished from raw snapshots, 0 to fetch in full/,
    );
    expect(sim.log().filter((e) => e.status === 200)).toHaveLength(0);
    expect(r.code).toBe(0);
    expect((await cli(dir, 'query', 'plan price')).out).not.toMatch(/no results/);
    expect(await consistency(dir, config)).toEqual({ one: 9, two: 0, none: 0 });
    const v = await cli(dir, 'verify');
    expect(v.code).toBe(0);
    expect(v.out).toMatch(/0 missing/);
    // LanceDB declares scan: orphans are checked (the repair left none).
    expect(v.out).toMatch(
      /orphans: 0 stored versions the state does not account for \(\d+ chunks scanned\)/,
    );
  });

  it('SIGKILL during verify --repair leaves a consistent index; a rerun repairs the rest', async () => {
    rmSync(join(dir, 'data', 'lancedb'), { recursive: true, force: true });
    const lance = join(dir, 'data', 'lancedb');
    await killDuring(dir, ['verify', '--repair'], () => existsSync(lance));
    const mid = await consistency(dir, config);
    expect(mid.two).toBe(0);
    const again = await cliAfterKill(dir, 'verify', '--repair');
    expect(again.code).toBe(0);
    expect(await consistency(dir, config)).toEqual({ one: 9, two: 0, none: 0 });
  });

  it('a state file deleted beside a full store: refused, then recovered (documents and tombstones)', async () => {
    rmSync(join(dir, 'data', 'state.sqlite'), { force: true });
    const refused = await cli(dir, 'refresh', '--all');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      /the state was lost or reset; nothing was fetched or published\. Run `ragfresh recover`/,
    );
    const rec = await cli(dir, 'recover');
    expect(rec.code).toBe(0);
    expect(rec.out).toMatch(/recovered 9 documents .*read by scan.*1 tombstones read back/);
    expect(rec.out).toMatch(/review queue/);
    const after = await cli(dir, 'refresh', '--all');
    expect(after.code).toBe(0);
    expect(after.out).not.toMatch(/store-/);
  });

  it('quarantine approved through review (exit 4, then 0), and a SIGKILL during an approval leaves a consistent index', async () => {
    write({
      sources: [
        { id: 'docs', urls: [...urls, ...hostile], every: '1h', contract: { maxShrink: 0.5 } },
      ],
    });
    sim.mutate(urls[2]!, 'shrink', { keepSections: 1 });
    sim.mutate(urls[3]!, 'shrink', { keepSections: 1 });
    expect((await cli(dir, 'refresh', '--all')).code).toBe(4);
    const id = `quarantine:${documentId('docs', urls[2]!)}`;
    expect((await cli(dir, 'review', 'show', id)).out).toMatch(/ingestion \/ contract-quarantine/);
    sim.clearLog();
    const other = `quarantine:${documentId('docs', urls[3]!)}`;
    await killDuring(dir, ['review', 'approve', other], () => false, 1500);
    expect((await consistency(dir, config)).two).toBe(0);
    const ok = await cliAfterKill(dir, 'review', 'approve', '--reason', 'contract-quarantine');
    expect(ok.out).toMatch(/approved \d of \d review items/);
    expect(sim.log().filter((e) => e.status === 200)).toHaveLength(0);
    expect(await consistency(dir, config)).toEqual({ one: 9, two: 0, none: 0 });
    expect((await cli(dir, 'status')).code).toBe(0);
  });
});
