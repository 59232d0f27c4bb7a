// pnpm bench:refresh — the acceptance benchmark of issues 11 and 37. For each corpus size
// (default 1,000, 10,000 and 20,000 simulated pages on 20 hosts): a cold ingest, a refresh with nothing
// changed, and a refresh after editing 1 % of the pages, by ragfresh (through the CLI
// package's public API, embedded LanceDB + SQLite state) and by a conventional LangChain.js
// pipeline (langchain-phase.ts) on the same pages. The sim runs in this process; every phase
// runs in its own child process, so its CPU and peak RSS are that phase's alone. Runs built
// code (the script runs `tsc -b` first); Node strips the types of these files. After the rounds
// of the sizes in PROFILE_SIZES, one more cold ingest into a fresh data dir runs under the CPU
// profiler (cpu-stages.ts), for the table of where the cold CPU goes by stage.
//
// SIZES=1000 (or --sizes=1000,5000) picks sizes; HOSTS, EDIT_SHARE, CLI_RUNS, LANGCHAIN=0
// (ragfresh only), LANGCHAIN_MAX (the largest size the baseline runs at; default 10000: its
// in-memory store needs GiBs beyond), ROUNDS (cold,no-change,edit: the rounds to run, in that
// order), LC_ROUNDS (the rounds the baseline runs; default all of ROUNDS), PROFILE_SIZES (default: the smallest size; 0 = none),
// LC_CHUNK_SIZE / LC_CHUNK_OVERLAP tune the run.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { heavyProcessTuning } from '../dist/process-tuning.js';
import { type ChunkSnapshot, changedChunks } from './changed-chunks.ts';
import { type CpuProfile, type StageRow, stagesOf } from './cpu-stages.ts';
import type { LangChainPhaseInput, LangChainPhaseResult } from './langchain-phase.ts';
import { diskBytes, fileCount, measureStart, runPhaseProcess } from './phase-process.ts';
import { benchConfig } from './ragfresh-config.ts';
import type {
  RagfreshInspectResult,
  RagfreshPhaseInput,
  RagfreshRefreshResult,
} from './ragfresh-phase.ts';
import {
  detailsTable,
  issue37Lines,
  type ProfiledCold,
  type RagfreshRound,
  type RoundName,
  type RoundRow,
  resultsTable,
  stagesReport,
  targetLines,
} from './refresh-report.ts';

function option(name: string, fallback: string): string {
  const flag = process.argv.find((a) => a.startsWith(`--${name.toLowerCase()}=`));
  return flag?.slice(name.length + 3) ?? process.env[name.toUpperCase()] ?? fallback;
}

function positive(name: string, fallback: string): number {
  const n = Number(option(name, fallback));
  if (!(n > 0)) throw new Error(`${name} must be a positive number, got ${option(name, fallback)}`);
  return n;
}

const SIZES = option('SIZES', '1000,10000,20000')
  .split(',')
  .map((s) => Number(s.trim()));
if (SIZES.some((s) => !Number.isSafeInteger(s) || s < 1))
  throw new Error(
    `SIZES must be a comma-separated list of page counts, got ${option('SIZES', '')}`,
  );
const HOSTS = positive('HOSTS', '20');
const EDIT_SHARE = positive('EDIT_SHARE', '0.01');
const CLI_RUNS = positive('CLI_RUNS', '5');
const LANGCHAIN = option('LANGCHAIN', '1') !== '0';
const LANGCHAIN_MAX = positive('LANGCHAIN_MAX', '10000');
const ALL_ROUNDS = ['cold', 'no-change', 'edit'] as const satisfies readonly RoundName[];
const ROUNDS = option('ROUNDS', ALL_ROUNDS.join(',')).split(',');
const LC_ROUNDS = option('LC_ROUNDS', ROUNDS.join(',')).split(',');
if ([...ROUNDS, ...LC_ROUNDS].some((r) => !(ALL_ROUNDS as readonly string[]).includes(r)))
  throw new Error(`ROUNDS and LC_ROUNDS name rounds of ${ALL_ROUNDS.join(', ')}`);
const PROFILE_SIZES = option('PROFILE_SIZES', String(Math.min(...SIZES)))
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => n > 0);
const LC_CHUNK_SIZE = positive('LC_CHUNK_SIZE', '1000');
const LC_CHUNK_OVERLAP = Number(option('LC_CHUNK_OVERLAP', '200'));

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const RAGFRESH_PHASE = here('./ragfresh-phase.ts');
const LANGCHAIN_PHASE = here('./langchain-phase.ts');
const CLI_BIN = here('../dist/bin.js');

const progress = (msg: string) => process.stderr.write(`[bench:refresh] ${msg}\n`);

async function benchSize(size: number): Promise<{ rows: RoundRow[]; profiled?: ProfiledCold }> {
  const { startSimWeb } = await import('@ragfresh/sim');
  const pagesPerHost = Math.ceil(size / HOSTS);
  const sim = await startSimWeb({ seed: 2026, hosts: HOSTS, pagesPerHost, markdownTwins: false });
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-bench-refresh-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  const sitemaps = sim.hosts().map((h) => `${sim.origin(h)}/sitemap.xml`);
  const configPath = join(dir, 'ragfresh.config.json');
  writeFileSync(configPath, JSON.stringify(benchConfig(dataDir, sitemaps), null, 2));
  const rfInput = (mode: RagfreshPhaseInput['mode']): RagfreshPhaseInput => ({
    mode,
    dataDir,
    sitemaps,
  });
  const lcInput: LangChainPhaseInput = {
    statePath: join(dir, 'langchain-state.v8'),
    sitemaps,
    chunkSize: LC_CHUNK_SIZE,
    chunkOverlap: LC_CHUNK_OVERLAP,
  };
  const urls = sim.urls();
  const rows: RoundRow[] = [];
  let rfBefore: ChunkSnapshot = {};
  let lcBefore: ChunkSnapshot = {};
  let profiled: ProfiledCold | undefined;
  try {
    for (const round of ALL_ROUNDS.filter((r) => ROUNDS.includes(r))) {
      let editedPages = 0;
      if (round === 'edit') {
        // One paragraph of every 100th page (for 1 %), spread over every host.
        const step = Math.max(1, Math.round(1 / EDIT_SHARE));
        const edited = urls.filter((_, i) => i % step === 0);
        for (const [i, url] of edited.entries())
          sim.mutate(url, 'edit', {
            section: 0,
            text: `Bench edit ${i}: the limit is now ${i + 7} requests.`,
          });
        editedPages = edited.length;
      }
      const label = `${urls.length} pages, ${round}`;
      progress(`${label}: ragfresh refresh`);
      // The refresh runs with the process settings the CLI gives its heavy commands (bounded
      // V8 old space, MALLOC_ARENA_MAX=2): what `ragfresh refresh` users get.
      const refresh = await runPhaseProcess<RagfreshRefreshResult>(
        RAGFRESH_PHASE,
        rfInput('refresh'),
        heavyProcessTuning(),
      );
      // Each phase's figures as they come, so a run stopped part-way still says what it measured.
      const m = refresh.memory;
      progress(
        `${label}: ragfresh ${(refresh.cpuMs / 1000).toFixed(1)} s CPU (${(refresh.cpuMs / urls.length).toFixed(2)} ms/page, main thread ${(refresh.mainThreadCpuMs / urls.length).toFixed(2)}), peak RSS ${refresh.peakRssMiB.toFixed(0)} MiB (highest sample ${m.rssMiB.toFixed(0)} = heap ${m.heapTotalMiB.toFixed(0)} + external ${m.externalMiB.toFixed(0)} + other ${(m.rssMiB - m.heapTotalMiB - m.externalMiB).toFixed(0)}); inspecting the store`,
      );
      const inspect = await runPhaseProcess<RagfreshInspectResult>(
        RAGFRESH_PHASE,
        rfInput('inspect'),
      );
      if (inspect.chunks !== inspect.stateChunks)
        progress(
          `${label}: WARNING the published view holds ${inspect.chunks} chunks, the state records name ${inspect.stateChunks}`,
        );
      progress(`${label}: CLI start, ${CLI_RUNS} runs each of --help and status`);
      const cliHelp = await measureStart([CLI_BIN, '--help'], CLI_RUNS);
      const cliStatus = await measureStart(
        [CLI_BIN, 'status', '--config', configPath],
        CLI_RUNS,
        [0, 3, 4],
      );
      const ragfresh: RagfreshRound = {
        ...refresh,
        inspect,
        changedChunks: changedChunks(rfBefore, inspect.snapshot),
        lanceBytes: inspect.lancePath === undefined ? Number.NaN : diskBytes(inspect.lancePath),
        stateBytes:
          inspect.statePath === undefined
            ? Number.NaN
            : ['', '-wal', '-shm', '-journal']
                .map((suffix) => diskBytes(`${inspect.statePath}${suffix}`))
                .reduce((a, b) => a + b, 0),
        rawBytes: diskBytes(join(dataDir, 'raw')),
        rawFiles: fileCount(join(dataDir, 'raw')),
        cliHelp,
        cliStatus,
      };
      rfBefore = inspect.snapshot;
      let langchain: RoundRow['langchain'];
      if (LANGCHAIN && size <= LANGCHAIN_MAX && LC_ROUNDS.includes(round)) {
        progress(`${label}: LangChain pipeline`);
        const lc = await runPhaseProcess<LangChainPhaseResult>(LANGCHAIN_PHASE, lcInput);
        langchain = { ...lc, changedChunks: changedChunks(lcBefore, lc.snapshot) };
        lcBefore = lc.snapshot;
        progress(`${label}: LangChain ${(lc.cpuMs / 1000).toFixed(1)} s CPU`);
      }
      rows.push({
        pages: urls.length,
        round,
        editedPages,
        ragfresh,
        ...(langchain === undefined ? {} : { langchain }),
      });
    }
    if (PROFILE_SIZES.includes(size)) {
      // A separate cold ingest: the profiler's own cost never enters the measured rounds.
      const profileDir = join(dir, 'profiled');
      mkdirSync(profileDir);
      const profilePath = join(dir, 'cold.cpuprofile');
      progress(`${urls.length} pages: one more cold refresh under the CPU profiler`);
      const cold = await runPhaseProcess<RagfreshRefreshResult>(
        RAGFRESH_PHASE,
        { mode: 'refresh', dataDir: profileDir, sitemaps, profile: profilePath },
        heavyProcessTuning(),
      );
      const stages: StageRow[] = stagesOf(
        JSON.parse(readFileSync(profilePath, 'utf8')) as CpuProfile,
      );
      profiled = {
        pages: urls.length,
        cpuMs: cold.cpuMs,
        mainThreadCpuMs: cold.mainThreadCpuMs,
        threads: cold.threads,
        stages,
      };
    }
  } finally {
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return profiled === undefined ? { rows } : { rows, profiled };
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');
const loadAtStart = load();
const rows: RoundRow[] = [];
const profiles: ProfiledCold[] = [];
for (const size of SIZES) {
  const one = await benchSize(size);
  rows.push(...one.rows);
  if (one.profiled !== undefined) profiles.push(one.profiled);
}

console.log(
  `\nrefresh engine vs a conventional LangChain.js pipeline on the simulated web (seed 2026, ${HOSTS} hosts; hashing embeddings, 256 dimensions; node ${process.version}; load average 1/5/15 min ${loadAtStart} at the start, ${load()} at the end)`,
);
console.log(
  'ragfresh: LanceDB + SQLite state; LangChain: fetch + linkedom + Readability + Turndown + ' +
    `MarkdownTextSplitter (${LC_CHUNK_SIZE} chars, overlap ${LC_CHUNK_OVERLAP}) + index() into an in-memory store. ` +
    'CPU = user+system of the phase process during the work; peak RSS = the phase process max RSS; ' +
    'live = bytes of the published chunk rows (id + text + metadata JSON + float32 vector); ' +
    'changed chunks = per document, chunk texts in the index now that were not before; CLI = median of ' +
    `${CLI_RUNS} fresh processes, wall ms (CPU ms).\n`,
);
console.log(resultsTable(rows, EDIT_SHARE));
console.log('\n');
console.log(detailsTable(rows));
console.log('\ntargets (issue 37):');
for (const line of issue37Lines(rows, profiles)) console.log(line);
console.log('\ntargets (issue 11):');
for (const line of targetLines(rows)) console.log(line);
for (const p of profiles) console.log(`\n${stagesReport(p)}`);
