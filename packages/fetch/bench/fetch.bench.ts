/**
 * Fetch benchmark: full 200 fetches, then revalidation (304) of the same URLs, over the
 * simulated web (default 50 hosts x 200 pages = 10,000 URLs) running in a child process, with
 * politeness off (no interval, no robots.txt). Prints a table: requests/s, client CPU ms per
 * request, peak RSS of this process.
 *
 *   pnpm bench:fetch            # BENCH_HOSTS, BENCH_PAGES, BENCH_CONCURRENCY override the defaults
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FetchValidators } from '@ragfresh/core';
import { Fetcher } from '@ragfresh/fetch';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);

interface PhaseResult {
  readonly phase: string;
  readonly requests: number;
  readonly outcomes: Record<string, number>;
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly peakRssMb: number;
}

async function runPhase(
  phase: string,
  urls: readonly string[],
  work: (url: string, i: number) => Promise<string>,
): Promise<PhaseResult> {
  (globalThis as { gc?: () => void }).gc?.();
  let peak = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 10);
  const outcomes: Record<string, number> = {};
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < urls.length; i = next++) {
        const outcome = await work(urls[i]!, i);
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      }
    }),
  );
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  return {
    phase,
    requests: urls.length,
    outcomes,
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    peakRssMb: peak / 2 ** 20,
  };
}

async function main(): Promise<void> {
  const child = fork(fileURLToPath(new URL('./sim-server.js', import.meta.url)), {
    stdio: 'inherit',
  });
  const urls = await new Promise<string[]>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { urls: string[] }).urls));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`sim exited with ${code}`)));
  });
  const hosts = new Set(urls.map((u) => new URL(u).host)).size;
  const fetcher = new Fetcher({
    userAgent: 'ragfresh-bench/0.1 (+https://example.org/ragfresh-bench)',
    network: { allowPrivateNetworks: true },
    robots: false,
    minIntervalMs: 0,
    perHostConcurrency: 4,
    globalConcurrency: CONCURRENCY,
    retry: { maxAttempts: 1 },
  });
  const validators: FetchValidators[] = new Array(urls.length);
  // Warm-up: renders every page once in the sim (its cache), so both phases measure the client.
  await runPhase('warm-up', urls, async (u) => (await fetcher.fetch(u)).outcome);
  const full = await runPhase('200 full fetch', urls, async (u, i) => {
    const r = await fetcher.fetch(u, { pipelineKey: 'bench' });
    if (r.outcome === 'ok') validators[i] = r.validators;
    return r.outcome;
  });
  const revalidate = await runPhase('304 revalidation', urls, async (u, i) => {
    const r = await fetcher.fetch(u, {
      pipelineKey: 'bench',
      ...(validators[i] === undefined ? {} : { validators: validators[i] }),
    });
    return r.outcome;
  });
  await fetcher.close();
  child.send('stop');

  const rows = [full, revalidate].map((p) => ({
    phase: p.phase,
    requests: p.requests,
    outcomes: Object.entries(p.outcomes)
      .map(([k, v]) => `${k}:${v}`)
      .join(' '),
    'wall s': (p.wallMs / 1000).toFixed(2),
    'req/s': Math.round(p.requests / (p.wallMs / 1000)),
    'CPU ms/req': (p.cpuMs / p.requests).toFixed(3),
    'peak RSS MB': p.peakRssMb.toFixed(0),
  }));
  const cols = Object.keys(rows[0]!) as Array<keyof (typeof rows)[0]>;
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(width[i]!)).join(' | ')} |`;
  console.log(
    `fetch bench: ${urls.length} URLs on ${hosts} sim hosts, concurrency ${CONCURRENCY}, politeness off, node ${process.version}, ${process.platform}/${process.arch}`,
  );
  console.log(line(cols.map(String)));
  console.log(line(width.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line(cols.map((c) => String(r[c]))));
  console.log(
    `max RSS of the process (incl. warm-up): ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
