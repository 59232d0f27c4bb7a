/**
 * `pnpm bench:extract`: scores the extractor on the two labelled sets in
 * ../shared/bench/extraction (override with RAGFRESH_BENCH_DIR) exactly as that README
 * defines, next to Readability.js alone measured in the same run, and prints tables.
 * Env: BENCH_VARIANTS=readability,auto (default) | all | a comma list of the names below;
 * BENCH_SETS=scrapinghub,wcxb; BENCH_SAMPLE=k (every k-th page); BENCH_WORKERS=n (n child
 * processes, each one thread, pages dealt round-robin; per-page CPU time is unaffected);
 * BENCH_PIPELINE=0 skips the full-page pass (parse once, classify, extract, chunk) and its
 * chunk-quality report; BENCH_DUMP=file.json also writes every per-page score (for comparing two
 * runs page by page and type by type).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { decodeHtml } from '../charset.js';
import { markdownBlocks } from '../chunk.js';
import { detectNotDocument } from '../detect.js';
import { prepareDocument } from '../document.js';
import { type ExtractOptions, extractPage, parsePage } from '../extract.js';
import { markdownToPlainText } from '../plaintext.js';
import { tiktokenCounter } from '../tokens.js';
import { type PageCounts, scrapinghubScore, shingleCounts, wcxbF1 } from './metrics.js';

interface Variant {
  readonly name: string;
  readonly options: ExtractOptions;
}

const ALL_VARIANTS: Variant[] = [
  { name: 'readability', options: { strategy: 'readability' } },
  { name: 'auto', options: { strategy: 'auto' } },
  { name: 'clean+readability', options: { strategy: 'auto', fallbackRatio: 0 } },
  { name: 'container', options: { strategy: 'container' } },
  { name: 'auto-r0.5-noguard', options: { strategy: 'auto', articleGuard: false } },
  { name: 'auto-r0.8', options: { strategy: 'auto', fallbackRatio: 0.8 } },
];
const DEFAULT_VARIANTS = ['readability', 'auto'];

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'pnpm-workspace.yaml'))) {
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
  return dir;
}

const benchDir =
  process.env.RAGFRESH_BENCH_DIR ?? resolve(repoRoot(), '../shared/bench/extraction');
const wanted =
  process.env.BENCH_VARIANTS === 'all'
    ? ALL_VARIANTS.map((v) => v.name)
    : (process.env.BENCH_VARIANTS?.split(',').map((s) => s.trim()) ?? DEFAULT_VARIANTS);
const variants = ALL_VARIANTS.filter((v) => wanted.includes(v.name));
const sets = process.env.BENCH_SETS?.split(',') ?? ['scrapinghub', 'wcxb'];
const sample = process.env.BENCH_SAMPLE ? Math.max(1, Number(process.env.BENCH_SAMPLE)) : 1;
const workers = Math.max(1, Number(process.env.BENCH_WORKERS ?? 1));
const shard = process.env.BENCH_SHARD?.split('/').map(Number) as [number, number] | undefined;

/** Everything one process measured; children send theirs to the parent as one JSON line. */
interface Results {
  /** ScrapingHub: variant -> page id -> counts. */
  sh: Record<string, Record<string, PageCounts>>;
  /** WCXB: variant -> file id -> F1. */
  wc: Record<string, Record<string, number>>;
  wcTypes: Record<string, string>;
  /** variant -> per-page wall ms and CPU ms. */
  timing: Record<string, { ms: number[]; cpu: number[] }>;
  flagged: Record<string, string[]>;
  detectorPages: number;
  maxRssMiB: number;
  chunks: ChunkQuality;
}

/** Chunk-quality counts over the full-page pass (default chunking: 512 / 64 / 1024, cl100k_base). */
interface ChunkQuality {
  pages: number;
  chunks: number;
  /** Chunks under minTokens on pages that have more than one chunk. */
  underMin: number;
  /** Of those, chunks whose every neighbour is too large to join within hardMaxTokens. */
  underMinBlocked: number;
  /** Chunks whose non-empty lines are all headings, on pages with more than one chunk. */
  headingOnly: number;
  /** Pages whose whole extracted text is headings (one chunk, nothing else to join). */
  headingOnlyPages: number;
  /** Code blocks / tables that fit hardMaxTokens but are not whole inside one chunk. */
  splitBlocks: number;
  /** Code blocks / tables over hardMaxTokens (cut by design). */
  oversizedBlocks: number;
  blocks: number;
  /** Chunks whose reported tokenCount differs from a real recount, and the largest gap. */
  countMismatch: number;
  maxCountGap: number;
  /** Chunks over maxTokens by a real recount (code and tables up to hardMaxTokens may be). */
  overMax: number;
  overMaxProse: number;
  tokens: number;
}

const MAX_TOKENS = 512;
const MIN_TOKENS = 64;
const HARD_MAX_TOKENS = 1024;

const empty = (): Results => ({
  sh: {},
  wc: {},
  wcTypes: {},
  timing: {},
  flagged: {},
  detectorPages: 0,
  maxRssMiB: 0,
  chunks: {
    pages: 0,
    chunks: 0,
    underMin: 0,
    underMinBlocked: 0,
    headingOnly: 0,
    headingOnlyPages: 0,
    splitBlocks: 0,
    oversizedBlocks: 0,
    blocks: 0,
    countMismatch: 0,
    maxCountGap: 0,
    overMax: 0,
    overMaxProse: 0,
    tokens: 0,
  },
});

const pipeline = process.env.BENCH_PIPELINE !== '0';
const PAGE_ROW = 'page: parse once + classify + extract + chunk';

/** The shipped per-page path, timed, then its chunks checked against the quality rules. */
function measurePage(results: Results, html: string, url: string): void {
  const counter = tiktokenCounter();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let prepared: ReturnType<typeof prepareDocument> | undefined;
  try {
    const parsed = parsePage(html, { url });
    parsed.classify({ status: 200 });
    const page = parsed.extract();
    if (page.markdown.trim() !== '') {
      prepared = prepareDocument({
        documentId: 'bench:page',
        sourceId: 'bench',
        markdown: page.markdown,
        normalized: true,
        provenance: {
          url,
          finalUrl: url,
          title: page.title || url,
          retrievedAt: '2026-01-01T00:00:00.000Z',
          contentChangedAt: '2026-01-01T00:00:00.000Z',
          acquisition: 'raw',
        },
        chunking: { counter, title: page.rootTitle || page.title || url },
      });
    }
  } catch {
    prepared = undefined;
  }
  const c = process.cpuUsage(c0);
  results.timing[PAGE_ROW] ??= { ms: [], cpu: [] };
  results.timing[PAGE_ROW]!.ms.push(performance.now() - t0);
  results.timing[PAGE_ROW]!.cpu.push((c.user + c.system) / 1000);
  if (!prepared) return;
  const q = results.chunks;
  q.pages++;
  const chunks = prepared.chunks;
  for (const ch of chunks) {
    q.chunks++;
    const real = counter.count(ch.text);
    q.tokens += real;
    if (real !== ch.tokenCount) {
      q.countMismatch++;
      q.maxCountGap = Math.max(q.maxCountGap, Math.abs(real - ch.tokenCount));
    }
    if (chunks.length > 1 && real < MIN_TOKENS) {
      q.underMin++;
      const k = chunks.indexOf(ch);
      const joinable = [chunks[k - 1], chunks[k + 1]].some(
        (n) => n !== undefined && counter.count(`${n.text}\n\n${ch.text}`) <= HARD_MAX_TOKENS,
      );
      if (!joinable) q.underMinBlocked++;
    }
    const lines = ch.text.split('\n').filter((l) => l.trim() !== '');
    if (lines.length > 0 && lines.every((l) => /^#{1,6}\s/.test(l))) {
      if (chunks.length > 1) q.headingOnly++;
      else q.headingOnlyPages++;
    }
    if (real > MAX_TOKENS) {
      q.overMax++;
      if (!/^\s*(?:```|~~~|\|)/m.test(ch.text)) q.overMaxProse++;
    }
  }
  for (const b of markdownBlocks(prepared.text)) {
    if (b.kind !== 'code' && b.kind !== 'table') continue;
    q.blocks++;
    if (counter.count(b.text) > HARD_MAX_TOKENS) q.oversizedBlocks++;
    else if (!chunks.some((ch) => ch.text.includes(b.text))) q.splitBlocks++;
  }
}

/**
 * Runs a page's timed passes (the page path and each variant) in an order that rotates page by
 * page. A pass pays for the collections of the garbage left before it (the untimed detector's
 * own parse of the page, the scoring, the previous pass): in a fixed order the page path, timed
 * right after the detector pass, paid for that parse on every page.
 */
let turn = 0;
function inTurn(passes: ReadonlyArray<() => void>): void {
  const k = passes.length === 0 ? 0 : turn++ % passes.length;
  for (const pass of [...passes.slice(k), ...passes.slice(0, k)]) pass();
}

function mine(index: number): boolean {
  if (index % sample !== 0) return false;
  const i = index / sample;
  return shard === undefined || i % shard[1] === shard[0];
}

function measure(results: Results): void {
  // Load the tokenizer ranks outside any timed page (a process pays it once).
  if (pipeline) tiktokenCounter().count('warm up');
  const predict = (html: string, url: string, v: Variant): string => {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    let md = '';
    try {
      md = extractPage(html, { ...v.options, url }).markdown;
    } catch {
      md = ''; // a failed page scores as ""
    }
    const c = process.cpuUsage(c0);
    results.timing[v.name] ??= { ms: [], cpu: [] };
    results.timing[v.name]!.ms.push(performance.now() - t0);
    results.timing[v.name]!.cpu.push((c.user + c.system) / 1000);
    return markdownToPlainText(md);
  };
  const detect = (id: string, html: string) => {
    results.detectorPages++;
    const check = detectNotDocument(html);
    if (!check.ok) results.flagged[id] = check.reasons.map((r) => `${r.code}: ${r.detail}`);
  };
  if (sets.includes('scrapinghub')) {
    const dir = join(benchDir, 'scrapinghub');
    const truth = JSON.parse(
      gunzipSync(readFileSync(join(dir, 'ground-truth.json.gz'))).toString('utf8'),
    ) as Record<string, { articleBody: string; url: string }>;
    const ids = readdirSync(join(dir, 'html'))
      .filter((f) => f.endsWith('.html.gz'))
      .map((f) => f.slice(0, -'.html.gz'.length))
      .filter((id) => truth[id] !== undefined)
      .sort()
      .filter((_, i) => mine(i));
    for (const id of ids) {
      // The set's README: every page stored as UTF-8 (the header a server would have sent).
      const html = decodeHtml(
        gunzipSync(readFileSync(join(dir, 'html', `${id}.html.gz`))),
        'text/html; charset=utf-8',
      );
      const t = truth[id]!;
      detect(`scrapinghub/${id}`, html);
      inTurn([
        ...(pipeline ? [() => measurePage(results, html, t.url)] : []),
        ...variants.map((v) => () => {
          results.sh[v.name] ??= {};
          results.sh[v.name]![id] = shingleCounts(t.articleBody, predict(html, t.url, v));
        }),
      ]);
    }
  }
  if (sets.includes('wcxb')) {
    const dir = join(benchDir, 'wcxb-dev');
    const truth = gunzipSync(readFileSync(join(dir, 'ground-truth.jsonl.gz')))
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(
        (l) =>
          JSON.parse(l) as {
            file_id: string;
            url: string;
            page_type: string;
            main_content: string;
          },
      )
      .filter((_, i) => mine(i));
    for (const t of truth) {
      const html = decodeHtml(gunzipSync(readFileSync(join(dir, 'html', `${t.file_id}.html.gz`))));
      results.wcTypes[t.file_id] = t.page_type;
      detect(`wcxb/${t.file_id}`, html);
      inTurn([
        ...(pipeline ? [() => measurePage(results, html, t.url)] : []),
        ...variants.map((v) => () => {
          results.wc[v.name] ??= {};
          results.wc[v.name]![t.file_id] = wcxbF1(t.main_content, predict(html, t.url, v));
        }),
      ]);
    }
  }
  results.maxRssMiB = process.resourceUsage().maxRSS / 1024;
}

function merge(into: Results, from: Results): void {
  for (const [v, pages] of Object.entries(from.sh)) into.sh[v] = { ...into.sh[v], ...pages };
  for (const [v, pages] of Object.entries(from.wc)) into.wc[v] = { ...into.wc[v], ...pages };
  Object.assign(into.wcTypes, from.wcTypes);
  for (const [v, t] of Object.entries(from.timing)) {
    into.timing[v] ??= { ms: [], cpu: [] };
    into.timing[v]!.ms.push(...t.ms);
    into.timing[v]!.cpu.push(...t.cpu);
  }
  Object.assign(into.flagged, from.flagged);
  into.detectorPages += from.detectorPages;
  for (const k of Object.keys(into.chunks) as Array<keyof ChunkQuality>) {
    into.chunks[k] =
      k === 'maxCountGap'
        ? Math.max(into.chunks[k], from.chunks[k])
        : into.chunks[k] + from.chunks[k];
  }
  into.maxRssMiB = Math.max(into.maxRssMiB, from.maxRssMiB);
}

async function runChildren(n: number): Promise<Results> {
  const file = fileURLToPath(import.meta.url);
  const all = empty();
  await Promise.all(
    Array.from(
      { length: n },
      (_, i) =>
        new Promise<void>((ok, fail) => {
          const child = spawn(process.execPath, [file], {
            env: { ...process.env, BENCH_SHARD: `${i}/${n}`, BENCH_WORKERS: '1', BENCH_CHILD: '1' },
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let out = '';
          child.stdout.on('data', (d: Buffer) => {
            out += d.toString('utf8');
          });
          child.on('exit', (code) => {
            if (code !== 0) return fail(new Error(`bench worker ${i} exited with ${code}`));
            merge(all, JSON.parse(out) as Results);
            ok();
          });
        }),
    ),
  );
  return all;
}

const fmt = (n: number, d = 3) => n.toFixed(d);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const percentile = (sorted: number[], q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

function report(r: Results): void {
  if (process.env.BENCH_DUMP) {
    writeFileSync(
      process.env.BENCH_DUMP,
      JSON.stringify({ sh: r.sh, wc: r.wc, wcTypes: r.wcTypes, chunks: r.chunks }),
    );
  }
  console.log(
    `# Extraction benchmark — data ${benchDir}, node ${process.version}, ${workers} worker process(es)`,
  );
  if (Object.keys(r.sh).length > 0) {
    const n = Object.keys(Object.values(r.sh)[0] ?? {}).length;
    console.log(`\n## ScrapingHub (${n} pages)\n`);
    console.log('| extractor | precision | recall | F1 |');
    console.log('|---|---|---|---|');
    for (const v of variants) {
      const s = scrapinghubScore(Object.values(r.sh[v.name] ?? {}));
      console.log(`| ${v.name} | ${fmt(s.precision)} | ${fmt(s.recall)} | ${fmt(s.f1)} |`);
    }
  }
  if (Object.keys(r.wc).length > 0) {
    const types = [...new Set(Object.values(r.wcTypes))].sort();
    console.log(`\n## WCXB-dev (${Object.keys(r.wcTypes).length} pages), mean per-page F1\n`);
    console.log(
      `| extractor | overall | ${types.map((t) => `${t} (${Object.values(r.wcTypes).filter((x) => x === t).length})`).join(' | ')} |`,
    );
    console.log(`|---|---|${types.map(() => '---').join('|')}|`);
    for (const v of variants) {
      const pages = Object.entries(r.wc[v.name] ?? {});
      const byType = (t: string) => pages.filter(([id]) => r.wcTypes[id] === t).map(([, f]) => f);
      console.log(
        `| ${v.name} | ${fmt(mean(pages.map(([, f]) => f)))} | ${types.map((t) => fmt(mean(byType(t)))).join(' | ')} |`,
      );
    }
  }
  console.log(
    '\n## Throughput (extraction only: parse + clean + extract + Markdown, one thread per process)\n',
  );
  console.log(
    'CPU = user+system time of the process per page (robust on a loaded machine); wall = elapsed.\n',
  );
  console.log(
    '| extractor | pages | pages/s (CPU) | median pages/s (CPU) | p50 CPU ms | p95 CPU ms | p50 wall ms | p95 wall ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const name of [...variants.map((v) => v.name), PAGE_ROW]) {
    const t = r.timing[name];
    if (!t) continue;
    const wall = [...t.ms].sort((a, b) => a - b);
    const cpu = [...t.cpu].sort((a, b) => a - b);
    const total = cpu.reduce((a, b) => a + b, 0);
    console.log(
      `| ${name} | ${cpu.length} | ${fmt((1000 * cpu.length) / total, 1)} | ${fmt(1000 / percentile(cpu, 0.5), 1)} | ${fmt(percentile(cpu, 0.5), 1)} | ${fmt(percentile(cpu, 0.95), 1)} | ${fmt(percentile(wall, 0.5), 1)} | ${fmt(percentile(wall, 0.95), 1)} |`,
    );
  }
  const readability = r.timing.readability;
  if (readability) {
    const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const p50 = (xs: number[]) =>
      percentile(
        [...xs].sort((a, b) => a - b),
        0.5,
      );
    console.log('\nCPU per page relative to Readability.js alone (same pages, same run):\n');
    console.log('| path | mean CPU ms | ratio (mean) | p50 CPU ms | ratio (p50) |');
    console.log('|---|---|---|---|---|');
    for (const [name, t] of Object.entries(r.timing)) {
      const mean = total(t.cpu) / t.cpu.length;
      const base = total(readability.cpu) / readability.cpu.length;
      console.log(
        `| ${name} | ${fmt(mean, 1)} | ${fmt(mean / base, 2)} | ${fmt(p50(t.cpu), 1)} | ${fmt(p50(t.cpu) / p50(readability.cpu), 2)} |`,
      );
    }
  }
  if (r.chunks.pages > 0) {
    const q = r.chunks;
    console.log(
      `\n## Chunk quality (full-page pass, ${MAX_TOKENS}/${MIN_TOKENS}/${HARD_MAX_TOKENS} tokens, cl100k_base, every count re-measured with the real tokenizer)\n`,
    );
    console.log('| measure | value |');
    console.log('|---|---|');
    console.log(`| pages chunked | ${q.pages} |`);
    console.log(
      `| chunks | ${q.chunks} (mean ${fmt(q.tokens / Math.max(1, q.chunks), 0)} tokens) |`,
    );
    console.log(
      `| chunks under ${MIN_TOKENS} tokens (pages with more than one chunk) | ${q.underMin} |`,
    );
    console.log(
      `| … of which no neighbour can take it within ${HARD_MAX_TOKENS} tokens | ${q.underMinBlocked} |`,
    );
    console.log(`| heading-only chunks (pages with more than one chunk) | ${q.headingOnly} |`);
    console.log(`| pages whose whole text is headings (one chunk) | ${q.headingOnlyPages} |`);
    console.log(
      `| code blocks / tables split (of ${q.blocks}; fitting ${HARD_MAX_TOKENS} tokens) | ${q.splitBlocks} |`,
    );
    console.log(
      `| code blocks / tables over ${HARD_MAX_TOKENS} tokens (cut by design) | ${q.oversizedBlocks} |`,
    );
    console.log(
      `| reported token count ≠ real count | ${q.countMismatch} chunks (largest gap ${q.maxCountGap}) |`,
    );
    console.log(
      `| chunks over ${MAX_TOKENS} tokens (real count) | ${q.overMax} (${q.overMaxProse} without code or table) |`,
    );
  }
  const flagged = Object.entries(r.flagged);
  console.log('\n## Not-the-document detector on real pages\n');
  console.log(
    `${flagged.length} of ${r.detectorPages} benchmark pages flagged; every benchmark page is a saved real document, so each is a false positive unless the saved page really is an interstitial.`,
  );
  for (const [id, reasons] of flagged) console.log(`- ${id}: ${reasons.join('; ')}`);
  console.log(`\nPeak RSS: ${fmt(r.maxRssMiB, 0)} MiB (largest single process; all variants)`);
}

if (!existsSync(benchDir)) {
  console.error(
    `[ragfresh] [extract] benchmark data not found at ${benchDir}; set RAGFRESH_BENCH_DIR.`,
  );
  process.exit(1);
}
if (process.env.BENCH_CHILD === '1') {
  const r = empty();
  measure(r);
  process.stdout.write(JSON.stringify(r));
} else if (workers > 1) {
  report(await runChildren(workers));
} else {
  const r = empty();
  measure(r);
  report(r);
}
