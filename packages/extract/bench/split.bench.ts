// pnpm bench:split — how an oversized prose block is split: ragfresh's chunker against
// LangChain's RecursiveCharacterTextSplitter (@langchain/textsplitters) with the same token
// length function (tiktoken cl100k_base) and budget (512 tokens, no overlap).
//
// The blocks are real: every benchmark page in ../shared/bench/extraction is extracted with the
// shipped extractor, and each Markdown text block (a paragraph or a list, never code or a table)
// over 512 tokens is split by each splitter. Reported per splitter: pieces, pieces over the
// budget by a real recount, slivers under 64 tokens, cuts inside a sentence (the piece before
// the cut does not end a sentence, a clause or a line), pieces that start with the previous
// sentence's punctuation, cuts inside a Markdown link or image that fits the budget (`[Jane` in
// one piece, `Doe](url)` in the next),
// blocks whose pieces no longer hold every character of the block (whitespace aside), and the
// CPU time and tokenizer calls spent.
//
// Env: BENCH_SAMPLE=k (every k-th page), RAGFRESH_BENCH_DIR. Runs built code (tsc -b first);
// Node strips the types of this file.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
import {
  chunkMarkdown,
  decodeHtml,
  extractPage,
  markdownBlocks,
  type TokenCounter,
  tiktokenCounter,
} from '@ragfresh/extract';

const MAX = 512;
const MIN = 64;
const here = dirname(fileURLToPath(import.meta.url));
const benchDir =
  process.env.RAGFRESH_BENCH_DIR ?? resolve(here, '../../../../shared/bench/extraction');
const sample = Math.max(1, Number(process.env.BENCH_SAMPLE ?? 1));

function* pages(): Generator<{ html: string; url: string }> {
  const shDir = join(benchDir, 'scrapinghub');
  const truth = JSON.parse(
    gunzipSync(readFileSync(join(shDir, 'ground-truth.json.gz'))).toString('utf8'),
  ) as Record<string, { url: string }>;
  const shIds = Object.keys(truth).sort();
  const wcDir = join(benchDir, 'wcxb-dev');
  const wc = gunzipSync(readFileSync(join(wcDir, 'ground-truth.jsonl.gz')))
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { file_id: string; url: string });
  const all = [
    ...shIds.map((id) => ({ file: join(shDir, 'html', `${id}.html.gz`), url: truth[id]!.url })),
    ...wc.map((t) => ({ file: join(wcDir, 'html', `${t.file_id}.html.gz`), url: t.url })),
  ];
  const present = new Set([
    ...readdirSync(join(shDir, 'html')).map((f) => join(shDir, 'html', f)),
    ...readdirSync(join(wcDir, 'html')).map((f) => join(wcDir, 'html', f)),
  ]);
  for (const [i, p] of all.entries()) {
    if (i % sample !== 0 || !present.has(p.file)) continue;
    yield { html: decodeHtml(gunzipSync(readFileSync(p.file))), url: p.url };
  }
}

/** A counter that also counts how often it is called. */
function countingCounter(): TokenCounter & { calls: number } {
  const inner = tiktokenCounter();
  const c = {
    name: inner.name,
    calls: 0,
    count(text: string): number {
      c.calls++;
      return inner.count(text);
    },
  };
  return c;
}

interface Row {
  blocks: number;
  pieces: number;
  overMax: number;
  slivers: number;
  midSentence: number;
  leadingPunct: number;
  brokenLinks: number;
  lostText: number;
  cpuMs: number;
  calls: number;
}

const ENDS_UNIT = /[.!?;:…。！？)"'”’\]]$/u;
/** Characters of the block, whitespace aside: a cut may move a space, never drop a letter. */
const letters = (s: string) => s.replace(/\s+/gu, '');
/** An inline Markdown link or image. */
const LINK =
  /!?\[(?:[^[\]\n]|\[[^[\]\n]*\])*\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+"[^"\n]*")?\)/gu;

/** Spans of the links and images in `block` that fit the budget (inner ones of a larger link too). */
function fittingLinks(block: string, real: TokenCounter): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  const re = new RegExp(LINK);
  for (let m = re.exec(block); m !== null; m = re.exec(block)) {
    if (real.count(m[0]) > MAX) re.lastIndex = m.index + 1;
    else spans.push([m.index, m.index + m[0].length]);
  }
  return spans;
}

function score(row: Row, block: string, pieces: readonly string[], real: TokenCounter): void {
  row.blocks++;
  row.pieces += pieces.length;
  // Pieces hold the block's characters in order, whitespace aside (checked below): positions
  // are compared in the block's non-whitespace characters. at[i] = block index of the i-th one.
  const at: number[] = [];
  for (let i = 0; i < block.length; i++) if (!/\s/u.test(block[i]!)) at.push(i);
  const links = fittingLinks(block, real);
  let cut = 0;
  pieces.forEach((p, k) => {
    const t = real.count(p);
    if (t > MAX) row.overMax++;
    if (t < MIN && pieces.length > 1) row.slivers++;
    if (/^[.!?;:,](?!\[)/u.test(p.trimStart())) row.leadingPunct++;
    cut += letters(p).length;
    if (k === pieces.length - 1 || cut >= at.length) return;
    const last = at[cut - 1]!;
    const next = at[cut]!;
    if (links.some(([a, b]) => a <= last && next < b)) row.brokenLinks++;
    // A cut at a line break of the block is a boundary too (list items end without a period).
    if (!ENDS_UNIT.test(p.trimEnd()) && !block.slice(last + 1, next).includes('\n'))
      row.midSentence++;
  });
  if (letters(pieces.join('')) !== letters(block)) row.lostText++;
}

const real = tiktokenCounter();
real.count('warm up');
const rows: Record<string, Row> = {};
const row = (name: string): Row =>
  (rows[name] ??= {
    blocks: 0,
    pieces: 0,
    overMax: 0,
    slivers: 0,
    midSentence: 0,
    leadingPunct: 0,
    brokenLinks: 0,
    lostText: 0,
    cpuMs: 0,
    calls: 0,
  });

const RAGFRESH = 'ragfresh chunkMarkdown';
const LC_DEFAULT = 'RecursiveCharacterTextSplitter (default separators)';
const LC_SENTENCE = 'RecursiveCharacterTextSplitter (+ ". " separator)';

async function timed(
  name: string,
  block: string,
  split: (counter: TokenCounter) => string[] | Promise<string[]>,
): Promise<void> {
  const counter = countingCounter();
  const c0 = process.cpuUsage();
  const pieces = (await split(counter)).map((p) => p.trim()).filter((p) => p !== '');
  const c = process.cpuUsage(c0);
  const r = row(name);
  r.cpuMs += (c.user + c.system) / 1000;
  r.calls += counter.calls;
  score(r, block, pieces, real);
}

let pageCount = 0;
for (const { html, url } of pages()) {
  pageCount++;
  let markdown = '';
  try {
    markdown = extractPage(html, { url }).markdown;
  } catch {
    continue;
  }
  for (const b of markdownBlocks(markdown)) {
    if (b.kind !== 'text' || real.count(b.text) <= MAX) continue;
    await timed(RAGFRESH, b.text, (counter) =>
      chunkMarkdown(b.text, { maxTokens: MAX, minTokens: MIN, counter }).map((c) => c.text),
    );
    await timed(LC_DEFAULT, b.text, (counter) =>
      new RecursiveCharacterTextSplitter({
        chunkSize: MAX,
        chunkOverlap: 0,
        lengthFunction: (t) => counter.count(t),
      }).splitText(b.text),
    );
    await timed(LC_SENTENCE, b.text, (counter) =>
      new RecursiveCharacterTextSplitter({
        chunkSize: MAX,
        chunkOverlap: 0,
        separators: ['\n\n', '\n', '. ', ' ', ''],
        lengthFunction: (t) => counter.count(t),
      }).splitText(b.text),
    );
  }
}

console.log(
  `# Oversized prose blocks: ragfresh's splitter vs @langchain/textsplitters\n\n` +
    `${pageCount} benchmark pages extracted; every Markdown text block over ${MAX} tokens ` +
    `(cl100k_base) split to ${MAX} tokens, no overlap; every piece re-counted with the real tokenizer.\n`,
);
console.log(
  '| splitter | blocks | pieces | over 512 | under 64 | cut inside a sentence | piece starts with punctuation | cut inside a link that fits | text lost (blocks) | CPU ms | tokenizer calls |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const [name, r] of Object.entries(rows)) {
  console.log(
    `| ${name} | ${r.blocks} | ${r.pieces} | ${r.overMax} | ${r.slivers} | ${r.midSentence} | ${r.leadingPunct} | ${r.brokenLinks} | ${r.lostText} | ${r.cpuMs.toFixed(0)} | ${r.calls} |`,
  );
}
