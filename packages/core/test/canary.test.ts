import { MemoryConnector } from '@ragfresh/connector-memory';
import { describe, expect, it } from 'vitest';
import {
  type Canary,
  chunkId,
  documentId,
  type EmbeddedChunk,
  HashingEmbeddings,
  InMemoryStateStore,
  type PublishCandidate,
  Publisher,
  reasonLine,
  sha256Hex,
  versionId,
} from '../src/index.js';

const embeddings = new HashingEmbeddings({ dimensions: 256 });
const RETURNS = 'https://shop.example/policies/returns';

async function page(url: string, paragraphs: readonly string[]): Promise<PublishCandidate> {
  const docId = documentId('policies', url);
  const text = paragraphs.join('\n\n');
  const verId = versionId({
    text,
    chunks: paragraphs.map((p) => ({ text: p, headingPath: ['Returns'] })),
    versions: { extractor: 'test', chunker: 'test', schema: '1' },
  });
  const vectors = await embeddings.embedDocuments([...paragraphs]);
  const at = '2026-11-30T00:00:00.000Z';
  const chunks: EmbeddedChunk[] = paragraphs.map((p, i) => ({
    chunkId: chunkId(docId, verId, i),
    documentId: docId,
    versionId: verId,
    sourceId: 'policies',
    ordinal: i,
    text: p,
    headingPath: ['Returns', i === 0 ? 'Return window' : 'Refunds'],
    tokenCount: p.split(/\s+/).length,
    contentHash: sha256Hex(p),
    provenance: {
      url,
      finalUrl: url,
      title: 'Returns',
      retrievedAt: at,
      contentChangedAt: at,
      acquisition: 'raw',
    },
    embedding: vectors[i]!,
  }));
  return {
    documentId: docId,
    versionId: verId,
    sourceId: 'policies',
    url,
    contentHash: sha256Hex(text),
    textChars: text.length,
    text,
    chunks,
  };
}

async function setup(canaries: readonly Canary[]) {
  const connector = new MemoryConnector();
  await connector.open({ dimensions: embeddings.dimensions });
  const state = new InMemoryStateStore();
  const publisher = await Publisher.open({
    connector,
    state,
    canaries: (sourceId) => (sourceId === 'policies' ? canaries : []),
    embedQuery: (q) => embeddings.embedQuery(q),
  });
  return { connector, state, publisher };
}

const thirty = [
  'You can return any item within 30 days of delivery for a full refund.',
  'Refunds go back to the original payment method within five business days.',
];
const fourteen = [
  'You can return any item within 14 days of delivery for a full refund.',
  'Refunds go back to the original payment method within five business days.',
];
const shipping = [
  'Standard shipping takes three to five business days.',
  'Express shipping arrives the next business day.',
];

describe('publication canaries', () => {
  it('pass the 30 -> 14 days change: the staged passage is retrievable before promotion, then current', async () => {
    const canary: Canary = {
      query: 'how many days do I have to return an item',
      expect: { phrase: '14 days', url: RETURNS, section: 'Return window' },
    };
    const { connector, state, publisher } = await setup([]);
    const old = await page(RETURNS, thirty);
    await publisher.publish([old, await page('https://shop.example/shipping', shipping)]);
    await publisher.close();
    // The canary is declared after the 30-day version was published, as a user would add it.
    const guarded = await Publisher.open({
      connector,
      state,
      canaries: () => [canary],
      embedQuery: (q) => embeddings.embedQuery(q),
    });
    const next = await page(RETURNS, fourteen);
    const report = await guarded.publish([next]);
    expect(report.documents.map((d) => d.outcome)).toEqual(['published']);
    const staged = report.canaries?.find((c) => c.phase === 'staged');
    const current = report.canaries?.find((c) => c.phase === 'current');
    expect(staged).toMatchObject({ ok: true, rank: 1, epoch: 2, versionId: next.versionId });
    expect(current).toMatchObject({ ok: true, epoch: 2, versionId: next.versionId });
    expect((await state.getDocument(next.documentId))?.currentVersionId).toBe(next.versionId);
  });

  it('hold a promotion when the staged text lacks the expected phrase: old version stays current', async () => {
    const canary: Canary = {
      query: 'how many days do I have to return an item',
      expect: { phrase: '30 days', url: RETURNS },
    };
    const { connector, state, publisher } = await setup([canary]);
    const old = await page(RETURNS, thirty);
    const other = await page('https://shop.example/shipping', shipping);
    const first = await publisher.publish([old, other]);
    expect(first.canaries?.filter((c) => c.phase === 'staged').map((c) => c.ok)).toEqual([true]);
    const next = await page(RETURNS, fourteen);
    const otherNext = await page('https://shop.example/shipping', [
      ...shipping,
      'Free shipping over 50 dollars.',
    ]);
    const report = await publisher.publish([next, otherNext]);
    const byId = new Map(report.documents.map((d) => [d.documentId, d]));
    expect(byId.get(next.documentId)?.outcome).toBe('canary-failed');
    expect(byId.get(next.documentId)?.reasons.map(reasonLine)[0]).toMatch(
      /^canary-failed: "how many days do I have to return an item" did not retrieve phrase "30 days", from https:\/\/shop\.example\/policies\/returns in the top 5/,
    );
    // The batch is the unit: the unrelated document is held, not promoted.
    expect(byId.get(otherNext.documentId)?.outcome).toBe('held');
    expect(report.epoch).toBe(1);
    expect(await connector.readEpoch()).toBe(1);
    const record = await state.getDocument(next.documentId);
    expect(record?.currentVersionId).toBe(old.versionId);
    expect(record?.status).toBe('quarantined');
    const hits = await connector.searchCurrent(await embeddings.embedQuery('return days'), 10);
    expect(hits.some((h) => h.text.includes('14 days'))).toBe(false);
    expect(hits.some((h) => h.text.includes('30 days'))).toBe(true);
    // Nothing of the held batch stays staged.
    expect(await connector.countChunks(next.documentId, next.versionId)).toBe(0);
  });
});
