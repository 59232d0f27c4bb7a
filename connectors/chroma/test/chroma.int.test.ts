import { FIELDS, OPEN_EPOCH, type StoredChunk } from '@ragfresh/core';
import { ChromaClient } from 'chromadb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort, type LocalChromaServer, startLocalChroma } from '../src/fixture.js';
import { ChromaConnector, createChromaConnector } from '../src/index.js';
import { DIMS, expectCode, makeChunks, uniqueName, vector } from './chunks.js';

let server: LocalChromaServer;
let raw: ChromaClient;

beforeAll(async () => {
  server = await startLocalChroma();
  const url = new URL(server.url);
  raw = new ChromaClient({ host: url.hostname, port: Number(url.port) });
});

afterAll(async () => {
  await server?.stop();
});

async function openConnector(
  collection = uniqueName('rf'),
  options: { maxWriteBatch?: number; dims?: number } = {},
) {
  const connector = new ChromaConnector({
    url: server.url,
    collection,
    ...(options.maxWriteBatch === undefined ? {} : { maxWriteBatch: options.maxWriteBatch }),
  });
  await connector.open({ dimensions: options.dims ?? DIMS });
  return connector;
}

describe('chroma connector against a real server', () => {
  it('declares its guarantees', () => {
    const c = createChromaConnector({ url: server.url, collection: 'abc' });
    expect(c.capabilities).toMatchObject({
      store: 'chroma',
      promotion: 'snapshot',
      flagPromotion: 'overlap',
      visibility: { mode: 'immediate' },
      epochInStore: true,
      idForm: 'chunk-id',
    });
    expect(Object.isFrozen(c.capabilities)).toBe(true);
  });

  it('creates the collection without an embedding function and marks it', async () => {
    const c = await openConnector();
    const col = await raw.getCollection({ name: c.collectionName });
    const config = col.configuration as unknown as Record<string, unknown>;
    expect(config.embedding_function ?? null).toBeNull();
    expect(col.embeddingFunction).toBeUndefined();
    expect(col.metadata).toMatchObject({ rf_schema: 'ragfresh/1', rf_dimensions: DIMS });
    expect(col.configuration.hnsw?.space).toBe('cosine');
    const epochs = await raw.getCollection({ name: c.epochCollectionName });
    expect(epochs.metadata).toMatchObject({ rf_epoch_of: c.collectionName });
    // Re-opening is idempotent.
    await openConnector(c.collectionName);
  });

  it('never asks the client to load an embedding function package', async () => {
    // A collection whose configuration names Chroma's default embedding function.
    const name = uniqueName('default-ef');
    const quiet = vi.spyOn(console, 'warn').mockImplementation(() => {});
    await raw.createCollection({ name });
    quiet.mockRestore();
    const created = await raw.getCollection({
      name,
      embeddingFunction: { generate: async () => [] },
    });
    const config = created.configuration as unknown as { embedding_function?: { name?: string } };
    expect(config.embedding_function?.name).toBe('default');
    const warn = vi.spyOn(console, 'warn');
    try {
      const c = await openConnector(name);
      await c.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 2, from: 1 }));
      expect(await c.query(vector(0), 2, { view: { kind: 'all' } })).toHaveLength(2);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it('upsert is idempotent and overwrites by id', async () => {
    const c = await openConnector();
    const chunks = makeChunks({ documentId: 'src:doc1', versionId: 'v1', count: 5, from: 1 });
    await c.upsert(chunks);
    await c.upsert(chunks);
    expect(await c.countChunks('src:doc1', 'v1')).toBe(5);
    const changed = chunks.map((ch, i) => (i === 2 ? { ...ch, text: 'rewritten' } : ch));
    await c.upsert(changed);
    const listed = await c.listChunks('src:doc1', 'v1');
    expect(listed.map((l) => l.id)).toEqual(chunks.map((ch) => ch.id));
    expect(listed[2]!.text).toBe('rewritten');
    expect(listed[0]!.metadata).toEqual(chunks[0]!.metadata);
  });

  it('patches validity without touching other metadata', async () => {
    const c = await openConnector();
    const chunks = makeChunks({
      documentId: 'src:doc1',
      versionId: 'v1',
      count: 3,
      from: 1,
      extra: { custom_key: 'keep me', n: 7 },
    });
    const other = makeChunks({ documentId: 'src:doc1', versionId: 'v2', count: 2, from: 2 });
    await c.upsert([...chunks, ...other]);
    await c.patchValidity('src:doc1', 'v1', { to: 2 });
    await c.patchValidity('src:doc1', 'v1', { current: true });
    const listed = await c.listChunks('src:doc1', 'v1', { withEmbeddings: true });
    for (const [i, l] of listed.entries()) {
      expect(l.metadata).toEqual({
        ...chunks[i]!.metadata,
        [FIELDS.to]: 2,
        [FIELDS.current]: true,
      });
      expect(l.text).toBe(chunks[i]!.text);
      l.embedding!.forEach((x, j) => {
        expect(x).toBeCloseTo(chunks[i]!.embedding[j]!, 5);
      });
    }
    const untouched = await c.listChunks('src:doc1', 'v2');
    expect(untouched.map((l) => l.metadata)).toEqual(other.map((o) => o.metadata));
  });

  it('keeps the published epoch in the store with compare-and-set', async () => {
    const c = await openConnector();
    expect(await c.readEpoch()).toBe(0);
    await c.advanceEpoch(0, 1);
    expect(await c.readEpoch()).toBe(1);
    await expectCode(c.advanceEpoch(0, 2), 'EPOCH_CONFLICT');
    expect(await c.readEpoch()).toBe(1);
    // A second process view of the same collection sees it.
    const other = await openConnector(c.collectionName);
    expect(await other.readEpoch()).toBe(1);
  });

  it('lets exactly one of several concurrent publishers advance the epoch', async () => {
    const name = uniqueName('rf');
    const publishers = await Promise.all(Array.from({ length: 6 }, () => openConnector(name)));
    for (let round = 0; round < 3; round++) {
      const results = await Promise.allSettled(
        publishers.map((p) => p.advanceEpoch(round, round + 1)),
      );
      const ok = results.filter((r) => r.status === 'fulfilled');
      const conflicts = results.filter(
        (r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'EPOCH_CONFLICT',
      );
      expect(ok).toHaveLength(1);
      expect(conflicts).toHaveLength(publishers.length - 1);
      expect(await publishers[0]!.readEpoch()).toBe(round + 1);
    }
  });

  it('prunes old epoch claims and keeps the maximum', async () => {
    const c = await openConnector();
    for (let e = 0; e < 70; e++) await c.advanceEpoch(e, e + 1);
    expect(await c.readEpoch()).toBe(70);
    const epochs = await raw.getCollection({ name: c.epochCollectionName });
    expect(await epochs.count()).toBeLessThanOrEqual(65);
  });

  it('filters list, count and query by view, document, version and source', async () => {
    const c = await openConnector();
    const v1 = makeChunks({
      documentId: 'a:doc',
      versionId: 'v1',
      count: 4,
      from: 1,
      current: true,
    });
    const b = makeChunks({
      documentId: 'b:doc',
      versionId: 'v1',
      count: 3,
      from: 1,
      current: true,
    });
    await c.upsert([...v1, ...b]);
    await c.advanceEpoch(0, 1);
    // Publish a:doc v2 at epoch 2.
    const v2 = makeChunks({ documentId: 'a:doc', versionId: 'v2', count: 2, from: 2 });
    await c.upsert(v2);
    await c.patchValidity('a:doc', 'v1', { to: 2 });
    const epoch1 = await c.query(vector(0), 20, { view: { kind: 'epoch', epoch: 1 } });
    expect(new Set(epoch1.map((h) => h.metadata[FIELDS.versionId]))).toEqual(new Set(['v1']));
    expect(epoch1).toHaveLength(7);
    const epoch2 = await c.query(vector(0), 20, {
      view: { kind: 'epoch', epoch: 2 },
      documentId: 'a:doc',
    });
    expect(epoch2.map((h) => h.id).sort()).toEqual(v2.map((x) => x.id).sort());
    expect(
      (await c.searchCurrent(vector(0), 20, { documentId: 'a:doc' })).every(
        (h) => h.metadata[FIELDS.versionId] === 'v1',
      ),
    ).toBe(true);
    await c.advanceEpoch(1, 2);
    expect(
      (await c.searchCurrent(vector(0), 20, { documentId: 'a:doc' })).map(
        (h) => h.metadata[FIELDS.versionId],
      ),
    ).toEqual(['v2', 'v2']);
    const flag = await c.query(vector(0), 20, { view: { kind: 'flag' } });
    expect(flag).toHaveLength(7);
    const all = await c.query(vector(0), 50, { view: { kind: 'all' } });
    expect(all).toHaveLength(9);
    const bySource = await c.query(vector(0), 50, { view: { kind: 'all' }, sourceId: 'b' });
    expect(bySource.map((h) => h.id).sort()).toEqual(b.map((x) => x.id).sort());
    const byVersion = await c.query(vector(0), 50, {
      view: { kind: 'all' },
      documentId: 'a:doc',
      versionId: 'v2',
    });
    expect(byVersion).toHaveLength(2);
    // Score: higher is more similar; the chunk's own vector ranks it first.
    const own = await c.query(v1[3]!.embedding, 3, { view: { kind: 'all' } });
    expect(own[0]!.id).toBe(v1[3]!.id);
    expect(own[0]!.score).toBeCloseTo(1, 4);
    expect(own[0]!.score).toBeGreaterThan(own[1]!.score);
    expect(await c.countChunks('a:doc', 'v1')).toBe(4);
    expect(await c.countChunks('a:doc', 'v9')).toBe(0);
    expect((await c.listChunks('a:doc')).map((l) => l.metadata[FIELDS.versionId])).toHaveLength(6);
  });

  it('deletes a version or whole documents; absent ones are a no-op', async () => {
    const c = await openConnector();
    await c.upsert([
      ...makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 3, from: 1 }),
      ...makeChunks({ documentId: 'a:doc', versionId: 'v2', count: 3, from: 2 }),
      ...makeChunks({ documentId: 'b:doc', versionId: 'v1', count: 2, from: 1 }),
      ...makeChunks({ documentId: 'c:doc', versionId: 'v1', count: 2, from: 1 }),
    ]);
    await c.deleteVersion('a:doc', 'v1');
    expect(await c.countChunks('a:doc', 'v1')).toBe(0);
    expect(await c.countChunks('a:doc', 'v2')).toBe(3);
    await c.deleteVersion('a:doc', 'v1');
    await c.deleteVersion('zzz:doc', 'v1');
    await c.deleteDocuments(['a:doc', 'b:doc', 'missing:doc']);
    expect(await c.listChunks('a:doc')).toEqual([]);
    expect(await c.listChunks('b:doc')).toEqual([]);
    expect(await c.countChunks('c:doc', 'v1')).toBe(2);
  });

  it('splits writes beyond the server max batch size', async () => {
    const max = await raw.getMaxBatchSize();
    const c = await openConnector(uniqueName('rf'), { maxWriteBatch: max + 1000 });
    const chunks = makeChunks({
      documentId: 'big:doc',
      versionId: 'v1',
      count: max + 600,
      from: 1,
      text: (i) => `t${i}`,
    });
    await c.upsert(chunks);
    expect(await c.countChunks('big:doc', 'v1')).toBe(max + 600);
    const col = await raw.getCollection({ name: c.collectionName });
    expect(await col.count()).toBe(max + 600);
  });

  it('stores and lists a 1,000-chunk document in ordinal order', async () => {
    const c = await openConnector();
    const chunks = makeChunks({ documentId: 'long:doc', versionId: 'v1', count: 1000, from: 1 });
    await c.upsert([...chunks].reverse());
    const listed = await c.listChunks('long:doc', 'v1');
    expect(listed).toHaveLength(1000);
    expect(listed.map((l) => l.metadata[FIELDS.ordinal])).toEqual(chunks.map((_, i) => i));
    expect(await c.countChunks('long:doc', 'v1')).toBe(1000);
    await c.patchValidity('long:doc', 'v1', { current: true, to: 9 });
    const after = await c.listChunks('long:doc', 'v1');
    expect(
      after.every((l) => l.metadata[FIELDS.current] === true && l.metadata[FIELDS.to] === 9),
    ).toBe(true);
  });

  it('round-trips Unicode and long text and metadata', async () => {
    const c = await openConnector();
    const long = 'Ünïcödé 漢字 עברית 👩‍👩‍👧‍👦 e\u0301 '.repeat(4000);
    const chunks = makeChunks({
      documentId: 'uni:dokümänt-日本',
      versionId: 'v1',
      count: 2,
      from: 1,
      text: (i) => (i === 0 ? long : 'emoji 🚀 and "quotes" and \\ backslash\nnewline\ttab'),
      extra: {
        title: '标题 — «Titel» ‹x› 🎉',
        heading: 'A > B > Ç',
        heading_path: JSON.stringify(['A', 'B', 'Ç']),
        long_field: 'x'.repeat(20_000),
        'key with spaces & ünïcode': 'ok',
        zero: 0,
        negative: -12.5,
        big: 2 ** 52,
        flag: false,
      },
    });
    await c.upsert(chunks);
    const listed = await c.listChunks('uni:dokümänt-日本', 'v1');
    expect(listed.map((l) => l.text)).toEqual(chunks.map((ch) => ch.text));
    expect(listed.map((l) => l.metadata)).toEqual(chunks.map((ch) => ch.metadata));
  });
});

describe('chroma connector refuses bad input with coded errors and keeps stored data', () => {
  it('DIMENSION_MISMATCH when opening an existing collection with other dimensions', async () => {
    const c = await openConnector();
    const chunks = makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 3, from: 1 });
    await c.upsert(chunks);
    const wrong = new ChromaConnector({ url: server.url, collection: c.collectionName });
    const err = await expectCode(wrong.open({ dimensions: DIMS + 1 }), 'DIMENSION_MISMATCH');
    expect(err.message).toContain('[chroma]');
    expect(err.message).toContain(c.collectionName);
    expect(await c.countChunks('a:doc', 'v1')).toBe(3);
    await expectCode(
      c.upsert(
        makeChunks({ documentId: 'a:doc', versionId: 'v2', count: 1, from: 2, dims: DIMS + 1 }),
      ),
      'DIMENSION_MISMATCH',
    );
    expect(await c.countChunks('a:doc', 'v2')).toBe(0);
  });

  it('DIMENSION_MISMATCH when the marker is gone but the vectors disagree', async () => {
    const name = uniqueName('rf');
    const col = await raw.createCollection({
      name,
      embeddingFunction: null,
      metadata: { rf_schema: 'ragfresh/1', rf_dimensions: DIMS + 2 },
    });
    await col.add({
      ids: ['x'],
      embeddings: [vector(1, DIMS + 2)],
      metadatas: [{ a: 1 }],
      documents: ['x'],
    });
    await col.modify({ metadata: { rf_schema: 'ragfresh/1', rf_dimensions: DIMS } });
    const c = new ChromaConnector({ url: server.url, collection: name });
    await expectCode(c.open({ dimensions: DIMS }), 'DIMENSION_MISMATCH');
    expect(await col.count()).toBe(1);
  });

  it('STORE_UNREACHABLE when no server answers', async () => {
    const port = await freePort();
    const c = new ChromaConnector({ url: `http://127.0.0.1:${port}`, collection: 'nobody-home' });
    const err = await expectCode(c.open({ dimensions: DIMS }), 'STORE_UNREACHABLE');
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).toContain('chroma run');
  });

  it('STORE_UNREACHABLE when the url answers but is not Chroma', async () => {
    const { createServer } = await import('node:http');
    const http = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not chroma');
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const port = (http.address() as { port: number }).port;
    try {
      const c = new ChromaConnector({ url: `http://127.0.0.1:${port}`, collection: 'abc' });
      await expectCode(c.open({ dimensions: DIMS }), 'STORE_UNREACHABLE');
    } finally {
      http.close();
    }
  });

  it('STORE_UNREACHABLE when the server goes away after open', async () => {
    const own = await startLocalChroma();
    const c = new ChromaConnector({ url: own.url, collection: uniqueName('rf') });
    await c.open({ dimensions: DIMS });
    await c.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 1, from: 1 }));
    await own.stop();
    const err = await expectCode(
      c.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v2', count: 1, from: 2 })),
      'STORE_UNREACHABLE',
    );
    expect(err.message).toContain(own.url);
    await expectCode(c.readEpoch(), 'STORE_UNREACHABLE');
  });

  it('FOREIGN_DATA for a collection holding records not written by ragfresh', async () => {
    const name = uniqueName('foreign');
    const col = await raw.createCollection({
      name,
      embeddingFunction: null,
      metadata: { owner: 'someone else' },
    });
    await col.add({
      ids: ['theirs'],
      embeddings: [vector(1)],
      metadatas: [{ owner: 'them' }],
      documents: ['their text'],
    });
    const c = new ChromaConnector({ url: server.url, collection: name });
    const err = await expectCode(c.open({ dimensions: DIMS }), 'FOREIGN_DATA');
    expect(err.message).toContain(name);
    const after = await col.get({ include: ['metadatas', 'documents'] });
    expect(after.ids).toEqual(['theirs']);
    expect(after.documents).toEqual(['their text']);
    expect((await raw.getCollection({ name })).metadata).toEqual({ owner: 'someone else' });
  });

  it('adopts an empty collection created by someone else (e.g. a LangChain reader)', async () => {
    const name = uniqueName('empty');
    await raw.createCollection({
      name,
      embeddingFunction: null,
      metadata: { note: 'made by app' },
    });
    const c = await openConnector(name);
    expect((await raw.getCollection({ name })).metadata).toMatchObject({
      note: 'made by app',
      rf_schema: 'ragfresh/1',
    });
    await c.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 1, from: 1 }));
    expect(await c.countChunks('a:doc', 'v1')).toBe(1);
  });

  it('FOREIGN_DATA when the epoch collection name is taken by foreign records', async () => {
    const name = uniqueName('rf');
    const squatter = await raw.createCollection({
      name: `${name}__rf_epoch`,
      embeddingFunction: null,
    });
    await squatter.add({ ids: ['x'], embeddings: [[1]], documents: ['x'], metadatas: [{ a: 1 }] });
    const c = new ChromaConnector({ url: server.url, collection: name });
    await expectCode(c.open({ dimensions: DIMS }), 'FOREIGN_DATA');
    expect(await squatter.count()).toBe(1);
  });

  it('INVALID_METADATA for metadata or text Chroma cannot store, before anything is written', async () => {
    const c = await openConnector();
    const good = makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 2, from: 1 });
    await c.upsert(good);
    const surrogate = makeChunks({
      documentId: 'a:doc',
      versionId: 'v2',
      count: 3,
      from: 2,
      extra: { title: 'broken \uD800 half' },
    });
    const err = await expectCode(c.upsert(surrogate), 'INVALID_METADATA');
    expect(err.message).toContain('title');
    const nested = makeChunks({ documentId: 'a:doc', versionId: 'v3', count: 1, from: 2 }).map(
      (ch) => ({ ...ch, metadata: { ...ch.metadata, nested: { a: 1 } } }) as unknown as StoredChunk,
    );
    await expectCode(c.upsert(nested), 'INVALID_METADATA');
    expect(await c.countChunks('a:doc', 'v2')).toBe(0);
    expect(await c.countChunks('a:doc', 'v3')).toBe(0);
    expect((await c.listChunks('a:doc', 'v1')).map((l) => l.metadata)).toEqual(
      good.map((g) => g.metadata),
    );
  });

  it('INVALID_CONFIG for a collection name Chroma refuses', () => {
    expect(() => new ChromaConnector({ url: server.url, collection: 'ab' })).toThrow(
      /collection name/,
    );
    expect(() => new ChromaConnector({ url: server.url, collection: 'a..b' })).toThrow(
      /collection name/,
    );
  });

  it('keeps OPEN_EPOCH as an integer bound readers can compare', async () => {
    const c = await openConnector();
    await c.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 1, from: 0 }));
    const hits = await c.query(vector(0), 1, { view: { kind: 'epoch', epoch: OPEN_EPOCH - 1 } });
    expect(hits).toHaveLength(1);
    expect(
      await c.query(vector(0), 1, { view: { kind: 'epoch', epoch: OPEN_EPOCH } }),
    ).toHaveLength(0);
  });
});
