import type { DocumentRecord } from '@ragfresh/core';
import { sameContentVersion } from '@ragfresh/core';
import type { EngineContext, SourceRun } from './context.js';
import { embedNewChunks } from './embed.js';
import type { PageOutcome } from './extract.js';
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
    await queue.add({
      run,
      candidate: {
        documentId: r.documentId,
        versionId: doc.versionId,
        sourceId: run.source.id,
        url: r.url,
        contentHash: doc.contentHash,
        textChars: doc.text.length,
        text: doc.text,
        chunks,
        retrievedAt: got.retrievedAt,
        rawDigest: r.rawDigest!,
        ...(validators === undefined ? {} : { validators }),
      },
    });
  }
  return documents;
}
