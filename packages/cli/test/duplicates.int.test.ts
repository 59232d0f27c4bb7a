import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentId, FIELDS, HashingEmbeddings, type StoreTarget } from '@ragfresh/core';
import { collapseDuplicateHits } from '@ragfresh/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConnectorConfig,
  openRuntime,
  queryCurrentView,
  type Runtime,
  resolveConfig,
} from '../src/index.js';

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

const stores: Array<{
  name: string;
  connector: (dir: string) => Promise<{ config: ConnectorConfig; stop: () => Promise<void> }>;
}> = [
  {
    name: 'lancedb',
    connector: async (dir) => ({
      config: { store: 'lancedb', path: join(dir, 'lance'), table: 'dups' },
      stop: async () => {},
    }),
  },
  {
    name: 'chroma',
    connector: async () => {
      const { fixture } = await import('@ragfresh/connector-chroma/fixture');
      const target: StoreTarget = await fixture.start();
      const url = String(target.connectorSpec('dups').options.url);
      return {
        config: { store: 'chroma', url, collection: `dups${Date.now()}` },
        stop: () => target.stop(),
      };
    },
  },
];

describe.each(stores)('near-duplicates across URLs, end to end on real $name', ({ connector }) => {
  let server: Server;
  let origin: string;
  let dir: string;
  let stopStore: () => Promise<void>;
  let rt: Runtime;
  const copies = ['/guide/replication', '/guide/replication/', '/print/guide/replication'];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const body = ROUTES[req.url ?? ''];
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(body ?? 'not found');
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-dups-'));
    const store = await connector(dir);
    stopStore = store.stop;
    const config = resolveConfig({
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: dir,
      sources: [{ id: 'docs', urls: Object.keys(ROUTES).map((p) => `${origin}${p}`) }],
      connector: store.config,
      embeddings: new HashingEmbeddings({ dimensions: 256 }),
      fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
    });
    rt = await openRuntime(config);
    const report = await rt.engine.refresh({ all: true });
    expect(report.sources[0]!.counts.published).toBe(5);
  });

  afterAll(async () => {
    await rt?.close();
    await stopStore?.();
    await new Promise((ok) => server?.close(ok));
    rmSync(dir, { recursive: true, force: true });
  });

  const groupsOf = async (path: string) => {
    const listed = await rt.connector.listChunks(documentId('docs', `${origin}${path}`));
    return [...new Set(listed.map((c) => c.metadata[FIELDS.duplicateGroup]))];
  };

  it('records one duplicate group for the three URLs of the page, and others for the other pages', async () => {
    const [g] = await groupsOf(copies[0]!);
    expect(typeof g).toBe('string');
    for (const path of copies) expect(await groupsOf(path)).toEqual([g]);
    const alpha = await groupsOf('/products/alpha');
    const beta = await groupsOf('/products/beta');
    expect(alpha).toHaveLength(1);
    expect(beta).toHaveLength(1);
    expect(alpha[0]).not.toBe(g);
    expect(beta[0]).not.toBe(alpha[0]);
  });

  it('the same page under three URL variants gives one result with three citations', async () => {
    const question = 'replicas placed in separate availability zones acknowledged write';
    const hits = await queryCurrentView(rt, question, 3);
    expect(hits[0]!.text).toContain('availability zones');
    expect(new Set(hits[0]!.citations.map((c) => new URL(c.url).pathname))).toEqual(
      new Set(copies),
    );
    // No other result repeats the passage.
    expect(hits.slice(1).filter((h) => h.text.includes('separate availability zones'))).toEqual([]);
    // Collapsing off: the three copies come back as three results, one citation each.
    const all = await queryCurrentView(rt, question, 3, { collapse: false });
    expect(all.every((h) => h.text.includes('availability zones'))).toBe(true);
    expect(new Set(all.map((h) => h.documentId)).size).toBe(3);
    expect(all.every((h) => h.citations.length === 1)).toBe(true);
  });

  it('two different pages on one template are never merged', async () => {
    for (const question of [
      'alpha gateway terminates TLS upstream pool health checks',
      'beta scheduler batch jobs idle workers memory ceiling',
      'setup',
    ]) {
      const hits = await queryCurrentView(rt, question, 5);
      for (const h of hits) {
        const paths = h.citations.map((c) => new URL(c.url).pathname);
        const products = paths.filter((p) => p.startsWith('/products/'));
        expect(products.length <= 1 || new Set(products).size === 1).toBe(true);
        if (products.length > 0) expect(paths.every((p) => p.startsWith('/products/'))).toBe(true);
      }
      const alpha = hits.find((h) => h.text.includes('alpha gateway terminates'));
      const beta = hits.find((h) => h.text.includes('beta scheduler places'));
      if (alpha !== undefined && beta !== undefined) expect(alpha.rank).not.toBe(beta.rank);
    }
    const both = await queryCurrentView(rt, 'Setup note 1 the', 5);
    const products = both.filter((h) => h.citations.some((c) => c.url.includes('/products/')));
    expect(products).toHaveLength(2);
    expect(products.map((h) => h.citations.length)).toEqual([1, 1]);
    // Control: the same two hits with one group id between them would be merged (same ordinal),
    // so the check above can fail.
    const vector = await rt.embeddings.embedQuery('Setup note 1 the');
    const raw = (await rt.connector.searchCurrent(vector, 20)).filter((h) =>
      String(h.metadata[FIELDS.url]).includes('/products/'),
    );
    expect(raw).toHaveLength(2);
    const forged = raw.map((h) => ({ ...h.metadata, [FIELDS.duplicateGroup]: 'rf-dup:forged' }));
    expect(collapseDuplicateHits(forged, (m) => m)).toHaveLength(1);
  });
});
