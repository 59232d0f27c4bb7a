// pnpm bench:boilerplate — what per-host boilerplate learning costs and saves in the engine.
// One loopback docs host (PAGES pages, default 200) whose articles carry chrome extraction
// cannot remove structurally (promo line, newsletter box, legal footer; see chrome-site.ts).
// Two engines over the same pages, learning on (defaults) and off, each: a cold refresh, then
// the host changes its footer (a chrome change) and a second refresh; then, with learning on,
// `reextract()` of everything, the naive answer to a model change. Counts chunks, embedder
// calls, publications and extractions. Runs built code (tsc -b first); Node strips the types.
import { createMemoryConnector } from '@ragfresh/connector-memory';
import { HashingEmbeddings, InMemoryStateStore, Publisher } from '@ragfresh/core';
import { ExtractPipeline, type RefreshCounts, RefreshEngine } from '@ragfresh/engine';
import { Fetcher, MemoryRawSnapshotStore } from '@ragfresh/fetch';
import { startChromeSite } from './chrome-site.ts';

const PAGES = Number(process.env.PAGES ?? 200);

class CountingEmbeddings extends HashingEmbeddings {
  texts = 0;
  override async embedDocuments(texts: string[]): Promise<number[][]> {
    this.texts += texts.length;
    return super.embedDocuments(texts);
  }
}

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
  if (learning)
    await step('reextract() everything (naive)', async () => (await engine.reextract()).counts);
  await publisher.close();
  await fetcher.close();
  await connector.close();
  await site.stop();
  return rows;
}

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
