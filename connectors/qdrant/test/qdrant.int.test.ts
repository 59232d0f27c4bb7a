import { QdrantVectorStore } from '@langchain/qdrant';
import {
  chunkUuid,
  FIELDS,
  HashingEmbeddings,
  InMemoryStateStore,
  isRagfreshError,
  OPEN_EPOCH,
  Publisher,
} from '@ragfresh/core';
import { type QdrantEmulator, startQdrantEmulator } from '@ragfresh/emulators';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createQdrantConnector,
  currentAliasTarget,
  EPOCH_POINT_ID,
  PAYLOAD_INDEXES,
  type QdrantConnector,
  startBlueGreenRebuild,
  swapQdrantAlias,
} from '../src/index.js';
import { candidate, DIMS, embed, stored, versionsOf } from './support.js';

let emu: QdrantEmulator;
let n = 0;
const open: QdrantConnector[] = [];

async function connector(
  extra: Partial<Parameters<typeof createQdrantConnector>[0]> = {},
): Promise<QdrantConnector> {
  const c = createQdrantConnector({
    url: emu.url,
    collection: `c${++n}`,
    timeoutMs: 1_000,
    retry: { attempts: 10, baseDelayMs: 5, maxDelayMs: 200 },
    ...extra,
  });
  await c.open({ dimensions: DIMS });
  open.push(c);
  return c;
}

async function expectCode(p: Promise<unknown>, code: string): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isRagfreshError(err) ? err.code : err).toBe(code);
}

beforeAll(async () => {
  emu = await startQdrantEmulator();
});
afterEach(() => emu.faults.reset());
afterAll(async () => {
  for (const c of open) await c.close();
  await emu.close();
});

const docA1 = candidate('s', 'https://example.com/a', ['alpha one', 'alpha two', 'alpha three']);
const docA2 = candidate('s', 'https://example.com/a', ['alpha one revised', 'alpha two revised']);
const docB = candidate('s', 'https://example.com/b', ['beta only']);

describe('QdrantConnector against the Qdrant emulator', () => {
  it('open creates the collection, the payload indexes and the epoch pointer, and is idempotent', async () => {
    const c = await connector();
    const info = await c.client.getCollection(c.collection);
    expect(info.config.params.vectors).toMatchObject({ size: DIMS, distance: 'Cosine' });
    expect(Object.keys(info.payload_schema ?? {}).sort()).toEqual(
      PAYLOAD_INDEXES.map(([f]) => f).sort(),
    );
    expect(info.payload_schema?.['metadata.rf_from']?.data_type).toBe('integer');
    expect(info.payload_schema?.['metadata.rf_current']?.data_type).toBe('bool');
    expect(info.payload_schema?.['metadata.rf_doc']?.data_type).toBe('keyword');
    expect(await c.readEpoch()).toBe(0);
    await c.advanceEpoch(0, 3);
    const again = createQdrantConnector({ url: emu.url, collection: c.collection });
    await again.open({ dimensions: DIMS });
    // insert_only: reopening never resets the pointer.
    expect(await again.readEpoch()).toBe(3);
    const wrong = createQdrantConnector({ url: emu.url, collection: c.collection });
    await expectCode(wrong.open({ dimensions: DIMS + 1 }), 'DIMENSION_MISMATCH');
  });

  it('stores UUID v5 point ids with payload { content, metadata } and lists chunks back exactly', async () => {
    const c = await connector();
    const chunks = stored(docA1, 1);
    await c.upsert(chunks);
    const [raw] = await c.client.retrieve(c.collection, {
      ids: [chunkUuid(chunks[0]!.id)],
      with_payload: true,
    });
    expect(raw?.id).toBe(chunkUuid(chunks[0]!.id));
    expect(raw?.payload).toEqual({ content: chunks[0]!.text, metadata: chunks[0]!.metadata });
    const listed = await c.listChunks(docA1.documentId, docA1.versionId, { withEmbeddings: true });
    expect(listed.map((l) => l.id)).toEqual(chunks.map((ch) => chunkUuid(ch.id)));
    expect(listed.map((l) => l.metadata[FIELDS.chunkId])).toEqual(chunks.map((ch) => ch.id));
    expect(listed.map((l) => l.text)).toEqual(chunks.map((ch) => ch.text));
    expect(listed.map((l) => l.metadata)).toEqual(chunks.map((ch) => ch.metadata));
    // Qdrant normalises vectors of a Cosine collection; the inputs are unit vectors already.
    for (const [i, l] of listed.entries()) {
      for (const [j, x] of l.embedding!.entries())
        expect(x).toBeCloseTo(chunks[i]!.embedding[j]!, 5);
    }
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(3);
    // Re-staging is an overwrite, never a duplicate.
    await c.upsert(chunks);
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(3);
  });

  it('views: staged chunks are invisible to the epoch and flag views; the sentinel never shows', async () => {
    const c = await connector();
    await c.upsert([...stored(docA1, 1), ...stored(docB, 1)]);
    const q = embed('alpha one');
    expect(await c.query(q, 10, { view: { kind: 'epoch', epoch: 0 } })).toEqual([]);
    expect(await c.query(q, 10, { view: { kind: 'flag' } })).toEqual([]);
    const all = await c.query(q, 10, { view: { kind: 'all' } });
    expect(all).toHaveLength(4);
    expect(
      all.every((h) => h.id !== EPOCH_POINT_ID && typeof h.metadata[FIELDS.chunkId] === 'string'),
    ).toBe(true);
    expect(all[0]!.text).toBe('alpha one');
    const epoch1 = await c.query(q, 10, { view: { kind: 'epoch', epoch: 1 } });
    expect(epoch1).toHaveLength(4);
    const scoped = await c.query(q, 10, {
      view: { kind: 'epoch', epoch: 1 },
      documentId: docB.documentId,
    });
    expect(scoped.map((h) => h.text)).toEqual(['beta only']);
  });

  it('patchValidity changes only rf_to / rf_current (set_payload with key "metadata")', async () => {
    const c = await connector();
    const chunks = stored(docA1, 1);
    await c.upsert(chunks);
    await c.patchValidity(docA1.documentId, docA1.versionId, { to: 4 });
    await c.patchValidity(docA1.documentId, docA1.versionId, { current: true });
    const listed = await c.listChunks(docA1.documentId, docA1.versionId);
    expect(listed.map((l) => l.metadata)).toEqual(
      chunks.map((ch) => ({ ...ch.metadata, [FIELDS.to]: 4, [FIELDS.current]: true })),
    );
    expect(listed.map((l) => l.text)).toEqual(chunks.map((ch) => ch.text));
    // Another version of the same document is untouched.
    await c.upsert(stored(docA2, 2));
    await c.patchValidity(docA1.documentId, docA1.versionId, { to: 2 });
    const other = await c.listChunks(docA2.documentId, docA2.versionId);
    expect(other.every((l) => l.metadata[FIELDS.to] === OPEN_EPOCH)).toBe(true);
  });

  it('advanceEpoch is a compare-and-set on the sentinel point', async () => {
    const c = await connector();
    await c.advanceEpoch(0, 1);
    expect(await c.readEpoch()).toBe(1);
    await expectCode(c.advanceEpoch(0, 2), 'EPOCH_CONFLICT');
    expect(await c.readEpoch()).toBe(1);
  });

  it('deleteVersion and deleteDocuments remove exactly their chunks; absent targets are no-ops', async () => {
    const c = await connector();
    await c.upsert([...stored(docA1, 1), ...stored(docA2, 2), ...stored(docB, 1)]);
    await c.deleteVersion(docA1.documentId, docA1.versionId);
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(0);
    expect(await c.countChunks(docA2.documentId, docA2.versionId)).toBe(2);
    await c.deleteVersion('s:absent', 'vabsent');
    await c.deleteDocuments([docA2.documentId, 's:absent']);
    expect(await c.listChunks(docA2.documentId)).toEqual([]);
    expect(await c.countChunks(docB.documentId, docB.versionId)).toBe(1);
    expect(await c.readEpoch()).toBe(0);
  });

  it('pages through listings larger than one scroll page', async () => {
    const c = await connector();
    const paragraphs = Array.from({ length: 600 }, (_, i) => `paragraph number ${i}`);
    const big = candidate('s', 'https://example.com/big', paragraphs);
    await c.upsert(stored(big, 1));
    const listed = await c.listChunks(big.documentId, big.versionId);
    expect(listed).toHaveLength(600);
    expect(listed.map((l) => l.metadata[FIELDS.ordinal])).toEqual(paragraphs.map((_, i) => i));
    expect(await c.countChunks(big.documentId, big.versionId)).toBe(600);
  });

  it('passes wait=true on every write: acknowledged writes are readable even with a visibility lag', async () => {
    const c = await connector();
    emu.faults.set({ visibilityLagMs: 60_000 });
    await c.upsert(stored(docA1, 1));
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(3);
    await c.patchValidity(docA1.documentId, docA1.versionId, { current: true });
    expect((await c.query(embed('alpha'), 5, { view: { kind: 'flag' } })).length).toBe(3);
    await c.advanceEpoch(0, 1);
    expect(await c.readEpoch()).toBe(1);
    await c.deleteVersion(docA1.documentId, docA1.versionId);
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(0);
  });

  it('retries 429 (Retry-After), 5xx, timeouts and dropped connections idempotently', async () => {
    const c = await connector();
    emu.faults.set({
      rate429: 0.15,
      retryAfterSeconds: 0,
      rate5xx: 0.15,
      timeoutRate: 0.05,
      dropRate: 0.1,
    });
    const before = { ...emu.faults.injected };
    await c.upsert([...stored(docA1, 1), ...stored(docB, 1)]);
    await c.patchValidity(docA1.documentId, docA1.versionId, { current: true });
    await c.advanceEpoch(0, 1);
    await c.advanceEpoch(1, 2);
    const hits = await c.searchCurrent(embed('alpha one'), 10);
    const counts = await c.countChunks(docA1.documentId, docA1.versionId);
    const listed = await c.listChunks(docA1.documentId);
    emu.faults.reset();
    expect(await c.readEpoch()).toBe(2);
    expect(hits).toHaveLength(4);
    expect(counts).toBe(3);
    expect(listed).toHaveLength(3);
    const injected = Object.entries(emu.faults.injected).filter(
      ([k, v]) => v > before[k as keyof typeof before],
    );
    expect(injected.length).toBeGreaterThanOrEqual(3);
  });

  it('honours Retry-After on 429', async () => {
    const c = await connector();
    emu.faults.set({ rate429: 1, retryAfterSeconds: 1 });
    const t0 = Date.now();
    setTimeout(() => emu.faults.reset(), 300);
    expect(await c.readEpoch()).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
  });

  it('gives up with STORE_UNREACHABLE after bounded retries, and STORE_REJECTED on a refusal', async () => {
    const c = await connector({ retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    emu.faults.set({ rate5xx: 1 });
    await expectCode(c.readEpoch(), 'STORE_UNREACHABLE');
    emu.faults.reset();
    await expectCode(
      c.call('bad upsert', (cl) =>
        cl.upsert(c.collection, { wait: true, points: [{ id: 'not-a-uuid', vector: embed('x') }] }),
      ),
      'STORE_REJECTED',
    );
  });

  it('promotion under faults: epoch readers never see both versions or neither', async () => {
    const c = await connector();
    const publisher = await Publisher.open({ connector: c, state: new InMemoryStateStore() });
    await publisher.publish([docA1, docB]);
    const reader = await connector({ collection: c.collection });
    let stop = false;
    let observed = 0;
    const bad: string[] = [];
    const reads = (async () => {
      while (!stop) {
        try {
          const hits = await reader.searchCurrent(embed('alpha'), 20, {
            documentId: docA1.documentId,
          });
          const v = versionsOf(hits);
          observed++;
          if (v.length !== 1) bad.push(v.join(',') || 'none');
        } catch {
          // A read that fails under injected faults observes nothing; it is not a both/neither.
        }
      }
    })();
    while (observed < 3) await new Promise((r) => setTimeout(r, 5));
    const before = observed;
    emu.faults.set({
      rate429: 0.1,
      retryAfterSeconds: 0,
      rate5xx: 0.1,
      timeoutRate: 0.03,
      dropRate: 0.05,
    });
    const report = await publisher.publish([docA2]);
    emu.faults.reset();
    const during = observed - before;
    stop = true;
    await reads;
    expect(report.documents.map((d) => d.outcome)).toEqual(['published']);
    expect(during).toBeGreaterThan(0);
    expect(bad).toEqual([]);
    const now = await reader.searchCurrent(embed('alpha'), 20, { documentId: docA1.documentId });
    expect(versionsOf(now)).toEqual([docA2.versionId]);
  });

  it('LangChain QdrantVectorStore reads only current-view chunks with the documented filter', async () => {
    const c = await connector();
    const publisher = await Publisher.open({ connector: c, state: new InMemoryStateStore() });
    await publisher.publish([docA1, docB]);
    await publisher.publish([docA2]);
    await c.upsert(stored(candidate('s', 'https://example.com/staged', ['staged alpha']), 99));
    const epoch = await c.readEpoch();
    const store = new QdrantVectorStore(new HashingEmbeddings({ dimensions: DIMS }), {
      url: emu.url,
      collectionName: c.collection,
    });
    const epochFilter = {
      must: [
        { key: 'metadata.rf_from', range: { lte: epoch } },
        { key: 'metadata.rf_to', range: { gt: epoch } },
      ],
    };
    const viaEpoch = await store.similaritySearchVectorWithScore(embed('alpha'), 20, epochFilter);
    expect(viaEpoch.map(([d]) => d.pageContent).sort()).toEqual([
      'alpha one revised',
      'alpha two revised',
      'beta only',
    ]);
    expect(viaEpoch.every(([d]) => d.metadata[FIELDS.versionId] !== docA1.versionId)).toBe(true);
    const flagFilter = { must: [{ key: 'metadata.rf_current', match: { value: true } }] };
    const viaFlag = await store.similaritySearchVectorWithScore(embed('alpha'), 20, flagFilter);
    expect(viaFlag.map(([d]) => d.pageContent).sort()).toEqual([
      'alpha one revised',
      'alpha two revised',
      'beta only',
    ]);
    expect(viaFlag[0]![0].metadata[FIELDS.chunkId]).toMatch(/#/);
  });

  it('blue/green rebuild swaps an alias atomically; LangChain readers need the physical collection', async () => {
    const alias = `docs${++n}`;
    const first = await startBlueGreenRebuild({ url: emu.url, alias });
    expect(first.previous).toBeUndefined();
    await first.connector.open({ dimensions: DIMS });
    open.push(first.connector);
    const p1 = await Publisher.open({
      connector: first.connector,
      state: new InMemoryStateStore(),
    });
    await p1.publish([docA1]);
    await swapQdrantAlias({ url: emu.url, alias, collection: first.collection });
    const viaAlias = createQdrantConnector({ url: emu.url, collection: alias });
    await viaAlias.open({ dimensions: DIMS });
    expect(versionsOf(await viaAlias.searchCurrent(embed('alpha'), 10))).toEqual([docA1.versionId]);

    await new Promise((r) => setTimeout(r, 5));
    const second = await startBlueGreenRebuild({ url: emu.url, alias });
    expect(second.previous).toBe(first.collection);
    await second.connector.open({ dimensions: DIMS });
    open.push(second.connector);
    // The new collection continues the epoch sequence of the one it replaces.
    expect(await second.connector.readEpoch()).toBe(await first.connector.readEpoch());
    const p2 = await Publisher.open({
      connector: second.connector,
      state: new InMemoryStateStore(),
    });
    await p2.publish([docA2]);
    await swapQdrantAlias({
      url: emu.url,
      alias,
      collection: second.collection,
      dropPrevious: true,
    });
    expect(await currentAliasTarget({ url: emu.url, alias })).toBe(second.collection);
    expect(versionsOf(await viaAlias.searchCurrent(embed('alpha'), 10))).toEqual([docA2.versionId]);
    expect((await viaAlias.client.collectionExists(first.collection)).exists).toBe(false);

    const embeddings = new HashingEmbeddings({ dimensions: DIMS });
    const flag = { must: [{ key: 'metadata.rf_current', match: { value: true } }] };
    const onAlias = new QdrantVectorStore(embeddings, { url: emu.url, collectionName: alias });
    await expect(
      onAlias.similaritySearchVectorWithScore(embed('alpha'), 5, flag),
    ).rejects.toThrow();
    const physical = (await currentAliasTarget({ url: emu.url, alias }))!;
    const onTarget = new QdrantVectorStore(embeddings, { url: emu.url, collectionName: physical });
    const docs = await onTarget.similaritySearchVectorWithScore(embed('alpha'), 5, flag);
    expect(docs.map(([d]) => d.metadata[FIELDS.versionId])).toEqual([
      docA2.versionId,
      docA2.versionId,
    ]);
  });
});
