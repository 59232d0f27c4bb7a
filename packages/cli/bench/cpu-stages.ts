// Where a phase's CPU goes, by pipeline stage: the refresh phase records a V8 CPU profile of its
// measured section (inspector Profiler, main thread only), and this attributes every sample to
// the stage of the nearest frame on its stack, from the leaf up, that a rule below recognises
// (node internals and unrecognised frames pass the sample to their caller). What the main
// thread did not do — LanceDB's native threads, libuv's pool (gzip of snapshots, fs), V8's
// helper threads — is the process CPU minus the profile's busy time.

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

export interface StageRow {
  readonly stage: string;
  readonly cpuMs: number;
}

/** Main-thread busy ms by stage (idle samples dropped), largest first. */
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
  const us = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const stage = classify(id);
    if (stage === null) return;
    us.set(stage, (us.get(stage) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return [...us]
    .map(([stage, t]) => ({ stage, cpuMs: t / 1000 }))
    .sort((a, b) => b.cpuMs - a.cpuMs);
}

/** The stage table: ms per page and share of the process CPU, with the other threads' row. */
export function stageTable(
  rows: readonly StageRow[],
  processCpuMs: number,
  pages: number,
): string[][] {
  const main = rows.reduce((a, r) => a + r.cpuMs, 0);
  const all = [
    ...rows,
    {
      stage: 'other threads (LanceDB native, libuv pool: gzip + fs, V8 helpers)',
      cpuMs: Math.max(0, processCpuMs - main),
    },
  ];
  return all.map((r) => [
    r.stage,
    (r.cpuMs / pages).toFixed(2),
    `${((100 * r.cpuMs) / processCpuMs).toFixed(1)} %`,
  ]);
}
