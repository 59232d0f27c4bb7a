import type { Connector, ListedChunk } from '../connector.js';
import { RagfreshError } from '../errors.js';
import { chunkId } from '../identity.js';
import { decodeChunkMetadata, FIELDS } from '../metadata.js';
import type { EmbeddedChunk } from '../model.js';
import { type EmbeddingSpace, spaceVersionId } from '../space.js';
import type { DocumentRecord, StateStore } from '../state/types.js';
import type { PublishCandidate } from './publisher.js';

// The two halves of a space migration that need no embedder: what is current (read back from
// the store, text and metadata), and the candidate that re-states it in another space. The
// engine's `migrateEmbeddingSpace` and the conformance case `embedding-migration` share them.

/** One live document's current chunks, as stored. */
export interface CurrentChunks {
  readonly record: DocumentRecord;
  readonly chunks: readonly ListedChunk[];
}

/** Documents listed per store call. */
const LIST_BATCH = 100;

/**
 * Every live document's current chunks (text and metadata, no vectors), in batches of
 * documents. A store holding fewer chunks than the state calls current is STORE_LOST: a
 * migration must not publish a document half.
 */
export async function listCurrentChunks(
  connector: Connector,
  state: StateStore,
): Promise<CurrentChunks[]> {
  const records: DocumentRecord[] = [];
  for await (const r of state.listDocuments()) {
    if (r.currentVersionId !== undefined && r.status !== 'tombstoned') records.push(r);
  }
  const out: CurrentChunks[] = [];
  for (let i = 0; i < records.length; i += LIST_BATCH) {
    const slice = records.slice(i, i + LIST_BATCH);
    const listed = await connector.listChunksMany(slice.map((r) => r.documentId));
    for (const r of slice) {
      const chunks = (listed.get(r.documentId) ?? []).filter(
        (c) => c.metadata[FIELDS.versionId] === r.currentVersionId,
      );
      if (chunks.length !== r.currentChunkIds.length)
        throw new RagfreshError(
          'STORE_LOST',
          `the store holds ${chunks.length} of the ${r.currentChunkIds.length} current chunks of ${r.documentId}; run \`ragfresh verify --repair\` before migrating.`,
          { scope: 'embeddings' },
        );
      out.push({ record: r, chunks });
    }
  }
  return out;
}

/**
 * The candidate that re-states a document's current version in `space`: the same texts,
 * provenance and ordinals, the new vectors (one per chunk, in order), the version id with the
 * space's suffix. Publish it with `{ respace: true }`.
 */
export function respaceCandidate(
  current: CurrentChunks,
  space: EmbeddingSpace,
  vectors: readonly (readonly number[])[],
): PublishCandidate {
  const { record, chunks } = current;
  if (vectors.length !== chunks.length)
    throw new RagfreshError(
      'INTERNAL',
      `${vectors.length} vectors for the ${chunks.length} chunks of ${record.documentId}.`,
      { scope: 'embeddings' },
    );
  const versionId = spaceVersionId(record.currentVersionId!, space);
  const embedded: EmbeddedChunk[] = chunks.map((c, i) => {
    const d = decodeChunkMetadata(c.metadata);
    return {
      chunkId: chunkId(record.documentId, versionId, d.ordinal),
      documentId: record.documentId,
      versionId,
      sourceId: d.sourceId,
      ordinal: d.ordinal,
      text: c.text,
      headingPath: d.headingPath,
      tokenCount: d.tokenCount,
      contentHash: d.contentHash,
      provenance: d.provenance,
      ...(d.duplicateGroup === undefined ? {} : { duplicateGroup: d.duplicateGroup }),
      embedding: vectors[i]!,
    };
  });
  return {
    documentId: record.documentId,
    versionId,
    sourceId: record.sourceId,
    url: record.url,
    contentHash: record.contentHash ?? '',
    textChars: record.textChars ?? chunks.reduce((n, c) => n + c.text.length, 0),
    ...(record.fingerprint === undefined ? {} : { fingerprint: record.fingerprint }),
    ...(record.duplicateGroup === undefined ? {} : { duplicateGroup: record.duplicateGroup }),
    chunks: embedded,
  };
}

/**
 * `respaceCandidate` for every document of `current`, from one flat list of vectors in the
 * order of `current`'s chunks (what one `embedDocuments` pass over their texts returns).
 */
export function respaceCandidates(
  current: readonly CurrentChunks[],
  space: EmbeddingSpace,
  vectors: readonly (readonly number[])[],
): PublishCandidate[] {
  const out: PublishCandidate[] = [];
  let at = 0;
  for (const d of current) {
    out.push(respaceCandidate(d, space, vectors.slice(at, at + d.chunks.length)));
    at += d.chunks.length;
  }
  return out;
}
