import { FIELDS, toStoredChunk } from '@ragfresh/core';
import type { ConformanceCase } from '../types.js';
import { byVersion, chunkIdsOf, describeVersions, readDocument, type ViewKind } from './helpers.js';

export const stagedInvisible: ConformanceCase = {
  id: 'staged-invisible',
  title: 'staged chunks are invisible to the current view',
  guarantee:
    'Chunks staged for the next epoch (rf_from = E + 1, rf_current = false) are returned neither to epoch readers (searchCurrent) nor to rf_current readers, for a replaced document and for a new one, scoped or not; they are stored and listable.',
  whenItFails:
    "The connector's view filter in _query: epoch view must be rf_from <= E AND E < rf_to (both bounds, numeric), flag view rf_current = true. A filter on rf_to alone shows staged chunks.",
  appliesTo: () => true,
  declared: () => 'staged: 0 visible (epoch and flag views)',
  async run(ctx) {
    const connector = await ctx.connector();
    const publisher = await ctx.publisher();
    const v1 = ctx.corpus.generated('doc', 'v1', 4);
    await publisher.publish([v1]);
    const epoch = await connector.readEpoch();
    const v2 = ctx.corpus.generated('doc', 'v2', 5);
    const fresh = ctx.corpus.generated('new', 'v1', 3);
    await ctx.time('stage', () =>
      connector.upsert([...v2.chunks, ...fresh.chunks].map((c) => toStoredChunk(c, epoch + 1))),
    );
    const staged = new Set([...v2.chunks, ...fresh.chunks].map((c) => c.chunkId));
    const names = new Map([
      [v1.versionId, 'v1'],
      [v2.versionId, 'v2(staged)'],
      [fresh.versionId, 'new(staged)'],
    ]);
    // Wait (on eventual stores) until the staged chunks are stored and searchable and the
    // current version is fully visible; staged chunks must then stay invisible.
    await ctx.eventually('staged', async () => {
      const stored = await connector.countChunks(v2.documentId, v2.versionId);
      ctx.check(
        stored === v2.chunks.length,
        `staged version stores ${stored} chunks, expected ${v2.chunks.length}`,
      );
      const all = await connector.query(v2.chunks[0]!.embedding, 30, { view: { kind: 'all' } });
      ctx.check(
        all.some((h) => h.metadata[FIELDS.chunkId] === v2.chunks[0]!.chunkId),
        'a query over every stored chunk does not return a staged chunk: staging did not land',
      );
      for (const kind of ['epoch', 'flag'] as ViewKind[]) {
        const doc = await readDocument(connector, v1.documentId, v1.chunks[0]!.embedding, 20, kind);
        const v1Seen = chunkIdsOf(doc).filter((id) =>
          v1.chunks.some((c) => c.chunkId === id),
        ).length;
        ctx.check(
          v1Seen === v1.chunks.length,
          `${kind} readers saw ${v1Seen} of ${v1.chunks.length} chunks of the current version`,
        );
      }
    });
    let leaked = 0;
    const seen: string[] = [];
    for (const kind of ['epoch', 'flag'] as ViewKind[]) {
      const doc = await readDocument(connector, v1.documentId, v2.chunks[0]!.embedding, 20, kind);
      const newDoc = await readDocument(
        connector,
        fresh.documentId,
        fresh.chunks[0]!.embedding,
        20,
        kind,
      );
      const unscoped =
        kind === 'epoch'
          ? await connector.searchCurrent(v2.chunks[1]!.embedding, 20)
          : await connector.query(v2.chunks[1]!.embedding, 20, { view: { kind: 'flag' } });
      const doneLeaks = [...doc, ...newDoc, ...unscoped].filter((h) =>
        staged.has(String(h.metadata[FIELDS.chunkId])),
      );
      leaked += doneLeaks.length;
      seen.push(`${kind}: ${describeVersions(byVersion([...doc, ...newDoc]), names)}`);
      ctx.check(
        doneLeaks.length === 0,
        `${kind} readers saw ${doneLeaks.length} staged chunk(s), e.g. ${doneLeaks[0]?.metadata[FIELDS.chunkId]}`,
      );
      ctx.check(
        newDoc.length === 0,
        `${kind} readers saw ${newDoc.length} chunk(s) of a document that was only staged`,
      );
    }
    ctx.observe('stagedVisible', leaked);
    ctx.observed(`staged: ${leaked} visible (${seen.join('; ')})`);
  },
};

export const restageIdempotent: ConformanceCase = {
  id: 'restage-idempotent',
  title: 'staging the same version twice is idempotent',
  guarantee:
    'Re-staging a version (a retried write) overwrites by id: the exact count stays the chunk count, no id appears twice, and deleting something absent succeeds.',
  whenItFails:
    '_upsert must overwrite an existing id (upsert, not insert/append); with idForm "uuid" the point id must be chunkUuid(chunkId) so a retry hits the same point. _deleteVersion/_deleteDocuments of absent data must not throw.',
  appliesTo: () => true,
  declared: () => 'count unchanged by a retry',
  async run(ctx) {
    const connector = await ctx.connector();
    const epoch = await connector.readEpoch();
    const v = ctx.corpus.generated('retry', 'v1', 6);
    const stored = v.chunks.map((c) => toStoredChunk(c, epoch + 1));
    await connector.upsert(stored);
    let afterOnce = 0;
    await ctx.eventually('staged', async () => {
      afterOnce = await connector.countChunks(v.documentId, v.versionId);
      ctx.check(
        afterOnce === v.chunks.length,
        `count after one stage is ${afterOnce}, expected ${v.chunks.length}`,
      );
    });
    await ctx.time('restage', () => connector.upsert(stored));
    await connector.upsert(stored.slice(2, 4));
    let afterTwice = 0;
    await ctx.eventually('restaged', async () => {
      afterTwice = await connector.countChunks(v.documentId, v.versionId);
      const listed = await connector.listChunks(v.documentId, v.versionId);
      const ids = chunkIdsOf(listed);
      const unique = new Set(ids).size;
      const hits = await connector.query(v.chunks[0]!.embedding, v.chunks.length * 3, {
        view: { kind: 'all' },
        documentId: v.documentId,
      });
      ctx.observe('countAfterRetries', afterTwice);
      ctx.observe('queryHits', hits.length);
      ctx.check(
        afterTwice === v.chunks.length,
        `count after re-staging is ${afterTwice}, expected ${v.chunks.length}`,
      );
      ctx.check(
        listed.length === v.chunks.length && unique === listed.length,
        `listing returns ${listed.length} rows for ${unique} distinct ids`,
      );
      ctx.check(
        hits.length === v.chunks.length,
        `a query over all chunks returns ${hits.length} hits, expected ${v.chunks.length}`,
      );
    });
    let deleteError = '';
    try {
      await connector.deleteVersion(v.documentId, 'vabsent');
      await connector.deleteDocuments([ctx.corpus.documentId('never-written')]);
    } catch (err) {
      deleteError = String(err);
    }
    ctx.check(deleteError === '', `deleting absent data threw: ${deleteError}`);
    ctx.observed(`count ${afterOnce} -> ${afterTwice} after retries`);
  },
};
