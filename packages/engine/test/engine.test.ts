import { documentId, FIELDS } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';
import { type EngineSource, ExtractPipeline, type RefreshEngine } from './internals.js';

/** Versions visible in the current view of one document. */
async function view(h: Harness, docId: string): Promise<string[]> {
  const epoch = await h.connector.readEpoch();
  const listed = await h.connector.listChunks(docId);
  const visible = listed.filter(
    (c) => Number(c.metadata[FIELDS.from]) <= epoch && epoch < Number(c.metadata[FIELDS.to]),
  );
  return [...new Set(visible.map((c) => String(c.metadata[FIELDS.versionId])))];
}

/** Counts state-store writes per document while `fn` runs. */
/** Record writes per document during `fn` (single writes and batched updates), and the batches. */
async function writesDuring(
  h: Harness,
  fn: () => Promise<unknown>,
): Promise<Map<string, number> & { batches: number[] }> {
  const writes = Object.assign(new Map<string, number>(), { batches: [] as number[] });
  const count = (id: string) => writes.set(id, (writes.get(id) ?? 0) + 1);
  const put = h.state.putDocument.bind(h.state);
  const update = h.state.updateDocuments!.bind(h.state);
  h.state.putDocument = async (r) => {
    count(r.documentId);
    return put(r);
  };
  h.state.updateDocuments = async (ids, fn) => {
    let written = 0;
    await update(ids, (stored, id) => {
      const next = fn(stored, id);
      if (next !== undefined) {
        count(id);
        written++;
      }
      return next;
    });
    writes.batches.push(written);
  };
  try {
    await fn();
  } finally {
    h.state.putDocument = put;
    h.state.updateDocuments = update;
  }
  return writes;
}

describe('refresh engine on the memory connector and in-memory state', () => {
  let h: Harness;
  let sources: EngineSource[];
  let engine: RefreshEngine;
  let pagesA: string[];
  let pagesB: string[];
  const all = () => [
    ...pagesA.map((u) => documentId('a', u)),
    ...pagesB.map((u) => documentId('b', u)),
  ];

  beforeAll(async () => {
    h = await harness({ hosts: 2, pagesPerHost: 4 });
    const [hostA, hostB] = h.sim.hosts();
    pagesA = h.sim.urls(hostA!);
    pagesB = h.sim.urls(hostB!);
    sources = [source('a', pagesA), source('b', pagesB)];
    engine = h.engine(sources, {
      deletion: { goneChecks: 2, minGoneAgeMs: 0, autoApprove: false },
    });
  });
  afterAll(() => h.stop());

  it('cold: every page of every due source goes through one shared publish batch; the publisher records validators and raw digest, once', async () => {
    let report!: Awaited<ReturnType<RefreshEngine['refresh']>>;
    const writes = await writesDuring(h, async () => {
      report = await engine.refresh({ all: true });
    });
    const n = pagesA.length + pagesB.length;
    expect(report.totals.published).toBe(n);
    expect(report.sources.map((s) => [s.sourceId, s.counts.published, s.complete])).toEqual([
      ['a', pagesA.length, true],
      ['b', pagesB.length, true],
    ]);
    // One batch (batchSize 25) holding the pages of both sources, in arrival order.
    expect(h.batches.length).toBe(1);
    expect([...h.batches[0]!].sort()).toEqual([...pagesA.map(() => 'a'), ...pagesB.map(() => 'b')]);
    for (const id of all()) {
      const r = await h.state.getDocument(id);
      expect(r?.validators?.etag ?? r?.validators?.lastModified).toBeDefined();
      expect(r?.rawDigest).toMatch(/^[0-9a-f]{64}$/);
      expect(r?.lastGoodAt).toBeDefined();
      // The publisher's roll-forward write is the only one: the engine does not write it back.
      expect(writes.get(id)).toBe(1);
    }
  });

  it('unchanged: every page answers 304; nothing is parsed, embedded or published; one evidence write per document', async () => {
    const embedded = h.embeddings.texts;
    const batches = h.batches.length;
    let report!: Awaited<ReturnType<RefreshEngine['refresh']>>;
    const writes = await writesDuring(h, async () => {
      report = await engine.refresh({ all: true });
    });
    expect(report.totals).toMatchObject({
      notModified: pagesA.length + pagesB.length,
      extracted: 0,
      candidates: 0,
      chunksEmbedded: 0,
      storeWrites: 0,
    });
    expect(h.embeddings.texts).toBe(embedded);
    expect(h.batches.length).toBe(batches);
    expect([...writes.values()].every((w) => w === 1)).toBe(true);
    expect(writes.size).toBe(all().length);
    // No write per 304: the run's observations go to the state in one batched transaction.
    expect(writes.batches).toEqual([all().length]);
  });

  it('one edit on each host is published in one shared batch, re-embedding only new chunk texts', async () => {
    h.sim.mutate(pagesA[1]!, 'edit', { section: 0 });
    h.sim.mutate(pagesB[2]!, 'edit', { section: 0 });
    const before = h.batches.length;
    const report = await engine.refresh({ all: true });
    expect(report.totals.published).toBe(2);
    expect(h.batches.slice(before).map((b) => [...b].sort())).toEqual([['a', 'b']]);
    expect(report.totals.chunksEmbedded).toBeGreaterThan(0);
    expect(report.totals.chunksReused).toBeGreaterThan(0);
    expect(report.sources.map((s) => s.counts.notModified)).toEqual([
      pagesA.length - 1,
      pagesB.length - 1,
    ]);
  });

  it('an outage keeps the last good version current and marks the document degraded', async () => {
    const id = documentId('a', pagesA[2]!);
    const current = (await h.state.getDocument(id))!.currentVersionId!;
    h.sim.mutate(pagesA[2]!, 'outage', { retryAfter: 1 });
    const report = await engine.refresh({ sourceIds: ['a'] });
    expect(report.sources[0]!.complete).toBe(false);
    expect(report.sources[0]!.counts.fetchErrors).toBe(1);
    const r = await h.state.getDocument(id);
    expect(r?.status).toBe('degraded');
    expect(r?.statusReasons[0]).toMatch(/^server-error: HTTP 5/);
    expect(await view(h, id)).toEqual([current]);
    h.sim.mutate(pagesA[2]!, 'restore');
  });

  it('validators moved, content did not: counted, nothing embedded or published; a consent wall degrades and keeps the version', async () => {
    const churn = pagesA[3]!;
    const wall = pagesB[1]!;
    const wallId = documentId('b', wall);
    const wallVersion = (await h.state.getDocument(wallId))!.currentVersionId!;
    h.sim.mutate(churn, 'timestampChurn');
    h.sim.mutate(wall, 'consentWall');
    const embedded = h.embeddings.texts;
    const batches = h.batches.length;
    const report = await engine.refresh({ all: true });
    expect(report.totals).toMatchObject({
      unchangedContent: 1,
      validatorChurn: 1,
      notTheDocument: 1,
      candidates: 0,
    });
    expect(h.embeddings.texts).toBe(embedded);
    expect(h.batches.length).toBe(batches);
    const r = await h.state.getDocument(wallId);
    expect(r?.status).toBe('degraded');
    expect(r?.statusReasons.join(' ')).toMatch(/consent/i);
    expect(await view(h, wallId)).toEqual([wallVersion]);
    h.sim.mutate(churn, 'restore');
    h.sim.mutate(wall, 'restore');
  });

  it('a 404 seen goneChecks times becomes a review item; deletion happens only on approval', async () => {
    const url = pagesB[3]!;
    const id = documentId('b', url);
    h.sim.mutate(url, 'delete404');
    await engine.refresh({ sourceIds: ['b'] });
    expect(await h.state.getReviewItem(`delete:${id}`)).toBeUndefined();
    const second = await engine.refresh({ sourceIds: ['b'] });
    expect(second.sources[0]!.counts.reviewCreated).toBe(1);
    expect((await view(h, id)).length).toBe(1);
    expect(await engine.approve(`delete:${id}`, 'tester')).toBe(true);
    expect(await view(h, id)).toEqual([]);
    expect((await h.state.getTombstone(id))?.approvedBy).toBe('tester');
    // A tombstoned page is observed, never published again.
    h.sim.mutate(url, 'restore');
    const after = await engine.refresh({ sourceIds: ['b'] });
    expect(after.sources[0]!.counts.tombstonedSkipped).toBe(1);
    expect(await view(h, id)).toEqual([]);
  });

  it('a pipeline-key change re-extracts from raw snapshots without downloading, keeps validators re-tagged, then revalidates with 304s', async () => {
    const pipeline = new ExtractPipeline({ maxTokens: 90 });
    const next = h.engine(sources, { pipeline });
    h.sim.clearLog();
    const report = await next.refresh({ sourceIds: ['a'] });
    const counts = report.sources[0]!.counts;
    expect(counts.reextracted).toBe(pagesA.length);
    expect(counts.published).toBe(pagesA.length);
    expect(counts.notModified).toBe(pagesA.length);
    expect(counts.fetched200).toBe(0);
    expect(h.sim.log().filter((e) => e.status === 200).length).toBe(0);
    for (const u of pagesA) {
      const r = await h.state.getDocument(documentId('a', u));
      expect(r?.validators?.pipelineKey).toBe(pipeline.pipelineKey);
    }
  });

  it("a user's splitter as the chunker: its pieces under their sections' heading paths, its name in the pipeline key and every versionId", async () => {
    const seen: string[] = [];
    // One piece per paragraph, as a LangChain TextSplitter would return them.
    const byParagraph = {
      splitText: async (text: string) => {
        seen.push(text);
        return text.split(/\n{2,}/);
      },
    };
    const pipeline = new ExtractPipeline({ splitter: { splitter: byParagraph, name: 'paras' } });
    expect(pipeline.pipelineKey).toMatch(/\+split:paras$/);
    const next = h.engine(sources, { pipeline });
    h.sim.clearLog();
    const report = await next.refresh({ sourceIds: ['a'] });
    expect(report.sources[0]!.counts.reextracted).toBe(pagesA.length);
    expect(h.sim.log().filter((e) => e.status === 200).length).toBe(0);
    expect(seen.length).toBeGreaterThanOrEqual(pagesA.length);
    const epoch = await h.connector.readEpoch();
    for (const u of pagesA) {
      const id = documentId('a', u);
      const record = await h.state.getDocument(id);
      expect(record?.validators?.pipelineKey).toBe(pipeline.pipelineKey);
      const chunks = (await h.connector.listChunks(id)).filter(
        (c) => String(c.metadata[FIELDS.versionId]) === record?.currentVersionId,
      );
      expect(Number(chunks[0]!.metadata[FIELDS.from])).toBeLessThanOrEqual(epoch);
      // Every chunk is one paragraph the splitter returned: no blank line inside, none empty.
      for (const c of chunks) {
        expect(c.text.trim()).not.toBe('');
        expect(c.text).not.toMatch(/\n\n/);
        expect(JSON.parse(String(c.metadata[FIELDS.headingPath])).length).toBeGreaterThan(0);
      }
      // A section's pieces all carry that section's path: some page has pieces under a subheading.
      expect(
        new Set(chunks.map((c) => String(c.metadata[FIELDS.headingPath]))).size,
      ).toBeGreaterThan(1);
    }
  });
});
