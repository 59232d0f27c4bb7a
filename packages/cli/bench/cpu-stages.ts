// Where a phase's CPU goes, by pipeline stage: the refresh phase records a V8 CPU profile of its
// measured section (inspector Profiler, main thread only) and the main thread's own CPU time
// (/proc/self/task/<pid>/stat). This attributes every non-idle sample to the stage of the
// nearest frame on its stack, from the leaf up, that a rule below recognises (node internals
// and unrecognised frames pass the sample to their caller), and shares the main thread's CPU
// out by sample counts: a sample's time delta is wall time, which on a loaded machine includes
// the time the thread waited for a core. What the main thread did not do — LanceDB's native
// threads, libuv's pool (gzip of snapshots, fs), V8's helper threads — is the process CPU
// minus the main thread's.
import { readdirSync, readFileSync } from 'node:fs';

/** The subset of `Profiler.Profile` this reads. */
export interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string };
    readonly children?: readonly number[];
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** First match wins, tested against `url` (and `functionName` for V8's pseudo-frames). */
const STAGES: readonly (readonly [stage: string, test: RegExp])[] = [
  ['GC', /^\(garbage collector\)$/],
  ['parse HTML (linkedom, htmlparser2)', /\/(linkedom|htmlparser2|parse5|entities|domhandler)\//],
  ['Readability', /\/@mozilla\/readability\//],
  ['Markdown (turndown)', /\/turndown/],
  [
    'chunk (@ragfresh/extract chunking)',
    /\/packages\/extract\/(dist|src)\/(chunk|split|markdown-split)/,
  ],
  ['classify + extract (@ragfresh/extract)', /\/packages\/extract\//],
  ['raw snapshots (@ragfresh/fetch snapshots)', /\/packages\/fetch\/(dist|src)\/snapshots\//],
  ['fetch (@ragfresh/fetch, undici)', /\/packages\/fetch\/|\/undici\//],
  ['embed (hashing embeddings)', /\/embeddings|\/@langchain\//],
  ['store (LanceDB client, Arrow)', /\/@lancedb\/|\/apache-arrow\/|\/connectors\//],
  ['publish protocol (@ragfresh/core publish)', /\/packages\/core\/(dist|src)\/publish\//],
  ['state (ledger, SQLite state)', /\/packages\/core\/(dist|src)\/(state|ledger)|keyv|sqlite/],
  ['core (ids, metadata, hashing)', /\/packages\/core\//],
  ['engine (stages, pool, boilerplate)', /\/packages\/engine\//],
  ['CLI runtime', /\/packages\/cli\//],
  ['module loading', /^node:internal\/modules\//],
];

const OTHER = 'unattributed (node internals, V8 native)';

/** What a thread name stands for (Linux `comm`, digits stripped). */
function THREAD_NAMES(name: string): string {
  // Node names V8's platform worker threads after the process ("node").
  if (/^V8 DefaultWorke|^node$/.test(name))
    return `${name} (V8 platform workers: concurrent and parallel GC, background compile)`;
  if (/^v8:ProfEvntProc/.test(name)) return `${name} (the CPU profiler itself)`;
  if (/^libuv-worker/.test(name)) return `${name} (libuv pool: gzip of snapshots, fs, crypto)`;
  if (/^tokio|^lance|^lancedb/i.test(name)) return `${name} (LanceDB native)`;
  return name;
}

export interface StageRow {
  readonly stage: string;
  /** Non-idle samples on the main thread attributed to the stage. */
  readonly samples: number;
}

/** CPU ms of this process's main thread so far (utime + stime of its task, 10 ms ticks). */
export function mainThreadCpuMs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU ms so far of every thread of this process, summed by thread name (`comm`). */
export function threadCpuMs(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/self/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const key = tid === String(process.pid) ? 'main' : name.replace(/[-_ ]?\d+$/, '');
    out.set(key, (out.get(key) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
  }
  return out;
}

/** What each thread group spent between two `threadCpuMs` readings (threads that ended are lost). */
export function threadDelta(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0 && k !== 'main') out[k] = d;
  }
  return out;
}

/** Main-thread samples by stage (idle samples dropped), largest first. */
export function stagesOf(profile: CpuProfile): StageRow[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOfNode = new Map<number, string | null>();
  const classify = (id: number): string | null => {
    const cached = stageOfNode.get(id);
    if (cached !== undefined) return cached;
    const node = byId.get(id)!;
    const { url, functionName } = node.callFrame;
    if (functionName === '(idle)') {
      stageOfNode.set(id, null);
      return null;
    }
    let stage: string | undefined;
    for (const [name, test] of STAGES)
      if (test.test(url) || (url === '' && test.test(functionName))) {
        stage = name;
        break;
      }
    const up = parent.get(id);
    const resolved = stage ?? (up === undefined ? OTHER : (classify(up) ?? OTHER));
    stageOfNode.set(id, resolved);
    return resolved;
  };
  const counts = new Map<string, number>();
  for (const id of profile.samples) {
    const stage = classify(id);
    if (stage !== null) counts.set(stage, (counts.get(stage) ?? 0) + 1);
  }
  return [...counts]
    .map(([stage, samples]) => ({ stage, samples }))
    .sort((a, b) => b.samples - a.samples);
}

/**
 * The stage table: ms per page and share of the process CPU, the main thread's CPU shared out by
 * samples, with the other threads' row.
 */
export function stageTable(
  rows: readonly StageRow[],
  cost: {
    readonly processCpuMs: number;
    readonly mainThreadCpuMs: number;
    /** Other threads' CPU by thread name, when known. */
    readonly threads?: Readonly<Record<string, number>>;
  },
  pages: number,
): string[][] {
  const { processCpuMs } = cost;
  const total = rows.reduce((a, r) => a + r.samples, 0);
  const others = Object.entries(cost.threads ?? {}).sort((a, b) => b[1] - a[1]);
  const named = others.reduce((a, [, v]) => a + v, 0);
  const all = [
    ...rows.map((r) => ({
      stage: `main thread: ${r.stage}`,
      cpuMs: total === 0 ? 0 : (cost.mainThreadCpuMs * r.samples) / total,
    })),
    ...others.map(([name, cpuMs]) => ({ stage: `thread ${THREAD_NAMES(name)}`, cpuMs })),
    {
      stage:
        others.length === 0
          ? 'other threads (LanceDB native, libuv pool: gzip + fs, V8 helpers)'
          : 'other threads, ended before the end of the phase',
      cpuMs: Math.max(0, processCpuMs - cost.mainThreadCpuMs - named),
    },
  ];
  return all.map((r) => [
    r.stage,
    (r.cpuMs / pages).toFixed(2),
    `${((100 * r.cpuMs) / processCpuMs).toFixed(1)} %`,
  ]);
}
