// pnpm bench:lancedb — the LanceDB connector at scale, driven by core's Publisher in batches.
// Publishes DOCS documents x CHUNKS chunks (cold), then a 1 %-edit round (EDIT_SHARE of the
// documents get a new version, published in shared batches, replaced versions retired), and
// prints table versions, fragments, disk, CPU and peak RSS after each phase. Each run is a
// child process, so CPU (all threads, LanceDB's native ones included) and RSS are its own;
// ARENAS lists the MALLOC_ARENA_MAX values to run (`default` = unset), which only takes effect
// at process start. CONNECTOR=<module> runs another build of the connector (e.g. an older
// release) with the same driver. Runs built code (tsc -b first); Node strips this file's types.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const DOCS = Number(process.env.DOCS ?? 2_000);
const CHUNKS = Number(process.env.CHUNKS ?? 8);
const BATCH = Number(process.env.BATCH ?? 25);
const EDIT_SHARE = Number(process.env.EDIT_SHARE ?? 0.01);
const DIMS = 256;
const ARENAS = (process.env.ARENAS ?? 'default,2').split(',');

interface Snapshot {
  phase: string;
  docs: number;
  cpuMs: number;
  wallMs: number;
  versions: number;
  fragments: number;
  diskBytes: number;
  liveBytes: number;
  rows: number;
  optimizations: number;
}

interface RunResult {
  snapshots: Snapshot[];
  peakRssMb: number;
  steps: Record<string, number>;
}

function du(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const p = join(path, entry.name);
    total += entry.isDirectory() ? du(p) : statSync(p).size;
  }
  return total;
}

function embed(seed: number): number[] {
  const v: number[] = [];
  let x = (seed * 2654435761) % 2147483648;
  for (let i = 0; i < DIMS; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    v.push((x / 2147483648) * 2 - 1);
  }
  return v;
}

async function child(): Promise<void> {
  const core = await import('@ragfresh/core');
  const lancedb = await import('@lancedb/lancedb');
  const module =
    process.env.CONNECTOR === undefined
      ? await import('@ragfresh/connector-lancedb')
      : await import(pathToFileURL(process.env.CONNECTOR).href);
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 25);
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-lancedb-bench-'));
  const connector = module.createLanceDbConnector({
    path: dir,
    table: 'bench',
    ...(process.env.RETAIN_MS === undefined
      ? {}
      : { retainVersionsMs: Number(process.env.RETAIN_MS) }),
    ...(process.env.COMPACT_AT === undefined
      ? {}
      : { compactAtFragments: Number(process.env.COMPACT_AT) }),
  });
  await connector.open({ dimensions: DIMS });
  const state = new core.InMemoryStateStore();
  const publisher = await core.Publisher.open({ connector, state, graceEpochs: 1 });
  const filler = 'The quick brown fox jumps over the lazy dog while the index stays fresh. ';

  const candidate = (d: number, rev: number) => {
    const url = `https://docs-${d % 20}.example/page/${d}`;
    const docId = core.documentId('bench', url);
    const texts = Array.from(
      { length: CHUNKS },
      (_, i) => `doc ${d} rev ${rev} chunk ${i}. ${filler.repeat(9)}`,
    );
    const versions = { extractor: 'bench', chunker: 'bench', schema: '1' };
    const text = texts.join('\n\n');
    const verId = core.versionId({
      text,
      chunks: texts.map((t) => ({ text: t, headingPath: ['H'] })),
      versions,
    });
    const at = new Date(0).toISOString();
    return {
      documentId: docId,
      versionId: verId,
      sourceId: 'bench',
      url,
      contentHash: core.sha256Hex(text),
      textChars: text.length,
      chunks: texts.map((t, i) => ({
        chunkId: core.chunkId(docId, verId, i),
        documentId: docId,
        versionId: verId,
        sourceId: 'bench',
        ordinal: i,
        text: t,
        headingPath: ['H', `S${i}`],
        tokenCount: 120,
        contentHash: core.sha256Hex(t),
        provenance: {
          url,
          finalUrl: url,
          title: `Doc ${d}`,
          retrievedAt: at,
          contentChangedAt: at,
          acquisition: 'raw' as const,
        },
        embedding: embed(d * 1000 + i + rev * 7),
      })),
    };
  };

  const db = await lancedb.connect(dir, { readConsistencyInterval: 0 });
  const snapshots: Snapshot[] = [];
  const steps: Record<string, number> = {};
  const snapshot = async (phase: string, docs: number, cpuMs: number, wallMs: number) => {
    const table = await db.openTable('bench');
    const stats = await table.stats();
    snapshots.push({
      phase,
      docs,
      cpuMs,
      wallMs,
      versions: (await table.listVersions()).length,
      fragments: stats.fragmentStats.numFragments,
      diskBytes: du(dir),
      liveBytes: stats.totalBytes,
      rows: stats.numRows,
      optimizations: connector.maintenanceStats?.optimizations ?? Number.NaN,
    });
    table.close();
  };
  const publish = async (phase: string, docs: number[], rev: number) => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < docs.length; i += BATCH) {
      const report = await publisher.publish(
        docs.slice(i, i + BATCH).map((d) => candidate(d, rev)),
      );
      for (const [k, v] of Object.entries(report.timingsMs))
        if (k !== 'total') steps[k] = (steps[k] ?? 0) + (v as number);
      if (report.documents.some((r: { outcome: string }) => r.outcome !== 'published'))
        throw new Error(`unexpected outcome in ${phase}`);
    }
    const cpu = process.cpuUsage(cpu0);
    await snapshot(phase, docs.length, (cpu.user + cpu.system) / 1000, performance.now() - t0);
  };

  await publish(
    'cold',
    Array.from({ length: DOCS }, (_, d) => d),
    0,
  );
  // A deterministic 1 % spread over the corpus.
  const edits = Math.max(1, Math.round(DOCS * EDIT_SHARE));
  const step = DOCS / edits;
  await publish(
    '1 %-edit',
    Array.from({ length: edits }, (_, i) => Math.floor(i * step)),
    1,
  );
  // One more (empty-content) batch lets the edit round's replaced versions pass their grace
  // epoch and be retired, as the next refresh would.
  await publish('retire', [0], 2);
  if (typeof connector.maintain === 'function') {
    const retain = Number(process.env.RETAIN_WAIT_MS ?? 0);
    if (retain > 0) await new Promise((r) => setTimeout(r, retain));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await connector.maintain();
    const cpu = process.cpuUsage(cpu0);
    await snapshot('maintain()', 0, (cpu.user + cpu.system) / 1000, performance.now() - t0);
  }
  await publisher.close();
  await connector.close();
  db.close();
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  rmSync(dir, { recursive: true, force: true });
  const result: RunResult = { snapshots, peakRssMb: peak / 1024 / 1024, steps };
  process.stdout.write(JSON.stringify(result));
}

function run(arenas: string): Promise<RunResult> {
  const env = { ...process.env };
  if (arenas === 'default') delete env.MALLOC_ARENA_MAX;
  else env.MALLOC_ARENA_MAX = arenas;
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child'], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
    });
    proc.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as RunResult) : reject(new Error(`run exited ${code}`)),
    );
  });
}

async function main(): Promise<void> {
  const mib = (b: number) => (b / 1024 / 1024).toFixed(1);
  console.log(
    `\nLanceDB connector: ${DOCS} documents x ${CHUNKS} chunks (${DIMS}-dim), batches of ${BATCH}, then a ${EDIT_SHARE * 100} %-edit round`,
  );
  console.log(
    `node ${process.version}, ${process.platform}/${process.arch}; connector: ${process.env.CONNECTOR ?? '@ragfresh/connector-lancedb (dist)'}\n`,
  );
  for (const arenas of ARENAS) {
    const r = await run(arenas);
    console.log(`MALLOC_ARENA_MAX=${arenas}: peak RSS ${r.peakRssMb.toFixed(0)} MiB`);
    console.log(
      '| phase      |  docs | CPU ms/doc | wall ms/doc | table versions | fragments | rows   | disk MiB | live MiB | disk/live | optimize runs |',
    );
    console.log(
      '|------------|------:|-----------:|------------:|---------------:|----------:|-------:|---------:|---------:|----------:|--------------:|',
    );
    for (const s of r.snapshots) {
      const per = (ms: number) => (s.docs === 0 ? `${ms.toFixed(0)} ms` : (ms / s.docs).toFixed(2));
      console.log(
        `| ${s.phase.padEnd(10)} | ${String(s.docs).padStart(5)} | ${per(s.cpuMs).padStart(10)} | ${per(s.wallMs).padStart(11)} | ${String(s.versions).padStart(14)} | ${String(s.fragments).padStart(9)} | ${String(s.rows).padStart(6)} | ${mib(s.diskBytes).padStart(8)} | ${mib(s.liveBytes).padStart(8)} | ${(s.diskBytes / s.liveBytes).toFixed(2).padStart(9)} | ${String(s.optimizations).padStart(13)} |`,
      );
    }
    const total = Object.values(r.steps).reduce((a, b) => a + b, 0);
    console.log(
      `protocol wall time by step: ${Object.entries(r.steps)
        .map(([k, v]) => `${k} ${((v / total) * 100).toFixed(0)} %`)
        .join(', ')}\n`,
    );
  }
}

if (process.argv.includes('--child')) await child();
else await main();
