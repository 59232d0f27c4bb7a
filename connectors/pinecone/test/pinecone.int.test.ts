import { Pinecone } from '@pinecone-database/pinecone';
import { FIELDS, InMemoryStateStore, isRagfreshError, OPEN_EPOCH, Publisher } from '@ragfresh/core';
import { type PineconeEmulator, startPineconeEmulator } from '@ragfresh/emulators';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createPineconeConnector,
  EPOCH_VECTOR_ID,
  epochNamespace,
  measureVisibilityLag,
  type PineconeConnector,
  type PineconeConnectorOptions,
} from '../src/index.js';
import { candidate, DIMS, embed, stored, versionsOf } from './support.js';

let emu: PineconeEmulator;
let apiKey: string;
let n = 0;

function options(extra: Partial<PineconeConnectorOptions> = {}): PineconeConnectorOptions {
  return {
    apiKey,
    controllerHostUrl: emu.url,
    indexName: `idx-${++n}`,
    namespace: 'docs',
    createIndex: { cloud: 'aws', region: 'us-east-1' },
    maxLagMs: 1_500,
    timeoutMs: 1_000,
    retry: { attempts: 10, baseDelayMs: 5, maxDelayMs: 200 },
    ...extra,
  };
}

async function connector(
  extra: Partial<PineconeConnectorOptions> = {},
): Promise<PineconeConnector> {
  const c = createPineconeConnector(options(extra));
  await c.open({ dimensions: DIMS });
  return c;
}

async function expectCode(p: Promise<unknown>, code: string): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isRagfreshError(err) ? err.code : err).toBe(code);
}

const requests = (key: string) => emu.requests.get(key) ?? 0;

beforeAll(async () => {
  emu = await startPineconeEmulator();
  apiKey = `k-${new URL(emu.url).port}`;
});
afterEach(() => emu.faults.reset());
afterAll(async () => {
  await emu.close();
});

const docA1 = candidate('s', 'https://example.com/a', ['alpha one', 'alpha two', 'alpha three']);
const docA2 = candidate('s', 'https://example.com/a', ['alpha one revised', 'alpha two revised']);
const docB = candidate('s', 'https://example.com/b', ['beta only']);

describe('PineconeConnector against the Pinecone emulator', () => {
  it('declares eventual visibility, 1000-vector batches and the 40 KB metadata limit', async () => {
    const c = createPineconeConnector(options());
    expect(c.capabilities).toMatchObject({
      store: 'pinecone',
      promotion: 'snapshot',
      flagPromotion: 'overlap',
      visibility: { mode: 'eventual', maxLagMs: 1_500 },
      maxWriteBatch: 1000,
      maxMetadataBytes: 40_960,
      epochInStore: true,
      idForm: 'chunk-id',
    });
  });

  it('open creates the index, keeps the epoch pointer in a reserved namespace, and is idempotent', async () => {
    const c = await connector({ indexName: 'open-test' });
    const described = await c.pinecone.describeIndex('open-test');
    expect(described.dimension).toBe(DIMS);
    expect(await c.readEpoch()).toBe(0);
    await c.advanceEpoch(0, 2);
    const again = await connector({ indexName: 'open-test' });
    expect(await again.readEpoch()).toBe(2);
    const raw = await c.pinecone
      .index({ host: described.host, namespace: epochNamespace('docs') })
      .fetch({ ids: [EPOCH_VECTOR_ID] });
    expect(raw.records[EPOCH_VECTOR_ID]?.metadata).toMatchObject({
      rf_sentinel: 'epoch',
      rf_epoch: 2,
    });
    const chunks = await c.pinecone
      .index({ host: described.host, namespace: 'docs' })
      .describeIndexStats();
    expect(Object.keys(chunks.namespaces ?? {})).toEqual(['docs.ragfresh-epoch']);
    const wrong = createPineconeConnector(options({ indexName: 'open-test' }));
    await expectCode(wrong.open({ dimensions: DIMS + 1 }), 'DIMENSION_MISMATCH');
    const missing = createPineconeConnector(
      options({ indexName: 'absent', createIndex: undefined }),
    );
    await expectCode(missing.open({ dimensions: DIMS }), 'NOT_FOUND');
  });

  it('stores doc#version#ordinal ids with flat metadata and text, and lists them back exactly', async () => {
    const c = await connector();
    const chunks = stored(docA1, 1);
    await c.upsert(chunks);
    const listed = await c.listChunks(docA1.documentId, docA1.versionId, { withEmbeddings: true });
    expect(listed.map((l) => l.id)).toEqual(chunks.map((ch) => ch.id));
    expect(listed[0]!.id).toBe(`${docA1.documentId}#${docA1.versionId}#0`);
    expect(listed.map((l) => l.text)).toEqual(chunks.map((ch) => ch.text));
    expect(listed.map((l) => l.metadata)).toEqual(chunks.map((ch) => ch.metadata));
    for (const [i, l] of listed.entries()) {
      for (const [j, x] of l.embedding!.entries())
        expect(x).toBeCloseTo(chunks[i]!.embedding[j]!, 6);
    }
    const raw = await c.index.fetch({ ids: [chunks[0]!.id] });
    expect(raw.records[chunks[0]!.id]?.metadata).toEqual({
      ...chunks[0]!.metadata,
      text: 'alpha one',
    });
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(3);
    await c.upsert(chunks);
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(3);
  });

  it('refuses metadata + text over 40 KB before sending anything', async () => {
    const c = await connector();
    const big = candidate('s', 'https://example.com/big', ['x'.repeat(41_000)]);
    const before = requests('POST /vectors/upsert');
    await expectCode(c.upsert(stored(big, 1)), 'INVALID_METADATA');
    expect(requests('POST /vectors/upsert')).toBe(before);
  });

  it('splits upserts at 1000 vectors and at 2 MB per request', async () => {
    const c = await connector();
    const many = candidate(
      's',
      'https://example.com/many',
      Array.from({ length: 2500 }, (_, i) => `p${i}`),
    );
    let before = requests('POST /vectors/upsert');
    await c.upsert(stored(many, 1));
    expect(requests('POST /vectors/upsert') - before).toBe(3);
    expect(await c.countChunks(many.documentId, many.versionId)).toBe(2500);
    // 100 chunks of ~30 KB text: 3 MB in all, so at least two requests under 2 MB each.
    const heavy = candidate(
      's',
      'https://example.com/heavy',
      Array.from({ length: 100 }, (_, i) => `${i} ${'y'.repeat(30_000)}`),
    );
    before = requests('POST /vectors/upsert');
    await c.upsert(stored(heavy, 1));
    expect(requests('POST /vectors/upsert') - before).toBe(2);
    expect(await c.countChunks(heavy.documentId, heavy.versionId)).toBe(100);
  });

  it('views use explicit operators; staged chunks and the epoch pointer never show', async () => {
    const c = await connector();
    await c.upsert([...stored(docA1, 1), ...stored(docB, 1)]);
    const q = embed('alpha one');
    expect(await c.query(q, 10, { view: { kind: 'epoch', epoch: 0 } })).toEqual([]);
    expect(await c.query(q, 10, { view: { kind: 'flag' } })).toEqual([]);
    const all = await c.query(q, 10, { view: { kind: 'all' } });
    expect(all.map((h) => h.id)).not.toContain(EPOCH_VECTOR_ID);
    expect(all).toHaveLength(4);
    expect(all[0]!.text).toBe('alpha one');
    expect(
      await c.query(q, 10, { view: { kind: 'epoch', epoch: 1 }, documentId: docB.documentId }),
    ).toHaveLength(1);
  });

  it('patchValidity updates by metadata filter and changes only rf_to / rf_current', async () => {
    const c = await connector();
    const chunks = stored(docA1, 1);
    await c.upsert([...chunks, ...stored(docA2, 2)]);
    const before = requests('POST /vectors/update');
    await c.patchValidity(docA1.documentId, docA1.versionId, { to: 2, current: true });
    expect(requests('POST /vectors/update') - before).toBe(1);
    const listed = await c.listChunks(docA1.documentId, docA1.versionId);
    expect(listed.map((l) => l.metadata)).toEqual(
      chunks.map((ch) => ({ ...ch.metadata, [FIELDS.to]: 2, [FIELDS.current]: true })),
    );
    const other = await c.listChunks(docA2.documentId, docA2.versionId);
    expect(
      other.every(
        (l) => l.metadata[FIELDS.to] === OPEN_EPOCH && l.metadata[FIELDS.current] === false,
      ),
    ).toBe(true);
  });

  it('falls back to per-id updates where update-by-filter is refused', async () => {
    const legacy = await startPineconeEmulator({ updateByFilter: false });
    try {
      const c = createPineconeConnector({
        ...options(),
        apiKey: `legacy-${new URL(legacy.url).port}`,
        controllerHostUrl: legacy.url,
      });
      await c.open({ dimensions: DIMS });
      await c.upsert(stored(docA1, 1));
      await c.patchValidity(docA1.documentId, docA1.versionId, { to: 5 });
      expect(legacy.requests.get('POST /vectors/update')).toBe(1 + 3);
      expect((await c.listChunks(docA1.documentId)).map((l) => l.metadata[FIELDS.to])).toEqual([
        5, 5, 5,
      ]);
      await c.advanceEpoch(0, 1);
      expect(await c.readEpoch()).toBe(1);
      await expectCode(c.advanceEpoch(0, 2), 'EPOCH_CONFLICT');
    } finally {
      await legacy.close();
    }
  });

  it('advanceEpoch is a conditional update on the pointer; a stale expectation is EPOCH_CONFLICT', async () => {
    const c = await connector();
    await c.advanceEpoch(0, 1);
    expect(await c.readEpoch()).toBe(1);
    await expectCode(c.advanceEpoch(0, 2), 'EPOCH_CONFLICT');
    expect(await c.readEpoch()).toBe(1);
  });

  it('deletes by listing id prefixes (serverless), paging past 100 ids; absent targets are no-ops', async () => {
    const c = await connector();
    const long = candidate(
      's',
      'https://example.com/long',
      Array.from({ length: 250 }, (_, i) => `line ${i}`),
    );
    await c.upsert([
      ...stored(long, 1),
      ...stored(docB, 1),
      ...stored(docA1, 1),
      ...stored(docA2, 2),
    ]);
    const listed = await c.listChunks(long.documentId);
    expect(listed.map((l) => l.metadata[FIELDS.ordinal])).toEqual(
      Array.from({ length: 250 }, (_, i) => i),
    );
    await c.deleteVersion(docA1.documentId, docA1.versionId);
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(0);
    expect(await c.countChunks(docA2.documentId, docA2.versionId)).toBe(2);
    await c.deleteDocuments([long.documentId, 's:absent']);
    await c.deleteVersion('s:absent', 'vnone');
    expect(await c.countChunks(long.documentId, long.versionId)).toBe(0);
    expect(await c.countChunks(docB.documentId, docB.versionId)).toBe(1);
  });

  it('under a visibility lag, writes, patches, deletes and epoch moves return only once readable', async () => {
    const c = await connector();
    emu.faults.set({ visibilityLagMs: 300 });
    let t0 = Date.now();
    await c.upsert(stored(docA1, 1));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(3);
    t0 = Date.now();
    await c.patchValidity(docA1.documentId, docA1.versionId, { current: true });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(await c.query(embed('alpha'), 5, { view: { kind: 'flag' } })).toHaveLength(3);
    await c.advanceEpoch(0, 1);
    expect(await c.readEpoch()).toBe(1);
    await c.deleteVersion(docA1.documentId, docA1.versionId);
    expect(await c.countChunks(docA1.documentId, docA1.versionId)).toBe(0);
  });

  it('a rollback deletes writes that were acknowledged but not yet listable', async () => {
    const c = await connector();
    emu.faults.set({ visibilityLagMs: 300 });
    // A writer that died right after its upsert was acknowledged: the records are in flight.
    await c.index.upsert({
      records: stored(docA2, 2).map((ch) => ({
        id: ch.id,
        values: [...ch.embedding],
        metadata: { ...ch.metadata, text: ch.text },
      })),
    });
    await c.deleteVersion(docA2.documentId, docA2.versionId);
    await new Promise((r) => setTimeout(r, 400));
    expect(await c.countChunks(docA2.documentId, docA2.versionId)).toBe(0);
  });

  it('measures the visibility lag of an index (maxLagMs policy)', async () => {
    const c = await connector();
    const host = (await c.pinecone.describeIndex(c.options.indexName!)).host;
    emu.faults.set({ visibilityLagMs: 200 });
    const m = await measureVisibilityLag(
      { apiKey, host, namespace: 'docs', dimensions: DIMS },
      { samples: 3 },
    );
    expect(m.samplesMs).toHaveLength(3);
    expect(Math.min(...m.samplesMs)).toBeGreaterThanOrEqual(180);
    expect(m.maxMs).toBe(Math.max(...m.samplesMs));
    expect(m.recommendedMaxLagMs).toBe(Math.max(1_000, Math.ceil(m.maxMs * 3)));
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
    const listed = await c.listChunks(docA1.documentId);
    emu.faults.reset();
    expect(await c.readEpoch()).toBe(2);
    expect(hits).toHaveLength(4);
    expect(listed).toHaveLength(3);
    const kinds = Object.entries(emu.faults.injected).filter(
      ([k, v]) => v > before[k as keyof typeof before],
    );
    expect(kinds.length).toBeGreaterThanOrEqual(3);
  });

  it('honours Retry-After on 429, and gives up with STORE_UNREACHABLE after bounded retries', async () => {
    const c = await connector({ retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    emu.faults.set({ rate429: 1, retryAfterSeconds: 1 });
    const t0 = Date.now();
    setTimeout(() => emu.faults.reset(), 300);
    expect(await c.readEpoch()).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    emu.faults.set({ rate5xx: 1 });
    await expectCode(c.readEpoch(), 'STORE_UNREACHABLE');
  });

  it('promotion under lag and faults: epoch readers never see both versions or neither', async () => {
    const c = await connector();
    const publisher = await Publisher.open({ connector: c, state: new InMemoryStateStore() });
    await publisher.publish([docA1, docB]);
    const reader = createPineconeConnector({ ...c.options });
    await reader.open({ dimensions: DIMS });
    let stop = false;
    let reads = 0;
    const bad: string[] = [];
    const loop = (async () => {
      while (!stop) {
        try {
          const v = versionsOf(
            await reader.searchCurrent(embed('alpha'), 20, { documentId: docA1.documentId }),
          );
          reads++;
          if (v.length !== 1) bad.push(v.join(',') || 'none');
        } catch {
          // a failed read observes nothing
        }
      }
    })();
    while (reads < 3) await new Promise((r) => setTimeout(r, 5));
    const before = reads;
    emu.faults.set({
      visibilityLagMs: 150,
      rate429: 0.1,
      retryAfterSeconds: 0,
      rate5xx: 0.1,
      timeoutRate: 0.02,
      dropRate: 0.05,
    });
    const report = await publisher.publish([docA2]);
    const during = reads - before;
    await new Promise((r) => setTimeout(r, 200));
    emu.faults.reset();
    stop = true;
    await loop;
    expect(report.documents.map((d) => d.outcome)).toEqual(['published']);
    expect(during).toBeGreaterThan(0);
    expect(bad).toEqual([]);
    expect(
      versionsOf(await reader.searchCurrent(embed('alpha'), 20, { documentId: docA1.documentId })),
    ).toEqual([docA2.versionId]);
  });

  it('data written by the connector is readable by a plain client query with the documented filter', async () => {
    const c = await connector();
    const publisher = await Publisher.open({ connector: c, state: new InMemoryStateStore() });
    await publisher.publish([docA1, docB]);
    await publisher.publish([docA2]);
    await c.upsert(stored(candidate('s', 'https://example.com/staged', ['staged alpha']), 99));
    const pc = new Pinecone({ apiKey, controllerHostUrl: emu.url });
    const host = (await pc.describeIndex(c.options.indexName!)).host;
    const epochRead = await pc
      .index({ host, namespace: epochNamespace('docs') })
      .fetch({ ids: [EPOCH_VECTOR_ID] });
    const epoch = epochRead.records[EPOCH_VECTOR_ID]!.metadata!.rf_epoch as number;
    const index = pc.index({ host, namespace: 'docs' });
    const byEpoch = await index.query({
      vector: embed('alpha'),
      topK: 20,
      includeMetadata: true,
      filter: { $and: [{ rf_from: { $lte: epoch } }, { rf_to: { $gt: epoch } }] },
    });
    expect(byEpoch.matches.map((m) => m.metadata?.text).sort()).toEqual([
      'alpha one revised',
      'alpha two revised',
      'beta only',
    ]);
    const byFlag = await index.query({
      vector: embed('alpha'),
      topK: 20,
      includeMetadata: true,
      filter: { rf_current: { $eq: true } },
    });
    expect(byFlag.matches.map((m) => m.metadata?.text).sort()).toEqual([
      'alpha one revised',
      'alpha two revised',
      'beta only',
    ]);
  });
});
