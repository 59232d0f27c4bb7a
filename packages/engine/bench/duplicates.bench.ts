// pnpm bench:duplicates — the near-duplicate distance threshold, measured on built pairs.
// Fetches PAGES pages of one simulated docs site over loopback (one template: header, sidebar,
// breadcrumbs, footer, consent banner), extracts each with the engine's pipeline steps and
// fingerprints the text (SimHash, 64 bits). Copies of a page: the same URL with a tracking
// parameter (fetched), a changed date line in the footer and in the article, a print view
// (no header, sidebar, footer; a "printed from" line). Different pages: every pair of distinct
// site pages, plus "template siblings" (spec pages sharing all prose but name, price, SKU).
// Prints the distance distribution of each kind and, per threshold, the miss rate (copies
// above it) and the false-merge rate (different pages at or below it).
// Runs built code (tsc -b first); Node strips the types of this file.
import { extractPage, hammingDistance, prepareDocument, simhash64 } from '@ragfresh/extract';
import { startSimWeb } from '@ragfresh/sim';

const PAGES = Number(process.env.PAGES ?? 120);
const SIBLINGS = Number(process.env.SIBLINGS ?? 60);

const fingerprint = (html: string, url: string) => simhash64(extractPage(html, { url }).markdown);
const PROVENANCE = {
  url: 'https://x.example/',
  finalUrl: 'https://x.example/',
  title: 't',
  retrievedAt: '2026-12-01T00:00:00.000Z',
  contentChangedAt: '2026-12-01T00:00:00.000Z',
  acquisition: 'raw',
} as const;
/** Chunk text hashes by ordinal (the engine's default 512-token chunks). */
const chunkHashes = (html: string, url: string) =>
  prepareDocument({
    documentId: 'bench:x',
    sourceId: 'bench',
    markdown: extractPage(html, { url }).markdown,
    normalized: true,
    provenance: PROVENANCE,
  }).chunks.map((c) => c.contentHash);
const words = (html: string, url: string) =>
  extractPage(html, { url }).markdown.split(/\s+/u).filter(Boolean).length;

function printView(html: string, url: string): string {
  return html
    .replace(/<header[\s\S]*?<\/header>/giu, '')
    .replace(/<nav[\s\S]*?<\/nav>/giu, '')
    .replace(/<aside[\s\S]*?<\/aside>/giu, '')
    .replace(/<footer[\s\S]*?<\/footer>/giu, '')
    .replace(/<div class="consent[\s\S]*?<\/div>/giu, '')
    .replace('<main', `<p class="print-note">Printed from ${url} on 1 December 2026</p><main`);
}

function withFooterDate(html: string, date: string): string {
  return html.replace('</footer>', `<p>Last updated ${date}</p></footer>`);
}

function withArticleDate(html: string, date: string): string {
  return html.replace('</article>', `<p>Page last reviewed on ${date}.</p></article>`);
}

/** Spec pages of one product family: the same template and prose, a different model. */
function sibling(i: number): string {
  const name = `Vault ${['S', 'M', 'L', 'XL', 'Pro', 'Max'][i % 6]}${Math.floor(i / 6) + 1}`;
  const prose = [
    'Every Vault model stores objects in three zones, verifies a checksum on each read and rebuilds a damaged replica from a healthy copy within minutes.',
    'Encryption at rest uses per-object keys wrapped by the account key, and rotation never rewrites data: only the wrapped keys change.',
    'Lifecycle rules move cold objects to the archive tier after the number of days you choose, and restore them on the first read.',
    'Access is granted by scoped tokens; every request is recorded in the audit log with the token, the object and the time.',
  ];
  return `<!doctype html><html><head><title>${name} | Vault storage</title></head><body>
<header><nav><a href="/">Home</a> <a href="/models">Models</a> <a href="/pricing">Pricing</a></nav></header>
<main><article><h1>${name}</h1>
<p>The ${name} holds up to ${(i + 1) * 2} TB per bucket at $${(9 + i * 1.5).toFixed(2)} per month, SKU VLT-${1000 + i * 7}.</p>
${prose.map((p) => `<p>${p}</p>`).join('\n')}
<table><tr><th>Model</th><th>Capacity</th><th>Price</th></tr><tr><td>${name}</td><td>${(i + 1) * 2} TB</td><td>$${(9 + i * 1.5).toFixed(2)}</td></tr></table>
</article></main>
<footer><p>© Vault storage. Terms. Privacy.</p></footer></body></html>`;
}

// A fixed port: extracted links are absolute, so the port is part of every text (and of its
// fingerprint); another port is another (equally valid) sample.
const PORT = Number(process.env.PORT ?? 47310);
const sim = await startSimWeb({ seed: 11, hosts: 1, pagesPerHost: PAGES + 1, port: PORT });
try {
  const host = sim.hosts()[0]!;
  const urls = sim.urls(host).slice(1, PAGES + 1);
  const pages: { url: string; html: string; fp: string; words: number }[] = [];
  const copies: Record<string, number[]> = {
    'tracking parameter (fetched)': [],
    'footer date changed': [],
    'article date line changed': [],
    'print view': [],
  };
  const shortCopies: number[] = [];
  /** Per copy: its distance, and for each of its chunks whether an identical chunk exists in the original. */
  const copyChunks: { distance: number; exact: boolean[] }[] = [];
  const chunkLevel = (original: string, copy: string, url: string, distance: number) => {
    const mine = new Set(chunkHashes(original, url));
    copyChunks.push({ distance, exact: chunkHashes(copy, url).map((h) => mine.has(h)) });
  };
  for (const url of urls) {
    const html = await (await fetch(url)).text();
    const fp = fingerprint(html, url);
    const n = words(html, url);
    pages.push({ url, html, fp, words: n });
    const tracked = `${url}?utm_source=newsletter`;
    const trackedHtml = await (await fetch(tracked)).text();
    copies['tracking parameter (fetched)']!.push(
      hammingDistance(fp, fingerprint(trackedHtml, tracked)),
    );
    const a = hammingDistance(
      fingerprint(withFooterDate(html, '30 November 2026'), url),
      fingerprint(withFooterDate(html, '1 December 2026'), url),
    );
    copies['footer date changed']!.push(a);
    chunkLevel(
      withFooterDate(html, '30 November 2026'),
      withFooterDate(html, '1 December 2026'),
      url,
      a,
    );
    const b = hammingDistance(
      fingerprint(withArticleDate(html, '30 November 2026'), url),
      fingerprint(withArticleDate(html, '1 December 2026'), url),
    );
    copies['article date line changed']!.push(b);
    chunkLevel(
      withArticleDate(html, '30 November 2026'),
      withArticleDate(html, '1 December 2026'),
      url,
      b,
    );
    const p = hammingDistance(fp, fingerprint(printView(html, url), `${url}?print=1`));
    copies['print view']!.push(p);
    chunkLevel(html, printView(html, url), url, p);
    if (n < 200) shortCopies.push(Math.max(a, b, p));
  }
  const distinct: number[] = [];
  for (let i = 0; i < pages.length; i++)
    for (let j = i + 1; j < pages.length; j++)
      distinct.push(hammingDistance(pages[i]!.fp, pages[j]!.fp));
  const sibs = Array.from({ length: SIBLINGS }, (_, i) =>
    fingerprint(sibling(i), `https://vault.example/models/${i}`),
  );
  const siblingPairs: number[] = [];
  for (let i = 0; i < sibs.length; i++)
    for (let j = i + 1; j < sibs.length; j++)
      siblingPairs.push(hammingDistance(sibs[i]!, sibs[j]!));

  const stats = (xs: readonly number[]) => {
    const s = [...xs].sort((x, y) => x - y);
    const q = (f: number) => s[Math.min(s.length - 1, Math.floor(f * s.length))] ?? 0;
    return `${String(s.length).padStart(6)} | ${String(s[0] ?? 0).padStart(3)} | ${String(q(0.5)).padStart(3)} | ${String(q(0.99)).padStart(3)} | ${String(s[s.length - 1] ?? 0).padStart(3)}`;
  };
  const w = pages.map((p) => p.words).sort((x, y) => x - y);
  console.log(
    `sim seed 11 on port ${PORT}, ${pages.length} pages of one template (extracted words: min ${w[0]}, median ${w[Math.floor(w.length / 2)]}, max ${w[w.length - 1]}), ${SIBLINGS} template siblings\n`,
  );
  console.log('kind                          |  pairs | min | p50 | p99 | max');
  for (const [kind, xs] of Object.entries(copies))
    console.log(`copy: ${kind.padEnd(24)} | ${stats(xs)}`);
  console.log(`different: distinct pages      | ${stats(distinct)}`);
  console.log(`different: template siblings   | ${stats(siblingPairs)}`);
  const allCopies = Object.values(copies).flat();
  console.log('\nthreshold | copies missed (above) | distinct pages merged | siblings merged');
  for (const t of [0, 1, 2, 3, 4, 5, 6, 8, 10, 12]) {
    const missed = allCopies.filter((d) => d > t).length;
    const merged = distinct.filter((d) => d <= t).length;
    const sibMerged = siblingPairs.filter((d) => d <= t).length;
    const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(2)} %`;
    console.log(
      `${String(t).padStart(9)} | ${`${missed}/${allCopies.length} (${pct(missed, allCopies.length)})`.padStart(21)} | ${`${merged}/${distinct.length} (${pct(merged, distinct.length)})`.padStart(21)} | ${`${sibMerged}/${siblingPairs.length} (${pct(sibMerged, siblingPairs.length)})`.padStart(15)}`,
    );
  }
  const copyChunkCount = copyChunks.reduce((n, c) => n + c.exact.length, 0);
  const exactShare = copyChunks.reduce((n, c) => n + c.exact.filter(Boolean).length, 0);
  console.log(
    `\nresults (chunks, ${copyChunkCount} in the copies): ${exactShare} collapse by identical text alone (${((100 * exactShare) / copyChunkCount).toFixed(1)} %)`,
  );
  console.log('threshold | copy chunks left uncollapsed (neither identical text nor same group)');
  for (const t of [0, 1, 2, 3, 4, 5, 6]) {
    const left = copyChunks.reduce(
      (n, c) => n + (c.distance <= t ? 0 : c.exact.filter((e) => !e).length),
      0,
    );
    console.log(
      `${String(t).padStart(9)} | ${left}/${copyChunkCount} (${((100 * left) / copyChunkCount).toFixed(2)} %)`,
    );
  }
  if (shortCopies.length > 0)
    console.log(
      `\npages under 200 words: ${shortCopies.length}, worst copy distance ${Math.max(...shortCopies)}`,
    );
} finally {
  await sim.stop();
}
