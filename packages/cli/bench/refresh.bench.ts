// pnpm bench:refresh — the refresh engine on the simulated web (default 2,000 pages on 20
// hosts): cold ingest, a no-change refresh and a 1 %-edit refresh. The sim runs in this
// process; each phase runs the engine in a child process so its CPU time and peak RSS are the
// engine's alone. Runs built code (tsc -b first); Node strips this file's types.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HOSTS = Number(process.env.HOSTS ?? 20);
const PAGES = Number(process.env.PAGES ?? 100);
const EDIT_SHARE = Number(process.env.EDIT_SHARE ?? 0.01);

interface PhaseResult {
  wallMs: number;
  cpuMs: number;
  peakRssMb: number;
  counts: Record<string, number>;
  chunkHashes: Record<string, string[]>;
}

async function childPhase(dataDir: string, sitemaps: string[]): Promise<PhaseResult> {
  const self = fileURLToPath(import.meta.url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [self, '--child', dataDir, JSON.stringify(sitemaps)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as PhaseResult)
        : reject(new Error(`phase exited ${code}`)),
    );
  });
}

async function runChild(dataDir: string, sitemaps: string[]): Promise<void> {
  const { HashingEmbeddings } = await import('@ragfresh/core');
  const { openRuntime, resolveConfig } = await import('ragfresh');
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 25);
  const config = resolveConfig({
    userAgent: 'ragfresh-bench/0.1 (+https://example.org/bot)',
    dataDir,
    sources: sitemaps.map((s, i) => ({ id: `host-${i}`, sitemaps: [s] })),
    embeddings: new HashingEmbeddings({ dimensions: 256 }),
    fetch: {
      minIntervalMs: 0,
      allowPrivateNetworks: true,
      globalConcurrency: 32,
      perHostConcurrency: 4,
    },
  });
  const rt = await openRuntime(config);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const report = await rt.engine.refresh({ all: true });
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const chunkHashes: Record<string, string[]> = {};
  for (const s of config.sources) {
    for await (const r of rt.state.listDocuments({ sourceId: s.id }))
      chunkHashes[r.documentId] = [...(r.chunkHashes ?? [])];
  }
  await rt.close();
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  const result: PhaseResult = {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    peakRssMb: peak / 1024 / 1024,
    counts: { ...report.totals },
    chunkHashes,
  };
  process.stdout.write(JSON.stringify(result));
}

async function main(): Promise<void> {
  const { startSimWeb } = await import('@ragfresh/sim');
  const sim = await startSimWeb({
    seed: 2026,
    hosts: HOSTS,
    pagesPerHost: PAGES,
    markdownTwins: false,
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'ragfresh-bench-refresh-'));
  const sitemaps = sim.hosts().map((h) => `${sim.origin(h)}/sitemap.xml`);
  try {
    const cold = await childPhase(dataDir, sitemaps);
    const same = await childPhase(dataDir, sitemaps);
    // Edit 1 % of pages: one paragraph each, spread over every host.
    const urls = sim.urls();
    const step = Math.max(1, Math.round(1 / EDIT_SHARE));
    const edited = urls.filter((_, i) => i % step === 0);
    for (const [i, url] of edited.entries())
      sim.mutate(url, 'edit', {
        section: 0,
        text: `Bench edit ${i}: the limit is now ${i + 7} requests.`,
      });
    const edit = await childPhase(dataDir, sitemaps);
    // Chunks that really changed: chunk texts of the new versions not present before.
    let changedChunks = 0;
    for (const [doc, hashes] of Object.entries(edit.chunkHashes)) {
      const before = new Set(same.chunkHashes[doc] ?? []);
      changedChunks += new Set(hashes.filter((h) => !before.has(h))).size;
    }
    const rows: Array<[string, PhaseResult]> = [
      ['cold ingest', cold],
      ['no-change refresh', same],
      [`${(EDIT_SHARE * 100).toFixed(0)} %-edit refresh`, edit],
    ];
    const pad = (s: string | number, n: number) => String(s).padStart(n);
    console.log(
      `\nrefresh engine on the simulated web: ${urls.length} pages on ${HOSTS} hosts (LanceDB, SQLite state, hashing embeddings 256-d)`,
    );
    console.log(
      `node ${process.version}; sim in the parent process, engine in a child per phase\n`,
    );
    console.log(
      '| phase              |  wall s |  CPU s | CPU % of cold | 200s | 304s | published | chunks embedded | store writes | peak RSS MiB |',
    );
    console.log(
      '|--------------------|--------:|-------:|--------------:|-----:|-----:|----------:|----------------:|-------------:|-------------:|',
    );
    for (const [name, r] of rows) {
      const c = r.counts;
      console.log(
        `| ${name.padEnd(18)} | ${pad((r.wallMs / 1000).toFixed(2), 7)} | ${pad((r.cpuMs / 1000).toFixed(2), 6)} | ${pad(((r.cpuMs / cold.cpuMs) * 100).toFixed(1), 13)} | ${pad(c.fetched200 ?? 0, 4)} | ${pad(c.notModified ?? 0, 4)} | ${pad(c.published ?? 0, 9)} | ${pad(c.chunksEmbedded ?? 0, 15)} | ${pad(c.storeWrites ?? 0, 12)} | ${pad(r.peakRssMb.toFixed(0), 12)} |`,
      );
    }
    const noChangePct = (same.cpuMs / cold.cpuMs) * 100;
    const editPct = (edit.cpuMs / cold.cpuMs) * 100;
    console.log(
      `\nedited pages: ${edited.length}; chunks that changed: ${changedChunks}; chunks embedded: ${edit.counts.chunksEmbedded}`,
    );
    console.log(
      `targets: no-change CPU <= 3 % of cold: ${noChangePct.toFixed(1)} % ${noChangePct <= 3 ? 'met' : 'MISSED'}; 1 %-edit <= 5 %: ${editPct.toFixed(1)} % ${editPct <= 5 ? 'met' : 'MISSED'}; embedded = changed: ${edit.counts.chunksEmbedded === changedChunks ? 'met' : 'MISSED'}`,
    );
  } finally {
    await sim.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child')
  await runChild(process.argv[3]!, JSON.parse(process.argv[4]!) as string[]);
else await main();
