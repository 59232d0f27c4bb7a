import {
  DocumentLedger,
  type DocumentRecord,
  type Reason,
  sameContentVersion,
  type Tombstone,
} from '@ragfresh/core';
import type { FetchResult, OkResult } from '@ragfresh/fetch';
import { type Acquisition, acquirePage } from './acquire.js';
import { oneLine } from './bounds.js';
import { type JudgeContext, judgePage } from './classify.js';
import type { EngineContext, SourceRun } from './context.js';
import { embedNewChunks } from './embed.js';
import {
  type EvidenceContext,
  recordDegraded,
  recordGone,
  recordGood,
  recordNotModified,
} from './evidence.js';
import type { ExtractedDocument, PageOutcome } from './extract.js';
import { HostEvidence } from './interstitial-evidence.js';
import type { InventoryEntry } from './inventory.js';
import { observePage, type PageObserver } from './observe.js';
import type { CandidateSink } from './publish.js';
import { acceptedVersion, heldVersion, observeResurrection, proposePersistent } from './review.js';
import { scopeChanged, sourceProvenance } from './snapshot.js';

/** One page of one source's run, with what the state already knows about it. */
export interface PageTask {
  readonly run: SourceRun;
  readonly entry: InventoryEntry;
  readonly base: DocumentRecord;
  readonly known: boolean;
}

/**
 * What the classify stage reads for one source's pages, on every path that judges a fetched
 * page (a refresh, the queue's page workers, the LangChain loader): the fetcher host evidence is
 * asked with, the source's `classify` settings, the run's host evidence, and the versions
 * reviewers accepted as the document (approved `persistent-not-the-document` items).
 */
export function judgeContextOf(
  ctx: { readonly deps: EvidenceContext['deps'] & { readonly fetcher: JudgeContext['fetcher'] } },
  source: JudgeContext['source'],
  evidence: HostEvidence = new HostEvidence(),
): JudgeContext {
  return {
    fetcher: ctx.deps.fetcher,
    source,
    evidence,
    accepted: (documentId) => acceptedVersion(ctx, documentId),
  };
}

/** The page observer of a source's run: the context's fetcher, pipeline, limits and renderer. */
function observerOf(ctx: EngineContext, run: SourceRun): PageObserver {
  return {
    fetcher: ctx.deps.fetcher,
    pipeline: ctx.deps.pipeline,
    pageLimits: ctx.pageLimits,
    ...(ctx.renderer === undefined ? {} : { renderer: ctx.renderer }),
    onRender: () =>
      ctx.count('ragfresh_renders_total', 'Pages rendered in a headless browser.', {
        source: run.source.id,
      }),
  };
}

/**
 * Observes one page: acquire (one conditional fetch; a 304 stops everything downstream),
 * classify and extract (one parse), then either record the observation (evidence) or embed
 * the new version and hand it to the candidate sink (a shared publish batch, or a worker's
 * publish job). Returns whether the answer was
 * definitive (counts toward complete coverage).
 */
export async function refreshPage(
  ctx: EngineContext,
  sink: CandidateSink,
  page: { readonly run: SourceRun; readonly entry: InventoryEntry },
  signal?: AbortSignal,
): Promise<boolean> {
  const { run, entry } = page;
  const { state } = ctx.deps;
  // The inventory read the record already (undefined when the document is new).
  const record = entry.record;
  const tombstone = await state.getTombstone(entry.documentId);
  if (tombstone?.removal !== undefined) {
    // A removal request: the URL is not fetched at all until the removal is undone.
    run.counts.tombstonedSkipped++;
    run.counts.definitive++;
    run.event(entry.url, entry.documentId, 'removed-skip', [
      { code: 'removal-requested', detail: 'not fetched' },
    ]);
    return true;
  }
  const task: PageTask = {
    run,
    entry,
    base: record ?? DocumentLedger.fresh(entry.documentId, run.source.id, entry.url),
    known: record !== undefined,
  };
  const definitive =
    tombstone !== undefined
      ? await observeTombstoned(ctx, task, tombstone, signal)
      : await observeLive(ctx, sink, task, signal);
  if (definitive) run.counts.definitive++;
  return definitive;
}

async function observeLive(
  ctx: EngineContext,
  sink: CandidateSink,
  task: PageTask,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const { run, entry } = task;
  const record = entry.record;
  const { source } = run;
  const acquired = await observePage(observerOf(ctx, run), {
    url: entry.url,
    documentId: entry.documentId,
    sourceId: source.id,
    provenance: sourceProvenance(source),
    // A scope change needs the body again (a 304 would keep the old scope's version).
    ...(record?.validators === undefined || scopeChanged(record, source)
      ? {}
      : { validators: record.validators }),
    ...(source.acquisition === undefined ? {} : { acquisition: source.acquisition }),
    ...(source.markdownTwin === true ? { markdownTwin: true } : {}),
    ...(source.proxy === undefined ? {} : { proxy: source.proxy }),
    ...(signal === undefined ? {} : { signal }),
  });
  ctx.count('ragfresh_fetches_total', 'Fetches by outcome.', {
    source: source.id,
    outcome: acquired.result.outcome,
  });
  return settlePage(ctx, sink, task, acquired);
}

async function settlePage(
  ctx: EngineContext,
  sink: CandidateSink,
  task: PageTask,
  acquired: Acquisition<PageOutcome>,
): Promise<boolean> {
  const { run, entry, base } = task;
  switch (acquired.kind) {
    case 'not-modified':
      run.counts.notModified++;
      run.answered.add(entry.documentId);
      await recordNotModified(ctx, base, {
        validators: acquired.result.validators,
        retrievedAt: acquired.result.fetchedAt,
      });
      run.event(entry.url, entry.documentId, 'not-modified');
      return true;
    case 'gone':
      await onGone(ctx, task, acquired.result);
      return true;
    case 'failed': {
      run.counts.fetchErrors++;
      if (acquired.result.outcome === 'off-host-redirect')
        run.alerts.push(`off-host-redirect: ${entry.url} -> ${acquired.result.location}`);
      const reasons = [acquired.reason];
      await recordDegraded(ctx, base, reasons);
      run.event(entry.url, entry.documentId, 'degraded', reasons);
      return false;
    }
    case 'unreadable':
      run.counts.fetched200++;
      await onNotTheDocument(ctx, task, { reasons: acquired.reasons, alerts: [] });
      return true;
    case 'page': {
      run.counts.fetched200++;
      const verdict = await judgePage(
        judgeContextOf(ctx, run.source, run.hostEvidence),
        { url: entry.url, documentId: entry.documentId, ...(task.known ? { record: base } : {}) },
        acquired.outcome,
        acquired.result,
      );
      if (verdict.kind === 'not-the-document')
        await onNotTheDocument(ctx, task, verdict, acquired.result.rawDigest);
      else {
        if (verdict.labels.length > 0)
          run.event(entry.url, entry.documentId, 'indexed-despite', verdict.labels);
        await onDocument(ctx, sink, task, verdict.doc, acquired.result);
      }
      return true;
    }
  }
}

async function observeTombstoned(
  ctx: EngineContext,
  task: PageTask,
  tombstone: Tombstone,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  // A tombstone blocks casual resurrection: observe (unconditionally), never extract or publish.
  const acquired = await acquirePage(
    { fetcher: ctx.deps.fetcher },
    {
      url: task.entry.url,
      pipelineKey: ctx.deps.pipeline.pipelineKey,
      sourceId: task.run.source.id,
      ...(signal === undefined ? {} : { signal }),
    },
    () => ({ kind: 'observed' }),
  );
  const { run, entry } = task;
  run.counts.tombstonedSkipped++;
  if (acquired.kind === 'page') await observeResurrection(ctx, run, task.base);
  run.event(entry.url, entry.documentId, 'tombstoned-skip', [
    { code: 'tombstoned', detail: tombstone.reason },
  ]);
  return acquired.kind === 'page' || acquired.kind === 'gone' || acquired.kind === 'not-modified';
}

async function onGone(ctx: EngineContext, task: PageTask, result: FetchResult): Promise<void> {
  const { run, entry } = task;
  const { status } = result;
  if (result.redirects.length > 0 && ctx.deletion.redirectedGone !== true) {
    // A redirect chain that ends in 404 says the target is gone, not the requested URL.
    const chain = result.redirects.map((h) => `${h.status} ${h.location}`).join(' -> ');
    const reason: Reason = {
      code: 'redirected-to-gone',
      detail: `redirected to ${result.finalUrl} (${chain}), which answered HTTP ${status}; not gone evidence for ${entry.url} (deletion.redirectedGone)`,
    };
    run.counts.fetchErrors++;
    await recordDegraded(ctx, task.base, [reason]);
    run.event(entry.url, entry.documentId, 'degraded', [reason]);
    return;
  }
  run.counts.gone++;
  const gone = await recordGone(ctx, task.base, status);
  run.event(entry.url, entry.documentId, 'gone', [gone.why]);
  if (!gone.proposable) return;
  run.proposals.push({
    subject: { sourceId: run.source.id, documentId: entry.documentId, url: entry.url },
    reason: 'confirmed-gone',
    evidence: [
      `HTTP ${status} observed ${gone.goneCount} times since ${gone.goneSince} at ${entry.url} itself`,
    ],
  });
}

async function onNotTheDocument(
  ctx: EngineContext,
  task: PageTask,
  verdict: {
    readonly reasons: readonly Reason[];
    readonly alerts: readonly string[];
    readonly asDocument?: ExtractedDocument;
  },
  rawDigest?: string,
): Promise<void> {
  const { run, entry } = task;
  const { asDocument } = verdict;
  run.counts.extracted++;
  run.counts.notTheDocument++;
  run.alerts.push(...verdict.alerts);
  for (const code of new Set(verdict.reasons.map((r) => r.code)))
    ctx.count('ragfresh_not_the_document_total', 'Pages judged not the document, by reason code.', {
      source: run.source.id,
      code,
    });
  const { reasons } = verdict;
  const record = await recordDegraded(
    ctx,
    { ...task.base, goneCount: 0 },
    reasons,
    asDocument?.versionId,
  );
  run.event(entry.url, entry.documentId, 'not-the-document', reasons);
  if (asDocument !== undefined)
    await proposePersistent(
      ctx,
      run,
      record,
      { versionId: asDocument.versionId, ...(rawDigest === undefined ? {} : { rawDigest }) },
      reasons,
    );
}

async function onDocument(
  ctx: EngineContext,
  sink: CandidateSink,
  task: PageTask,
  doc: ExtractedDocument,
  result: OkResult,
): Promise<void> {
  const { run, entry, base } = task;
  run.counts.extracted++;
  run.answered.add(entry.documentId);
  const before = base.validators;
  const now = result.validators;
  if (
    sameContentVersion(base.currentVersionId, doc.versionId) &&
    ctx.mustRepair.has(entry.documentId)
  ) {
    // The store lost this version and no raw snapshot was kept: the fetched copy restores it.
    ctx.mustRepair.delete(entry.documentId);
    // The fetch is a good observation (recorded here); the repair itself changes no lifecycle.
    await recordGood(ctx, base, {
      validators: now,
      retrievedAt: result.fetchedAt,
      rawDigest: result.rawDigest,
    });
    const chunks = await embedNewChunks(ctx, doc, undefined, run.counts);
    run.counts.candidates++;
    await sink.add({ run, mode: 'repair', candidate: candidateOf(task, doc, result, chunks) });
    return;
  }
  if (sameContentVersion(base.currentVersionId, doc.versionId)) {
    // The extracted text's hash decides: same version, nothing to embed or publish.
    run.counts.unchangedContent++;
    const moved =
      before !== undefined &&
      (before.etag !== now.etag || before.lastModified !== now.lastModified);
    if (moved) run.counts.validatorChurn++;
    // A record rebuilt by `recover` lacks the text facts the contract compares; same version, same text.
    const known = {
      ...base,
      textChars: base.textChars ?? doc.text.length,
      contentHash: base.contentHash ?? doc.contentHash,
    };
    await recordGood(ctx, known, {
      validators: now,
      retrievedAt: result.fetchedAt,
      rawDigest: result.rawDigest,
    });
    run.event(entry.url, entry.documentId, moved ? 'validator-moved-content-did-not' : 'unchanged');
    return;
  }
  if (
    before?.etag !== undefined &&
    before.etag === now.etag &&
    base.contentHash !== undefined &&
    base.contentHash !== doc.contentHash
  ) {
    // The reverse of churn: content changed under an unchanged validator, so 304s would hide edits.
    run.alerts.push(`validator-stale: ${entry.url} changed content under the same ETag`);
  }
  const held = await heldVersion(ctx, entry.documentId, doc.versionId);
  if (held !== undefined) {
    // Quarantined (awaiting review) or rejected, and unchanged since: nothing to embed or
    // publish. The validators are kept so the next run can be a 304.
    run.counts.heldUnchanged++;
    await ctx.ledger.heldUnchanged(base, now, result.fetchedAt);
    run.event(entry.url, entry.documentId, 'held-unchanged', [
      { code: 'review-held', detail: `${held.id} ${held.status}` },
    ]);
    return;
  }
  let chunks: Awaited<ReturnType<typeof embedNewChunks>>;
  try {
    chunks = await embedNewChunks(ctx, doc, task.known ? base : undefined, run.counts);
  } catch (err) {
    // One page's embedding failure degrades that page only; the run goes on.
    const reasons: Reason[] = [{ code: 'extract-failed', detail: `embed: ${oneLine(err)}` }];
    await recordDegraded(ctx, base, reasons);
    run.event(entry.url, entry.documentId, 'degraded', reasons);
    return;
  }
  run.counts.candidates++;
  await sink.add({ run, candidate: candidateOf(task, doc, result, chunks) });
}

function candidateOf(
  task: PageTask,
  doc: ExtractedDocument,
  result: OkResult,
  chunks: Awaited<ReturnType<typeof embedNewChunks>>,
) {
  const { run, entry } = task;
  return {
    documentId: entry.documentId,
    versionId: doc.versionId,
    sourceId: run.source.id,
    url: entry.url,
    contentHash: doc.contentHash,
    textChars: doc.text.length,
    text: doc.text,
    chunks,
    retrievedAt: result.fetchedAt,
    validators: result.validators,
    rawDigest: result.rawDigest,
    ...(result.lastModifiedAt === undefined ? {} : { sourceModifiedAt: result.lastModifiedAt }),
  };
}
