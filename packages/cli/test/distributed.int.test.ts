import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openStateStore } from '@ragfresh/core';
import { connectRedis, obliterateQueues, queueStatus } from '@ragfresh/queue';
import { startSimWeb } from '@ragfresh/sim';
import { afterAll, expect, it } from 'vitest';

// `ragfresh refresh` and `ragfresh worker` + `watch --distributed` on the same site with the
// same settings must end in the same index: the same documents at the same versions, the same
// deletion proposals. The config opens the loopback site through `fetch.allow` only (no
// `allowPrivateNetworks`) and asks for 2 gone checks instead of the default 3: before the one
// composition root, the distributed roles dropped both (0 of 6 pages published; deletions on the
// default policy). Real Redis and the built CLI; fails loudly without either.

const REDIS_URL = process.env.RAGFRESH_TEST_REDIS ?? 'redis://127.0.0.1:6379';
const BIN = resolve(import.meta.dirname, '../dist/bin.js');
const PAGES = 6;

const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function cli(config: string, ...args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [BIN, ...args, '--config', config],
      { timeout: 120_000 },
      (err, stdout, stderr) =>
        done({
          code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
          stdout,
          stderr,
        }),
    );
  });
}

function spawnCli(config: string, ...args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args, '--config', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.push(child);
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  return {
    child,
    exited: new Promise<number | null>((r) => child.on('exit', (code) => r(code))),
    async line(re: RegExp): Promise<void> {
      while (!re.test(stderr)) {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/** What the index ended as: every document's status and version, and the pending proposals. */
async function outcome(dataDir: string) {
  const state = await openStateStore(`sqlite:${join(dataDir, 'state.sqlite')}`);
  try {
    const documents: Record<string, string> = {};
    for await (const r of state.listDocuments())
      documents[r.documentId] = `${r.status} ${r.currentVersionId ?? '-'} gone ${r.goneCount ?? 0}`;
    const proposals = (await state.listReviewItems({ status: 'pending' }))
      .map((i) => `${i.kind} ${i.reason} ${i.url}`)
      .sort();
    return { documents, proposals };
  } finally {
    await state.close();
  }
}

it('a distributed run with fetch.allow and deletion.goneChecks ends where refresh ends', async () => {
  if (!existsSync(BIN))
    throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-distributed-'));
  const prefix = `rf-dist-${randomUUID().slice(0, 8)}`;
  const redis = connectRedis({ redis: REDIS_URL, prefix });
  const sim = await startSimWeb({ seed: 31, hosts: 1, pagesPerHost: PAGES, markdownTwins: false });
  const host = sim.hosts()[0]!;
  const origin = sim.origin(host);
  const urls = sim.urls(host);
  const configOf = (name: string, queue: boolean): { config: string; dataDir: string } => {
    const folder = join(dir, name);
    mkdirSync(folder);
    const config = join(folder, 'ragfresh.config.json');
    const dataDir = join(folder, 'data');
    writeFileSync(
      config,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir,
        sources: [
          // Due again a second later; the objective is not what is tested (a loaded machine).
          // The sitemap drops the page that goes away (an inventory diff); a second source lists
          // it by URL, so only its 404s (two, with goneChecks 2; three by default) propose it.
          {
            id: 'docs',
            sitemaps: [`${origin}/sitemap.xml`],
            every: 1000,
            freshnessObjective: '1h',
          },
          { id: 'pinned', urls: [urls[4]!], every: 1000, freshnessObjective: '1h' },
        ],
        embeddings: { kind: 'hashing', dimensions: 64 },
        fetch: { minIntervalMs: 0, allow: [new URL(origin).host] },
        deletion: { goneChecks: 2, minGoneAge: 0 },
        ...(queue ? { queue: { redis: REDIS_URL, prefix } } : {}),
      }),
    );
    return { config, dataDir };
  };
  const local = configOf('local', false);
  const distributed = configOf('distributed', true);
  const worker = spawnCli(distributed.config, 'worker', '--role', 'both', '--name', 'w1');
  let windows = 0;
  /** One `watch --distributed` pass, then waits until its window is finished. */
  const distributedRun = async (): Promise<void> => {
    const scheduler = spawnCli(distributed.config, 'watch', '--distributed');
    await scheduler.line(/pinned: \d+ pages in \d+ jobs/);
    await scheduler.line(/docs: \d+ pages in \d+ jobs/);
    scheduler.child.kill('SIGTERM');
    expect(await scheduler.exited).toBe(0);
    windows += 2;
    for (;;) {
      const s = await queueStatus(redis, prefix);
      const finish = s.queues.find((q) => q.name === 'finish');
      const busy = s.queues.some((q) => q.waiting + q.active + q.delayed > 0);
      if (finish !== undefined && finish.completed >= windows && !busy) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  try {
    await worker.line(/w1 taking page and publish work/);
    for (let run = 1; run <= 3; run++) {
      if (run === 2) {
        sim.mutate(urls[2]!, 'edit');
        sim.mutate(urls[4]!, 'delete404');
      }
      const r = await cli(local.config, 'refresh', '--all');
      // 5 once a deletion proposal waits for review.
      expect(run === 1 ? [0] : [0, 5], r.stderr).toContain(r.code);
      await distributedRun();
      // The next run starts in a new window of the source's `every` (1 s).
      await new Promise((r) => setTimeout(r, 1100));
    }
    const expected = await outcome(local.dataDir);
    const got = await outcome(distributed.dataDir);
    // The local run is what the settings ask for: every page published, the edited page at a new
    // version, two 404s over two runs proposing the deletion (three would be the default).
    expect(Object.keys(expected.documents)).toHaveLength(PAGES + 1);
    expect(Object.values(expected.documents).filter((v) => v.startsWith('healthy '))).toHaveLength(
      PAGES - 1,
    );
    expect(expected.proposals).toEqual([
      `deletion confirmed-gone ${urls[4]}`,
      `deletion inventory-diff ${urls[4]}`,
    ]);
    expect(got).toEqual(expected);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  } finally {
    await obliterateQueues(redis, prefix).catch(() => {});
    const keys = await redis.keys(`${prefix}:polite*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);
