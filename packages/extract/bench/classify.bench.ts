// pnpm bench:classify — false alarms of "not the document" detection on real documents. Every
// page of ../shared/bench/extraction (both sets, every HTML file; all of them are real
// documents) goes through `preparePage`, the path the refresh engine and the LangChain loader
// take (classification on the untouched tree, extraction, classification again with the
// extracted Markdown). A page judged not the document there is a false positive: it would never
// be indexed. Printed: pages per verdict code, and, apart, the pages whose title or text only
// *suggests* a status (a "404" or "Too many requests" title with no interstitial evidence on
// the page): those are indexed unless the engine finds host evidence (see docs/extract.md).
//
// Env: BENCH_SAMPLE=k (every k-th page), BENCH_LIST=1 (print every flagged page),
// RAGFRESH_BENCH_DIR. Runs built code (tsc -b first); Node strips the types of this file.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { reasonLine } from '@ragfresh/core';
import { decodeHtml, preparePage } from '@ragfresh/extract';

const here = dirname(fileURLToPath(import.meta.url));
/** `../shared/bench/extraction` beside the checkout, looked for upwards (a worktree sits deeper). */
function findBenchDir(): string {
  for (let dir = resolve(here, '../../..'); ; dir = dirname(dir)) {
    const candidate = join(dirname(dir), 'shared', 'bench', 'extraction');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir)
      throw new Error('no shared/bench/extraction found; set RAGFRESH_BENCH_DIR');
  }
}
const benchDir = process.env.RAGFRESH_BENCH_DIR ?? findBenchDir();
const sample = Math.max(1, Number(process.env.BENCH_SAMPLE ?? 1));
const list = process.env.BENCH_LIST === '1';

function urlsOf(): Map<string, string> {
  const urls = new Map<string, string>();
  const sh = JSON.parse(
    gunzipSync(readFileSync(join(benchDir, 'scrapinghub', 'ground-truth.json.gz'))).toString(
      'utf8',
    ),
  ) as Record<string, { url: string }>;
  for (const [id, t] of Object.entries(sh)) urls.set(`scrapinghub/${id}`, t.url);
  for (const line of gunzipSync(readFileSync(join(benchDir, 'wcxb-dev', 'ground-truth.jsonl.gz')))
    .toString('utf8')
    .split('\n')) {
    if (line.trim() === '') continue;
    const t = JSON.parse(line) as { file_id: string; url: string };
    urls.set(`wcxb-dev/${t.file_id}`, t.url);
  }
  return urls;
}

/** Every HTML file of both sets, in a stable order, whether or not the truth lists it. */
function* pages(): Generator<{ id: string; html: string; url: string }> {
  const urls = urlsOf();
  let i = 0;
  for (const set of ['scrapinghub', 'wcxb-dev']) {
    const dir = join(benchDir, set, 'html');
    for (const f of readdirSync(dir).sort()) {
      if (!f.endsWith('.html.gz')) continue;
      if (i++ % sample !== 0) continue;
      const id = `${set}/${f.slice(0, -'.html.gz'.length)}`;
      const html = decodeHtml(gunzipSync(readFileSync(join(dir, f))));
      yield { id, html, url: urls.get(id) ?? `https://bench.invalid/${id}` };
    }
  }
}

function main(): void {
  let total = 0;
  const blocked = new Map<string, string[]>();
  const suspected = new Map<string, string[]>();
  const bump = (m: Map<string, string[]>, code: string, line: string) => {
    m.set(code, [...(m.get(code) ?? []), line]);
  };
  for (const p of pages()) {
    total++;
    const out = preparePage(
      { text: p.html, contentType: 'text/html', url: p.url, finalUrl: p.url, acquisition: 'raw' },
      { documentId: `bench:${total}`, sourceId: 'bench', retrievedAt: '2026-01-01T00:00:00.000Z' },
    );
    if (out.kind === 'not-the-document') {
      const codes = new Set(out.reasons.map((r) => r.code));
      const lines = out.reasons.map(reasonLine).join(' | ');
      for (const c of codes) bump(blocked, c, `${p.id}  ${lines}`);
      bump(blocked, '(any)', p.id);
      continue;
    }
    // Reasons the page alone does not prove (field present only where the code has it).
    const maybe = out.suspected ?? [];
    if (maybe.length > 0) {
      for (const c of new Set(maybe.map((r) => r.code)))
        bump(suspected, c, `${p.id}  ${maybe.map(reasonLine).join(' | ')}`);
      bump(suspected, '(any)', p.id);
    }
  }
  const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  console.log(`pages: ${total} (every ${sample === 1 ? '' : `${sample}th `}page of ${benchDir})\n`);
  console.log(
    row(['verdict code', 'pages not indexed (false positives)', 'pages indexed, suspected only']),
  );
  console.log(row(['---', '---:', '---:']));
  const codes = [...new Set([...blocked.keys(), ...suspected.keys()])].filter((c) => c !== '(any)');
  for (const c of codes.sort())
    console.log(row([c, blocked.get(c)?.length ?? 0, suspected.get(c)?.length ?? 0]));
  console.log(
    row([
      '**any**',
      `**${blocked.get('(any)')?.length ?? 0}**`,
      suspected.get('(any)')?.length ?? 0,
    ]),
  );
  if (list) {
    for (const [c, lines] of [...blocked].filter(([c]) => c !== '(any)'))
      for (const l of lines) console.log(`blocked ${c}: ${l}`);
    for (const [c, lines] of [...suspected].filter(([c]) => c !== '(any)'))
      for (const l of lines) console.log(`suspected ${c}: ${l}`);
  }
}

main();
