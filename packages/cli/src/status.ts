import {
  type CanaryResult,
  type DocumentRecord,
  type DocumentStatus,
  errorLine,
  isJudged,
  type RagfreshError,
  recountAggregates,
  redactUrl,
  type StateStore,
} from '@ragfresh/core';
import type { DeletionPolicy } from '@ragfresh/engine';
import type { QueueDepth } from '@ragfresh/queue';
import { latestCanaries, renderCanaryLine } from './canaries.js';
import type { ResolvedConfig } from './config.js';
import { formatDuration } from './duration.js';
import { EXIT } from './exit.js';

export interface SourceStatus {
  readonly sourceId: string;
  readonly state: DocumentStatus | 'empty';
  readonly documents: number;
  /**
   * Documents by status. `healthy` and `degraded` count only documents with a published
   * version; a URL never published (not yet fetched well, not the document, gone before its
   * first publication) is counted in `unpublished` instead, never as healthy.
   */
  readonly counts: Readonly<Record<DocumentStatus, number>>;
  /** Known URLs (not tombstoned, not quarantined) with no version ever published. */
  readonly unpublished: number;
  /** Oldest last-good observation among live documents: what the objective is judged on. */
  readonly retrievedAt?: string;
  readonly sourceModifiedAt?: string;
  readonly contentChangedAt?: string;
  readonly queryableAt?: string;
  readonly observationAgeMs?: number;
  /** Time from observing the latest change to it being queryable; never negative. */
  readonly propagationLagMs?: number;
  /** The raw (negative) lag when clocks disagreed and `propagationLagMs` was clamped to 0. */
  readonly propagationSkewMs?: number;
  readonly objectiveMs: number;
  readonly objectiveMet: boolean;
  readonly lastRunAt?: string;
  readonly lastRunComplete?: boolean;
  readonly alerts: readonly string[];
  readonly reasons: readonly string[];
  /** Pending review items of this source by kind and reason, e.g. `deletion/confirmed-gone`. */
  readonly review: Readonly<Record<string, number>>;
  /** Documents with gone (404/410) evidence that is not yet a proposal, and what each waits for. */
  readonly goneEvidence: readonly string[];
  /** Last run held a mass removal (or auto-approvals) back at the retire gate. */
  readonly removalHeld: boolean;
  /** Canary results of the newest run that ran canaries (staged and current phases). */
  readonly canaries?: readonly CanaryResult[];
  /**
   * Highest epoch at which a document of this source became current or was removed (0 when
   * none): the store's published epoch must have reached it, or the store was lost.
   */
  readonly publishedEpoch: number;
}

/** A propagation lag, clamped at 0; a negative raw value (clock skew) is kept as `skewMs`. */
export interface PropagationLag {
  readonly lagMs: number;
  readonly skewMs?: number;
}

/**
 * Time from observing a change to it being queryable. Queryable before observed can only be
 * clock skew (the fetcher's and the publisher's clocks, or a source-supplied date): the lag is
 * 0 and the raw value is returned as `skewMs` so surfaces can flag it instead of drawing it.
 */
export function propagationLag(observedAt: string, queryableAt: string): PropagationLag {
  const raw = Date.parse(queryableAt) - Date.parse(observedAt);
  return raw < 0 ? { lagMs: 0, skewMs: raw } : { lagMs: raw };
}

/** What a document's gone evidence still waits for: more checks, `minGoneAge`, or both. */
export function goneWaitLine(
  r: DocumentRecord,
  deletion: Pick<DeletionPolicy, 'goneChecks' | 'minGoneAgeMs'>,
  nextRunAt: string | undefined,
): string {
  const n = r.goneCount ?? 0;
  const since = r.goneSince ?? r.lastAttemptAt ?? '';
  const ageAt = new Date(Date.parse(since) + deletion.minGoneAgeMs).toISOString();
  const waits: string[] = [];
  if (n < deletion.goneChecks) waits.push(`${deletion.goneChecks - n} more check(s)`);
  if (Date.parse(ageAt) > Date.now()) waits.push(`minGoneAge until ${ageAt}`);
  const next = nextRunAt === undefined ? '' : `, next check after ${nextRunAt}`;
  return `${r.url}: gone ${n} of ${deletion.goneChecks} checks since ${since}; waits for ${waits.join(' and ') || 'the next run'}${next}`;
}

/**
 * One row per configured source, from the aggregates the state keeps beside the records (read
 * O(sources): counters, index ends, and the few records that need a line of their own); a store
 * that keeps none, or a state whose aggregates were never built, is recounted from every record.
 */
export async function sourceStatuses(
  config: ResolvedConfig,
  state: StateStore,
  now: Date = new Date(),
): Promise<SourceStatus[]> {
  const out: SourceStatus[] = [];
  const ids = config.sources.map((s) => s.id);
  const aggregates = (await state.aggregates?.(ids)) ?? (await recountAggregates(state, ids));
  for (const source of config.sources) {
    const agg = aggregates.sources.get(source.id)!;
    const review = { ...agg.pendingReview };
    const counts = { ...agg.counts };
    const live = agg.live;
    let worst: DocumentStatus | 'empty' =
      live.quarantined > 0
        ? 'quarantined'
        : live.degraded > 0
          ? 'degraded'
          : live.healthy > 0
            ? 'healthy'
            : 'empty';
    const reasons: string[] = [];
    const gone: DocumentRecord[] = [];
    for (const r of agg.attention) {
      if ((r.goneCount ?? 0) > 0 && !aggregates.pendingDocuments.has(r.documentId)) gone.push(r);
      if (isJudged(r) && r.status !== 'healthy')
        for (const reason of r.statusReasons) reasons.push(`${r.url}: ${reason}`);
    }
    const documents = agg.documents;
    const unpublished = agg.unpublished;
    const publishedEpoch = agg.publishedEpoch;
    const retrieved = agg.oldestObservedAt;
    const modified = agg.latestSourceModifiedAt;
    const changed = agg.latestChange?.contentChangedAt;
    const queryable = agg.latestQueryableAt;
    const lag =
      agg.latestChange?.queryableAt === undefined
        ? undefined
        : propagationLag(agg.latestChange.contentChangedAt, agg.latestChange.queryableAt);
    if (worst === 'empty' && counts.tombstoned > 0) worst = 'tombstoned';
    const [lastRun] = await state.listRuns(source.id, 1);
    const canaries =
      (source.canaries ?? []).length === 0
        ? []
        : latestCanaries(await state.listRuns(source.id, 50)).results;
    const age = retrieved === undefined ? undefined : now.getTime() - Date.parse(retrieved);
    const nextRunAt =
      lastRun === undefined
        ? undefined
        : new Date(Date.parse(lastRun.startedAt) + source.everyMs).toISOString();
    const alerts = lastRun?.alerts ?? [];
    out.push({
      sourceId: source.id,
      state: worst,
      documents,
      counts,
      unpublished,
      ...(retrieved === undefined ? {} : { retrievedAt: retrieved }),
      ...(modified === undefined ? {} : { sourceModifiedAt: modified }),
      ...(changed === undefined ? {} : { contentChangedAt: changed }),
      ...(queryable === undefined ? {} : { queryableAt: queryable }),
      ...(age === undefined ? {} : { observationAgeMs: age }),
      ...(lag === undefined ? {} : { propagationLagMs: lag.lagMs }),
      ...(lag?.skewMs === undefined ? {} : { propagationSkewMs: lag.skewMs }),
      objectiveMs: source.freshnessObjectiveMs,
      objectiveMet: age !== undefined && age <= source.freshnessObjectiveMs,
      ...(lastRun === undefined
        ? {}
        : { lastRunAt: lastRun.startedAt, lastRunComplete: lastRun.complete }),
      alerts,
      reasons,
      review,
      goneEvidence: gone.map((r) => goneWaitLine(r, config.settings.deletion, nextRunAt)),
      // Counted where the gate held them (with the `mass-removal-held` or `auto-approval-held` alert).
      removalHeld: (lastRun?.counts.removalsHeld ?? 0) > 0,
      ...(canaries.length === 0 ? {} : { canaries }),
      publishedEpoch,
    });
  }
  return out;
}

const short = (iso: string | undefined) =>
  iso === undefined ? '-' : iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

/** Renders rows as an aligned text table. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export function renderStatus(statuses: readonly SourceStatus[]): string {
  const rows = statuses.map((s) => [
    s.sourceId,
    s.state,
    `${s.documents - s.counts.tombstoned}/${s.documents}`,
    String(s.unpublished),
    short(s.sourceModifiedAt),
    short(s.retrievedAt),
    short(s.contentChangedAt),
    short(s.queryableAt),
    s.observationAgeMs === undefined ? '-' : formatDuration(s.observationAgeMs),
    s.propagationLagMs === undefined
      ? '-'
      : `${formatDuration(s.propagationLagMs)}${s.propagationSkewMs === undefined ? '' : ' (clock skew)'}`,
    `${s.objectiveMet ? 'met' : 'VIOLATED'} (${formatDuration(s.objectiveMs)})`,
    String(s.alerts.length),
  ]);
  const main = table(
    [
      'source',
      'state',
      'docs',
      'unpublished',
      'source-modified',
      'retrieved',
      'content-changed',
      'queryable',
      'obs-age',
      'prop-lag',
      'objective',
      'alerts',
    ],
    rows,
  );
  const notes: string[] = [];
  for (const s of statuses) {
    for (const a of s.alerts) notes.push(`  ${s.sourceId}: alert ${a}`);
    if (s.propagationSkewMs !== undefined)
      notes.push(
        `  ${s.sourceId}: prop-lag clock skew: queryable ${formatDuration(-s.propagationSkewMs)} before the change was observed; shown as 0 (check the clocks)`,
      );
    const review = Object.entries(s.review);
    if (review.length > 0)
      notes.push(
        `  ${s.sourceId}: review pending ${review.map(([k, n]) => `${n} ${k}`).join(', ')} (ragfresh review list)`,
      );
    if (s.counts.tombstoned > 0) notes.push(`  ${s.sourceId}: ${s.counts.tombstoned} tombstoned`);
    for (const g of s.goneEvidence.slice(0, 10)) notes.push(`  ${s.sourceId}: ${g}`);
    if (s.goneEvidence.length > 10)
      notes.push(`  ${s.sourceId}: … ${s.goneEvidence.length - 10} more with gone evidence`);
    for (const c of s.canaries ?? []) notes.push(renderCanaryLine(s.sourceId, c));
    for (const r of s.reasons.slice(0, 10)) notes.push(`  ${s.sourceId}: ${r}`);
    if (s.reasons.length > 10) notes.push(`  ${s.sourceId}: … ${s.reasons.length - 10} more`);
  }
  return notes.length === 0 ? main : `${main}\n\n${notes.join('\n')}`;
}

// --- queue depth (scale-out) ----------------------------------------------------------------

/** The queue part of `ragfresh status`: the queues, or one line saying why they are not shown. */
export type QueueSection =
  | { readonly redis: string; readonly prefix: string; readonly queues: readonly QueueDepth[] }
  | { readonly redis: string; readonly prefix: string; readonly problem: string };

/**
 * Queue depth and connected workers when the config has `queue`; undefined (no package loaded,
 * Redis never contacted) when it has not. Redis is tried once, without reconnecting, so an
 * unreachable server costs one connect timeout and becomes a `problem` line.
 */
export async function queueSection(
  config: Pick<ResolvedConfig, 'queue'>,
  options: { readonly connectTimeoutMs?: number } = {},
): Promise<QueueSection | undefined> {
  if (config.queue === undefined) return undefined;
  const prefix = config.queue.prefix ?? (config.queue.cluster === true ? '{ragfresh}' : 'ragfresh');
  const redisUrl = redactUrl(config.queue.redis);
  const base = { redis: redisUrl, prefix };
  const { loadQueuePackage } = await import('./queue-package.js');
  const q = await loadQueuePackage();
  if (q === undefined)
    return {
      ...base,
      problem:
        'queue: not shown; the optional package @ragfresh/queue is not installed (npm install @ragfresh/queue)',
    };
  const redis = q.connectRedis(config.queue, () => {}, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 1,
    connectTimeout: options.connectTimeoutMs ?? 3000,
  });
  // The socket's own error (ECONNREFUSED, ENOTFOUND…) says more than connect()'s rejection.
  let socketError: string | undefined;
  redis.on('error', (err: Error) => {
    socketError ??= err.message;
  });
  try {
    await redis.connect();
    const status = await q.queueStatus(redis, prefix);
    return { ...base, queues: status.queues };
  } catch (err) {
    const why = socketError ?? (err instanceof Error ? err.message : String(err));
    return {
      ...base,
      problem: `queue: redis unreachable at ${redisUrl} (${why}); queue depth not shown`,
    };
  } finally {
    redis.disconnect();
  }
}

export function renderQueueSection(section: QueueSection): string {
  if ('problem' in section) return section.problem;
  return [
    `queue (prefix ${section.prefix} at ${section.redis}):`,
    ...section.queues.map(
      (q) =>
        `  ${q.name}: ${q.waiting} waiting, ${q.active} active, ${q.delayed} delayed, ${q.failed} failed, ${q.completed} completed; workers: ${q.workers.join(', ') || 'none'}`,
    ),
  ].join('\n');
}

export async function statusCommand(
  rt: { readonly config: ResolvedConfig; readonly state: StateStore },
  opts: StatusOptions,
  print: (text: string) => void,
): Promise<number> {
  const statuses = await sourceStatuses(rt.config, rt.state);
  print(opts.json ? JSON.stringify(statuses, null, 2) : renderStatus(statuses));
  return (await storeExitCode(statuses, opts)) ?? statusExitCode(statuses);
}

/**
 * `ragfresh status` of a config with `queue`: the per-source table, then the queue section
 * (`--json`: `{ sources, queue }`). The exit code is the sources' alone.
 */
export async function statusWithQueue(
  config: ResolvedConfig,
  state: StateStore,
  opts: StatusOptions,
  print: (text: string) => void,
): Promise<number> {
  const statuses = await sourceStatuses(config, state);
  const queue = await queueSection(config);
  if (opts.json) print(JSON.stringify({ sources: statuses, queue }, null, 2));
  else
    print(
      queue === undefined
        ? renderStatus(statuses)
        : `${renderStatus(statuses)}\n\n${renderQueueSection(queue)}`,
    );
  return (await storeExitCode(statuses, opts)) ?? statusExitCode(statuses);
}

/**
 * Reads the store's published epoch and returns STORE_LOST when it is behind `stateEpoch`
 * (the highest epoch the state recorded); called only when the state recorded one.
 */
export type StoreProbe = (stateEpoch: number) => Promise<RagfreshError | undefined>;

export interface StatusOptions {
  readonly json: boolean;
  /** The store check; absent: the store is not looked at. */
  readonly probe?: StoreProbe;
  /** Where the STORE_LOST line goes (stderr in the CLI, so `--json` stays parseable). */
  readonly printError?: (line: string) => void;
}

/** The highest epoch any source's documents recorded: the store must have reached it. */
export function stateEpochOf(statuses: readonly SourceStatus[]): number {
  return Math.max(0, ...statuses.map((s) => s.publishedEpoch));
}

/** EXIT.failure after printing the STORE_LOST line when the store is behind the state. */
export async function storeExitCode(
  statuses: readonly SourceStatus[],
  opts: StatusOptions,
): Promise<number | undefined> {
  const stateEpoch = stateEpochOf(statuses);
  if (opts.probe === undefined || stateEpoch === 0) return undefined;
  const lost = await opts.probe(stateEpoch);
  if (lost === undefined) return undefined;
  (opts.printError ?? (() => {}))(errorLine(lost));
  return EXIT.failure;
}

/** Exit codes a cron job or CI can alert on. */
export { EXIT } from './exit.js';

/** A source that never indexed anything (or whose index is empty) violates its objective. */
function violated(s: SourceStatus): boolean {
  return s.state === 'empty' || (s.state !== 'tombstoned' && !s.objectiveMet);
}

export function statusExitCode(statuses: readonly SourceStatus[]): number {
  if (statuses.some((s) => s.state === 'quarantined')) return EXIT.quarantined;
  if (statuses.some(violated)) return EXIT.objectiveViolated;
  if (statuses.some((s) => Object.keys(s.review).length > 0 || s.removalHeld))
    return EXIT.reviewPending;
  return EXIT.ok;
}
