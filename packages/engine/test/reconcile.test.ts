import {
  type DocumentRecord,
  documentId,
  FIELDS,
  InMemoryStateStore,
  isRagfreshError,
  Publisher,
} from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';
import { ExtractPipeline, RefreshEngine } from './internals.js';

/** Documents whose current view holds exactly one version, and those holding two or none. */
async function viewShape(h: Harness, ids: readonly string[]) {
  const epoch = await h.connector.readEpoch();
  const shape = { one: 0, two: 0, none: 0 };
  for (const id of ids) {
    const visible = (await h.connector.listChunks(id)).filter(
      (c) => Number(c.metadata[FIELDS.from]) <= epoch && epoch < Number(c.metadata[FIELDS.to]),
    );
    const versions = new Set(visible.map((c) => c.metadata[FIELDS.versionId])).size;
    if (versions === 1) shape.one++;
    else if (versions === 0) shape.none++;
    else shape.two++;
  }
  return shape;
}

describe('quarantine has a way out through review', () => {
  let h: Harness;
  let urls: string[];
  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 3 }, 0.5, () => ({ maxShrink: 0.5 }));
    urls = h.sim.urls();
    await h.engine([source('q', urls)]).refresh({ all: true });
  });
  afterAll(() => h.stop());

  it('a contract-quarantined candidate is an ingestion item; unchanged it is not re-embedded; approve publishes it from its raw snapshot', async () => {
    const id = documentId('q', urls[1]!);
    const before = (await h.state.getDocument(id))!.currentVersionId;
    h.sim.mutate(urls[1]!, 'shrink', { keepSections: 1 });
    const engine = h.engine([source('q', urls)]);
    const first = await engine.refresh({ all: true });
    expect(first.sources[0]!.counts.rejected).toBe(1);
    const item = await h.state.getReviewItem(`quarantine:${id}`);
    expect(item).toMatchObject({
      kind: 'ingestion',
      reason: 'contract-quarantine',
      status: 'pending',
    });
    expect(item?.versionId).toBeDefined();
    expect(item?.rawDigest).toBeDefined();
    const embedded = h.embeddings.texts;
    const second = await engine.refresh({ all: true });
    expect(second.sources[0]!.counts.heldUnchanged).toBe(1);
    expect(second.sources[0]!.counts.rejected).toBe(0);
    expect(h.embeddings.texts).toBe(embedded);
    const third = await engine.refresh({ all: true });
    expect(third.sources[0]!.counts.notModified).toBe(urls.length);
    h.sim.clearLog();
    expect(await engine.approve(`quarantine:${id}`, 'tester')).toBe(true);
    expect(h.sim.log()).toHaveLength(0); // no refetch
    const r = await h.state.getDocument(id);
    expect(r?.currentVersionId).toBe(item?.versionId);
    expect(r?.currentVersionId).not.toBe(before);
    expect(r?.status).toBe('healthy');
    expect((await h.state.getReviewItem(`quarantine:${id}`))?.status).toBe('approved');
    expect(await viewShape(h, [id])).toEqual({ one: 1, two: 0, none: 0 });
  });

  it('reject keeps the old version until the page changes again', async () => {
    const id = documentId('q', urls[2]!);
    const before = (await h.state.getDocument(id))!.currentVersionId;
    h.sim.mutate(urls[2]!, 'shrink', { keepSections: 1 });
    const engine = h.engine([source('q', urls)]);
    await engine.refresh({ all: true });
    expect(await engine.reject(`quarantine:${id}`, 'tester')).toBe(true);
    expect((await h.state.getDocument(id))?.status).toBe('healthy');
    const again = await engine.refresh({ all: true });
    expect(again.sources[0]!.counts.rejected).toBe(0);
    expect((await h.state.getDocument(id))?.currentVersionId).toBe(before);
    h.sim.mutate(urls[2]!, 'edit', { text: 'A new sentence appears.' });
    const changed = await engine.refresh({ all: true });
    expect(changed.sources[0]!.counts.candidates).toBe(1);
  });
});

describe('state and store reconciliation', () => {
  let h: Harness;
  let urls: string[];
  let ids: string[];
  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 5 });
    urls = h.sim.urls();
    ids = urls.map((u) => documentId('s', u));
    await h.engine([source('s', urls)]).refresh({ all: true });
  });
  afterAll(() => h.stop());

  it('a store that lost its documents is detected at the next refresh and repaired from raw snapshots, no page fetched in full', async () => {
    await h.connector.deleteDocuments(ids);
    expect(await viewShape(h, ids)).toEqual({ one: 0, two: 0, none: ids.length });
    h.sim.clearLog();
    const report = await h.engine([source('s', urls)]).refresh({ all: true });
    expect(report.storeCheck?.verdict).toBe('store-lost');
    expect(report.storeCheck?.repaired).toBe(ids.length);
    expect(report.sources[0]!.alerts[0]).toMatch(/^store-lost: /);
    expect(h.sim.log().filter((e) => e.status === 200)).toHaveLength(0);
    expect(await viewShape(h, ids)).toEqual({ one: ids.length, two: 0, none: 0 });
    const next = await h.engine([source('s', urls)]).refresh({ all: true });
    expect(next.storeCheck?.verdict).toBe('ok');
  });

  it('verify finds orphans and missing documents; --repair fixes both', async () => {
    const engine = h.engine([source('s', urls)]);
    const clean = await engine.verify();
    expect(clean).toMatchObject({ missing: [], orphans: [], scanned: true });
    await h.connector.deleteDocuments([ids[0]!]);
    const [chunk] = await h.connector.listChunks(ids[1]!, undefined, { withEmbeddings: true });
    await h.connector.upsert([
      {
        id: 'orphan-1',
        text: 'orphan',
        embedding: chunk!.embedding!,
        metadata: {
          ...chunk!.metadata,
          [FIELDS.versionId]: 'v-orphan',
          [FIELDS.chunkId]: 'orphan-1',
        },
      },
    ]);
    const found = await engine.verify();
    expect(found.missing.map((m) => m.documentId)).toEqual([ids[0]]);
    expect(found.orphans.map((o) => o.versionId)).toEqual(['v-orphan']);
    const fixed = await engine.verify({ repair: true });
    expect(fixed).toMatchObject({ repaired: 1, orphansRemoved: 1 });
    expect(await engine.verify()).toMatchObject({ missing: [], orphans: [] });
    expect(await viewShape(h, ids)).toEqual({ one: ids.length, two: 0, none: 0 });
  });

  it('verify --repair keeps lifecycles: gone evidence, its pending deletion and a STALE label survive; the chunks come back', async () => {
    const engine = h.engine([source('s', urls)]);
    const [gone, stale] = [ids[2]!, ids[3]!];
    const goneRecord = {
      ...(await h.state.getDocument(gone))!,
      status: 'degraded' as const,
      statusReasons: ['gone: HTTP 404 (3 of 3 checks)'],
      goneCount: 3,
      goneSince: '2026-11-01T00:00:00.000Z',
    };
    const staleRecord = {
      ...(await h.state.getDocument(stale))!,
      status: 'degraded' as const,
      statusReasons: ['fetch failed: HTTP 503'],
    };
    await h.state.putDocument(goneRecord);
    await h.state.putDocument(staleRecord);
    const proposal = {
      id: `delete:${gone}`,
      kind: 'deletion' as const,
      reason: 'confirmed-gone',
      status: 'pending' as const,
      documentId: gone,
      sourceId: 's',
      url: goneRecord.url,
      createdAt: '2026-11-02T00:00:00.000Z',
      evidence: ['HTTP 404 observed 3 times'],
    };
    await h.state.putReviewItem(proposal);
    await h.connector.deleteDocuments([gone, stale, ids[4]!]);
    const fixed = await engine.verify({ repair: true });
    // Control: the repair did write all three back (the check below could fail).
    expect(fixed).toMatchObject({ repaired: 3, notRepaired: [] });
    expect(await viewShape(h, [gone, stale, ids[4]!])).toEqual({ one: 3, two: 0, none: 0 });
    const lifecycle = (r: DocumentRecord | undefined) => ({
      status: r?.status,
      statusReasons: r?.statusReasons,
      goneCount: r?.goneCount,
      goneSince: r?.goneSince,
      lastGoodAt: r?.lastGoodAt,
      validators: r?.validators,
    });
    const afterGone = await h.state.getDocument(gone);
    expect(lifecycle(afterGone)).toEqual(lifecycle(goneRecord));
    expect(lifecycle(await h.state.getDocument(stale))).toEqual(lifecycle(staleRecord));
    expect(afterGone?.history?.at(-1)?.event).toBe('repaired');
    expect(afterGone?.publishedEpoch).toBe(await h.connector.readEpoch());
    expect((await h.state.getReviewItem(proposal.id))?.status).toBe('pending');
    // The healthy one stays healthy.
    expect((await h.state.getDocument(ids[4]!))?.status).toBe('healthy');
  });

  it('a lost state beside a full store is refused (STATE_LOST), then recovered from the store', async () => {
    const state = new InMemoryStateStore();
    const publisher = await Publisher.open({ connector: h.connector, state });
    const engine = new RefreshEngine({
      sources: [source('s', urls)],
      connector: h.connector,
      state,
      publisher,
      fetcher: h.fetcher,
      snapshots: h.snapshots,
      embeddings: h.embeddings,
      pipeline: new ExtractPipeline({ maxTokens: 200 }),
    });
    const refused = await engine.refresh({ all: true }).catch((e: unknown) => e);
    expect(isRagfreshError(refused, 'STATE_LOST')).toBe(true);
    expect(String((refused as Error).message)).toMatch(/ragfresh recover/);
    const recovered = await engine.recover();
    expect(recovered.documents).toBe(ids.length);
    expect(recovered.readBy).toBe('scan');
    expect(recovered.notRecovered.map((n) => n.line).join('\n')).toMatch(/review queue/);
    const after = await engine.refresh({ all: true });
    expect(after.storeCheck?.verdict).toBe('ok');
    expect(after.totals.published).toBe(0);
    await publisher.close();
  });
});
