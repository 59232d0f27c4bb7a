// Test helpers for connector authors and ragfresh's own tests: tiny deterministic embeddings,
// publish candidates and stored chunks built with core's ids, so every package builds its test
// data one way instead of carrying its own copy.
import {
  chunkId,
  documentId,
  type EmbeddedChunk,
  FIELDS,
  type FlatValue,
  OPEN_EPOCH,
  type PublishCandidate,
  type StoredChunk,
  sha256Hex,
  storedAccess,
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

/** Deterministic unit-ish vector for (seed, ordinal); distinct seeds point different ways. */
export function vector(seed: number, dims = DIMS): number[] {
  const v: number[] = [];
  for (let i = 0; i < dims; i++)
    v.push(Math.sin(seed * 12.9898 + i * 78.233) * 0.5 + (i === seed % dims ? 1 : 0));
  return v;
}

export interface ChunkSpec {
  readonly documentId: string;
  readonly versionId: string;
  readonly count: number;
  readonly from: number;
  readonly to?: number;
  readonly current?: boolean;
  readonly sourceId?: string;
  readonly text?: (ordinal: number) => string;
  readonly extra?: Record<string, FlatValue>;
  readonly dims?: number;
}

export function makeChunks(spec: ChunkSpec): StoredChunk[] {
  const out: StoredChunk[] = [];
  for (let ordinal = 0; ordinal < spec.count; ordinal++) {
    const id = chunkId(spec.documentId, spec.versionId, ordinal);
    out.push({
      id,
      text: spec.text?.(ordinal) ?? `${spec.documentId} ${spec.versionId} chunk ${ordinal}`,
      embedding: vector(ordinal + spec.versionId.length * 31 + spec.documentId.length, spec.dims),
      metadata: {
        [FIELDS.chunkId]: id,
        [FIELDS.documentId]: spec.documentId,
        [FIELDS.versionId]: spec.versionId,
        [FIELDS.sourceId]: spec.sourceId ?? spec.documentId.split(':')[0]!,
        [FIELDS.ordinal]: ordinal,
        [FIELDS.from]: spec.from,
        [FIELDS.to]: spec.to ?? OPEN_EPOCH,
        [FIELDS.current]: spec.current ?? false,
        [FIELDS.source]: spec.documentId,
        [FIELDS.url]: `https://example.org/${encodeURIComponent(spec.documentId)}`,
        [FIELDS.title]: `Title of ${spec.documentId}`,
        [FIELDS.retrievedAt]: '2026-11-30T00:00:00.000Z',
        [FIELDS.tokenCount]: 42,
        // Public, as ragfresh writes it: a chunk without rf_access is seen by no reader.
        [FIELDS.access]: storedAccess([]),
        ...spec.extra,
      },
    });
  }
  return out;
}

let counter = 0;
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export async function expectCode(
  promise: Promise<unknown>,
  code: string,
): Promise<Error & { code: string }> {
  try {
    await promise;
  } catch (err) {
    const e = err as Error & { code: string };
    if (e.code !== code)
      throw new Error(`expected ${code}, got ${e.code ?? 'no code'}: ${e.message}`);
    return e;
  }
  throw new Error(`expected ${code}, but it resolved`);
}
