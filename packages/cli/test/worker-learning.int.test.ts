import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connectRedis, obliterateQueues } from '@ragfresh/queue';
import { afterAll, expect, it } from 'vitest';
import { PROMO, startChromeSite } from '../../engine/bench/chrome-site.ts';

// Real Redis of this machine and CI; fails loudly without it. Runs the built CLI (build first).
// A host's chrome learned by `ragfresh refresh` is honoured by `ragfresh worker`: a page that
// changes and is published through the queue is cut under the stored model, as a local
// refresh would cut it, not with the promo the extractor alone keeps.
const REDIS_URL = process.env.RAGFRESH_TEST_REDIS ?? 'redis://127.0.0.1:6379';
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

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
    async line(re: RegExp): Promise<void> {
      while (!re.test(stderr)) {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

interface Hit {
  text: string;
  header: string;
}

it('a worker cuts a changed page under the host model a local refresh learned', async () => {
  if (!existsSync(BIN))
    throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-worker-learning-'));
  const prefix = `rf-cli-learn-${randomUUID().slice(0, 8)}`;
  const redis = connectRedis({ redis: REDIS_URL, prefix });
  const site = await startChromeSite({ pages: 10 });
  const config = join(dir, 'ragfresh.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: join(dir, 'data'),
      sources: [{ id: 'docs', urls: site.urls, every: 1000 }],
      embeddings: { kind: 'hashing', dimensions: 64 },
      fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      queue: { redis: REDIS_URL, prefix },
    }),
  );
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
    await obliterateQueues(redis, prefix).catch(() => {});
    const keys = await redis.keys(`${prefix}:polite*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    await site.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);
