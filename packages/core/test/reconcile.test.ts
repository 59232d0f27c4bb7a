import { MemoryConnector } from '@ragfresh/connector-memory';
import { describe, expect, it } from 'vitest';
import {
  checkStoreAgainstState,
  FIELDS,
  InMemoryStateStore,
  Publisher,
  reconcile,
  recoverStateFromStore,
  toStoredChunk,
} from '../src/index.js';
import { candidate, DIMS } from './support.js';

async function published(pages = 4) {
  const connector = new MemoryConnector();
  await connector.open({ dimensions: DIMS });
  const state = new InMemoryStateStore();
  const publisher = await Publisher.open({ connector, state });
  const docs = Array.from({ length: pages }, (_, i) =>
    candidate('docs', `https://e.com/p${i}`, [`Page ${i} says one thing.`, `Page ${i} adds more.`]),
  );
  await publisher.publish(docs);
  return { connector, state, publisher, docs };
}

describe('checkStoreAgainstState', () => {
  it('is ok when both sides agree, and empty when nothing was published anywhere', async () => {
    const { connector, state } = await published();
    const check = await checkStoreAgainstState({ connector, state });
    expect(check).toMatchObject({ verdict: 'ok', storeEpoch: 1, stateEpoch: 1, sampled: 4 });
    const fresh = new MemoryConnector();
    await fresh.open({ dimensions: DIMS });
    expect(
      (await checkStoreAgainstState({ connector: fresh, state: new InMemoryStateStore() })).verdict,
    ).toBe('empty');
  });

  it('says store-lost when the store was replaced by an empty one', async () => {
    const { state } = await published();
    const empty = new MemoryConnector();
    await empty.open({ dimensions: DIMS });
    const check = await checkStoreAgainstState({ connector: empty, state });
    expect(check.verdict).toBe('store-lost');
    expect(check.problems[0]).toMatch(/epoch 0, behind the state's 1/);
    expect(check.missing).toHaveLength(4);
  });

  it('says drift when one document lost its chunks and the epoch is intact', async () => {
    const { connector, state, docs } = await published();
    await connector.deleteDocuments([docs[2]!.documentId]);
    const check = await checkStoreAgainstState({ connector, state });
    expect(check.verdict).toBe('drift');
    expect(check.missing.map((m) => m.documentId)).toEqual([docs[2]!.documentId]);
    expect(check.missing[0]).toMatchObject({ expectedChunks: 2, visibleChunks: 0 });
  });

  it('says state-lost when the state is empty beside a published store', async () => {
    const { connector } = await published();
    const check = await checkStoreAgainstState({ connector, state: new InMemoryStateStore() });
    expect(check.verdict).toBe('state-lost');
    expect(check.problems[0]).toMatch(/state holds no document/);
  });
});

describe('reconcile', () => {
  it('finds missing documents and orphan versions, and nothing else', async () => {
    const { connector, state, docs } = await published();
    await connector.deleteDocuments([docs[0]!.documentId]);
    // A version no state knows about, visible in the current view (e.g. a foreign writer).
    const stray = candidate('docs', 'https://e.com/stray', ['Stray text.']);
    await connector.upsert(stray.chunks.map((c) => toStoredChunk(c, 1)));
    const report = await reconcile({ connector, state });
    expect(report.scanned).toBe(true);
    expect(report.missing.map((m) => m.documentId)).toEqual([docs[0]!.documentId]);
    expect(report.orphans).toEqual([
      {
        documentId: stray.documentId,
        versionId: stray.versionId,
        sourceId: 'docs',
        chunks: 1,
        visible: true,
      },
    ]);
    expect(report.scannedChunks).toBe(3 * 2 + 1);
  });

  it('a repair publish re-writes the current version the store lost', async () => {
    const { connector, state, publisher, docs } = await published();
    await connector.deleteDocuments([docs[1]!.documentId]);
    const report = await publisher.publish([docs[1]!], {
      repair: new Set([docs[1]!.documentId]),
    });
    expect(report.documents.map((d) => d.outcome)).toEqual(['published']);
    expect((await reconcile({ connector, state })).missing).toEqual([]);
    // Without the repair flag the same candidate is "unchanged" and writes nothing.
    await connector.deleteDocuments([docs[1]!.documentId]);
    const plain = await publisher.publish([docs[1]!]);
    expect(plain.documents.map((d) => d.outcome)).toEqual(['unchanged']);
  });
});

describe('recoverStateFromStore', () => {
  it('rebuilds current documents from chunk metadata and says what it could not', async () => {
    const { connector, state, docs } = await published();
    const lost = new InMemoryStateStore();
    const report = await recoverStateFromStore({ connector, state: lost });
    expect(report.documents).toBe(4);
    expect(report.notRecovered.map((n) => n.line).join(' ')).toMatch(/review queue/);
    expect(report.notRecovered.map((n) => n.line).join(' ')).toMatch(/tombstones/);
    for (const d of docs) {
      const before = await state.getDocument(d.documentId);
      const after = await lost.getDocument(d.documentId);
      expect(after).toMatchObject({
        documentId: d.documentId,
        sourceId: 'docs',
        url: before!.url,
        currentVersionId: before!.currentVersionId,
        currentChunkIds: before!.currentChunkIds,
        chunkHashes: before!.chunkHashes,
        publishedEpoch: 1,
      });
    }
    expect((await checkStoreAgainstState({ connector, state: lost })).verdict).toBe('ok');
    // Never overwrites: a second run skips every document.
    const again = await recoverStateFromStore({ connector, state: lost });
    expect(again).toMatchObject({ documents: 0, skipped: 4 });
    const listed = await connector.listChunks(docs[0]!.documentId);
    expect(listed.every((c) => c.metadata[FIELDS.current] === true)).toBe(true);
  });
});
