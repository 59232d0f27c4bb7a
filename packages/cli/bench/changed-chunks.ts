import { createHash } from 'node:crypto';

/**
 * The current chunks of an index, as seen by a reader: document (or source URL) -> hashes of
 * its chunk texts. Built from the store's contents, never from a pipeline's own counters.
 */
export type ChunkSnapshot = Record<string, readonly string[]>;

export function textHash(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}

/**
 * Chunks that really changed between two snapshots: per document, the distinct chunk texts
 * present now that the document did not have before. A new document counts all its distinct
 * texts; a removed one counts nothing. An engine that embeds exactly these has re-embedded
 * nothing it already had and skipped nothing new.
 */
export function changedChunks(before: ChunkSnapshot, after: ChunkSnapshot): number {
  let changed = 0;
  for (const [doc, hashes] of Object.entries(after)) {
    const had = new Set(before[doc] ?? []);
    for (const h of new Set(hashes)) if (!had.has(h)) changed += 1;
  }
  return changed;
}

/** Number of chunks (rows) in a snapshot. */
export function chunkCount(snapshot: ChunkSnapshot): number {
  let n = 0;
  for (const hashes of Object.values(snapshot)) n += hashes.length;
  return n;
}

/** Adds one chunk text to a snapshot being built. */
export function addChunk(snapshot: Record<string, string[]>, doc: string, text: string): void {
  const hashes = snapshot[doc];
  if (hashes === undefined) snapshot[doc] = [textHash(text)];
  else hashes.push(textHash(text));
}
