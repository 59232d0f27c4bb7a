import type { DocumentStatus, ReviewItem } from '../model.js';
import type { DocumentRecord, SourceAggregate, StateAggregates, StateOp } from './types.js';

export type { SourceAggregate, StateAggregates, StateOp } from './types.js';

/*
 * Per-source aggregates: what `ragfresh status` reports about a source, kept as records change so
 * it reads O(sources) instead of every record. What a record or a review item contributes is
 * decided here, once; a state backend stores the contributions in the same transaction as the
 * record (counters and ordered indexes, see `StateOp`), and `recountAggregates` folds the same
 * contributions over a full scan (the fallback for stores that keep none, and the tests' oracle).
 */

/** The ordered indexes of one source's aggregate, by what they order. */
export const AGGREGATE_INDEXES = ['obs', 'mod', 'chg', 'qry', 'epoch', 'attn'] as const;
export type AggregateIndex = (typeof AGGREGATE_INDEXES)[number];

/** What one record adds to its source's aggregate. */
export interface RecordContribution {
  readonly sourceId: string;
  /** Counter names (`documents`, `status:<s>`, `unpublished`, `live:<s>`), one each. */
  readonly counters: readonly string[];
  /** Score of the record in each ordered index it belongs to. */
  readonly scores: Readonly<Partial<Record<AggregateIndex, number>>>;
}

const time = (iso: string | undefined): number | undefined => {
  if (iso === undefined) return undefined;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms;
};

/** A known URL with no published version: neither healthy nor degraded, whatever it says. */
export function isUnpublished(r: DocumentRecord): boolean {
  return (
    r.currentVersionId === undefined && r.status !== 'tombstoned' && r.status !== 'quarantined'
  );
}

/** Live and judged by status: not tombstoned, and not a healthy URL without a version. */
export function isJudged(r: DocumentRecord): boolean {
  return r.status !== 'tombstoned' && !(r.currentVersionId === undefined && r.status === 'healthy');
}

/** Needs its own status line: a judged record that is not healthy, or live gone evidence. */
export function needsAttention(r: DocumentRecord): boolean {
  return (
    r.status !== 'tombstoned' &&
    ((r.goneCount ?? 0) > 0 || r.status === 'degraded' || r.status === 'quarantined')
  );
}

export function contributionOf(r: DocumentRecord): RecordContribution {
  const counters = ['documents', isUnpublished(r) ? 'unpublished' : `status:${r.status}`];
  const scores: Partial<Record<AggregateIndex, number>> = { epoch: r.publishedEpoch ?? 0 };
  if (isJudged(r)) {
    counters.push(`live:${r.status}`);
    const put = (index: AggregateIndex, ms: number | undefined) => {
      if (ms !== undefined) scores[index] = ms;
    };
    put('obs', time(r.lastGoodAt ?? r.timestamps.retrievedAt));
    put('mod', time(r.timestamps.sourceModifiedAt));
    put('chg', time(r.timestamps.contentChangedAt));
    put('qry', time(r.timestamps.queryableAt));
  }
  if (needsAttention(r)) scores.attn = 0;
  return { sourceId: r.sourceId, counters, scores };
}

/** Where a namespace keeps its aggregates (ordered-index keys, not record keys). */
export interface AggregateKeys {
  /** The counters of one source. */
  counters(sourceId: string): string;
  /** One ordered index of one source. */
  index(sourceId: string, index: AggregateIndex): string;
  /** Pending review items per document (all sources). */
  pendingDocuments(): string;
}

/** The writes that turn the aggregate of `before` (absent: none) into that of `after`. */
export function documentOps(
  keys: AggregateKeys,
  documentId: string,
  before: DocumentRecord | undefined,
  after: DocumentRecord | undefined,
): StateOp[] {
  const was = before === undefined ? undefined : contributionOf(before);
  const now = after === undefined ? undefined : contributionOf(after);
  const ops: StateOp[] = [];
  const sameSource = was !== undefined && now !== undefined && was.sourceId === now.sourceId;
  const counts = new Map<string, { key: string; member: string; by: number }>();
  const count = (sourceId: string, member: string, by: number) => {
    const key = keys.counters(sourceId);
    const id = `${key}\n${member}`;
    const c = counts.get(id) ?? { key, member, by: 0 };
    c.by += by;
    counts.set(id, c);
  };
  for (const c of was?.counters ?? []) count(was!.sourceId, c, -1);
  for (const c of now?.counters ?? []) count(now!.sourceId, c, 1);
  for (const c of counts.values())
    if (c.by !== 0) ops.push({ op: 'zincr', key: c.key, member: c.member, by: c.by });
  for (const index of AGGREGATE_INDEXES) {
    const from = was?.scores[index];
    const to = now?.scores[index];
    if (sameSource && from === to) continue;
    if (from !== undefined && !(sameSource && to !== undefined))
      ops.push({ op: 'zrem', key: keys.index(was!.sourceId, index), member: documentId });
    if (to !== undefined)
      ops.push({
        op: 'zadd',
        key: keys.index(now!.sourceId, index),
        member: documentId,
        score: to,
      });
  }
  return ops;
}

const reviewCounter = (item: ReviewItem) => `review:${item.kind}/${item.reason}`;

/**
 * The writes that move one review item's pending count from `before` to `after` (`after`
 * undefined: the item is deleted, as a removal request purges it).
 */
export function reviewOps(
  keys: AggregateKeys,
  before: ReviewItem | undefined,
  after: ReviewItem | undefined,
): StateOp[] {
  const ops: StateOp[] = [];
  const pending = (i: ReviewItem | undefined) => i !== undefined && i.status === 'pending';
  if (
    pending(before) === pending(after) &&
    (!pending(after) ||
      (before!.sourceId === after!.sourceId &&
        before!.documentId === after!.documentId &&
        reviewCounter(before!) === reviewCounter(after!)))
  )
    return ops;
  const move = (i: ReviewItem, by: number) => {
    ops.push({ op: 'zincr', key: keys.counters(i.sourceId), member: reviewCounter(i), by });
    ops.push({ op: 'zincr', key: keys.pendingDocuments(), member: i.documentId, by });
  };
  if (pending(before)) move(before!, -1);
  if (pending(after)) move(after!, 1);
  return ops;
}

const emptyStatusCounts = (): Record<DocumentStatus, number> => ({
  healthy: 0,
  degraded: 0,
  quarantined: 0,
  tombstoned: 0,
});

/** Builds a source's aggregate from its counters and the records its indexes point at. */
export function aggregateFrom(input: {
  readonly sourceId: string;
  readonly counters: ReadonlyMap<string, number>;
  readonly publishedEpoch: number;
  readonly oldest?: DocumentRecord | undefined;
  readonly latestModified?: DocumentRecord | undefined;
  readonly latestQueryable?: DocumentRecord | undefined;
  readonly latestChange?: DocumentRecord | undefined;
  readonly attention: readonly DocumentRecord[];
}): SourceAggregate {
  const n = (name: string) => input.counters.get(name) ?? 0;
  const counts = emptyStatusCounts();
  for (const s of Object.keys(counts) as DocumentStatus[]) counts[s] = n(`status:${s}`);
  const pendingReview: Record<string, number> = {};
  for (const [name, value] of [...input.counters].sort(([a], [b]) => (a < b ? -1 : 1)))
    if (name.startsWith('review:') && value > 0) pendingReview[name.slice(7)] = value;
  const change = input.latestChange?.timestamps;
  const obs = input.oldest;
  return {
    sourceId: input.sourceId,
    documents: n('documents'),
    counts,
    unpublished: n('unpublished'),
    live: {
      healthy: n('live:healthy'),
      degraded: n('live:degraded'),
      quarantined: n('live:quarantined'),
    },
    publishedEpoch: input.publishedEpoch,
    ...optional('oldestObservedAt', obs?.lastGoodAt ?? obs?.timestamps.retrievedAt),
    ...optional('latestSourceModifiedAt', input.latestModified?.timestamps.sourceModifiedAt),
    ...optional('latestQueryableAt', input.latestQueryable?.timestamps.queryableAt),
    ...(change?.contentChangedAt === undefined
      ? {}
      : {
          latestChange: {
            contentChangedAt: change.contentChangedAt,
            ...optional('queryableAt', change.queryableAt),
          },
        }),
    pendingReview,
    attention: input.attention,
  };
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/**
 * The aggregates of `sourceIds` by reading everything: every record of each source and every
 * pending review item. What a store without aggregates costs, and what the kept ones must equal.
 */
export async function recountAggregates(
  state: {
    listDocuments(filter?: { readonly sourceId?: string }): AsyncIterable<DocumentRecord>;
    listReviewItems(filter?: { readonly status?: 'pending' }): Promise<ReviewItem[]>;
  },
  sourceIds: readonly string[],
): Promise<StateAggregates> {
  const pending = await state.listReviewItems({ status: 'pending' });
  const sources = new Map<string, SourceAggregate>();
  for (const sourceId of sourceIds) {
    const counters = new Map<string, number>();
    const bump = (name: string) => counters.set(name, (counters.get(name) ?? 0) + 1);
    for (const i of pending) if (i.sourceId === sourceId) bump(reviewCounter(i));
    let publishedEpoch = 0;
    const best: Partial<Record<'obs' | 'mod' | 'chg' | 'qry', [number, DocumentRecord]>> = {};
    const attention: DocumentRecord[] = [];
    const records: DocumentRecord[] = [];
    for await (const r of state.listDocuments({ sourceId })) records.push(r);
    // Document id order, as the kept indexes order their members.
    records.sort((a, b) =>
      a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : 0,
    );
    for (const r of records) {
      const c = contributionOf(r);
      for (const name of c.counters) bump(name);
      publishedEpoch = Math.max(publishedEpoch, c.scores.epoch ?? 0);
      for (const index of ['obs', 'mod', 'chg', 'qry'] as const) {
        const score = c.scores[index];
        if (score === undefined) continue;
        const current = best[index];
        const better =
          current === undefined || (index === 'obs' ? score < current[0] : score > current[0]);
        if (better) best[index] = [score, r];
      }
      if (c.scores.attn !== undefined) attention.push(r);
    }
    sources.set(
      sourceId,
      aggregateFrom({
        sourceId,
        counters,
        publishedEpoch,
        oldest: best.obs?.[1],
        latestModified: best.mod?.[1],
        latestQueryable: best.qry?.[1],
        latestChange: best.chg?.[1],
        attention,
      }),
    );
  }
  return { sources, pendingDocuments: new Set(pending.map((i) => i.documentId)) };
}
