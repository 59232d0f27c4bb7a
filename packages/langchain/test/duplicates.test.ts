import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DocumentInterface } from '@langchain/core/documents';
import { index } from '@langchain/core/indexing';
import { MemoryConnector } from '@ragfresh/connector-memory';
import { FIELDS, HashingEmbeddings, InMemoryStateStore, Publisher } from '@ragfresh/core';
import { RefreshEngine } from '@ragfresh/engine';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import type { Fetcher } from '@ragfresh/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatEvidence, RagfreshLoader, RagfreshRetriever, READER_FIELDS } from '../src/index.js';
import { IdVectorStore, MemoryRecordManager, simFetcher } from './helpers.js';

// One site template (header nav, sidebar, footer with a date); one page served under three URLs
// (a trailing slash with another footer date, a print view without the site chrome), two other
// pages on the template. A tracking-parameter copy needs no collapsing: URL identity already
// makes it the same document.
const para = (topic: string, facts: readonly string[]) =>
  facts.map((f, i) => `<p>${topic} note ${i + 1}: ${f}</p>`).join('\n');

const REPLICATION = `<h1>Replication</h1>
<h2>Zones</h2>
${para('Replication', [
  'every object is written to three replicas placed in separate availability zones, and a write is acknowledged only after two of them confirmed it.',
  'a replica that misses a write catches up from the write-ahead log of its peers before it answers reads again.',
  'operators can pin a bucket to two zones for data residency, which lowers the durability target printed on the bucket page.',
])}
<h2>Repair</h2>
${para('Repair', [
  'each read verifies a checksum, and a replica whose checksum fails is rebuilt from a healthy copy within minutes.',
  'repairs are throttled per node so that a failing disk never saturates the network of its rack.',
  'every repair is recorded in the audit log with the node, the object, the reason and the time it took.',
])}
<h2>Consistency</h2>
${para('Consistency', [
  'reads after an acknowledged write always see that write, because a read is served by a replica that took part in the quorum.',
  'listing a bucket is eventually consistent: a new object can take up to a second to appear in a listing on a busy bucket.',
  'conditional writes compare the object version, so two clients racing to update one object never both succeed.',
  'deletes leave a marker for seven days, which lets a replica that was offline learn about the delete before it serves the object again.',
])}
<h2>Capacity</h2>
${para('Capacity', [
  'each zone keeps a fifth of its disks free so that a whole rack can fail without a zone running out of space for repairs.',
  'when free space falls under the reserve, new buckets are placed in other regions and existing buckets keep writing normally.',
  'the capacity dashboard shows, per zone, the bytes stored, the bytes reserved for repairs and the forecast for the next ninety days.',
  'large objects are split into parts of sixty-four megabytes, and each part is placed independently across the three zones.',
])}
<h2>Monitoring</h2>
${para('Monitoring', [
  'the replication lag metric reports, per bucket, the age of the oldest write that is not yet on all three replicas.',
  'an alert fires when the lag stays above five minutes, and the runbook linked from the alert lists the usual causes.',
  'the repair queue length is exported next to the lag, so a slow disk shows up as a growing queue before it shows up as lag.',
])}`;

const ALPHA = `<h1>Alpha gateway</h1>
<h2>Setup</h2>
${para('Alpha', [
  'the alpha gateway terminates TLS at the edge and forwards requests to the nearest healthy cluster over a private link.',
  'configure the upstream pool with a weight per cluster; weights are re-read every thirty seconds without a restart.',
  'health checks probe each upstream every five seconds and eject it after three failures in a row.',
])}`;

const BETA = `<h1>Beta scheduler</h1>
<h2>Setup</h2>
${para('Beta', [
  'the beta scheduler places batch jobs on idle workers and pre-empts them when interactive traffic needs the capacity back.',
  'a job declares its memory ceiling; the scheduler refuses placements that would overcommit a worker beyond its reserve.',
  'finished jobs keep their logs for fourteen days, then the logs move to the archive tier of the bucket you chose.',
])}`;

function page(title: string, article: string, footerDate: string, reviewed = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} | Example Cloud Docs</title></head>
<body><header><nav><a href="/">Home</a> <a href="/guide/">Guide</a> <a href="/products/">Products</a> <a href="/pricing">Pricing</a></nav></header>
<aside><ul><li><a href="/guide/replication">Replication</a></li><li><a href="/products/alpha">Alpha</a></li><li><a href="/products/beta">Beta</a></li></ul></aside>
<main><article>${article}${reviewed === '' ? '' : `<p>Page last reviewed on ${reviewed}.</p>`}</article></main>
<footer><p>Last updated ${footerDate}.</p><p>© Example Cloud. Terms. Privacy. Status.</p></footer></body></html>`;
}

function printView(title: string, article: string, from: string, reviewed: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} | Example Cloud Docs</title></head>
<body><main><article>${article}<p>Page last reviewed on ${reviewed}.</p></article></main><footer><p>Printed from ${from} on 1 December 2026.</p></footer></body></html>`;
}

const ROUTES: Record<string, string> = {
  '/guide/replication': page('Replication', REPLICATION, '30 November 2026', '30 November 2026'),
  '/guide/replication/': page('Replication', REPLICATION, '1 December 2026', '30 November 2026'),
  '/print/guide/replication': printView(
    'Replication',
    REPLICATION,
    '/guide/replication',
    '30 November 2026',
  ),
  '/products/alpha': page('Alpha gateway', ALPHA, '30 November 2026'),
  '/products/beta': page('Beta scheduler', BETA, '30 November 2026'),
};

let server: Server;
let origin: string;
let fetcher: Fetcher;
let connector: MemoryConnector;
let publisher: Publisher;
const embeddings = new HashingEmbeddings();
const copies = ['/guide/replication', '/guide/replication/', '/print/guide/replication'];

beforeAll(async () => {
  server = createServer((req, res) => {
    const body = ROUTES[req.url ?? ''];
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(body ?? 'not found');
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fetcher = simFetcher();
  connector = new MemoryConnector();
  await connector.open({ dimensions: embeddings.dimensions });
  const state = new InMemoryStateStore();
  publisher = await Publisher.open({ connector, state });
  const engine = new RefreshEngine({
    sources: [
      {
        id: 'docs',
        urls: Object.keys(ROUTES).map((p) => `${origin}${p}`),
        everyMs: 3_600_000,
        identity: { mode: 'normalize' },
      },
    ],
    connector,
    state,
    publisher,
    fetcher,
    embeddings,
    pipeline: new ExtractPipeline(),
  });
  const report = await engine.refresh({ all: true });
  expect(report.sources[0]!.counts.published).toBe(5);
});

afterAll(async () => {
  await publisher?.close();
  await fetcher?.close();
  await connector?.close();
  await new Promise((ok) => server?.close(ok));
});

type Cited = { url: string };
const paths = (d: DocumentInterface) =>
  (d.metadata[READER_FIELDS.citations] as Cited[]).map((c) => new URL(c.url).pathname);

describe('RagfreshRetriever collapses copies of a page under several URLs', () => {
  const question = 'replicas placed in separate availability zones acknowledged write';

  it('the same page under three URL variants gives one result with three citations', async () => {
    const retriever = RagfreshRetriever.fromConnector({ connector, embeddings, k: 3 });
    const docs = await retriever.invoke(question);
    expect(docs[0]!.pageContent).toContain('availability zones');
    expect(new Set(paths(docs[0]!))).toEqual(new Set(copies));
    expect(docs[0]!.metadata[READER_FIELDS.duplicates]).toBe(3);
    // At prompt time the block names every URL the passage is found at.
    const block = formatEvidence(docs.slice(0, 1));
    for (const path of copies) expect(block).toContain(`${origin}${path}`);
    expect(block.match(/^Also at: /gm)).toHaveLength(2);
    expect(docs.slice(1).some((d) => d.pageContent.includes('separate availability zones'))).toBe(
      false,
    );
  });

  it('collapseDuplicates: false returns each copy, without citations', async () => {
    const retriever = RagfreshRetriever.fromConnector({
      connector,
      embeddings,
      k: 3,
      collapseDuplicates: false,
    });
    const docs = await retriever.invoke(question);
    expect(docs.every((d) => d.pageContent.includes('availability zones'))).toBe(true);
    expect(new Set(docs.map((d) => d.metadata[FIELDS.documentId])).size).toBe(3);
    expect(docs.every((d) => d.metadata[READER_FIELDS.citations] === undefined)).toBe(true);
  });

  it('two different pages on one template are never merged', async () => {
    const retriever = RagfreshRetriever.fromConnector({ connector, embeddings, k: 5 });
    const docs = await retriever.invoke('Setup note 1 the');
    const products = docs.filter((d) => paths(d).some((p) => p.startsWith('/products/')));
    expect(products.map(paths)).toEqual(
      expect.arrayContaining([['/products/alpha'], ['/products/beta']]),
    );
    expect(products).toHaveLength(2);
  });

  it("over a store LangChain's index() filled from RagfreshLoader, copies collapse by chunk_hash", async () => {
    const state = new InMemoryStateStore();
    const urls = Object.keys(ROUTES).map((p) => `${origin}${p}`);
    const loader = new RagfreshLoader({ fetcher, sourceId: 'docs', urls, state });
    const store = new IdVectorStore(embeddings, {});
    await index({
      docsSource: loader,
      recordManager: new MemoryRecordManager(),
      vectorStore: store,
      options: { cleanup: 'full' },
    });
    const retriever = new RagfreshRetriever({ vectorStore: store, view: 'index', state, k: 3 });
    const docs = await retriever.invoke(question);
    expect(new Set(paths(docs[0]!))).toEqual(new Set(copies));
    const off = new RagfreshRetriever({
      vectorStore: store,
      view: 'index',
      state,
      k: 3,
      collapseDuplicates: false,
    });
    expect(new Set((await off.invoke(question)).map((d) => d.metadata.url)).size).toBe(3);
  });
});
