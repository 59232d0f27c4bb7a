import {
  type CompactReport,
  canonicalKey,
  type DocumentRecord,
  documentId as makeDocumentId,
  RagfreshError,
  type RemovalTarget,
  type Retirement,
  type StateStore,
  sha256Hex,
} from '@ragfresh/core';
import { BOILERPLATE_DOC_KIND } from './boilerplate.js';
import type { EngineContext } from './context.js';
import type { EngineSource } from './types.js';

/** Which documents a removal request takes out (one of them). */
export type RemovalSelector =
  | { readonly kind: 'url'; readonly url: string }
  | { readonly kind: 'prefix'; readonly prefix: string }
  | { readonly kind: 'host'; readonly host: string }
  | { readonly kind: 'source'; readonly sourceId: string };

export interface RemovalAct {
  readonly reason: string;
  readonly by: string;
}

export interface RemovalReport {
  /** Documents tombstoned (known ones and, for a URL, the one its sources would give it). */
  readonly documents: number;
  /** Documents whose current version left the view in the one removal batch. */
  readonly retired: number;
  /** The epoch the removal batch published (the store's epoch when nothing was current). */
  readonly epoch: number;
  readonly chunksDeleted: number;
  readonly snapshotsDeleted: number;
  /** Snapshots kept because a document not removed holds the same body (docs/governance.md). */
  readonly snapshotsShared: number;
  readonly compaction: CompactReport;
}

function urlHashOf(url: string, source: EngineSource): string {
  return sha256Hex(canonicalKey(url, source.identity));
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

function matches(selector: RemovalSelector, r: DocumentRecord): boolean {
  switch (selector.kind) {
    case 'url':
      return false; // by identity, below
    case 'prefix':
      return r.url.startsWith(selector.prefix);
    case 'host':
      return hostOf(r.url) === selector.host.toLowerCase();
    case 'source':
      return r.sourceId === selector.sourceId;
  }
}

/** The documentId a URL has in a source, when the source's identity policy accepts it. */
function idIn(source: EngineSource, url: string): string | undefined {
  try {
    return makeDocumentId(source.id, url, source.identity);
  } catch {
    return undefined;
  }
}

/** Sources that would fetch a URL: their listed URLs, sitemaps or llms.txt share its host. */
function sourcesListingHost(sources: readonly EngineSource[], url: string): EngineSource[] {
  const host = hostOf(url);
  return sources.filter((s) =>
    [...(s.urls ?? []), ...(s.sitemaps ?? []), ...(s.llmsTxt ?? [])].some(
      (u) => hostOf(u) === host,
    ),
  );
}

interface Matched {
  readonly target: RemovalTarget;
  readonly record: DocumentRecord | undefined;
}

async function selectTargets(ctx: EngineContext, selector: RemovalSelector): Promise<Matched[]> {
  const sources = ctx.deps.sources;
  const out: Matched[] = [];
  if (selector.kind === 'url') {
    const known: Matched[] = [];
    for (const s of sources) {
      const id = idIn(s, selector.url);
      if (id === undefined) continue;
      const record = await ctx.deps.state.getDocument(id);
      if (record !== undefined)
        known.push({
          target: { documentId: id, sourceId: s.id, urlHash: urlHashOf(selector.url, s) },
          record,
        });
    }
    if (known.length > 0) return known;
    // Not fetched yet: tombstoned where a source would fetch it, so it never is.
    for (const s of sourcesListingHost(sources, selector.url)) {
      const id = idIn(s, selector.url);
      if (id !== undefined)
        out.push({
          target: { documentId: id, sourceId: s.id, urlHash: urlHashOf(selector.url, s) },
          record: undefined,
        });
    }
    return out;
  }
  const byId = new Map(sources.map((s) => [s.id, s]));
  for await (const r of ctx.deps.state.listDocuments(
    selector.kind === 'source' ? { sourceId: selector.sourceId } : {},
  )) {
    if (!matches(selector, r)) continue;
    const source = byId.get(r.sourceId);
    out.push({
      target: {
        documentId: r.documentId,
        sourceId: r.sourceId,
        urlHash:
          source === undefined ? sha256Hex(r.url) : (safeHash(r.url, source) ?? sha256Hex(r.url)),
      },
      record: r,
    });
  }
  return out;
}

function safeHash(url: string, source: EngineSource): string | undefined {
  try {
    return urlHashOf(url, source);
  } catch {
    return undefined;
  }
}

/**
 * Raw snapshots of the removed documents: the digests their records and review items name,
 * and every stored snapshot whose sidecar was fetched for one of their URLs (older versions).
 * A digest another (not removed) document's record still names is shared and kept.
 */
async function snapshotsOf(
  ctx: EngineContext,
  matched: readonly Matched[],
): Promise<{ readonly doomed: Set<string>; readonly shared: number }> {
  const ids = new Set(matched.map((m) => m.target.documentId));
  const doomed = new Set<string>();
  for (const m of matched) if (m.record?.rawDigest !== undefined) doomed.add(m.record.rawDigest);
  for (const item of await ctx.deps.state.listReviewItems())
    if (ids.has(item.documentId) && item.rawDigest !== undefined) doomed.add(item.rawDigest);
  const snapshots = ctx.deps.snapshots;
  if (snapshots !== undefined) {
    const sources = ctx.deps.sources.filter((s) => matched.some((m) => m.target.sourceId === s.id));
    for await (const e of snapshots.list()) {
      const urls = [e.meta.url, e.meta.finalUrl];
      if (urls.some((u) => sources.some((s) => ids.has(idIn(s, u) ?? '')))) doomed.add(e.digest);
    }
  }
  let shared = 0;
  if (doomed.size > 0)
    for await (const r of ctx.deps.state.listDocuments()) {
      if (ids.has(r.documentId) || r.rawDigest === undefined || !doomed.has(r.rawDigest)) continue;
      doomed.delete(r.rawDigest);
      shared++;
    }
  return { doomed, shared };
}

/**
 * A removal request (`ragfresh remove`): every matching document leaves the view in one
 * removal batch through the publish protocol (one epoch), then everything ragfresh keeps of
 * it is purged — every stored version and the store's old on-disk versions (`compact`), its
 * raw snapshots, its record, review items and learned facts — leaving a minimal tombstone
 * (URL hash, reason, who, when) that keeps the URL from being fetched or imported again. The
 * tombstones are written first, so a run killed half-way leaves the URLs blocked, and
 * running the request again finishes it. Appended to the audit log.
 */
export async function removeDocuments(
  ctx: EngineContext,
  selector: RemovalSelector,
  act: RemovalAct,
): Promise<RemovalReport> {
  const publisher = ctx.publisher();
  const matched = await selectTargets(ctx, selector);
  if (matched.length === 0)
    throw new RagfreshError(
      'NOT_FOUND',
      `no document matches ${describeSelector(selector)}; check it against \`ragfresh inspect\` or \`ragfresh status\`.`,
      { scope: 'engine' },
    );
  const targets = matched.map((m) => m.target);
  const ids = targets.map((t) => t.documentId);
  const { doomed, shared } = await snapshotsOf(ctx, matched);
  return ctx.publishLock.run(async () => {
    await ctx.ledger.removalRequested(targets, act);
    const removals = matched
      .filter((m) => m.record?.currentVersionId !== undefined)
      .map((m) => ({ documentId: m.target.documentId, reason: act.reason, requested: true }));
    const report = removals.length === 0 ? undefined : await publisher.publish([], { removals });
    const epoch = report?.epoch ?? (await ctx.deps.connector.readEpoch());
    const retired = report?.documents.filter((d) => d.outcome === 'removed').length ?? 0;
    for (const id of ids) await ctx.deps.state.putLearned?.(BOILERPLATE_DOC_KIND, id, undefined);
    await ctx.ledger.removalPurged(ids);
    await ctx.deps.snapshots?.delete([...doomed]);
    const purged = await publisher.purge(ids);
    const result: RemovalReport = {
      documents: targets.length,
      retired,
      epoch,
      chunksDeleted: purged.chunks,
      snapshotsDeleted: doomed.size,
      snapshotsShared: shared,
      compaction: purged.compaction,
    };
    await ctx.deps.audit?.append({
      action: 'removed',
      by: act.by,
      reason: act.reason,
      documents: ids,
      details: {
        match: selector.kind,
        ...(selector.kind === 'prefix' ? { prefix: selector.prefix } : {}),
        ...(selector.kind === 'host' ? { host: selector.host } : {}),
        ...(selector.kind === 'source' ? { source: selector.sourceId } : {}),
        epoch,
        retired,
        chunksDeleted: purged.chunks,
        snapshotsDeleted: doomed.size,
        storeReclaimed: purged.compaction.reclaimed,
      },
    });
    return result;
  });
}

function describeSelector(s: RemovalSelector): string {
  switch (s.kind) {
    case 'url':
      return `URL ${s.url}`;
    case 'prefix':
      return `prefix ${s.prefix}`;
    case 'host':
      return `host ${s.host}`;
    case 'source':
      return `source ${s.sourceId}`;
  }
}

/** `ragfresh remove --undo <url>`: the URL's removal tombstones are lifted (audited). */
export async function undoRemoval(ctx: EngineContext, url: string, by: string): Promise<number> {
  const lifted: string[] = [];
  for (const s of ctx.deps.sources) {
    const id = idIn(s, url);
    if (id !== undefined && (await ctx.ledger.removalUndone(id))) lifted.push(id);
  }
  if (lifted.length > 0)
    await ctx.deps.audit?.append({
      action: 'removal-undone',
      by,
      documents: lifted,
      details: { count: lifted.length },
    });
  return lifted.length;
}

/** A raw snapshot `gc` prunes (or would). */
export interface PrunedSnapshot {
  readonly digest: string;
  readonly url?: string;
  readonly bytes: number;
  readonly observedAt: string;
}

export interface GcReport {
  readonly snapshots: readonly PrunedSnapshot[];
  readonly snapshotBytes: number;
  /** Snapshots kept only because a current version (or a pending review item) needs them. */
  readonly snapshotsNeeded: number;
  readonly retired: readonly (Retirement & { readonly chunks: number })[];
  readonly retiredChunks: number;
}

/**
 * Retention (`ragfresh gc`, and `watch` on schedule): raw snapshots older than their
 * source's retention and retired versions past it go — never a snapshot a current version
 * (or a pending review item) needs to be re-extracted. `dryRun` lists, deletes nothing.
 */
export async function collectGarbage(
  ctx: EngineContext,
  options: {
    readonly dryRun?: boolean;
    readonly retentionOf: (sourceId: string) => number | undefined;
  },
): Promise<GcReport> {
  const publisher = ctx.publisher();
  const state = ctx.deps.state;
  const needed = await neededDigests(state);
  const now = ctx.now().getTime();
  const snapshots: PrunedSnapshot[] = [];
  let snapshotsNeeded = 0;
  for await (const e of ctx.deps.snapshots?.list() ?? []) {
    const observedAt = e.meta.fetchedAt;
    const retention = await snapshotRetention(ctx, e.meta.url, options);
    if (retention === undefined || now - Date.parse(observedAt) < retention) continue;
    if (needed.has(e.digest)) {
      snapshotsNeeded++;
      continue;
    }
    snapshots.push({
      digest: e.digest,
      url: e.meta.url,
      bytes: e.bytes,
      observedAt,
    });
  }
  const retired = await publisher.retiredDue();
  if (options.dryRun !== true) {
    await ctx.deps.snapshots?.delete(snapshots.map((s) => s.digest));
    await ctx.publishLock.run(() => publisher.collectRetired());
  }
  return {
    snapshots,
    snapshotBytes: snapshots.reduce((a, s) => a + s.bytes, 0),
    snapshotsNeeded,
    retired,
    retiredChunks: retired.reduce((a, r) => a + r.chunks, 0),
  };
}

async function neededDigests(state: StateStore): Promise<Set<string>> {
  const needed = new Set<string>();
  for await (const r of state.listDocuments())
    if (r.rawDigest !== undefined && r.currentVersionId !== undefined) needed.add(r.rawDigest);
  for (const item of await state.listReviewItems({ status: 'pending' }))
    if (item.rawDigest !== undefined) needed.add(item.rawDigest);
  return needed;
}

/** The retention of the source that holds the snapshot's URL (the default when none does). */
async function snapshotRetention(
  ctx: EngineContext,
  url: string | undefined,
  options: { readonly retentionOf: (sourceId: string) => number | undefined },
): Promise<number | undefined> {
  if (url !== undefined)
    for (const s of ctx.deps.sources) {
      const id = idIn(s, url);
      if (id !== undefined && (await ctx.deps.state.getDocument(id)) !== undefined)
        return options.retentionOf(s.id);
    }
  const all = ctx.deps.sources.map((s) => options.retentionOf(s.id));
  // A URL no source holds any more: kept as long as the longest retention asks.
  return all.some((r) => r === undefined) ? undefined : Math.max(...(all as number[]));
}

/** The epoch in force at `at` (from the epoch history), or undefined before the history starts. */
export async function epochAsOf(
  state: StateStore,
  at: Date,
): Promise<{ readonly epoch: number; readonly since: string } | undefined> {
  let found: { epoch: number; since: string } | undefined;
  for (const r of await state.listEpochRecords()) {
    if (Date.parse(r.at) > at.getTime()) break;
    found = { epoch: r.epoch, since: r.at };
  }
  return found;
}
