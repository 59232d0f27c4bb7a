import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connectRedis, obliterateQueues } from '@ragfresh/queue';
import { startSimWeb } from '@ragfresh/sim';
import { afterAll, expect, it } from 'vitest';
import { PROMO, startChromeSite } from '../../engine/bench/chrome-site.ts';
import { redisCli, startOwnRedis } from '../../queue/test/redis-server.ts';

// Real Redis of this machine and CI; fails loudly without it. Runs the built CLI (build first).
const REDIS_URL = process.env.RAGFRESH_TEST_REDIS ?? 'redis://127.0.0.1:6379';
const BIN = resolve(import.meta.dirname, '../dist/bin.js');
const HOSTS = 2;
const PAGES_PER_HOST = 6;

const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A test's folder, queue prefix and Redis connection (the built CLI must exist). */
function scratch(name: string) {
  if (!existsSync(BIN))
    throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
  const prefix = `rf-cli-${name}-${randomUUID().slice(0, 8)}`;
  return {
    dir: mkdtempSync(join(tmpdir(), `ragfresh-${name}-`)),
    prefix,
    redis: connectRedis({ redis: REDIS_URL, prefix }),
  };
}

/** Removes a test's queues and politeness keys, then disconnects. */
async function dropQueues(redis: ReturnType<typeof connectRedis>, prefix: string): Promise<void> {
  await obliterateQueues(redis, prefix).catch(() => {});
  const keys = await redis.keys(`${prefix}:polite*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
}

/** A config in `dir` for these tests: hashing embeddings, loopback fetches, the test's queue. */
function writeConfig(
  dir: string,
  prefix: string,
  {
    sources,
    minIntervalMs,
    redis = REDIS_URL,
  }: { sources: unknown[]; minIntervalMs: number; redis?: string },
): string {
  const config = join(dir, 'ragfresh.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: join(dir, 'data'),
      sources,
      embeddings: { kind: 'hashing', dimensions: 64 },
      fetch: { minIntervalMs, allowPrivateNetworks: true },
      queue: { redis, prefix },
    }),
  );
  return config;
}

function start(args: string[], cwd: string) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  child.stdout!.resume();
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    child,
    exited,
    stderr: () => stderr,
    /** Resolves with the first match of `re` in stderr (hang guard: the test's timeout). */
    async line(re: RegExp): Promise<RegExpExecArray> {
      for (;;) {
        const m = re.exec(stderr);
        if (m !== null) return m;
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

it('watch --distributed enqueues, a worker publishes every page and serves its queue series on --metrics-port, status shows the queues', async () => {
  const { dir, prefix, redis } = scratch('worker');
  const sim = await startSimWeb({
    seed: 21,
    hosts: HOSTS,
    pagesPerHost: PAGES_PER_HOST,
    markdownTwins: false,
  });
  const config = writeConfig(dir, prefix, {
    sources: sim
      .hosts()
      .map((h, i) => ({ id: `h${i}`, sitemaps: [`${sim.origin(h)}/sitemap.xml`] })),
    // An interval longer than a page's extraction on a loaded machine, so the shared per-host
    // turn is surely waited for and every host's wait series is non-trivial.
    minIntervalMs: 300,
  });
  try {
    const worker = start(
      ['worker', '--role', 'both', '--name', 'w1', '--metrics-port', '0', '--config', config],
      dir,
    );
    const metricsUrl = (await worker.line(/metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/))[1]!;
    await worker.line(/w1 taking page and publish work/);

    const scheduler = start(['watch', '--distributed', '--config', config], dir);
    for (let i = 0; i < HOSTS; i++)
      await scheduler.line(new RegExp(`h${i}: ${PAGES_PER_HOST} pages in 1 jobs`));
    scheduler.child.kill('SIGTERM');
    expect(await scheduler.exited).toBe(0);

    // Every page through the page role and published by the publish role of the same worker.
    let text = '';
    for (;;) {
      text = await (await fetch(metricsUrl)).text();
      if (
        /ragfresh_queue_jobs_total\{queue="publish"\} 2\n/.test(text) &&
        /ragfresh_host_wait_ms_total/.test(text)
      )
        break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(text).toMatch(/# TYPE ragfresh_queue_jobs_total counter/);
    expect(text).toMatch(/ragfresh_queue_jobs_total\{queue="pages"\} 2\n/);
    expect(text).toMatch(new RegExp(`ragfresh_queue_pages_total ${HOSTS * PAGES_PER_HOST}\\n`));
    expect(text).toMatch(/# TYPE ragfresh_publish_lag_seconds gauge/);
    expect(Number(/ragfresh_publish_lag_seconds ([0-9.e+-]+)\n/.exec(text)?.[1])).toBeGreaterThan(
      0,
    );
    for (const h of sim.hosts()) {
      const authority = new URL(sim.origin(h)).host;
      expect(text).toMatch(
        new RegExp(
          `ragfresh_host_wait_ms_total\\{host="${authority.replace(/\./g, '\\.')}"\\} \\d+`,
        ),
      );
    }

    // status: the source table from the shared state, then both queues and the connected worker.
    const status = spawnSync(process.execPath, [BIN, 'status', '--config', config], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(status.stderr).toBe('');
    expect(status.stdout).toMatch(/^h0 +healthy +6\/6 /m);
    expect(status.stdout).toContain(
      `queue (prefix ${prefix} at ${REDIS_URL}):\n` +
        '  pages: 0 waiting, 0 active, 0 delayed, 0 failed, 2 completed; workers: w1\n' +
        '  publish: 0 waiting, 0 active, 0 delayed, 0 failed, 2 completed; workers: w1:publish\n',
    );
    expect(status.status).toBe(0);
    const json = spawnSync(process.execPath, [BIN, 'status', '--json', '--config', config], {
      cwd: dir,
      encoding: 'utf8',
    });
    const parsed = JSON.parse(json.stdout) as {
      sources: { sourceId: string; documents: number }[];
      queue: { prefix: string; queues: { name: string; completed: number; workers: string[] }[] };
    };
    expect(parsed.sources.map((s) => [s.sourceId, s.documents])).toEqual([
      ['h0', PAGES_PER_HOST],
      ['h1', PAGES_PER_HOST],
    ]);
    expect(parsed.queue.prefix).toBe(prefix);
    expect(parsed.queue.queues.map((q) => [q.name, q.completed, q.workers])).toEqual([
      ['pages', 2, ['w1']],
      ['publish', 2, ['w1:publish']],
      ['finish', 2, ['w1:finish']],
    ]);

    const workerStatus = spawnSync(
      process.execPath,
      [BIN, 'worker', 'status', '--config', config],
      {
        cwd: dir,
        encoding: 'utf8',
      },
    );
    expect(workerStatus.stdout).toContain(
      '  pages: 0 waiting, 0 active, 0 delayed, 0 failed, 2 completed; workers: w1\n',
    );
    expect(workerStatus.status).toBe(0);

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.stderr()).toContain('SIGTERM: finishing in-flight batches');
  } finally {
    await dropQueues(redis, prefix);
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

// A host's chrome learned by `ragfresh refresh` is honoured by `ragfresh worker`: a page that
// changes and is published through the queue is cut under the stored model, as a local
// refresh would cut it, not with the promo the extractor alone keeps.
interface Hit {
  text: string;
  header: string;
}

it('a worker cuts a changed page under the host model a local refresh learned', async () => {
  const { dir, prefix, redis } = scratch('learn');
  const site = await startChromeSite({ pages: 10 });
  const config = writeConfig(dir, prefix, {
    sources: [{ id: 'docs', urls: site.urls, every: 1000 }],
    minIntervalMs: 0,
  });
  // Asynchronous: the site answers from this process, so a synchronous spawn would starve it.
  const cli = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      execFile(
        process.execPath,
        [BIN, ...args, '--config', config],
        { cwd: dir, timeout: 120_000 },
        (err, stdout, stderr) =>
          done({
            code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
            stdout,
            stderr,
          }),
      );
    });
  const hitsOf = async (question: string) => {
    const q = await cli('query', question, '-k', '60', '--no-collapse', '--json');
    expect(q.code, q.stderr).toBe(0);
    return JSON.parse(q.stdout) as Hit[];
  };
  try {
    const local = await cli('refresh', '--all', '--json');
    expect(local.code, local.stderr).toBe(0);
    expect(JSON.parse(local.stdout).report.totals.published).toBe(site.urls.length);
    // The local refresh learned the host's promo: no published chunk holds it.
    expect((await hitsOf(PROMO)).filter((h) => h.text.includes(PROMO))).toEqual([]);

    const edited = site.urls[3]!;
    site.editPage(3, 'Quotas now reset every Monday at noon.');
    const page = await (await fetch(edited)).text();
    expect(page).toContain(PROMO);
    await new Promise((r) => setTimeout(r, 1100)); // the source's `every` has passed

    const worker = start(['worker', '--role', 'both', '--name', 'w1', '--config', config], dir);
    await worker.line(/w1 taking page and publish work/);
    const scheduler = start(['watch', '--distributed', '--config', config], dir);
    await scheduler.line(/docs: 10 pages in 1 jobs/);
    scheduler.child.kill('SIGTERM');
    expect(await scheduler.exited).toBe(0);

    let mine: Hit[] = [];
    while (!mine.some((h) => h.text.includes('Quotas now reset every Monday'))) {
      await new Promise((r) => setTimeout(r, 250));
      mine = (await hitsOf(`Quotas now reset every Monday ${PROMO}`)).filter((h) =>
        h.header.includes(edited),
      );
    }
    expect(mine.filter((h) => h.text.includes(PROMO))).toEqual([]);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  } finally {
    await dropQueues(redis, prefix);
    await site.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

it('worker and watch --distributed refuse a Redis whose maxmemory-policy evicts, in one line, before taking work', async () => {
  // A redis-server of this test's own (the shared 6379 keeps its config): allkeys-lru, as
  // managed Redis often defaults to.
  const server = await startOwnRedis(['--maxmemory-policy', 'allkeys-lru']);
  const { dir, prefix, redis } = scratch('evicting');
  redis.disconnect();
  try {
    const config = writeConfig(dir, prefix, {
      sources: [{ id: 'docs', urls: ['http://127.0.0.1:1/a'] }],
      minIntervalMs: 0,
      redis: `redis://127.0.0.1:${server.port}`,
    });
    for (const args of [['worker'], ['watch', '--distributed']]) {
      const r = spawnSync(process.execPath, [BIN, ...args, '--config', config], {
        cwd: dir,
        encoding: 'utf8',
      });
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `^ragfresh: Redis at 127\\.0\\.0\\.1:${server.port} has maxmemory-policy allkeys-lru, .*BullMQ needs noeviction: set maxmemory-policy noeviction .*\\n$`,
        ),
      );
    }
    // Nothing was enqueued or taken: the refusal comes before any queue key is written.
    expect((await redisCli(server.port, 'dbsize')).trim()).toBe('0');
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
