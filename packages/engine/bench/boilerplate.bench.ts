// pnpm bench:boilerplate — what per-host boilerplate learning costs and saves in the engine.
// One loopback docs host (PAGES pages, default 200) whose articles carry chrome extraction
// cannot remove structurally (promo line, newsletter box, legal footer; see chrome-site.ts).
// Two engines over the same pages, learning on (defaults) and off, each: a cold refresh, then
// the host changes its footer (a chrome change) and a second refresh; then, with learning on,
// `reextract()` of everything, the naive answer to a model change. Counts chunks, embedder
// calls, publications and extractions. Runs built code (tsc -b first); Node strips the types.
import { createMemoryConnector } from '@ragfresh/connector-memory';
import { CountingEmbeddings, InMemoryStateStore, Publisher } from '@ragfresh/core';
import { type RefreshCounts, RefreshEngine } from '@ragfresh/engine';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import { type HostSampleJson, learnedModelOf } from '@ragfresh/engine/stages';
import { boilerplateDigests } from '@ragfresh/extract';
import { Fetcher, MemoryRawSnapshotStore } from '@ragfresh/fetch';
import { startChromeSite } from './chrome-site.ts';

const PAGES = Number(process.env.PAGES ?? 200);
let sizes = '';
let cpu = '';

interface Row {
  readonly variant: string;
  readonly step: string;
  readonly fetched200: number;
  readonly extractions: number;
  readonly reextracted: number;
  readonly published: number;
  readonly embedded: number;
  readonly chunks: number;
  readonly changedDocs: number;
  readonly seconds: number;
}

async function variant(learning: boolean): Promise<Row[]> {
  const site = await startChromeSite({ pages: PAGES });
  const connector = createMemoryConnector();
  await connector.open({ dimensions: 64 });
  const state = new InMemoryStateStore();
  const publisher = await Publisher.open({ connector, state, maxRetireShare: 1 });
  const snapshots = new MemoryRawSnapshotStore();
  const fetcher = new Fetcher({
    userAgent: 'ragfresh-bench/0.1 (+https://example.org/bot)',
    robots: false,
    minIntervalMs: 0,
    retry: { maxAttempts: 1 },
    network: { allowPrivateNetworks: true },
    snapshots,
  });
  const embeddings = new CountingEmbeddings({ dimensions: 64 });
  const engine = new RefreshEngine({
    sources: [{ id: 'docs', urls: site.urls, everyMs: 3_600_000, identity: { mode: 'normalize' } }],
    connector,
    state,
    publisher,
    fetcher,
    snapshots,
    embeddings,
    pipeline: new ExtractPipeline(),
    maxRetireShare: 1,
    ...(learning ? {} : { boilerplate: false as const }),
  });
  const versions = async () => {
    const out = new Map<string, string | undefined>();
    let chunks = 0;
    for await (const r of state.listDocuments()) {
      out.set(r.documentId, r.currentVersionId);
      chunks += r.currentChunkIds.length;
    }
    return { out, chunks };
  };
  const rows: Row[] = [];
  const name = learning ? 'learning on' : 'learning off';
  const step = async (label: string, run: () => Promise<RefreshCounts>) => {
    const before = await versions();
    const embedded = embeddings.texts;
    const t0 = performance.now();
    const c = await run();
    const seconds = (performance.now() - t0) / 1000;
    const after = await versions();
    let changedDocs = 0;
    for (const [id, v] of after.out) if (before.out.get(id) !== v) changedDocs++;
    rows.push({
      variant: name,
      step: label,
      fetched200: c.fetched200,
      extractions: c.extracted,
      reextracted: c.reextracted,
      published: c.published,
      embedded: embeddings.texts - embedded,
      chunks: after.chunks,
      changedDocs,
      seconds,
    });
  };
  await step('cold refresh', async () => (await engine.refresh({ all: true })).totals);
  site.setFooter('Copyright 2027 Acme Cloud Inc. All rights reserved. Made in Porto.');
  await step('footer changed, refresh', async () => (await engine.refresh({ all: true })).totals);
  if (learning) {
    await step('reextract() everything (naive)', async () => (await engine.reextract()).counts);
    const host = await state.getLearned?.('boilerplate-host', `docs ${new URL(site.origin).host}`);
    let facts = 0;
    let n = 0;
    for await (const r of state.listDocuments()) {
      facts += JSON.stringify(await state.getLearned?.('boilerplate-doc', r.documentId)).length;
      n++;
    }
    const sample = host as { pages: unknown[]; model: { blocks: unknown[] } };
    cpu = await pageCpu(site.urls, new ExtractPipeline(), host as HostSampleJson);
    sizes = `learned state: host sample ${JSON.stringify(host).length} B (${sample.pages.length} pages, ${sample.model.blocks.length} chrome blocks), per-document facts ${Math.round(facts / n)} B on average`;
  }
  await publisher.close();
  await fetcher.close();
  await connector.close();
  await site.stop();
  return rows;
}

/**
 * CPU ms per page of the three page paths over the host's pages, interleaved page by page over
 * ROUNDS rounds (after a warm round) so load drift hits them alike; plus the block digests alone.
 */
async function pageCpu(urls: readonly string[], pipeline: ExtractPipeline, host: HostSampleJson) {
  const pages: { url: string; html: string }[] = [];
  for (const url of urls) pages.push({ url, html: await (await fetch(url)).text() });
  const learned = learnedModelOf(host);
  const texts: string[] = [];
  const paths: [string, (p: (typeof pages)[number]) => Promise<unknown>][] = [
    ['process (no learning)', (p) => pipeline.process(input(p), context(p))],
    ['processLearned, no model', (p) => pipeline.processLearned(input(p), context(p), undefined)],
    [
      'processLearned, learned model',
      (p) => pipeline.processLearned(input(p), context(p), learned),
    ],
  ];
  const used = paths.map(() => 0);
  const rounds = Number(process.env.ROUNDS ?? 5);
  for (let round = 0; round <= rounds; round++) {
    for (const p of pages) {
      for (const [i, [, run]] of paths.entries()) {
        const t0 = process.cpuUsage();
        const out = await run(p);
        const d = process.cpuUsage(t0);
        if (round > 0) used[i]! += d.user + d.system;
        if (round === 0 && i === 0) texts.push((out as { text: string }).text);
      }
    }
  }
  const t0 = process.cpuUsage();
  for (let round = 0; round < rounds; round++) for (const t of texts) boilerplateDigests(t);
  const d = process.cpuUsage(t0);
  const ms = (us: number) => (us / 1000 / (rounds * pages.length)).toFixed(2);
  const parts = paths.map(([name], i) => `${name} ${ms(used[i]!)} ms`);
  parts.push(`boilerplateDigests alone ${ms(d.user + d.system)} ms`);
  return `CPU per page (${rounds} rounds): ${parts.join(', ')}`;
}

const input = (p: { url: string; html: string }) => ({
  text: p.html,
  contentType: 'text/html',
  url: p.url,
  finalUrl: p.url,
  acquisition: 'raw' as const,
});
const context = (p: { url: string }) => ({
  documentId: `docs:${p.url}`,
  sourceId: 'docs',
  retrievedAt: '2026-12-01T00:00:00.000Z',
});

const rows = [...(await variant(false)), ...(await variant(true))];
console.log(`boilerplate learning, one host of ${PAGES} pages (chrome-site.ts), default options`);
console.log(
  '| variant | step | fetched 200 | extractions | of which re-extracted | published | chunks embedded | chunks current | docs on a new version | s |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(
    `| ${r.variant} | ${r.step} | ${r.fetched200} | ${r.extractions} | ${r.reextracted} | ${r.published} | ${r.embedded} | ${r.chunks} | ${r.changedDocs} | ${r.seconds.toFixed(1)} |`,
  );
}
console.log(sizes);
console.log(cpu);
