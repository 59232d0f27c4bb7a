import { createMemoryConnector } from '@ragfresh/connector-memory';
import {
  type DocumentPublishResult,
  HashingEmbeddings,
  InMemoryStateStore,
  type PublishCandidate,
  Publisher,
  reasonLine,
} from '@ragfresh/core';
import { prepareDocument } from '@ragfresh/extract';
import { describe, expect, it } from 'vitest';
import { source } from './harness.js';
import { EngineContext, PublishQueue, SourceRun } from './internals.js';

function candidate(documentId: string, sourceId: string): PublishCandidate {
  return {
    documentId,
    versionId: `v-${documentId}`,
    sourceId,
    url: `https://a.example/${documentId}`,
    contentHash: 'h',
    textChars: 10,
    chunks: [],
  };
}

/** A publisher whose answers are scripted per call. */
function scriptedPublisher(script: ((ids: string[]) => DocumentPublishResult['outcome'][])[]) {
  const calls: string[][] = [];
  const publisher = {
    async publish(cands: readonly PublishCandidate[]) {
      const ids = cands.map((c) => c.documentId);
      calls.push(ids);
      const outcomes = (script[calls.length - 1] ?? ((x: string[]) => x.map(() => 'published')))(
        ids,
      );
      return {
        batchId: String(calls.length),
        targetEpoch: calls.length,
        epoch: calls.length,
        stagedChunks: 0,
        retiredChunks: 0,
        timingsMs: {},
        documents: cands.map((c, i) => ({
          documentId: c.documentId,
          versionId: c.versionId,
          outcome: outcomes[i]!,
          reasons:
            outcomes[i] === 'verify-failed'
              ? [{ code: 'verify-failed', detail: 'count 0 of 1' }]
              : [],
          chunks: 0,
        })),
      };
    },
  };
  return { publisher: publisher as unknown as Publisher, calls };
}

function context(publisher: Publisher, batchSize: number): EngineContext {
  return new EngineContext({ batchSize, publisher, sources: [] } as never);
}

describe('publish queue: shared batches across sources', () => {
  it('fills batches with documents of several sources, in arrival order', async () => {
    const { publisher, calls } = scriptedPublisher([]);
    const ctx = context(publisher, 3);
    const a = new SourceRun(source('a', []), 't');
    const b = new SourceRun(source('b', []), 't');
    const queue = new PublishQueue(ctx);
    for (const [i, run] of [a, b, a, b, b].entries())
      await queue.add({ run, candidate: candidate(`d${i}`, run.source.id) });
    await queue.drain();
    expect(calls).toEqual([
      ['d0', 'd1', 'd2'],
      ['d3', 'd4'],
    ]);
    expect(a.counts.published).toBe(2);
    expect(b.counts.published).toBe(3);
  });

  it('a held candidate is published again in a following batch, once', async () => {
    const { publisher, calls } = scriptedPublisher([
      (ids) => ids.map((id) => (id === 'bad' ? 'verify-failed' : 'held')),
      (ids) => ids.map(() => 'published'),
    ]);
    const ctx = context(publisher, 3);
    const run = new SourceRun(source('a', []), 't');
    const queue = new PublishQueue(ctx);
    for (const id of ['ok1', 'bad', 'ok2']) await queue.add({ run, candidate: candidate(id, 'a') });
    await queue.drain();
    expect(calls).toEqual([
      ['ok1', 'bad', 'ok2'],
      ['ok1', 'ok2'],
    ]);
    expect(run.counts).toMatchObject({ published: 2, rejected: 1, held: 0 });
    expect(run.events.map((e) => `${e.documentId}:${e.event}`)).toEqual([
      'bad:quarantined',
      'ok1:published',
      'ok2:published',
    ]);
  });

  it('held twice is not dropped silently: counted and reported, never retried a third time', async () => {
    const heldAll = (ids: string[]) => ids.map(() => 'held' as const);
    const { publisher, calls } = scriptedPublisher([heldAll, heldAll, heldAll]);
    const run = new SourceRun(source('a', []), 't');
    const queue = new PublishQueue(context(publisher, 2));
    await queue.add({ run, candidate: candidate('x', 'a') });
    await queue.drain();
    expect(calls).toEqual([['x'], ['x']]);
    expect(run.counts.held).toBe(1);
    expect(run.events.map((e) => e.event)).toEqual(['held']);
  });
});

describe('publish queue: reading the publisher gates as data', () => {
  it('a candidate the shrink gate rejects raises sharp-shrink; one the min-chars gate rejects does not (the control)', async () => {
    const connector = createMemoryConnector();
    await connector.open({ dimensions: 16 });
    const state = new InMemoryStateStore();
    const embeddings = new HashingEmbeddings({ dimensions: 16 });
    const publisher = await Publisher.open({
      connector,
      state,
      contracts: (sourceId) => (sourceId === 'shrinking' ? { maxShrink: 0.5 } : { minChars: 1000 }),
    });
    const ctx = new EngineContext({ batchSize: 1, publisher, sources: [], state } as never);
    const version = async (sourceId: string, words: number): Promise<PublishCandidate> => {
      const url = `https://a.example/${sourceId}`;
      const doc = prepareDocument({
        documentId: `${sourceId}:page`,
        sourceId,
        markdown: `# Page\n\n${'word '.repeat(words)}`,
        provenance: {
          url,
          finalUrl: url,
          title: 'Page',
          retrievedAt: '2026-11-01T00:00:00Z',
          contentChangedAt: '2026-11-01T00:00:00Z',
          acquisition: 'raw',
        },
      });
      const vectors = await embeddings.embedDocuments(doc.chunks.map((c) => c.text));
      return {
        ...doc,
        url,
        chunks: doc.chunks.map((c, i) => ({ ...c, embedding: vectors[i]! })),
      };
    };
    try {
      const shrinking = new SourceRun(source('shrinking', []), 't');
      const queue = new PublishQueue(ctx);
      await queue.add({ run: shrinking, candidate: await version('shrinking', 200) });
      await queue.add({ run: shrinking, candidate: await version('shrinking', 20) });
      expect(shrinking.counts).toMatchObject({ published: 1, rejected: 1 });
      expect(shrinking.alerts).toEqual([
        expect.stringMatching(
          /^sharp-shrink: https:\/\/a\.example\/shrinking \(shrink: 8\d\.\d% > allowed 50\.0%\)$/,
        ),
      ]);
      const small = new SourceRun(source('small', []), 't');
      await queue.add({ run: small, candidate: await version('small', 20) });
      expect(small.counts).toMatchObject({ published: 0, rejected: 1 });
      expect(small.events.at(-1)?.reasons.map(reasonLine)[0]).toMatch(/^too-small: /);
      expect(small.alerts).toEqual([]);
    } finally {
      await publisher.close();
      await connector.close();
    }
  });
});
