/**
 * `node packages/sim/dist/bench/serve.bench.js`: how fast the sim starts and serves, so that
 * benchmarks built on it measure the client rather than the sim. Prints a table.
 */
import { startSimWeb } from '../server.js';

async function pool<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

interface Row {
  scenario: string;
  requests: number;
  ms: number;
}

async function measure(
  scenario: string,
  urls: readonly string[],
  init: (u: string) => RequestInit,
  rows: Row[],
  seen?: (u: string, res: Response) => void,
): Promise<void> {
  const t0 = performance.now();
  await pool(urls, 16, async (u) => {
    const res = await fetch(u, init(u));
    await res.arrayBuffer();
    seen?.(u, res);
  });
  rows.push({ scenario, requests: urls.length, ms: performance.now() - t0 });
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (const [hosts, pagesPerHost] of [
    [20, 100],
    [50, 200],
  ] as const) {
    const t0 = performance.now();
    const sim = await startSimWeb({
      seed: 1,
      hosts,
      pagesPerHost,
      cacheSize: hosts * pagesPerHost,
    });
    rows.push({
      scenario: `start ${hosts} hosts x ${pagesPerHost} pages`,
      requests: 0,
      ms: performance.now() - t0,
    });
    const urls = sim.urls();
    const etags = new Map<string, string>();
    await measure(`GET cold (render + gzip), ${urls.length} pages`, urls, () => ({}), rows);
    await measure(
      'GET cached, identity',
      urls,
      () => ({ headers: { 'accept-encoding': 'identity' } }),
      rows,
      (u, res) => etags.set(u, res.headers.get('etag') ?? ''),
    );
    await measure(
      `conditional GET -> 304`,
      urls,
      (u) => ({ headers: { 'if-none-match': etags.get(u) ?? '' } }),
      rows,
    );
    await sim.stop();
  }
  const header = `| scenario | requests | ms | requests/s |\n| --- | ---: | ---: | ---: |`;
  const lines = rows.map(
    (r) =>
      `| ${r.scenario} | ${r.requests} | ${r.ms.toFixed(0)} | ${r.requests === 0 ? '' : Math.round((r.requests / r.ms) * 1000)} |`,
  );
  process.stdout.write(`${header}\n${lines.join('\n')}\n`);
}

await main();
