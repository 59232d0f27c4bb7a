// The refresh bench's output: one results table, a details table, and the targets of issue 11.
import type { LangChainPhaseResult } from './langchain-phase.ts';
import type { StartTime } from './phase-process.ts';
import type { RagfreshInspectResult, RagfreshRefreshResult } from './ragfresh-phase.ts';

export type RoundName = 'cold' | 'no-change' | 'edit';

export interface RagfreshRound extends RagfreshRefreshResult {
  readonly inspect: RagfreshInspectResult;
  readonly changedChunks: number;
  readonly lanceBytes: number;
  readonly stateBytes: number;
  readonly rawBytes: number;
  readonly cliHelp: StartTime;
  readonly cliStatus: StartTime;
}

export interface LangChainRound extends LangChainPhaseResult {
  readonly changedChunks: number;
}

export interface RoundRow {
  readonly pages: number;
  readonly round: RoundName;
  readonly editedPages: number;
  readonly ragfresh: RagfreshRound;
  readonly langchain?: LangChainRound;
}

const MiB = 1024 * 1024;

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i < 3 ? `${'-'.repeat(w + 2)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

const f = (n: number, digits: number) => n.toFixed(digits);
const perPage = (cpuMs: number, pages: number) => cpuMs / pages;
const start = (t: StartTime) => `${f(t.wallMs, 0)} (${f(t.cpuMs, 0)})`;

export function resultsTable(rows: readonly RoundRow[], editShare: number): string {
  const header = [
    'pages',
    'round',
    'pipeline',
    'wall s',
    'CPU ms/page',
    'CPU ms/URL, no-change',
    'ragfresh/LC CPU',
    'peak RSS MiB',
    'LanceDB MiB',
    'state MiB',
    'live MiB',
    'LanceDB/live',
    'embeddings computed',
    'changed chunks',
    'CLI --help ms (CPU)',
    'CLI status ms (CPU)',
  ];
  const out: string[][] = [];
  for (const row of rows) {
    const rf = row.ragfresh;
    const lc = row.langchain;
    const round = row.round === 'edit' ? `${f(editShare * 100, 0)} %-edit` : row.round;
    const rfPage = perPage(rf.cpuMs, row.pages);
    out.push([
      String(row.pages),
      round,
      'ragfresh',
      f(rf.wallMs / 1000, 1),
      f(rfPage, 2),
      row.round === 'no-change' ? f(rfPage, 3) : '',
      lc === undefined ? '' : f(rfPage / perPage(lc.cpuMs, row.pages), 2),
      f(rf.peakRssMiB, 0),
      f(rf.lanceBytes / MiB, 1),
      f(rf.stateBytes / MiB, 1),
      f(rf.inspect.liveBytes / MiB, 1),
      f(rf.lanceBytes / rf.inspect.liveBytes, 2),
      String(rf.embedded),
      String(rf.changedChunks),
      start(rf.cliHelp),
      start(rf.cliStatus),
    ]);
    if (lc !== undefined) {
      const lcPage = perPage(lc.cpuMs, row.pages);
      out.push([
        String(row.pages),
        round,
        'LangChain',
        f(lc.wallMs / 1000, 1),
        f(lcPage, 2),
        row.round === 'no-change' ? f(lcPage, 3) : '',
        '',
        f(lc.peakRssMiB, 0),
        'in memory',
        'in memory',
        '',
        '',
        String(lc.embedded),
        String(lc.changedChunks),
        '',
        '',
      ]);
    }
  }
  return table(header, out);
}

export function detailsTable(rows: readonly RoundRow[]): string {
  const header = ['pages', 'round', 'pipeline', 'chunks in index', 'counters'];
  const out: string[][] = [];
  for (const row of rows) {
    const rf = row.ragfresh;
    const c = rf.engineCounts;
    const counters = [
      `200: ${c.fetched200 ?? '?'}`,
      `304: ${c.notModified ?? '?'}`,
      `published: ${c.published ?? '?'}`,
      `engine's chunksEmbedded: ${c.chunksEmbedded ?? '?'}`,
      `storeWrites: ${c.storeWrites ?? '?'}`,
      `state records' chunks: ${rf.inspect.stateChunks}`,
      `raw snapshots MiB: ${f(rf.rawBytes / MiB, 1)}`,
      `epoch: ${rf.inspect.epoch}`,
    ];
    if (row.editedPages > 0) counters.push(`edited pages: ${row.editedPages}`);
    out.push([
      String(row.pages),
      row.round,
      'ragfresh',
      String(rf.inspect.chunks),
      counters.join('; '),
    ]);
    const lc = row.langchain;
    if (lc !== undefined) {
      const i = lc.indexed;
      out.push([
        String(row.pages),
        row.round,
        'LangChain',
        String(lc.chunks),
        `index(): added ${i.added}, updated ${i.updated}, skipped ${i.skipped}, deleted ${i.deleted}; pages without an article or not 200: ${lc.failedPages}`,
      ]);
    }
  }
  const straddled = rows.some(
    (r) => r.langchain !== undefined && r.langchain.embedded > r.langchain.changedChunks,
  );
  const note = straddled
    ? "\n\nLangChain embeds more than the changed chunks: index() cleans up per internal batch of 100 documents (its default batchSize), so a page whose chunks straddle two batches has its later chunks deleted by the first batch's incremental cleanup and re-added (re-embedded) by the next."
    : '';
  return table(header, out) + note;
}

/** "v ≤ L: met (headroom)" or "v > L: MISSED by (v − L), v/L ×". */
function check(value: number, limit: number, unit: string, digits: number): string {
  const v = `${f(value, digits)}${unit}`;
  const l = `${f(limit, digits)}${unit}`;
  if (value <= limit) return `${v} <= ${l}: met`;
  const over = `${f(value - limit, digits)}${unit === ' %' ? ' points' : unit}`;
  return `${v} > ${l}: MISSED by ${over} (${f(value / limit, 2)}x the target)`;
}

const pct = (x: number) => x * 100;

export function targetLines(rows: readonly RoundRow[]): string[] {
  const sizes = [...new Set(rows.map((r) => r.pages))].sort((a, b) => a - b);
  const of = (pages: number, round: RoundName) =>
    rows.find((r) => r.pages === pages && r.round === round);
  const lines: string[] = [];
  const each = (name: string, one: (pages: number) => string | undefined) => {
    const parts = sizes
      .map((p) => {
        const s = one(p);
        return s === undefined ? undefined : `${p} pages: ${s}`;
      })
      .filter((s) => s !== undefined);
    lines.push(`- ${name}: ${parts.length === 0 ? 'not measured' : parts.join('; ')}`);
  };

  each('cold CPU/page <= 3x LangChain', (p) => {
    const cold = of(p, 'cold');
    if (cold?.langchain === undefined) return undefined;
    const ratio = cold.ragfresh.cpuMs / cold.langchain.cpuMs;
    return check(ratio, 3, 'x', 2);
  });
  each('cold CPU/page <= 30 ms', (p) => {
    const cold = of(p, 'cold');
    return cold === undefined ? undefined : check(perPage(cold.ragfresh.cpuMs, p), 30, ' ms', 2);
  });
  if (sizes.length < 2) {
    lines.push('- cold CPU/page flat within +-15 % across sizes: not measured (one size run)');
  } else {
    const base = perPage(of(sizes[0]!, 'cold')!.ragfresh.cpuMs, sizes[0]!);
    const devs = sizes.slice(1).map((p) => {
      const dev = perPage(of(p, 'cold')!.ragfresh.cpuMs, p) / base - 1;
      const s = `${dev >= 0 ? '+' : ''}${f(pct(dev), 1)} %`;
      return `${p} pages ${s} ${Math.abs(dev) <= 0.15 ? 'met' : `MISSED by ${f(pct(Math.abs(dev)) - 15, 1)} points`}`;
    });
    lines.push(
      `- cold CPU/page flat within +-15 % of the ${sizes[0]}-page value (${f(base, 2)} ms): ${devs.join('; ')}`,
    );
  }
  const largest = sizes[sizes.length - 1];
  if (largest !== undefined) {
    const peak = Math.max(
      ...rows.filter((r) => r.pages === largest).map((r) => r.ragfresh.peakRssMiB),
    );
    const note =
      largest === 20_000 ? '' : ` (measured at ${largest} pages; the target is for 20,000)`;
    lines.push(`- peak RSS <= 512 MiB at 20,000 pages${note}: ${check(peak, 512, ' MiB', 0)}`);
  }
  each('LanceDB disk <= 2x live data after the edit round', (p) => {
    const edit = of(p, 'edit');
    if (edit === undefined) return undefined;
    const rf = edit.ragfresh;
    const withState = (rf.lanceBytes + rf.stateBytes) / rf.inspect.liveBytes;
    return `${check(rf.lanceBytes / rf.inspect.liveBytes, 2, 'x', 2)} (with the state file: ${f(withState, 2)}x)`;
  });
  each('no-change CPU <= 0.5 ms per URL', (p) => {
    const same = of(p, 'no-change');
    return same === undefined ? undefined : check(perPage(same.ragfresh.cpuMs, p), 0.5, ' ms', 3);
  });
  each('no-change CPU <= 2 % of cold', (p) => {
    const same = of(p, 'no-change');
    const cold = of(p, 'cold');
    if (same === undefined || cold === undefined) return undefined;
    return check(pct(same.ragfresh.cpuMs / cold.ragfresh.cpuMs), 2, ' %', 2);
  });
  each('CLI start <= 300 ms (slowest median wall time of --help and status)', (p) => {
    const starts = rows
      .filter((r) => r.pages === p)
      .flatMap((r) => [r.ragfresh.cliHelp, r.ragfresh.cliStatus]);
    const worst = starts.reduce((a, b) => (b.wallMs > a.wallMs ? b : a));
    return `${check(worst.wallMs, 300, ' ms', 0)} (that start used ${f(worst.cpuMs, 0)} ms CPU)`;
  });
  // Issue 37 item 5 (CPU, median of the runs; bench:startup splits state-only from the epoch check).
  const cpuOf = (p: number, which: 'cliHelp' | 'cliStatus') =>
    Math.max(...rows.filter((r) => r.pages === p).map((r) => r.ragfresh[which].cpuMs));
  each('CLI status CPU <= 250 ms', (p) => check(cpuOf(p, 'cliStatus'), 250, ' ms', 0));
  each('CLI --help CPU <= 120 ms', (p) => check(cpuOf(p, 'cliHelp'), 120, ' ms', 0));
  each('embeddings computed = changed chunks, every round', (p) => {
    const mine = rows.filter((r) => r.pages === p);
    const off = mine.filter((r) => r.ragfresh.embedded !== r.ragfresh.changedChunks);
    if (off.length === 0) return 'met';
    return `MISSED in ${off.map((r) => `${r.round} (${r.ragfresh.embedded} computed, ${r.ragfresh.changedChunks} changed, ${r.ragfresh.embedded - r.ragfresh.changedChunks >= 0 ? '+' : ''}${r.ragfresh.embedded - r.ragfresh.changedChunks})`).join(', ')}`;
  });
  return lines;
}
