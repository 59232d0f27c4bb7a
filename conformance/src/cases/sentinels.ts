import { FIELDS, toStoredChunk } from '@ragfresh/core';
import type { ConformanceCase } from '../types.js';

const TARGET_KINDS = ['embedded', 'local-server', 'container', 'url', 'emulator'];

export const sentinelEmpty: ConformanceCase = {
  id: 'sentinel-empty',
  title: 'the target starts and a fresh namespace is empty',
  guarantee:
    'The fixture starts its target, says what it is, and hands out a connector on a fresh namespace that opens, holds epoch 0 and no chunk.',
  whenItFails:
    "The fixture's start()/createConnector(): is the server reachable, is the namespace really new (random name, not reused), does open() create the schema and the epoch pointer at 0?",
  appliesTo: () => true,
  declared: () => 'starts; fresh namespace empty, epoch 0',
  async run(ctx) {
    ctx.check(
      TARGET_KINDS.includes(ctx.target.kind),
      `target kind ${JSON.stringify(ctx.target.kind)} is not one of ${TARGET_KINDS.join(', ')}`,
    );
    ctx.check(
      ctx.target.description.trim() !== '',
      'target description is empty; say which engine, version and address ran',
    );
    ctx.check(Object.isFrozen(ctx.capabilities), 'the capability manifest is not frozen');
    const connector = await ctx.time('open', () => ctx.connector());
    const epoch = await connector.readEpoch();
    const doc = ctx.corpus.generated('probe', 'v1', 2);
    const listed = await connector.listChunks(doc.documentId);
    const hits = await connector.query(doc.chunks[0]!.embedding, 10, { view: { kind: 'all' } });
    ctx.observe('epoch', epoch);
    ctx.observe('chunks', hits.length);
    ctx.check(epoch === 0, `fresh namespace holds epoch ${epoch}, expected 0`);
    ctx.check(
      listed.length === 0,
      `fresh namespace lists ${listed.length} chunk(s) for an unknown document`,
    );
    ctx.check(
      hits.length === 0,
      `fresh namespace returns ${hits.length} chunk(s) to an unscoped query`,
    );
    ctx.observed(`epoch ${epoch}, ${hits.length} chunks`);
  },
};

export const sentinelIsolated: ConformanceCase = {
  id: 'sentinel-isolated',
  title: 'namespaces stay clean: a fresh one is empty after every other case ran',
  guarantee:
    'Writes in one namespace are invisible from another, and after every case ran a fresh namespace is still empty at epoch 0: no case leaks into another.',
  whenItFails:
    "The fixture's namespace mapping (collection/table/index name per namespace), and any filter the connector forgets when it queries (a missing namespace or collection scope).",
  appliesTo: () => true,
  declared: () => 'isolated namespaces',
  async run(ctx) {
    const writer = await ctx.connector();
    const doc = ctx.corpus.generated('leak', 'v1', 3);
    await writer.upsert(doc.chunks.map((c) => toStoredChunk(c, 1)));
    await ctx.eventually('written', async () => {
      const own = await writer.countChunks(doc.documentId, doc.versionId);
      ctx.check(
        own === doc.chunks.length,
        `the writing namespace counts ${own} of its ${doc.chunks.length} chunks`,
      );
    });
    const other = await ctx.target.createConnector(`${ctx.namespace}x`);
    try {
      await other.open({ dimensions: ctx.dimensions });
      const epoch = await other.readEpoch();
      const hits = await other.query(doc.chunks[0]!.embedding, 10, { view: { kind: 'all' } });
      const listed = await other.listChunks(doc.documentId);
      ctx.observe('leakedHits', hits.length);
      ctx.check(epoch === 0, `a fresh namespace holds epoch ${epoch}, expected 0`);
      ctx.check(
        hits.length === 0,
        `a fresh namespace returns ${hits.length} chunk(s) written elsewhere (e.g. ${hits[0]?.metadata[FIELDS.chunkId]})`,
      );
      ctx.check(
        listed.length === 0,
        `a fresh namespace lists ${listed.length} chunk(s) of a document written in another namespace`,
      );
      ctx.observed(`epoch ${epoch}, ${hits.length} foreign chunks`);
    } finally {
      await other.close();
    }
  },
};
