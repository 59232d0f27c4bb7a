// HashingEmbeddings cost per page-sized text. Runs built code:
//   npx -y pnpm@10 exec tsc -b packages/core && ./node_modules/.bin/node packages/core/bench/embeddings.bench.ts
// Pages are the pseudo-random Markdown-ish texts the pinning test uses (mixed scripts, ~6 KB),
// embedded whole and as ~1.5 KB chunks; prints a table of ms per page (median of ROUNDS).
import { HashingEmbeddings } from '@ragfresh/core';
import { pageText } from '../test/hashing-pins.ts';

const PAGES = Number(process.env.PAGES ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const CHARS = Number(process.env.CHARS ?? 6_000);

const pages = Array.from({ length: PAGES }, (_, i) => pageText(1000 + i, CHARS));
const chunked = pages.map((p) => p.match(/[\s\S]{1,1500}/g) ?? []);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function time(run: () => void): number {
  const out: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    run();
    out.push((performance.now() - t0) / PAGES);
  }
  return median(out);
}

console.log(
  `\nHashingEmbeddings: ${PAGES} pages of ~${CHARS} chars, median of ${ROUNDS} rounds, node ${process.version}\n`,
);
console.log('| dimensions | ms/page (whole page) | ms/page (as 1.5 KB chunks) |');
console.log('|-----------:|---------------------:|---------------------------:|');
for (const dimensions of [256, 1024]) {
  const e = new HashingEmbeddings({ dimensions });
  // Warm up the JIT on a few pages first.
  for (const p of pages.slice(0, 20)) e.embedText(p);
  let sink = 0;
  const whole = time(() => {
    for (const p of pages) sink += e.embedText(p)[0]!;
  });
  const parts = time(() => {
    for (const chunks of chunked) for (const c of chunks) sink += e.embedText(c)[0]!;
  });
  if (Number.isNaN(sink)) throw new Error('NaN');
  console.log(
    `| ${String(dimensions).padStart(10)} | ${whole.toFixed(3).padStart(20)} | ${parts.toFixed(3).padStart(26)} |`,
  );
}
