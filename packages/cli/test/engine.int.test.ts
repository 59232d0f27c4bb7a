import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CountingEmbeddings, FIELDS, type StoreTarget } from '@ragfresh/core';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConnectorConfig,
  ExtractPipeline,
  openRuntime,
  queryCurrentView,
  type RefreshReport,
  type ResolvedConfig,
  type Runtime,
  resolveConfig,
  sourceStatuses,
} from '../src/index.js';

async function viewOf(
  rt: Runtime,
  documentId: string,
): Promise<{ versions: string[]; chunks: number }> {
  const epoch = await rt.connector.readEpoch();
  const listed = await rt.connector.listChunks(documentId);
  const visible = listed.filter(
    (c) => Number(c.metadata[FIELDS.from]) <= epoch && epoch < Number(c.metadata[FIELDS.to]),
  );
  return {
    versions: [...new Set(visible.map((c) => String(c.metadata[FIELDS.versionId])))],
    chunks: visible.length,
  };
}

const stores: Array<{
  name: string;
  connector: (dir: string) => Promise<{ config: ConnectorConfig; stop: () => Promise<void> }>;
}> = [
  {
    name: 'lancedb',
    connector: async (dir) => ({
      config: { store: 'lancedb', path: join(dir, 'lance'), table: 'engine' },
      stop: async () => {},
    }),
  },
  {
    name: 'chroma',
    connector: async () => {
      const { fixture } = await import('@ragfresh/connector-chroma/fixture');
      const target: StoreTarget = await fixture.start();
      const url = String(target.connectorSpec('engine').options.url);
      return {
        config: { store: 'chroma', url, collection: `engine${Date.now()}` },
        stop: () => target.stop(),
      };
    },
  },
];

describe.each(stores)(
  'refresh engine end to end on the simulated web and real $name',
  ({ connector }) => {
    let sim: SimWeb;
    let dir: string;
    let stopStore: () => Promise<void>;
    let config: ResolvedConfig;
    let rt: Runtime;
    const embeddings = new CountingEmbeddings();
    let pages: string[];
    let docIdOf: (url: string) => string;

    const refresh = async (): Promise<RefreshReport> => rt.engine.refresh({ all: true });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ragfresh-engine-'));
      sim = await startSimWeb({ seed: 11, hosts: 2, pagesPerHost: 8 });
      const store = await connector(dir);
      stopStore = store.stop;
      config = resolveConfig({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: dir,
        sources: [
          {
            id: 'docs',
            sitemaps: [`${sim.origin(sim.hosts()[0]!)}/sitemap.xml`],
            contract: { maxShrink: 0.8, minChars: 100 },
          },
        ],
        connector: store.config,
        embeddings,
        fetch: {
          minIntervalMs: 0,
          allowPrivateNetworks: true,
          circuitBreaker: { cooldownMs: 300 },
        },
        deletion: { goneChecks: 2, minGoneAge: 0 },
        gates: { maxRetireShare: 0.5 },
      });
      rt = await openRuntime(config);
      pages = sim.urls(sim.hosts()[0]!).filter((u) => new URL(u).pathname !== '/');
      const { documentId } = await import('@ragfresh/core');
      docIdOf = (url) => documentId('docs', url);
    });

    afterAll(async () => {
      await rt?.close();
      await sim?.stop();
      await stopStore?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it('cold refresh publishes every page', async () => {
      const r = await refresh();
      const s = r.sources[0]!;
      expect(s.complete).toBe(true);
      expect(s.counts.fetched200).toBe(8);
      expect(s.counts.published).toBe(8);
      expect(s.counts.chunksEmbedded).toBeGreaterThan(8);
      for (const url of pages) expect((await viewOf(rt, docIdOf(url))).versions).toHaveLength(1);
    });

    it('an unchanged refresh extracts, embeds and writes nothing (counted)', async () => {
      const epoch = await rt.connector.readEpoch();
      const embedded = embeddings.texts;
      const r = await refresh();
      const c = r.sources[0]!.counts;
      expect(c.notModified).toBe(8);
      expect(c.fetched200).toBe(0);
      expect(c.extracted).toBe(0);
      expect(c.chunksEmbedded).toBe(0);
      expect(c.storeWrites).toBe(0);
      expect(embeddings.texts).toBe(embedded);
      expect(await rt.connector.readEpoch()).toBe(epoch);
      // Conditional requests were actually sent.
      const pageRequests = sim.log().filter((e) => pages.includes(e.url) && e.status === 304);
      expect(pageRequests.length).toBeGreaterThanOrEqual(pages.length);
    });

    it('an edit publishes a new version and re-embeds only the changed chunk', async () => {
      const url = pages[0]!;
      const before = await viewOf(rt, docIdOf(url));
      sim.mutate(url, 'edit', {
        section: 0,
        text: 'Update: the zorblat quota is now 42 requests per minute.',
      });
      const embedded = embeddings.texts;
      const r = await refresh();
      const c = r.sources[0]!.counts;
      expect(c.published).toBe(1);
      expect(c.chunksEmbedded).toBe(1);
      expect(embeddings.texts - embedded).toBe(1);
      const after = await viewOf(rt, docIdOf(url));
      expect(after.versions).toHaveLength(1);
      expect(after.versions[0]).not.toBe(before.versions[0]);
      const hits = await queryCurrentView(rt, 'zorblat quota 42 requests per minute', 1);
      expect(hits[0]?.text).toContain('zorblat quota is now 42');
      expect(hits[0]?.header).toMatch(/^Source: .*\nFetched: \d{4}-/);
    });

    it('a shrink within the contract leaves no trailing chunk in the current view', async () => {
      const url = pages[1]!;
      const before = await viewOf(rt, docIdOf(url));
      sim.mutate(url, 'shrink', { keepSections: 1 });
      const r = await refresh();
      expect(r.sources[0]!.counts.published).toBe(1);
      const after = await viewOf(rt, docIdOf(url));
      expect(after.versions).toHaveLength(1);
      expect(after.chunks).toBeLessThan(before.chunks);
      const record = await rt.state.getDocument(docIdOf(url));
      expect(after.chunks).toBe(record?.currentChunkIds.length);
    });

    it('an outage and a 200 consent wall keep the old version, degrade, and index nothing from the bad page', async () => {
      const [outage, wall] = [pages[2]!, pages[3]!];
      const before = {
        outage: await viewOf(rt, docIdOf(outage)),
        wall: await viewOf(rt, docIdOf(wall)),
      };
      sim.mutate(outage, 'outage', { retryAfter: 1 });
      sim.mutate(wall, 'consentWall');
      const r = await refresh();
      const s = r.sources[0]!;
      expect(s.counts.published).toBe(0);
      expect(s.counts.storeWrites).toBe(0);
      expect(await viewOf(rt, docIdOf(outage))).toEqual(before.outage);
      expect(await viewOf(rt, docIdOf(wall))).toEqual(before.wall);
      expect((await rt.state.getDocument(docIdOf(outage)))?.status).toBe('degraded');
      const wallRecord = await rt.state.getDocument(docIdOf(wall));
      expect(wallRecord?.status).toBe('degraded');
      expect(wallRecord?.statusReasons.join(' ')).toMatch(/consent/i);
      expect(s.complete).toBe(false);
      const status = (await sourceStatuses(rt.config, rt.state))[0]!;
      expect(status.state).toBe('degraded');
      // Readers are told: the stale copy is labelled.
      const [wallChunk] = await rt.connector.listChunks(docIdOf(wall));
      const hits = await queryCurrentView(rt, wallChunk!.text, 3);
      const wallHit = hits.find((h) => h.documentId === docIdOf(wall));
      expect(wallHit?.header).toMatch(/STALE since/);
      sim.mutate(outage, 'restore');
      sim.mutate(wall, 'restore');
    });

    it('an off-host redirect keeps the old version and raises a per-source alert', async () => {
      const url = pages[4]!;
      const before = await viewOf(rt, docIdOf(url));
      sim.mutate(url, 'offHostRedirect');
      const r = await refresh();
      expect(r.sources[0]!.alerts.some((a) => a.startsWith('off-host-redirect'))).toBe(true);
      expect(await viewOf(rt, docIdOf(url))).toEqual(before);
      sim.mutate(url, 'restore');
    });

    it('a partial run (every page failing) deletes nothing and proposes nothing', async () => {
      const host = sim.hosts()[0]!;
      const views = await Promise.all(pages.map((u) => viewOf(rt, docIdOf(u))));
      sim.mutateHost(host, 'outage', { retryAfter: 1 });
      const r = await refresh();
      expect(r.sources[0]!.complete).toBe(false);
      expect(r.sources[0]!.counts.reviewCreated).toBe(0);
      expect(await rt.state.listReviewItems({ status: 'pending' })).toHaveLength(0);
      expect(await Promise.all(pages.map((u) => viewOf(rt, docIdOf(u))))).toEqual(views);
      sim.mutateHost(host, 'restore');
      // The host's circuit breaker opened during the outage; let it cool down, then recover.
      await new Promise((r) => setTimeout(r, 400));
      const recovered = await refresh();
      expect(recovered.sources[0]!.complete).toBe(true);
    });

    it('a 410 confirmed over two checks becomes a review item; approval tombstones and retires', async () => {
      const url = pages[5]!;
      sim.mutate(url, 'delete410');
      const first = await refresh();
      expect(first.sources[0]!.events.find((e) => e.url === url)?.event).toBe('gone');
      // One 410 is not yet evidence enough by itself; the page also left the sitemap of a run
      // with complete coverage, which is (inventory diff). Either way nothing is removed yet.
      expect((await viewOf(rt, docIdOf(url))).versions).toHaveLength(1);
      await refresh();
      const pending = await rt.state.listReviewItems({ status: 'pending' });
      expect(pending.map((p) => p.url)).toEqual([url]);
      expect(pending[0]?.evidence.join(' ')).toMatch(/410/);
      expect((await viewOf(rt, docIdOf(url))).versions).toHaveLength(1);
      expect(await rt.engine.approve(pending[0]!.id, 'test')).toBe(true);
      expect((await viewOf(rt, docIdOf(url))).chunks).toBe(0);
      expect((await rt.state.getTombstone(docIdOf(url)))?.approvedBy).toBe('test');
    });

    it('a tombstoned URL is not resurrected by a transient 200', async () => {
      const url = pages[5]!;
      sim.mutate(url, 'restore');
      const r = await refresh();
      expect(r.sources[0]!.counts.tombstonedSkipped).toBeGreaterThanOrEqual(1);
      expect((await viewOf(rt, docIdOf(url))).chunks).toBe(0);
    });

    it('an extractor/chunker version change re-extracts from raw snapshots without network', async () => {
      await rt.close();
      rt = await openRuntime(config, { pipeline: new ExtractPipeline({ maxTokens: 96 }) });
      const url = pages[6]!;
      const before = await viewOf(rt, docIdOf(url));
      sim.clearLog();
      const result = await rt.engine.reextract();
      expect(sim.log()).toHaveLength(0);
      expect(result.documents).toBeGreaterThanOrEqual(6);
      expect(result.republished).toBe(result.documents);
      const after = await viewOf(rt, docIdOf(url));
      expect(after.versions).toHaveLength(1);
      expect(after.versions[0]).not.toBe(before.versions[0]);
      expect(after.chunks).toBeGreaterThan(before.chunks);
      // The validators were re-tagged for the new pipeline: the next refresh is all 304s.
      const r = await refresh();
      expect(r.sources[0]!.counts.fetched200).toBe(0);
      expect(r.sources[0]!.counts.notModified).toBeGreaterThanOrEqual(result.documents);
      expect(r.sources[0]!.counts.extracted).toBe(0);
    });

    it('a refresh under a new chunker re-extracts from raw first, then revalidates with 304s', async () => {
      await rt.close();
      rt = await openRuntime(config, { pipeline: new ExtractPipeline({ maxTokens: 200 }) });
      const url = pages[6]!;
      const before = await viewOf(rt, docIdOf(url));
      const r = await refresh();
      const c = r.sources[0]!.counts;
      expect(c.reextracted).toBeGreaterThanOrEqual(6);
      expect(c.published).toBeGreaterThanOrEqual(1);
      expect(c.fetched200).toBe(0);
      const after = await viewOf(rt, docIdOf(url));
      expect(after.versions).toHaveLength(1);
      expect(after.versions[0]).not.toBe(before.versions[0]);
      // Steady state again: nothing re-extracted, nothing fetched in full.
      const again = await refresh();
      expect(again.sources[0]!.counts.reextracted).toBe(0);
      expect(again.sources[0]!.counts.fetched200).toBe(0);
    });
  },
);
