// pnpm bench:freshness — issue 19: ragfresh and LangChain.js `index()` side by side on the same
// simulated web, round after round of the ways the web misbehaves. Per round and pipeline it
// audits what an ordinary reader of the current view retrieves (one definition for both, in
// freshness-audit.ts), runs a concurrent reader that looks at the view after every store write
// of the update, and counts embeddings and CPU. Prints a Markdown table and writes an SVG chart.
//
// The sim runs in a child process (freshness-sim.ts), so its CPU is never counted; the pipelines
// run one after another in this process. PAGES (default 300), HOSTS (4), SEED (2026), OUT (SVG
// path, default docs/freshness.svg) tune the run.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Audit,
  audit,
  hashes,
  type PageTruth,
  readerVerdict,
  type ViewChunk,
  type ViewHashes,
} from './freshness-audit.ts';
import { freshnessChart } from './freshness-chart.ts';
import { type LangChainMode, LangChainPipeline } from './freshness-langchain.ts';
import { RagfreshPipeline } from './freshness-ragfresh.ts';

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const PAGES = Number(env('PAGES', '300'));
const HOSTS = Number(env('HOSTS', '4'));
const SEED = Number(env('SEED', '2026'));
const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));
const OUT = resolve(env('OUT', here('../../../docs/freshness.svg')));
const progress = (msg: string) => process.stderr.write(`[bench:freshness] ${msg}\n`);

// --- the simulated web, over IPC ------------------------------------------------------------
interface Facts {
  phrase: string;
  sections: { phrase: string }[];
}
class SimClient {
  readonly #child: ChildProcess;
  #next = 1;
  readonly #waiting = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>();
  readonly ready: Promise<void>;

  constructor() {
    this.#child = fork(
      here('./freshness-sim.ts'),
      [JSON.stringify({ seed: SEED, hosts: HOSTS, pages: Math.ceil(PAGES / HOSTS) })],
      { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    );
    process.on('exit', () => this.#child.kill());
    let started: () => void;
    this.ready = new Promise((r) => {
      started = r;
    });
    this.#child.on('message', (m: { id: number; result?: unknown; error?: string }) => {
      if (m.id === 0) return started();
      const w = this.#waiting.get(m.id);
      this.#waiting.delete(m.id);
      if (m.error !== undefined) w?.fail(new Error(m.error));
      else w?.ok(m.result);
    });
  }

  call<T>(method: string, ...args: unknown[]): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((ok, fail) => {
      this.#waiting.set(id, { ok: ok as (v: unknown) => void, fail });
      this.#child.send({ id, method, args });
    });
  }
}

// --- rounds ---------------------------------------------------------------------------------
type Round =
  | 'cold'
  | 'no-change'
  | '1%-edit+shrink'
  | 'traps'
  | 'recovery'
  | 'partial-60%'
  | 'sitemap-drop-40%';
const ROUNDS: readonly Round[] = [
  'cold',
  'no-change',
  '1%-edit+shrink',
  'traps',
  'recovery',
  'partial-60%',
  'sitemap-drop-40%',
];
const TRAPS = [
  ['consentWall', 2, {}],
  ['challenge', 2, {}],
  ['soft404', 2, {}],
  ['appShell', 2, {}],
  ['outage', 3, { retryAfter: 1 }],
  ['delete410', 1, {}],
  ['rateLimit', 1, { retryAfter: 1 }],
  ['timestampChurn', 3, {}],
  ['offHostRedirect', 1, {}],
] as const;

interface PipelineRow {
  readonly round: Round;
  readonly pipeline: string;
  readonly audit: Audit;
  readonly twoVersions: number;
  readonly none: number;
  readonly embedded: number;
  readonly cpuMs: number;
  readonly readerSnapshots: number;
}

interface Pipeline {
  readonly name: string;
  view(): Promise<ViewChunk[]> | ViewChunk[];
  /** Runs one round; `reader` must be called after every store write. */
  run(round: Round, urls: readonly string[], reader: () => Promise<void> | void): Promise<void>;
  embedded(): number;
  close(): Promise<void>;
}

function langchain(mode: LangChainMode): Pipeline {
  const p = new LangChainPipeline(mode);
  return {
    name: `LangChain index() ${mode === 'fetched_at' ? 'incremental + fetched_at' : mode}`,
    view: () => p.view(),
    async run(_round, urls, reader) {
      p.afterWrite = () => void reader();
      await p.round(urls);
      p.afterWrite = () => {};
    },
    embedded: () => p.embeddings.texts,
    close: async () => {},
  };
}

async function ragfresh(
  name: string,
  dir: string,
  sitemaps: readonly string[],
  autoApprove: boolean,
): Promise<Pipeline> {
  const p = await RagfreshPipeline.open(dir, sitemaps, autoApprove, {});
  return {
    name,
    view: () => p.view(),
    async run(_round, _urls, reader) {
      p.observe(async () => {
        await reader();
      });
      await p.round();
      p.observe(undefined);
    },
    embedded: () => p.embeddings.texts,
    close: () => p.close(),
  };
}

async function main(): Promise<void> {
  const started = performance.now();
  const loadStart = loadavg().map((l) => l.toFixed(1));
  const sim = new SimClient();
  await sim.ready;
  const hosts = await sim.call<string[]>('hosts');
  const listing = await sim.call<string>('listingOrigin');
  const sitemaps = hosts.map((h) => `${listing}/${h}.xml`);
  const allUrls = await sim.call<string[]>('urls');
  const byHost = new Map<string, string[]>();
  for (const h of hosts) byHost.set(h, await sim.call<string[]>('urls', h));
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-bench-freshness-'));

  // Ground truth, kept beside the sim: each page's state and its current / earlier phrases.
  const truth = new Map<
    string,
    { state: PageTruth['state']; phrases: string[]; retired: Set<string> }
  >();
  const factsOf = async (url: string) => {
    const f = await sim.call<Facts>('pageFacts', url);
    return [f.phrase, ...f.sections.map((s) => s.phrase)];
  };
  for (const url of allUrls)
    truth.set(url, { state: 'ok', phrases: await factsOf(url), retired: new Set() });
  const refreshFacts = async (url: string, extra: string[] = []) => {
    const t = truth.get(url)!;
    const now = [...(await factsOf(url)), ...extra];
    for (const p of t.phrases) if (!now.includes(p)) t.retired.add(p);
    t.phrases = now;
  };

  const pipelines: Pipeline[] = [
    langchain('incremental'),
    langchain('full'),
    langchain('fetched_at'),
    await ragfresh('ragfresh (defaults)', join(dir, 'rf-default'), sitemaps, false),
    await ragfresh('ragfresh (autoApprove: true)', join(dir, 'rf-auto'), sitemaps, true),
  ];

  // Pages picked for the rounds, spread over the hosts (never a home page).
  const pool = allUrls.filter((u) => new URL(u).pathname !== '/');
  let seed = SEED;
  const random = () => {
    // mulberry32: the same pages are picked in every run of the same seed.
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const order = pool.map((u) => [random(), u] as const).sort((a, b) => a[0] - b[0]);
  let picked = 0;
  const pick = () => order[picked++ % order.length]![1];
  const trapped: string[] = [];
  const partial: string[] = [];
  const rows: PipelineRow[] = [];

  for (const round of ROUNDS) {
    // Apply the round's changes to the web.
    if (round === '1%-edit+shrink') {
      const edits = Math.max(1, Math.round(allUrls.length / 100));
      for (let i = 0; i < edits; i++) {
        const url = pick();
        const sentence = `Freshness edit ${i}: the limit is now ${i + 7} requests per second.`;
        await sim.call('mutate', url, 'edit', { section: 0, text: sentence });
        await refreshFacts(url, [sentence]);
      }
      const shrunk = pick();
      await sim.call('mutate', shrunk, 'shrink', { keepSections: 1 });
      await refreshFacts(shrunk);
    }
    if (round === 'traps') {
      for (const [kind, n, opts] of TRAPS) {
        for (let i = 0; i < n; i++) {
          const url = pick();
          await sim.call('mutate', url, kind, opts);
          trapped.push(url);
          if (kind === 'delete410') truth.get(url)!.state = 'gone';
          else if (kind !== 'timestampChurn') truth.get(url)!.state = 'trap';
        }
      }
    }
    if (round === 'recovery') {
      for (const url of trapped) {
        await sim.call('mutate', url, 'restore');
        truth.get(url)!.state = 'ok';
      }
    }
    if (round === 'partial-60%') {
      // Only 60 % of the URLs answer in this run: the others fail (503 without Retry-After),
      // as when a crawl is cut short by an outage. Restored after the round.
      for (const h of hosts)
        for (const url of byHost.get(h)!.slice(Math.ceil(byHost.get(h)!.length * 0.6))) {
          await sim.call('mutate', url, 'outage', { retryAfter: null });
          partial.push(url);
          truth.get(url)!.state = 'trap';
        }
    }
    if (round === 'sitemap-drop-40%') {
      for (const url of partial.splice(0)) {
        await sim.call('mutate', url, 'restore');
        truth.get(url)!.state = 'ok';
      }
      // The sitemaps stop listing 40 % of the pages; the pages still answer 200.
      for (const h of hosts) {
        const urls = byHost.get(h)!;
        await sim.call('setListing', h, urls.slice(0, Math.ceil(urls.length * 0.6)));
      }
    }
    const roundTruth = new Map<string, PageTruth>(
      [...truth].map(([u, t]) => [
        u,
        { state: t.state, phrases: t.phrases, retired: [...t.retired] },
      ]),
    );
    const listed =
      round === 'sitemap-drop-40%'
        ? hosts.flatMap((h) => byHost.get(h)!.slice(0, Math.ceil(byHost.get(h)!.length * 0.6)))
        : hosts.flatMap((h) => byHost.get(h)!);

    for (const p of pipelines) {
      const before = hashes(await p.view());
      const seen: ViewHashes[] = [];
      let readerCpu = 0;
      const reader = async () => {
        const c0 = process.cpuUsage();
        seen.push(hashes(await p.view()));
        const c = process.cpuUsage(c0);
        readerCpu += (c.user + c.system) / 1000;
      };
      const embedded0 = p.embedded();
      const cpu0 = process.cpuUsage();
      await p.run(round, listed, reader);
      const cpu = process.cpuUsage(cpu0);
      const view = await p.view();
      const verdict = readerVerdict(before, hashes(view), seen);
      const row: PipelineRow = {
        round,
        pipeline: p.name,
        audit: audit(view, roundTruth),
        ...verdict,
        embedded: p.embedded() - embedded0,
        cpuMs: (cpu.user + cpu.system) / 1000 - readerCpu,
        readerSnapshots: seen.length,
      };
      rows.push(row);
      progress(
        `${round.padEnd(17)} ${p.name.padEnd(38)} embedded ${row.embedded}, CPU ${row.cpuMs.toFixed(0)} ms, reader ${seen.length} snapshots`,
      );
    }
  }
  for (const p of pipelines) await p.close();
  await sim.call('stop').catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });

  const wallS = (performance.now() - started) / 1000;
  const loadEnd = loadavg().map((l) => l.toFixed(1));
  console.log(
    `\nfreshness: ${allUrls.length} simulated pages on ${HOSTS} hosts (seed ${SEED}); hashing embeddings 256 dims; node ${process.version}; ${wallS.toFixed(0)} s wall; load average ${loadStart.join(' / ')} at the start, ${loadEnd.join(' / ')} at the end\n`,
  );
  console.log(resultsTable(rows));
  writeFileSync(
    OUT,
    freshnessChart(
      rows,
      ROUNDS,
      pipelines.map((p) => p.name),
    ),
  );
  console.log(`\nchart written to ${OUT}`);
}

export function resultsTable(rows: readonly PipelineRow[]): string {
  const head = [
    'round',
    'pipeline',
    'stale docs',
    'docs lost',
    'good copies lost',
    'gone still indexed',
    'interstitial chunks',
    'duplicate chunks',
    'seen 2 versions / none',
    'embeddings',
    'CPU ms',
  ];
  const lines = [
    `| ${head.join(' | ')} |`,
    `|${head.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`,
  ];
  for (const r of rows) {
    const a = r.audit;
    lines.push(
      `| ${[
        r.round,
        r.pipeline,
        a.stale,
        a.lost,
        a.goodCopiesLost,
        a.goneIndexed,
        a.interstitialChunks,
        a.duplicateChunks,
        `${r.twoVersions} / ${r.none}`,
        r.embedded,
        Math.round(r.cpuMs),
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

export type { PipelineRow, Round };

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  await main();
