// pnpm bench:scale — issue 15's scale-out benchmark. On one simulated web (@ragfresh/sim, in
// this process), through a real Redis, this machine's Postgres (state) and a vector store every
// process reaches (pgvector on PGlite, served over the Postgres wire from this process, as the
// scale-out integration test does):
//   - the single-process engine (`RefreshEngine`, one process) as the baseline;
//   - 1, 2 and 4 page-worker processes + one publisher process + the scheduler (`watch
//     --distributed`'s `scheduleDueSources`, in its own process);
// each for a cold ingest and a no-change refresh (every page answers 304). Every ragfresh
// process reports its own CPU (process.cpuUsage: all threads). Redis is a private redis-server
// the bench starts (the machine's shared one serves other jobs, whose commands would be counted),
// so its `INFO cpu` delta is this bench's queue and politeness traffic. Queue overhead per page =
// the distributed processes' CPU per page minus the single process's, plus Redis' CPU per page.
//
// PAGES (600), HOSTS (10), WORKERS (1,2,4), DIMENSIONS (256), CONCURRENCY (8 pages in flight
// per process), SINGLE=0 (skip the baseline), RAGFRESH_BENCH_REDIS (use that server instead of a
// private one), REDIS_SERVER (binary), RAGFRESH_BENCH_POSTGRES; each also as --pages=… etc.
// Run with `nice -n 10`.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixture } from '@ragfresh/connector-pgvector/fixture';
import { openStateStore } from '@ragfresh/core';
import type { EngineSource } from '@ragfresh/engine';
import { startSimWeb } from '@ragfresh/sim';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { connectRedis, obliterateQueues } from '../dist/index.js';
import type { QueueProcessSpec } from '../dist/process.js';
import type { CpuLine, ScaleProcessInput } from './scale-process.ts';

function option(name: string, fallback: string): string {
  const flag = process.argv.find((a) => a.startsWith(`--${name.toLowerCase()}=`));
  return flag?.slice(name.length + 3) ?? process.env[name.toUpperCase()] ?? fallback;
}
function positive(name: string, fallback: string): number {
  const n = Number(option(name, fallback));
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`${name} must be a positive integer, got ${option(name, fallback)}`);
  return n;
}

const PAGES = positive('PAGES', '600');
const HOSTS = positive('HOSTS', '10');
const DIMENSIONS = positive('DIMENSIONS', '256');
const CONCURRENCY = positive('CONCURRENCY', '8');
const WORKERS = option('WORKERS', '1,2,4')
  .split(',')
  .map((s) => Number(s.trim()));
if (WORKERS.some((n) => !Number.isSafeInteger(n) || n < 1))
  throw new Error(`WORKERS must be a comma-separated list of counts, got ${option('WORKERS', '')}`);
const SINGLE = option('SINGLE', '1') !== '0';
/** Unset: the bench starts its own redis-server, so `INFO cpu` counts this bench's traffic alone. */
const EXTERNAL_REDIS = option('RAGFRESH_BENCH_REDIS', '');
let REDIS_URL = EXTERNAL_REDIS;
const STATE_URL = option('RAGFRESH_BENCH_POSTGRES', 'postgres://postgres@127.0.0.1:5432/test');
const STORE = option('STORE', 'pgvector');
if (STORE !== 'pgvector' && STORE !== 'lancedb')
  throw new Error(`STORE must be pgvector or lancedb, got ${STORE}`);
const CORES = availableParallelism();
const UA = 'ragfresh-bench/0.1 (+https://example.org/bot)';
const PASSES = ['cold', 'no-change'] as const;
type Pass = (typeof PASSES)[number];
/** Pages the sim serves (PAGES rounded up to whole hosts). */
let PAGES_TOTAL = 0;

const SCRIPT = fileURLToPath(new URL('./scale-process.ts', import.meta.url));
const progress = (msg: string) => process.stderr.write(`[bench:scale] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  next(event: string, command?: string): Promise<CpuLine>;
  readonly exited: Promise<number | null>;
}

function startProcess(name: string, input: ScaleProcessInput): Child {
  const proc = spawn(process.execPath, [SCRIPT, JSON.stringify(input)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const seen: CpuLine[] = [];
  const waiting: { event: string; resolve: (l: CpuLine) => void }[] = [];
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = JSON.parse(buf.slice(0, i)) as CpuLine;
      buf = buf.slice(i + 1);
      const w = waiting.findIndex((x) => x.event === line.event);
      if (w >= 0) waiting.splice(w, 1)[0]!.resolve(line);
      else seen.push(line);
    }
  });
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  return {
    name,
    proc,
    exited,
    next(event, command) {
      if (command !== undefined) proc.stdin!.write(`${command}\n`);
      const i = seen.findIndex((l) => l.event === event);
      if (i >= 0) return Promise.resolve(seen.splice(i, 1)[0]!);
      return new Promise((resolve, reject) => {
        waiting.push({ event, resolve });
        void exited.then((code) => reject(new Error(`${name} exited (${code}) before "${event}"`)));
      });
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** A private redis-server (no persistence) on a free loopback port; stopped with the bench. */
async function startRedisServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const proc = spawn(
    option('REDIS_SERVER', 'redis-server'),
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.on('error', reject);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    void exited.then(() => reject(new Error(`redis-server exited before it was ready: ${out}`)));
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** Redis server CPU (user + system, ms) and commands processed so far. */
async function redisCounters(redis: Redis): Promise<{ cpuMs: number; commands: number }> {
  const info = `${await redis.info('cpu')}\n${await redis.info('stats')}`;
  const num = (k: string) => Number(new RegExp(`^${k}:([0-9.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return {
    cpuMs: (num('used_cpu_user') + num('used_cpu_sys')) * 1000,
    commands: num('total_commands_processed'),
  };
}

interface Row {
  readonly setup: string;
  readonly processes: number;
  readonly pass: Pass;
  readonly pages: number;
  readonly ok200: number;
  readonly notModified: number;
  readonly published: number;
  readonly wallMs: number;
  /** Work CPU of the ragfresh processes (workers + publisher + scheduler, or the single engine). */
  readonly cpuMs: number;
  readonly perProcessCpuMs: readonly number[];
  readonly redisCpuMs: number;
  readonly redisCommands: number;
  /** This process: the sim serving and PGlite (the store) answering, plus the queue poll. */
  readonly benchCpuMs: number;
  readonly load: number;
  /** Every request the sim answered in the pass (pages, robots.txt, sitemaps). */
  readonly requests: number;
  readonly responseBytes: number;
  readonly stateDb: StateDbCounters;
}

/** pg_stat_database counters of the state database (deltas over a pass). */
interface StateDbCounters {
  readonly commits: number;
  readonly inserted: number;
  readonly updated: number;
  readonly deleted: number;
  readonly returned: number;
}

async function stateDbCounters(): Promise<StateDbCounters> {
  const db = new pg.Client({ connectionString: STATE_URL });
  await db.connect();
  try {
    // The statistics collector publishes a backend's counts when its transaction ends, at most
    // once a second: the caller waits before reading.
    await db.query('SELECT pg_stat_clear_snapshot()');
    const r = await db.query(
      'SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, tup_returned FROM pg_stat_database WHERE datname = current_database()',
    );
    const row = r.rows[0] as Record<string, string>;
    return {
      commits: Number(row.xact_commit),
      inserted: Number(row.tup_inserted),
      updated: Number(row.tup_updated),
      deleted: Number(row.tup_deleted),
      returned: Number(row.tup_returned),
    };
  } finally {
    await db.end();
  }
}

const minus = (a: StateDbCounters, b: StateDbCounters): StateDbCounters => ({
  commits: a.commits - b.commits,
  inserted: a.inserted - b.inserted,
  updated: a.updated - b.updated,
  deleted: a.deleted - b.deleted,
  returned: a.returned - b.returned,
});

/** State rows a setup left, by the key's kind (`<namespace>:<kind>:…`), with their bytes. */
const stateRows: { setup: string; kind: string; rows: number; bytes: number }[] = [];
async function countStateRows(setup: string, namespace: string): Promise<void> {
  const db = new pg.Client({ connectionString: STATE_URL });
  await db.connect();
  try {
    const r = await db.query(
      `SELECT split_part(substr(key, length($1) + 2), ':', 1) AS kind, count(*)::int AS rows,
              sum(pg_column_size(key) + pg_column_size(value))::bigint AS bytes
         FROM ragfresh_state WHERE key LIKE $2 GROUP BY 1 ORDER BY 1`,
      [namespace, `${namespace}:%`],
    );
    for (const row of r.rows as { kind: string; rows: number; bytes: string }[])
      stateRows.push({ setup, kind: row.kind, rows: row.rows, bytes: Number(row.bytes) });
  } finally {
    await db.end();
  }
}

interface Setup {
  readonly sim: Awaited<ReturnType<typeof startSimWeb>>;
  readonly sources: readonly EngineSource[];
  readonly redis: Redis;
}

const pageEntries = (sim: Setup['sim'], fromSeq: number) =>
  sim.log().filter((e) => e.seq > fromSeq && !/\.xml(\.gz)?$|^\/robots\.txt$/.test(e.path));

const lastSeq = (sim: Setup['sim']) => sim.log().at(-1)?.seq ?? 0;

const benchCpuMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

/** One isolated run: a fresh PGlite store, a fresh state namespace and queue prefix. */
async function withTarget<T>(
  setup: Setup,
  run: (spec: (role: QueueProcessSpec['role'], name: string) => QueueProcessSpec) => Promise<T>,
): Promise<T> {
  const id = randomUUID().slice(0, 8);
  const prefix = `rf-bench-${id}`;
  const namespace = `rf_bench_${id}`;
  const target = STORE === 'pgvector' ? await fixture.start() : lanceTarget();
  const spec = (role: QueueProcessSpec['role'], name: string): QueueProcessSpec => ({
    role,
    name,
    queue: { redis: REDIS_URL, prefix },
    state: { spec: STATE_URL, namespace },
    connector: target.connectorSpec!(namespace) as QueueProcessSpec['connector'],
    dimensions: DIMENSIONS,
    settings: {
      sources: setup.sources,
      fetch: {
        userAgent: UA,
        minIntervalMs: 0,
        perHostConcurrency: 4,
        globalConcurrency: 32,
        allowPrivateNetworks: true,
      },
      concurrency: CONCURRENCY,
      batchSize: 25,
    },
  });
  try {
    const out = await run(spec);
    await countStateRows(setupName(spec), namespace);
    return out;
  } finally {
    await obliterateQueues(setup.redis, prefix).catch(() => {});
    const keys = await setup.redis.keys(`${prefix}:polite*`);
    if (keys.length > 0) await setup.redis.del(...keys);
    const db = new pg.Client({ connectionString: STATE_URL });
    await db.connect();
    await db.query('DELETE FROM ragfresh_state WHERE key LIKE $1', [`${namespace}:%`]);
    await db.end();
    await target.stop();
  }
}

/** Embedded LanceDB in a temp dir (only the publisher writes it; every process opens it). */
function lanceTarget() {
  const path = mkdtempSync(join(tmpdir(), 'ragfresh-bench-scale-lancedb-'));
  return {
    connectorSpec: (ns: string) => ({
      module: new URL('../../../connectors/lancedb/dist/index.js', import.meta.url).href,
      exportName: 'createLanceDbConnector',
      options: { path, table: `rf_${ns}` },
    }),
    async stop() {
      rmSync(path, { recursive: true, force: true });
    },
  };
}

/** The setup a spec belongs to, for the state rows table (the single engine's role is `both`). */
let currentSetup = '';
const setupName = (_spec: unknown) => currentSetup;

async function publishedDocuments(spec: QueueProcessSpec): Promise<number> {
  const state = await openStateStore(spec.state.spec, { namespace: spec.state.namespace });
  let n = 0;
  for await (const r of state.listDocuments())
    if (r.currentVersionId !== undefined && r.status === 'healthy') n++;
  await state.close();
  return n;
}

async function measure(
  setup: Setup,
  children: readonly Child[],
  work: () => Promise<{ extraCpuMs: number; benchCommands?: number }>,
) {
  const before = await Promise.all(children.map((c) => c.next('cpu', 'cpu')));
  const redis0 = await redisCounters(setup.redis);
  const db0 = await stateDbCounters();
  const bench0 = benchCpuMs();
  const seq0 = lastSeq(setup.sim);
  const t0 = performance.now();
  const { extraCpuMs, benchCommands = 0 } = await work();
  const wallMs = performance.now() - t0;
  const bench1 = benchCpuMs();
  const redis1 = await redisCounters(setup.redis);
  const after = await Promise.all(children.map((c) => c.next('cpu', 'cpu')));
  const perProcess = after.map((a, i) => a.cpuMs - before[i]!.cpuMs);
  const entries = pageEntries(setup.sim, seq0);
  const all = setup.sim.log().filter((e) => e.seq > seq0);
  await sleep(1500);
  const db1 = await stateDbCounters();
  return {
    requests: all.length,
    responseBytes: all.reduce((n, e) => n + (e.bytes ?? 0), 0),
    stateDb: minus(db1, db0),
    wallMs,
    perProcessCpuMs: extraCpuMs > 0 ? [...perProcess, extraCpuMs] : perProcess,
    cpuMs: perProcess.reduce((a, b) => a + b, 0) + extraCpuMs,
    redisCpuMs: redis1.cpuMs - redis0.cpuMs,
    // Not counted: the bench's own INFO call and drain polls.
    redisCommands: redis1.commands - redis0.commands - 1 - benchCommands,
    benchCpuMs: bench1 - bench0,
    ok200: entries.filter((e) => e.status === 200).length,
    notModified: entries.filter((e) => e.status === 304).length,
  };
}

/** Polls both queues until the pass is through; returns the Redis commands it sent. */
async function untilDrained(redis: Redis, prefix: string, pageJobs: number): Promise<number> {
  const pages = new Queue('pages', { connection: redis, prefix });
  const publish = new Queue('publish', { connection: redis, prefix });
  const started = Date.now();
  let commands = 0;
  try {
    for (;;) {
      // One script call each.
      commands += 2;
      const p = await pages.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed');
      const q = await publish.getJobCounts('failed', 'waiting', 'active', 'delayed', 'prioritized');
      if ((p.failed ?? 0) + (q.failed ?? 0) > 0)
        throw new Error(`jobs failed: pages ${p.failed}, publish ${q.failed}`);
      const publishOpen =
        (q.waiting ?? 0) + (q.active ?? 0) + (q.delayed ?? 0) + (q.prioritized ?? 0);
      if ((p.completed ?? 0) >= pageJobs && publishOpen === 0) return commands;
      // A hang guard, not a measurement: an hour, or 0.5 s per page for large runs (a loaded
      // machine drains a 10,000-page cold pass in more than 20 minutes).
      if (Date.now() - started > Math.max(60 * 60_000, PAGES_TOTAL * 500))
        throw new Error(`not drained in time: ${JSON.stringify({ p, q })}`);
      await sleep(250);
    }
  } finally {
    await pages.close();
    await publish.close();
  }
}

async function distributed(setup: Setup, workers: number): Promise<Row[]> {
  currentSetup = `${workers} page worker${workers > 1 ? 's' : ''}`;
  return withTarget(setup, async (spec) => {
    const prefix = spec('pages', 'x').queue.prefix!;
    const publisher = startProcess('publisher', {
      mode: 'queue',
      spec: spec('publish', 'publisher'),
    });
    const pageWorkers = Array.from({ length: workers }, (_, i) =>
      startProcess(`worker-${i + 1}`, { mode: 'queue', spec: spec('pages', `worker-${i + 1}`) }),
    );
    const children = [publisher, ...pageWorkers];
    try {
      await Promise.all(children.map((c) => c.next('ready')));
      const rows: Row[] = [];
      let jobs = 0;
      for (const pass of PASSES) {
        const scheduler = startProcess('scheduler', {
          mode: 'schedule',
          spec: spec('pages', 'scheduler'),
        });
        await scheduler.next('ready');
        const m = await measure(setup, children, async () => {
          const s = await scheduler.next('scheduled', 'schedule');
          if (s.pages !== setup.sim.urls().length || s.alreadyQueued !== 0)
            throw new Error(`scheduler: ${JSON.stringify(s)}`);
          jobs += Number(s.jobs);
          const benchCommands = await untilDrained(setup.redis, prefix, jobs);
          return { extraCpuMs: Number(s.workCpuMs), benchCommands };
        });
        await scheduler.exited;
        const published = await publishedDocuments(spec('pages', 'x'));
        rows.push(
          row(`${workers} page worker${workers > 1 ? 's' : ''}`, workers + 2, pass, m, published),
        );
        progress(
          `${workers} workers, ${pass}: ${(m.wallMs / 1000).toFixed(1)} s; CPU ms/page ${(m.cpuMs / PAGES_TOTAL).toFixed(2)} (publisher, workers…, scheduler: ${m.perProcessCpuMs.map((c) => (c / PAGES_TOTAL).toFixed(2)).join(', ')}); Redis ${(m.redisCommands / PAGES_TOTAL).toFixed(1)} cmds/page; state ${(m.stateDb.commits / PAGES_TOTAL).toFixed(2)} commits/page`,
        );
        await sleep(1100); // the next pass falls in a new due window (sources are every 1 s)
      }
      return rows;
    } finally {
      for (const c of children) c.proc.stdin!.write('stop\n');
      await Promise.all(children.map((c) => c.exited));
    }
  });
}

async function single(setup: Setup): Promise<Row[]> {
  currentSetup = 'single process';
  return withTarget(setup, async (spec) => {
    const engine = startProcess('single', { mode: 'single', spec: spec('both', 'single') });
    const rows: Row[] = [];
    try {
      await engine.next('ready');
      for (const pass of PASSES) {
        let refreshed: CpuLine | undefined;
        const m = await measure(setup, [], async () => {
          refreshed = await engine.next('refreshed', 'refresh');
          return { extraCpuMs: Number(refreshed.workCpuMs) };
        });
        rows.push(
          row('single process', 1, pass, m, await publishedDocuments(spec('both', 'single'))),
        );
        progress(`single process, ${pass}: ${(m.wallMs / 1000).toFixed(1)} s`);
      }
      return rows;
    } finally {
      engine.proc.stdin!.write('stop\n');
      await engine.exited;
    }
  });
}

function row(
  setup: string,
  processes: number,
  pass: Pass,
  m: Awaited<ReturnType<typeof measure>>,
  published: number,
): Row {
  return {
    setup,
    processes,
    pass,
    pages: PAGES_TOTAL,
    ok200: m.ok200,
    notModified: m.notModified,
    published,
    wallMs: m.wallMs,
    cpuMs: m.cpuMs,
    perProcessCpuMs: m.perProcessCpuMs,
    redisCpuMs: m.redisCpuMs,
    redisCommands: m.redisCommands,
    benchCpuMs: m.benchCpuMs,
    load: loadavg()[0]!,
    requests: m.requests,
    responseBytes: m.responseBytes,
    stateDb: m.stateDb,
  };
}

function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (i < 2 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join(' | ')} |`;
  const sep = `|${w.map((n, i) => (i < 2 ? `${'-'.repeat(n + 2)}` : `${'-'.repeat(n + 1)}:`)).join('|')}|`;
  return [line(headers), sep, ...rows.map(line)].join('\n');
}

const f = (n: number, d = 1) => n.toFixed(d);

async function main(): Promise<void> {
  const pagesPerHost = Math.ceil(PAGES / HOSTS);
  const sim = await startSimWeb({
    seed: 15,
    hosts: HOSTS,
    pagesPerHost,
    markdownTwins: false,
  });
  PAGES_TOTAL = sim.urls().length;
  const sources: EngineSource[] = sim.hosts().map((h, i) => ({
    id: `host-${i}`,
    sitemaps: [`${sim.origin(h)}/sitemap.xml`],
    everyMs: 1000,
    identity: { mode: 'normalize' },
  }));
  const privateRedis = EXTERNAL_REDIS === '' ? await startRedisServer() : undefined;
  REDIS_URL = privateRedis?.url ?? EXTERNAL_REDIS;
  // One node (no `queue.cluster`): connectRedis gives a plain client.
  const redis = connectRedis({ redis: REDIS_URL }, progress) as Redis;
  try {
    const setup: Setup = { sim, sources, redis };
    const idle0 = await redisCounters(redis);
    await sleep(5000);
    const idle1 = await redisCounters(redis);
    const redisIdleMsPerS = (idle1.cpuMs - idle0.cpuMs) / 5;
    const redisIdleCmdPerS = (idle1.commands - idle0.commands - 1) / 5;
    const load0 = loadavg();
    const rows: Row[] = [];
    if (SINGLE) rows.push(...(await single(setup)));
    for (const n of WORKERS) rows.push(...(await distributed(setup, n)));
    const load1 = loadavg();

    const baseline = new Map(
      rows.filter((r) => r.setup === 'single process').map((r) => [r.pass, r]),
    );
    process.stdout.write(
      `\nscale-out on the simulated web (seed 15, ${HOSTS} hosts, ${PAGES_TOTAL} pages, no politeness delay, ` +
        `4 per host, ${CONCURRENCY} pages in flight per process; hashing embeddings ${DIMENSIONS} dims); ` +
        `Redis ${privateRedis === undefined ? `${REDIS_URL} (shared)` : `private redis-server at ${REDIS_URL}`}, state Postgres (${STATE_URL.replace(/\/\/[^@]*@/, '//')}), store ${STORE === 'pgvector' ? 'pgvector on PGlite over the wire' : 'embedded LanceDB (written by the publisher)'}; node ${process.version}; ` +
        `${CORES} cores (${cpus()[0]?.model ?? '?'}); load average ${load0.map((l) => f(l)).join(' / ')} at the start, ` +
        `${load1.map((l) => f(l)).join(' / ')} at the end; Redis idle before the run: ${f(redisIdleMsPerS, 2)} ms CPU/s, ` +
        `${f(redisIdleCmdPerS)} commands/s \n\n`,
    );
    process.stdout.write(
      `${table(
        [
          'setup',
          'pass',
          'procs',
          'pages',
          '200',
          '304',
          'published docs',
          'wall s',
          'pages/s',
          `pages/s per core (÷${CORES})`,
          'ragfresh CPU s',
          'CPU ms/page',
          'pages per CPU-s',
          'Redis CPU ms/page',
          'Redis cmds/page',
          'store+sim CPU s',
          'pages per CPU-s, all',
          'load',
        ],
        rows.map((r) => {
          const all = r.cpuMs + r.redisCpuMs + r.benchCpuMs;
          return [
            r.setup,
            r.pass,
            String(r.processes),
            String(r.pages),
            String(r.ok200),
            String(r.notModified),
            String(r.published),
            f(r.wallMs / 1000),
            f(r.pages / (r.wallMs / 1000)),
            f(r.pages / (r.wallMs / 1000) / CORES),
            f(r.cpuMs / 1000),
            f(r.cpuMs / r.pages, 2),
            f(r.pages / (r.cpuMs / 1000)),
            f(r.redisCpuMs / r.pages, 3),
            f(r.redisCommands / r.pages, 1),
            f(r.benchCpuMs / 1000),
            f(r.pages / (all / 1000)),
            f(r.load),
          ];
        }),
      )}\n\n`,
    );
    process.stdout.write(
      `per-page costs for the cost model (docs/scale-out.md; state counters are pg_stat_database deltas of the state database):\n\n${table(
        [
          'setup',
          'pass',
          'HTTP requests/page',
          'response KiB/page',
          'Redis cmds/page',
          'state commits/page',
          'state rows inserted/page',
          'state rows updated/page',
          'state rows deleted/page',
          'state rows read/page',
        ],
        rows.map((r) => [
          r.setup,
          r.pass,
          f(r.requests / r.pages, 2),
          f(r.responseBytes / 1024 / r.pages, 2),
          f(r.redisCommands / r.pages, 1),
          f(r.stateDb.commits / r.pages, 2),
          f(r.stateDb.inserted / r.pages, 2),
          f(r.stateDb.updated / r.pages, 2),
          f(r.stateDb.deleted / r.pages, 2),
          f(r.stateDb.returned / r.pages, 1),
        ]),
      )}\n\nstate rows left after each setup (both passes), by key kind:\n\n${table(
        ['setup', 'kind', 'rows', 'rows/page', 'KiB', 'bytes/row'],
        stateRows.map((r) => [
          r.setup,
          r.kind,
          String(r.rows),
          f(r.rows / PAGES_TOTAL, 3),
          f(r.bytes / 1024, 0),
          f(r.bytes / r.rows, 0),
        ]),
      )}\n\n`,
    );
    if (baseline.size > 0) {
      const over = rows.filter((r) => r.setup !== 'single process');
      process.stdout.write(
        `queue overhead per page (distributed minus the single process, same pass; Redis after subtracting its idle rate):\n\n${table(
          [
            'setup',
            'pass',
            'ragfresh CPU ms/page',
            'single CPU ms/page',
            'extra ragfresh ms/page',
            'Redis ms/page',
            'queue overhead ms/page',
            'per-process CPU s (publisher, workers…, scheduler)',
          ],
          over.map((r) => {
            const b = baseline.get(r.pass)!;
            const extra = r.cpuMs / r.pages - b.cpuMs / b.pages;
            const redisMs =
              Math.max(0, r.redisCpuMs - redisIdleMsPerS * (r.wallMs / 1000)) / r.pages;
            return [
              r.setup,
              r.pass,
              f(r.cpuMs / r.pages, 2),
              f(b.cpuMs / b.pages, 2),
              f(extra, 2),
              f(redisMs, 3),
              f(extra + redisMs, 2),
              r.perProcessCpuMs.map((c) => f(c / 1000)).join(', '),
            ];
          }),
        )}\n`,
      );
    }
  } finally {
    await redis.quit();
    await privateRedis?.stop();
    await sim.stop();
  }
}

await main();
