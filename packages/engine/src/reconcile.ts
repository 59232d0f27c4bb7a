import {
  type Connector,
  checkStoreAgainstState,
  type DocumentRecord,
  type ListedChunk,
  type MissingDocument,
  RagfreshError,
  type ReconcileReport,
  reconcile,
  recoverStateFromStore,
  type StateRecoveryReport,
  sameContentVersion,
} from '@ragfresh/core';
import { type EngineContext, SourceRun } from './context.js';
/** What the start of a refresh found and did. */
import type { StoreCheckReport } from './counts.js';
import { embedNewChunks } from './embed.js';
import type { PublishQueue } from './publish.js';
import { extractSnapshot, sourceProvenance } from './snapshot.js';

export type { StoreCheckReport } from './counts.js';

/**
 * Republishes documents the store lost from their raw snapshots, without network, as repairs
 * (the same version written again). Returns the ids that had no usable snapshot.
 */
export async function republishFromSnapshots(
  ctx: EngineContext,
  queue: PublishQueue,
  missing: readonly MissingDocument[],
): Promise<{ queued: SourceRun[]; noSnapshot: string[] }> {
  const runs = new Map<string, SourceRun>();
  const noSnapshot: string[] = [];
  for (const m of missing) {
    const source = ctx.deps.sources.find((s) => s.id === m.sourceId);
    const record = await ctx.deps.state.getDocument(m.documentId);
    const raw =
      record?.rawDigest === undefined ? undefined : await ctx.deps.snapshots?.get(record.rawDigest);
    if (source === undefined || record === undefined || raw === undefined) {
      noSnapshot.push(m.documentId);
      continue;
    }
    let run = runs.get(source.id);
    if (run === undefined) {
      run = new SourceRun(source, ctx.nowIso());
      runs.set(source.id, run);
    }
    const { outcome } = await extractSnapshot(
      ctx.deps.pipeline,
      raw,
      {
        documentId: record.documentId,
        sourceId: source.id,
        url: record.url,
        ...sourceProvenance(source),
        ...(record.timestamps.retrievedAt === undefined
          ? {}
          : { retrievedAt: record.timestamps.retrievedAt }),
      },
      ctx.pageLimits,
    );
    // The current version can only be re-written as itself; another cut is a normal publish,
    // which records a new observation: never for a page whose lifecycle is not plain (gone
    // evidence, a STALE or quarantined copy). The next refresh fetches those in full instead.
    const recut =
      outcome.kind === 'document' &&
      !sameContentVersion(outcome.versionId, record.currentVersionId);
    if (outcome.kind !== 'document' || (recut && !plainLifecycle(record))) {
      noSnapshot.push(m.documentId);
      continue;
    }
    const chunks = await embedNewChunks(ctx, outcome, undefined, run.counts);
    await queue.add({
      run,
      ...(sameContentVersion(outcome.versionId, record.currentVersionId)
        ? { mode: 'repair' as const }
        : {}),
      candidate: {
        documentId: record.documentId,
        versionId: outcome.versionId,
        sourceId: source.id,
        url: record.url,
        contentHash: outcome.contentHash,
        textChars: outcome.text.length,
        text: outcome.text,
        chunks,
        retrievedAt: record.timestamps.retrievedAt ?? raw.meta.fetchedAt,
        rawDigest: record.rawDigest!,
        ...(record.validators === undefined ? {} : { validators: record.validators }),
      },
    });
  }
  return { queued: [...runs.values()], noSnapshot };
}

/** Healthy, no gone evidence: a new cut of it can be published without hiding anything. */
function plainLifecycle(r: DocumentRecord): boolean {
  return r.status === 'healthy' && (r.goneCount ?? 0) === 0;
}

/** Drops the validators of documents to be fetched in full (their copy in the store is lost). */
async function forgetValidators(ctx: EngineContext, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    if ((await ctx.ledger.validatorsForgotten(id)) !== undefined) ctx.mustRepair.add(id);
  }
}

/**
 * The cheap check every refresh starts with (core's `checkStoreAgainstState`: the epoch and a
 * sample of current documents). A lost state beside a published store is refused
 * (`STATE_LOST`); a lost or drifted store is repaired: every missing current document is
 * republished from its raw snapshot, and those without one are fetched in full in this run.
 */
export async function checkAndRepairStore(
  ctx: EngineContext,
  queue: PublishQueue,
): Promise<StoreCheckReport> {
  const { connector, state } = ctx.deps;
  const check = await checkStoreAgainstState({
    connector,
    state,
    records: await ctx.records.all(),
  });
  if (check.verdict === 'state-lost') {
    throw new RagfreshError(
      'STATE_LOST',
      `${check.problems.join('; ')}: the state was lost or reset; nothing was fetched or published. Run \`ragfresh recover\` to rebuild it from the store, or point \`state\` at the right file.`,
    );
  }
  if (check.verdict === 'ok' || check.verdict === 'empty')
    return { verdict: check.verdict, problems: [], repaired: 0, refetch: 0 };
  ctx.log.warn('store-check', { verdict: check.verdict, problems: check.problems });
  ctx.records.invalidate();
  // The sample said something is missing: compare every current document (batched listings).
  const full = await checkStoreAgainstState({ connector, state, sample: Number.MAX_SAFE_INTEGER });
  const { queued, noSnapshot } = await republishFromSnapshots(ctx, queue, full.missing);
  await queue.drain();
  await forgetValidators(ctx, noSnapshot);
  let repaired = 0;
  for (const run of queued) repaired += run.counts.published;
  return { verdict: check.verdict, problems: check.problems, repaired, refetch: noSnapshot.length };
}

/** `ragfresh verify`: the full two-way comparison, and with `repair` the fix of both sides. */
export interface VerifyReport extends ReconcileReport {
  readonly repaired: number;
  /** Missing documents without a raw snapshot (the next refresh fetches them in full). */
  readonly notRepaired: readonly string[];
  readonly orphansRemoved: number;
}

export async function verifyStore(
  ctx: EngineContext,
  queue: PublishQueue,
  options: { readonly repair: boolean },
): Promise<VerifyReport> {
  const { connector, state } = ctx.deps;
  const report = await reconcile({ connector, state });
  if (!options.repair) return { ...report, repaired: 0, notRepaired: [], orphansRemoved: 0 };
  const { queued, noSnapshot } = await republishFromSnapshots(ctx, queue, report.missing);
  await queue.drain();
  await forgetValidators(ctx, noSnapshot);
  let repaired = 0;
  for (const run of queued) repaired += run.counts.published;
  let orphansRemoved = 0;
  if (report.orphans.length > 0) {
    await ctx.publishLock.run(() =>
      connector.deleteVersions(
        report.orphans.map((o) => ({ documentId: o.documentId, versionId: o.versionId })),
      ),
    );
    orphansRemoved = report.orphans.length;
  }
  return { ...report, repaired, notRepaired: noSnapshot, orphansRemoved };
}

/**
 * A connector view whose scan lists the given documents (for connectors without a scan verb:
 * recovery can still read back every document the sources list).
 */
function scanByListing(connector: Connector, documentIds: readonly string[]): Connector {
  async function* scan(): AsyncGenerator<ListedChunk[]> {
    for (let i = 0; i < documentIds.length; i += 100) {
      const listed = await connector.listChunksMany(documentIds.slice(i, i + 100));
      const page = [...listed.values()].flat();
      if (page.length > 0) yield page;
    }
  }
  return new Proxy(connector, {
    get(target, prop) {
      if (prop === 'scanChunks') return scan;
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

export interface RecoverReport extends StateRecoveryReport {
  /** How the store was read: its own scan, or listing the documents the sources list. */
  readonly readBy: 'scan' | 'listing';
  readonly tombstones: number;
}

/**
 * `ragfresh recover`: rebuilds document records from the store's own chunk metadata (never
 * overwriting), and tombstones from the mirror. Says what it could not recover.
 */
export async function recoverState(
  ctx: EngineContext,
  listedIds: () => Promise<string[]>,
): Promise<RecoverReport> {
  const { connector, state } = ctx.deps;
  const now = () => ctx.now();
  // The manifest decides how the store is read: its own scan, or the documents sources list.
  const readBy: RecoverReport['readBy'] = connector.capabilities.scan === true ? 'scan' : 'listing';
  const report = await recoverStateFromStore({
    connector: readBy === 'scan' ? connector : scanByListing(connector, await listedIds()),
    state,
    now,
  });
  let tombstones = 0;
  for (const t of (await ctx.deps.tombstones?.list()) ?? []) {
    if (await ctx.ledger.tombstoneRestored(t)) tombstones++;
  }
  const mirrored = tombstones > 0 || ctx.deps.tombstones !== undefined;
  const notRecovered = report.notRecovered.filter((n) => !mirrored || n.what !== 'tombstones');
  if (readBy === 'listing')
    notRecovered.push({
      what: 'unlisted-documents',
      line: `documents no source lists any more (the ${connector.store} store cannot be scanned; only listed documents were read)`,
    });
  return { ...report, notRecovered, readBy, tombstones };
}
