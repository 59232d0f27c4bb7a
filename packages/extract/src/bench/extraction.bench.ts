/**
 * `pnpm bench:extract`: scores the extractor on the two labelled sets in
 * ../shared/bench/extraction (override with RAGFRESH_BENCH_DIR) exactly as that README
 * defines, next to Readability.js alone measured in the same run, and prints tables.
 * Env: BENCH_VARIANTS=readability,auto,... (default all), BENCH_SETS=scrapinghub,wcxb.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { decodeHtml } from '../charset.js';
import { type ExtractOptions, extractPage } from '../extract.js';
import { markdownToPlainText } from '../plaintext.js';
import { type PageCounts, scrapinghubScore, shingleCounts, wcxbF1 } from './metrics.js';

interface Variant {
  readonly name: string;
  readonly options: ExtractOptions;
}

const ALL_VARIANTS: Variant[] = [
  { name: 'readability', options: { strategy: 'readability' } },
  { name: 'auto', options: { strategy: 'auto' } },
  { name: 'clean+readability', options: { strategy: 'auto', fallbackRatio: 0 } },
  { name: 'auto-r0.4', options: { strategy: 'auto', fallbackRatio: 0.4 } },
  { name: 'auto-r0.8', options: { strategy: 'auto', fallbackRatio: 0.8 } },
  { name: 'container', options: { strategy: 'container' } },
];

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
const wanted = process.env.BENCH_VARIANTS?.split(',').map((s) => s.trim());
const variants = wanted ? ALL_VARIANTS.filter((v) => wanted.includes(v.name)) : ALL_VARIANTS;
const sets = process.env.BENCH_SETS?.split(',') ?? ['scrapinghub', 'wcxb'];
const limit = process.env.BENCH_LIMIT ? Number(process.env.BENCH_LIMIT) : Number.POSITIVE_INFINITY;

interface Timing {
  ms: number[];
}

function predict(html: string, url: string, variant: Variant, timing?: Timing): string {
  const t0 = performance.now();
  let md = '';
  try {
    md = extractPage(html, { ...variant.options, url }).markdown;
  } catch {
    md = '';
  }
  timing?.ms.push(performance.now() - t0);
  return markdownToPlainText(md);
}

const fmt = (n: number, d = 3) => n.toFixed(d);
const timings = new Map<string, Timing>();
const timingOf = (name: string) => {
  let t = timings.get(name);
  if (!t) {
    t = { ms: [] };
    timings.set(name, t);
  }
  return t;
};

function runScrapinghub(): void {
  const dir = join(benchDir, 'scrapinghub');
  const truth = JSON.parse(
    gunzipSync(readFileSync(join(dir, 'ground-truth.json.gz'))).toString('utf8'),
  ) as Record<string, { articleBody: string; url: string }>;
  const ids = readdirSync(join(dir, 'html'))
    .filter((f) => f.endsWith('.html.gz'))
    .map((f) => f.slice(0, -'.html.gz'.length))
    .filter((id) => truth[id] !== undefined)
    .sort()
    .slice(0, limit);
  const pages = ids.map((id) => ({
    id,
    html: gunzipSync(readFileSync(join(dir, 'html', `${id}.html.gz`))).toString('utf8'),
    truth: truth[id]!,
  }));
  console.log(`\n## ScrapingHub (${pages.length} pages)\n`);
  console.log('| extractor | precision | recall | F1 |');
  console.log('|---|---|---|---|');
  for (const v of variants) {
    const counts: PageCounts[] = pages.map((p) =>
      shingleCounts(p.truth.articleBody, predict(p.html, p.truth.url, v, timingOf(v.name))),
    );
    const s = scrapinghubScore(counts);
    console.log(`| ${v.name} | ${fmt(s.precision)} | ${fmt(s.recall)} | ${fmt(s.f1)} |`);
  }
}

interface WcxbTruth {
  file_id: string;
  url: string;
  page_type: string;
  main_content: string;
}

function runWcxb(): void {
  const dir = join(benchDir, 'wcxb-dev');
  const truth = gunzipSync(readFileSync(join(dir, 'ground-truth.jsonl.gz')))
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as WcxbTruth)
    .slice(0, limit);
  const pages = truth.map((t) => ({
    t,
    html: decodeHtml(gunzipSync(readFileSync(join(dir, 'html', `${t.file_id}.html.gz`)))),
  }));
  const types = [...new Set(truth.map((t) => t.page_type))].sort();
  console.log(`\n## WCXB-dev (${pages.length} pages), mean per-page F1\n`);
  console.log(`| extractor | overall | ${types.join(' | ')} |`);
  console.log(`|---|---|${types.map(() => '---').join('|')}|`);
  const perPage = process.env.BENCH_DUMP ? new Map<string, number[]>() : undefined;
  for (const v of variants) {
    const byType = new Map<string, number[]>();
    const all: number[] = [];
    const scores: number[] = [];
    for (const p of pages) {
      const f1 = wcxbF1(p.t.main_content, predict(p.html, p.t.url, v, timingOf(v.name)));
      all.push(f1);
      scores.push(f1);
      const list = byType.get(p.t.page_type) ?? [];
      list.push(f1);
      byType.set(p.t.page_type, list);
    }
    perPage?.set(v.name, scores);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    console.log(
      `| ${v.name} | ${fmt(mean(all))} | ${types.map((t) => fmt(mean(byType.get(t) ?? []))).join(' | ')} |`,
    );
  }
  if (perPage) {
    const names = [...perPage.keys()];
    const rows = pages.map((p, i) =>
      [p.t.file_id, p.t.page_type, ...names.map((n) => fmt(perPage.get(n)![i]!))].join('\t'),
    );
    console.error(['id\ttype', ...names].join('\t'));
    for (const r of rows) console.error(r);
  }
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

if (!existsSync(benchDir)) {
  console.error(
    `[ragfresh] [extract] benchmark data not found at ${benchDir}; set RAGFRESH_BENCH_DIR.`,
  );
  process.exit(1);
}
console.log(`# Extraction benchmark — data ${benchDir}, node ${process.version}`);
if (sets.includes('scrapinghub')) runScrapinghub();
if (sets.includes('wcxb')) runWcxb();
console.log('\n## Throughput (extraction only: parse + extract + Markdown, one thread)\n');
console.log('| extractor | pages | pages/s | p50 ms | p95 ms |');
console.log('|---|---|---|---|---|');
for (const [name, t] of timings) {
  const sorted = [...t.ms].sort((a, b) => a - b);
  const total = sorted.reduce((a, b) => a + b, 0);
  console.log(
    `| ${name} | ${sorted.length} | ${fmt((1000 * sorted.length) / total, 1)} | ${fmt(percentile(sorted, 0.5), 1)} | ${fmt(percentile(sorted, 0.95), 1)} |`,
  );
}
console.log(
  `\nPeak RSS: ${fmt(process.resourceUsage().maxRSS / 1024, 0)} MiB (whole run, all variants)`,
);
