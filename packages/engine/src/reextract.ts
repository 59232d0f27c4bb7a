import {
  chunkId,
  type DocumentRecord,
  type EmbeddedChunk,
  FIELDS,
  type PublishCandidate,
  RagfreshError,
  republishedVersionId,
  sameContentVersion,
} from '@ragfresh/core';
import type { EngineContext, SourceRun } from './context.js';
import { emptyCounts, type RefreshCounts } from './counts.js';
import { embedNewChunks } from './embed.js';
import type { ExtractedDocument, PageOutcome } from './extract.js';
import type { PublishQueue } from './publish.js';
import { extractSnapshot, scopeChanged, sourceProvenance } from './snapshot.js';

/**
 * Which documents to re-extract: all with a raw snapshot, only those cut under another pipeline
 * key or published under another access scope, or the named ones (those a host's learned boilerplate change touches).
 */
export type ReextractScope = 'all' | 'other-pipeline' | ReadonlySet<string>;

async function candidates(
  ctx: EngineContext,
  run: SourceRun,
  scope: ReextractScope,
): Promise<DocumentRecord[]> {
  const key = ctx.deps.pipeline.pipelineKey;
  const out: DocumentRecord[] = [];
  for (const r of await ctx.records.ofSource(run.source.id)) {
    if (r.rawDigest === undefined || r.status === 'tombstoned' || r.currentVersionId === undefined)
      continue;
    if (typeof scope !== 'string' && !scope.has(r.documentId)) continue;
    // Cut under another pipeline, or published under another access scope than the source's.
    if (
      scope === 'other-pipeline' &&
      (r.validators === undefined || r.validators.pipelineKey === key) &&
      !scopeChanged(r, run.source)
    )
      continue;
    out.push(r);
  }
  return out;
}

/** Extracts one document again from its raw snapshot; undefined when no snapshot is kept. */
async function fromSnapshot(
  ctx: EngineContext,
  run: SourceRun,
  r: DocumentRecord,
): Promise<{ outcome: PageOutcome; retrievedAt: string } | undefined> {
  const raw = await ctx.deps.snapshots?.get(r.rawDigest!);
  if (raw === undefined) return undefined;
  return extractSnapshot(
    ctx.deps.pipeline,
    raw,
    {
      documentId: r.documentId,
      sourceId: run.source.id,
      url: r.url,
      ...sourceProvenance(run.source),
      ...(r.timestamps.retrievedAt === undefined ? {} : { retrievedAt: r.timestamps.retrievedAt }),
    },
    ctx.pageLimits,
  );
}

/**
 * The reextract stage: documents are extracted again from their raw snapshots, without
 * network, and queued where the version changed. A document re-extracted from the same bytes
 * keeps its validators, re-tagged with the current pipeline key, so the next conditional
 * request can still be answered 304. Returns how many documents were re-extracted.
 */
export async function reextractSource(
  ctx: EngineContext,
  queue: PublishQueue,
  run: SourceRun,
  scope: ReextractScope,
): Promise<number> {
  if (ctx.deps.snapshots === undefined) return 0;
  const key = ctx.deps.pipeline.pipelineKey;
  let documents = 0;
  for (const r of await candidates(ctx, run, scope)) {
    const got = await fromSnapshot(ctx, run, r);
    if (got === undefined) continue;
    documents++;
    run.counts.extracted++;
    run.counts.reextracted++;
    // Not extractable from raw (e.g. a page that needed rendering): the next fetch is a full one.
    if (got.outcome.kind !== 'document') continue;
    const validators =
      r.validators === undefined ? undefined : { ...r.validators, pipelineKey: key };
    if (sameContentVersion(got.outcome.versionId, r.currentVersionId)) {
      if (validators !== undefined) await ctx.ledger.retagged(r, validators);
      continue;
    }
    const doc = got.outcome;
    let chunks: Awaited<ReturnType<typeof embedNewChunks>>;
    try {
      chunks = await embedNewChunks(ctx, doc, r, run.counts);
    } catch {
      continue; // the next fetch is a full one and reports the failure on the page
    }
    await queue.add({ run, candidate: candidateOf(run, r, doc, chunks, got.retrievedAt, key) });
  }
  return documents;
}

/** The candidate of a version extracted again from `r`'s raw snapshot (validators re-tagged with `key`). */
function candidateOf(
  run: SourceRun,
  r: DocumentRecord,
  doc: ExtractedDocument,
  chunks: readonly EmbeddedChunk[],
  retrievedAt: string,
  key: string,
): PublishCandidate {
  return {
    documentId: r.documentId,
    versionId: doc.versionId,
    sourceId: run.source.id,
    url: r.url,
    contentHash: doc.contentHash,
    textChars: doc.text.length,
    text: doc.text,
    chunks,
    retrievedAt,
    rawDigest: r.rawDigest!,
    ...(r.validators === undefined ? {} : { validators: { ...r.validators, pipelineKey: key } }),
  };
}

/**
 * Metadata keys a chunk written before they existed lacks: the access scope (`rf_access`,
 * without which no reader's filter matches it) and the embedding space (`rf_space`).
 */
export const REPUBLISH_KEYS: readonly string[] = Object.freeze([FIELDS.access, FIELDS.space]);

/** What `republishInPlace` did. */
export interface RepublishReport {
  /** Current documents whose stored chunks were read. */
  readonly documents: number;
  /** Of those, documents with a chunk lacking one of `REPUBLISH_KEYS`. */
  readonly lacking: number;
  /** Republished, in one batch (one epoch move). */
  readonly republished: number;
  /** Documents lacking a key that could not be republished, and why (one line each). */
  readonly skipped: readonly { readonly url: string; readonly reason: string }[];
  /** The published epoch after the batch (undefined when nothing was published). */
  readonly epoch?: number;
  readonly counts: RefreshCounts;
}

/** Documents whose stored chunks are read per store call. */
const LIST_BATCH = 100;

/**
 * Republish in place: every current document whose stored chunks lack a reserved key (a store
 * written before `rf_access` or `rf_space`) is extracted again from its raw snapshot (no
 * network), its chunks embedded (stored vectors of its space are reused), and published under
 * a fresh stored version id of the same content (`republishedVersionId`) — all of them in one
 * batch through the publish protocol: staged invisible, verified, one epoch move, the old
 * chunks retired. Journalled like every batch, so a killed run is rolled back or forward by
 * the next publisher, and running it again republishes only what still lacks a key.
 */
export async function republishInPlace(
  ctx: EngineContext,
  runs: readonly SourceRun[],
): Promise<RepublishReport> {
  const space = ctx.deps.space;
  if (space === undefined)
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      'republishing needs the embedding space of the engine; compose it with composeEngine.',
      { scope: 'engine' },
    );
  const key = ctx.deps.pipeline.pipelineKey;
  const candidates: PublishCandidate[] = [];
  const skipped: { url: string; reason: string }[] = [];
  let documents = 0;
  let lacking = 0;
  for (const run of runs) {
    const records = (await ctx.records.ofSource(run.source.id)).filter(
      (r) => r.currentVersionId !== undefined && r.status !== 'tombstoned',
    );
    for (let i = 0; i < records.length; i += LIST_BATCH) {
      const slice = records.slice(i, i + LIST_BATCH);
      const listed = await ctx.deps.connector.listChunksMany(slice.map((r) => r.documentId));
      for (const r of slice) {
        documents++;
        const current = (listed.get(r.documentId) ?? []).filter(
          (c) => c.metadata[FIELDS.versionId] === r.currentVersionId,
        );
        if (!current.some((c) => REPUBLISH_KEYS.some((k) => c.metadata[k] === undefined))) continue;
        lacking++;
        const skip = (reason: string) => skipped.push({ url: r.url, reason });
        if (current.length !== r.currentChunkIds.length) {
          skip(
            `the store holds ${current.length} of its ${r.currentChunkIds.length} current chunks; run \`ragfresh verify --repair\` first`,
          );
          continue;
        }
        const got = r.rawDigest === undefined ? undefined : await fromSnapshot(ctx, run, r);
        if (got === undefined) {
          skip('no raw snapshot is kept for it: it cannot be written again without a refetch');
          continue;
        }
        run.counts.extracted++;
        run.counts.reextracted++;
        if (got.outcome.kind !== 'document') {
          skip(
            `its raw snapshot is not the document now (${got.outcome.reasons.map((x) => x.code).join(', ')})`,
          );
          continue;
        }
        const chunks = await embedNewChunks(ctx, got.outcome, r, run.counts);
        const candidate = candidateOf(run, r, got.outcome, chunks, got.retrievedAt, key);
        candidates.push(
          sameContentVersion(got.outcome.versionId, r.currentVersionId)
            ? inPlace(candidate, r, republishedVersionId(r.currentVersionId!, space))
            : candidate,
        );
      }
    }
  }
  const counts = emptyCounts();
  if (candidates.length === 0) return { documents, lacking, republished: 0, skipped, counts };
  const report = await ctx.publishLock.run(() =>
    ctx.publisher().publish(candidates, { republish: true }),
  );
  let republished = 0;
  for (const d of report.documents) {
    if (d.outcome === 'published') republished++;
    else {
      const url = candidates.find((c) => c.documentId === d.documentId)?.url ?? d.documentId;
      skipped.push({ url, reason: `${d.outcome}: ${d.reasons.join('; ')}` });
    }
  }
  for (const run of runs) {
    const { counts: c } = run;
    counts.extracted += c.extracted;
    counts.reextracted += c.reextracted;
    counts.chunksEmbedded += c.chunksEmbedded;
    counts.chunksReused += c.chunksReused;
  }
  counts.published = republished;
  return { documents, lacking, republished, skipped, epoch: report.epoch, counts };
}

/**
 * The same content under the stored version id `versionId` (chunk ids follow), keeping the
 * document's near-duplicate group and fingerprint as recorded.
 */
function inPlace(c: PublishCandidate, r: DocumentRecord, versionId: string): PublishCandidate {
  return {
    ...c,
    versionId,
    ...(r.fingerprint === undefined ? {} : { fingerprint: r.fingerprint }),
    ...(r.duplicateGroup === undefined ? {} : { duplicateGroup: r.duplicateGroup }),
    chunks: c.chunks.map((ch) => ({
      ...ch,
      versionId,
      chunkId: chunkId(c.documentId, versionId, ch.ordinal),
      ...(r.duplicateGroup === undefined ? {} : { duplicateGroup: r.duplicateGroup }),
    })),
  };
}
