// pnpm bench:noop — issue 37 item 2: the 304 path beside its floor. On the simulated web (SIZES
// pages, default 1000 and 5000, 20 hosts): a cold refresh (setup), then a refresh with nothing
// changed, in its own process, CPU of `engine.refresh` only; then the floor — for every URL one
// state read and one conditional request, same concurrency, same HTTP client — and the floor
// plus one record write per 304 (what every 304 cost before observations were batched).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { heavyProcessTuning } from '../dist/process-tuning.js';
import type { FloorInput, FloorResult } from './noop-floor.ts';
import { runPhaseProcess } from './phase-process.ts';
import type { RagfreshPhaseInput, RagfreshRefreshResult } from './ragfresh-phase.ts';

const SIZES = (process.env.SIZES ?? '1000,5000').split(',').map(Number);
const HOSTS = 20;
// The bench config's fetch.globalConcurrency (ragfresh-config.ts).
const CONCURRENCY = 32;
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const progress = (msg: string) => process.stderr.write(`[bench:noop] ${msg}\n`);

interface Row {
  readonly pages: number;
  readonly refresh: RagfreshRefreshResult;
  readonly floor: FloorResult;
  readonly floorWrite: FloorResult;
}

async function benchSize(size: number): Promise<Row> {
  const { startSimWeb } = await import('@ragfresh/sim');
  const sim = await startSimWeb({
    seed: 2026,
    hosts: HOSTS,
    pagesPerHost: Math.ceil(size / HOSTS),
    markdownTwins: false,
  });
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-bench-noop-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  const sitemaps = sim.hosts().map((h) => `${sim.origin(h)}/sitemap.xml`);
  const rf: RagfreshPhaseInput = { mode: 'refresh', dataDir, sitemaps };
  try {
    progress(`${size} pages: cold refresh (setup)`);
    await runPhaseProcess<RagfreshRefreshResult>(
      here('./ragfresh-phase.ts'),
      rf,
      heavyProcessTuning(),
    );
    progress(`${size} pages: no-change refresh`);
    const refresh = await runPhaseProcess<RagfreshRefreshResult>(
      here('./ragfresh-phase.ts'),
      rf,
      heavyProcessTuning(),
    );
    progress(`${size} pages: floor (state read + conditional request per URL)`);
    const floor = await runPhaseProcess<FloorResult>(here('./noop-floor.ts'), {
      dataDir,
      concurrency: CONCURRENCY,
      write: false,
    } satisfies FloorInput);
    const floorWrite = await runPhaseProcess<FloorResult>(here('./noop-floor.ts'), {
      dataDir,
      concurrency: CONCURRENCY,
      write: true,
    } satisfies FloorInput);
    return { pages: sim.urls().length, refresh, floor, floorWrite };
  } finally {
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows: Row[] = [];
for (const size of SIZES) rows.push(await benchSize(size));
const perUrl = (cpuMs: number, urls: number) => (cpuMs / urls).toFixed(3);
console.log(
  `\nno-change refresh vs its floor (simulated web, ${HOSTS} hosts, ${CONCURRENCY} requests in flight; node ${process.version}; load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ')}); CPU per URL = user+system of the measured loop / URLs, ms\n`,
);
console.log(
  'pages   304s  ragfresh refresh  floor: read + conditional GET  floor + a record write per 304  ragfresh / floor',
);
for (const r of rows) {
  const urls = r.floor.urls;
  console.log(
    [
      String(r.pages).padStart(5),
      String(r.refresh.engineCounts.notModified ?? 0).padStart(6),
      perUrl(r.refresh.cpuMs, urls).padStart(16),
      perUrl(r.floor.cpuMs, urls).padStart(29),
      perUrl(r.floorWrite.cpuMs, urls).padStart(31),
      `${(r.refresh.cpuMs / r.floor.cpuMs).toFixed(2)}x`.padStart(16),
    ].join('  '),
  );
}
