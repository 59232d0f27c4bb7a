import { type DocumentRecord, type EmbeddedChunk, FIELDS } from '@ragfresh/core';
import type { EngineContext } from './context.js';
import type { RefreshCounts } from './counts.js';
import type { ExtractedDocument } from './extract.js';

/** Vectors of the current version's chunks in the configured space, by chunk text hash. */
async function currentVectors(
  ctx: EngineContext,
  record: DocumentRecord | undefined,
): Promise<Map<string, readonly number[]>> {
  const known = new Map<string, readonly number[]>();
  if (record?.currentVersionId === undefined) return known;
  const current = await ctx.deps.connector.listChunks(record.documentId, record.currentVersionId, {
    withEmbeddings: true,
  });
  const space = ctx.deps.space?.id;
  for (const c of current) {
    const hash = c.metadata[FIELDS.contentHash];
    // A vector is reused only within its space; a chunk without `rf_space` predates spaces and
    // is in the space the index first recorded.
    const chunkSpace = c.metadata[FIELDS.space];
    if (space !== undefined && chunkSpace !== undefined && chunkSpace !== space) continue;
    if (typeof hash === 'string' && c.embedding !== undefined) known.set(hash, c.embedding);
  }
  return known;
}

/**
 * The embed stage: only chunk texts the current version has no vector for go to the
 * embedder (each distinct text once); the others reuse the stored vector.
 */
export async function embedNewChunks(
  ctx: EngineContext,
  doc: ExtractedDocument,
  record: DocumentRecord | undefined,
  counts: RefreshCounts,
): Promise<EmbeddedChunk[]> {
  const known = await currentVectors(ctx, record);
  const missing = [
    ...new Set(doc.chunks.filter((c) => !known.has(c.contentHash)).map((c) => c.contentHash)),
  ];
  if (missing.length > 0) {
    const textByHash = new Map(doc.chunks.map((c) => [c.contentHash, c.text]));
    const vectors = await ctx.deps.embeddings.embedDocuments(
      missing.map((h) => textByHash.get(h)!),
    );
    for (const [i, h] of missing.entries()) known.set(h, vectors[i]!);
  }
  counts.chunksEmbedded += missing.length;
  counts.chunksReused += doc.chunks.length - missing.length;
  ctx.count(
    'ragfresh_chunks_embedded_total',
    'Chunk texts sent to the embedder.',
    {},
    missing.length,
  );
  return doc.chunks.map((c) => ({ ...c, embedding: known.get(c.contentHash)! }));
}
