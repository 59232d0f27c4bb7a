/**
 * `node packages/sim/dist/bench/serve.bench.js`: what the sim costs per request, so benchmarks
 * built on it know they measure the client. The sim runs in a child process; the table shows
 * wall-clock throughput seen by `fetch` (16 in flight) and the sim process's own CPU time per
 * request, which does not depend on how loaded the machine is.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startSimWeb } from '../server.js';

interface Row {
  scenario: string;
  requests: number;
  ms: number;
  cpuUs: number;
}

type ToParent = { urls: string[]; startMs: number } | { cpu: number };

async function child(): Promise<void> {
  const hosts = Number(process.env.SIM_BENCH_HOSTS);
  const pagesPerHost = Number(process.env.SIM_BENCH_PAGES);
  const t0 = performance.now();
  const sim = await startSimWeb({
    seed: 1,
    hosts,
    pagesPerHost,
    cacheSize: hosts * pagesPerHost,
    logLimit: 1000,
  });
  const startMs = performance.now() - t0;
  const send = (msg: ToParent) => process.send?.(msg);
  send({ urls: sim.urls(), startMs });
  process.on('message', (msg: unknown) => {
    if (msg === 'cpu') {
      const u = process.cpuUsage();
      send({ cpu: u.user + u.system });
    } else if (msg === 'stop') {
      void sim.stop().then(() => process.exit(0));
    }
  });
}

function next(proc: ChildProcess): Promise<ToParent> {
  return new Promise((resolve) => proc.once('message', (m) => resolve(m as ToParent)));
}

async function cpuOf(proc: ChildProcess): Promise<number> {
  const reply = next(proc);
  proc.send('cpu');
  const msg = await reply;
  return 'cpu' in msg ? msg.cpu : 0;
}

async function pool<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (i < items.length) await work(items[i++] as T);
    }),
  );
}

async function parent(): Promise<void> {
  const rows: Row[] = [];
  for (const [hosts, pages] of [
    [20, 100],
    [50, 200],
  ] as const) {
    const proc = fork(fileURLToPath(import.meta.url), {
      env: {
        ...process.env,
        SIM_BENCH_CHILD: '1',
        SIM_BENCH_HOSTS: String(hosts),
        SIM_BENCH_PAGES: String(pages),
      },
    });
    const ready = await next(proc);
    if (!('urls' in ready)) throw new Error('sim child did not start');
    const urls = ready.urls;
    rows.push({
      scenario: `start ${hosts} hosts x ${pages} pages`,
      requests: 0,
      ms: ready.startMs,
      cpuUs: 0,
    });
    const etags = new Map<string, string>();
    const measure = async (
      scenario: string,
      init: (u: string) => RequestInit,
      seen?: (u: string, r: Response) => void,
    ) => {
      const cpu0 = await cpuOf(proc);
      const t0 = performance.now();
      await pool(urls, 16, async (u) => {
        const res = await fetch(u, init(u));
        await res.arrayBuffer();
        seen?.(u, res);
      });
      const ms = performance.now() - t0;
      const cpu = (await cpuOf(proc)) - cpu0;
      rows.push({ scenario, requests: urls.length, ms, cpuUs: cpu / urls.length });
    };
    await measure(`GET cold: generate + render + gzip (${urls.length} pages)`, () => ({}));
    await measure('GET cached, gzip', () => ({}));
    await measure(
      'GET cached, identity',
      () => ({ headers: { 'accept-encoding': 'identity' } }),
      (u, r) => etags.set(u, r.headers.get('etag') ?? ''),
    );
    await measure('conditional GET -> 304', (u) => ({
      headers: { 'if-none-match': etags.get(u) ?? '' },
    }));
    proc.send('stop');
    await new Promise((resolve) => proc.once('exit', resolve));
  }
  const lines = [
    '| scenario | requests | wall ms | requests/s (client) | sim CPU µs/request |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...rows.map((r) =>
      r.requests === 0
        ? `| ${r.scenario} | | ${r.ms.toFixed(0)} | | |`
        : `| ${r.scenario} | ${r.requests} | ${r.ms.toFixed(0)} | ${Math.round((r.requests / r.ms) * 1000)} | ${r.cpuUs.toFixed(0)} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

await (process.env.SIM_BENCH_CHILD === '1' ? child() : parent());
