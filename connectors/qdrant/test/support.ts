import {
  chunkId,
  documentId,
  type EmbeddedChunk,
  FIELDS,
  OPEN_EPOCH,
  type PublishCandidate,
  type StoredChunk,
  sha256Hex,
  toStoredChunk,
  versionId,
} from '@ragfresh/core';

export const DIMS = 8;

/** Tiny deterministic embedding: character histogram folded into DIMS buckets, normalised. */
export function embed(text: string): number[] {
  const v = new Array<number>(DIMS).fill(0);
  for (let i = 0; i < text.length; i++) v[(text.charCodeAt(i) * 31 + i) % DIMS]! += 1;
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / n);
}

export function candidate(
  sourceId: string,
  url: string,
  paragraphs: readonly string[],
): PublishCandidate {
  const docId = documentId(sourceId, url);
  const text = paragraphs.join('\n\n');
  const versions = { extractor: 'test', chunker: 'test', schema: '1' };
  const verId = versionId({
    text,
    chunks: paragraphs.map((p) => ({ text: p, headingPath: ['Doc'] })),
    versions,
  });
  const retrievedAt = '2026-11-30T00:00:00.000Z';
  const chunks: EmbeddedChunk[] = paragraphs.map((p, i) => ({
    chunkId: chunkId(docId, verId, i),
    documentId: docId,
    versionId: verId,
    sourceId,
    ordinal: i,
    text: p,
    headingPath: ['Doc', `Section ${i}`],
    tokenCount: p.split(/\s+/).length,
    contentHash: sha256Hex(p),
    provenance: {
      url,
      finalUrl: url,
      title: 'Doc',
      retrievedAt,
      contentChangedAt: retrievedAt,
      acquisition: 'raw',
    },
    embedding: embed(p),
  }));
  return {
    documentId: docId,
    versionId: verId,
    sourceId,
    url,
    contentHash: sha256Hex(text),
    textChars: text.length,
    text,
    chunks,
    retrievedAt,
  };
}

/** Stored chunks of a candidate with validity `[from, to)`. */
export function stored(
  c: PublishCandidate,
  from: number,
  to = OPEN_EPOCH,
  current = false,
): StoredChunk[] {
  return c.chunks.map((ch) => {
    const s = toStoredChunk(ch, from);
    return { ...s, metadata: { ...s.metadata, [FIELDS.to]: to, [FIELDS.current]: current } };
  });
}

export const versionsOf = (hits: ReadonlyArray<{ metadata: Readonly<Record<string, unknown>> }>) =>
  [...new Set(hits.map((h) => String(h.metadata[FIELDS.versionId])))].sort();
