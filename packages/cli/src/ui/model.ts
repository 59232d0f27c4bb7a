import type { DocumentRecord, ReviewItem, RunSummary, VersionHistoryEntry } from '@ragfresh/core';
import { propagationLag } from '../status.js';

/** History events that mean a run did not observe the document well. */
const BAD_EVENTS = new Set(['degraded', 'gone', 'quarantined']);
/** History events that make a version current. */
export const PUBLISH_EVENTS = new Set(['published', 'replaced']);

/** One run of a source as the charts draw it. */
export interface RunPoint {
  readonly runId: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly complete: boolean;
  /** Oldest last good observation among live documents, at the end of the run. */
  readonly observationAgeMs?: number;
  /** Longest time from observing a change to it being queryable, among this run's publications. */
  readonly propagationLagMs?: number;
  /** The most negative raw lag of the run's publications when clock skew was clamped to 0. */
  readonly propagationSkewMs?: number;
  /** 304s over answered fetches (200 + 304); undefined when nothing answered. */
  readonly notModifiedRatio?: number;
  readonly published: number;
  readonly embedded: number;
}

const ms = (iso: string) => Date.parse(iso);
const inRun = (at: string, run: RunSummary) => at >= run.startedAt && at <= run.finishedAt;

/** When the document first had a version, if ever (its first publish event). */
function bornAt(r: DocumentRecord): string | undefined {
  return (r.history ?? []).find((h) => PUBLISH_EVENTS.has(h.event))?.at;
}

function removedAt(r: DocumentRecord): string | undefined {
  return (r.history ?? []).find((h) => h.event === 'removed')?.at;
}

/**
 * Freshness of each run, rebuilt from the run summaries and the documents' histories (run
 * summaries do not store it): a document counts as observed well in a run unless its history
 * records a degraded, gone or quarantined event during that run; every run refetches every known
 * live document of its source, so its start is the observation time. `runs` is oldest first;
 * earlier runs than those given are unknown, so the first points may overstate the age.
 */
export function runSeries(
  runs: readonly RunSummary[],
  records: readonly DocumentRecord[],
): RunPoint[] {
  const docs = records.map((r) => ({ r, born: bornAt(r), removed: removedAt(r) }));
  return runs.map((run, i) => {
    let oldest: number | undefined;
    for (const d of docs) {
      if (d.born === undefined || d.born > run.finishedAt) continue;
      if (d.removed !== undefined && d.removed <= run.finishedAt) continue;
      // The start of the latest run that observed it well; its first publication when none did
      // (e.g. published by an approval outside any run).
      let lastGood: number | undefined;
      for (const earlier of runs.slice(0, i + 1)) {
        if (earlier.finishedAt < d.born) continue;
        const bad = (d.r.history ?? []).some(
          (h) => BAD_EVENTS.has(h.event) && inRun(h.at, earlier),
        );
        if (!bad) lastGood = Math.max(lastGood ?? Number.NEGATIVE_INFINITY, ms(earlier.startedAt));
      }
      const good = lastGood ?? ms(d.born);
      oldest = oldest === undefined ? good : Math.min(oldest, good);
    }
    let lag: number | undefined;
    let skew: number | undefined;
    for (const { r } of docs)
      for (const h of r.history ?? []) {
        if (!PUBLISH_EVENTS.has(h.event) || !inRun(h.at, run)) continue;
        const observed =
          h.versionId === r.currentVersionId &&
          r.timestamps.contentChangedAt !== undefined &&
          inRun(r.timestamps.contentChangedAt, run)
            ? r.timestamps.contentChangedAt
            : run.startedAt;
        const one = propagationLag(observed, h.at);
        lag = Math.max(lag ?? 0, one.lagMs);
        if (one.skewMs !== undefined) skew = Math.min(skew ?? 0, one.skewMs);
      }
    const c = run.counts;
    const answered = (c.fetched200 ?? 0) + (c.notModified ?? 0);
    return {
      runId: run.runId,
      startedAt: run.startedAt,
      finishedAt: run.finishedAt,
      complete: run.complete,
      ...(oldest === undefined ? {} : { observationAgeMs: ms(run.finishedAt) - oldest }),
      ...(lag === undefined ? {} : { propagationLagMs: lag }),
      ...(skew === undefined ? {} : { propagationSkewMs: skew }),
      ...(answered === 0 ? {} : { notModifiedRatio: (c.notModified ?? 0) / answered }),
      published: c.published ?? 0,
      embedded: c.chunksEmbedded ?? 0,
    };
  });
}

/** What a source's summary says about freshness: read off the chart's points, never apart. */
export interface FreshnessSummary {
  /** The last point's observation age (at the end of the newest run). */
  readonly observationAgeMs?: number;
  /** The last point is at or under the objective line. */
  readonly objectiveMet: boolean;
  /** The newest point that has a propagation lag, with its clock-skew flag. */
  readonly propagationLagMs?: number;
  readonly propagationSkewMs?: number;
  /** When the summarised point's run finished. */
  readonly at?: string;
}

/**
 * The freshness chart's points and the summary beside it, from one computation: the summary is
 * the last point (so "objective met" cannot disagree with a chart drawn above the objective).
 */
export function sourceFreshness(
  runs: readonly RunSummary[],
  records: readonly DocumentRecord[],
  objectiveMs: number,
): { points: RunPoint[]; summary: FreshnessSummary } {
  const points = runSeries(runs, records);
  const last = points.at(-1);
  const lagged = points.findLast((p) => p.propagationLagMs !== undefined);
  const age = last?.observationAgeMs;
  return {
    points,
    summary: {
      ...(age === undefined ? {} : { observationAgeMs: age }),
      objectiveMet: age !== undefined && age <= objectiveMs,
      ...(lagged?.propagationLagMs === undefined
        ? {}
        : { propagationLagMs: lagged.propagationLagMs }),
      ...(lagged?.propagationSkewMs === undefined
        ? {}
        : { propagationSkewMs: lagged.propagationSkewMs }),
      ...(last === undefined ? {} : { at: last.finishedAt }),
    },
  };
}

/** A document a run changed, with what happened to it during the run. */
export interface ChangedDocument {
  readonly documentId: string;
  readonly url: string;
  readonly events: readonly string[];
}

/** Documents with history events inside the run's window (publications, quarantines, gone...). */
export function changedInRun(
  run: RunSummary,
  records: readonly DocumentRecord[],
): ChangedDocument[] {
  const out: ChangedDocument[] = [];
  for (const r of records) {
    const events = (r.history ?? []).filter((h) => inRun(h.at, run)).map((h) => h.event);
    if (events.length > 0) out.push({ documentId: r.documentId, url: r.url, events });
  }
  return out.sort((a, b) => a.url.localeCompare(b.url));
}

/** Review items grouped by kind, then by reason (the cause they share). */
export function groupReview(
  items: readonly ReviewItem[],
): { kind: string; reasons: { reason: string; items: ReviewItem[] }[] }[] {
  const kinds = new Map<string, Map<string, ReviewItem[]>>();
  for (const i of items) {
    const byReason = kinds.get(i.kind) ?? new Map<string, ReviewItem[]>();
    kinds.set(i.kind, byReason);
    byReason.set(i.reason, [...(byReason.get(i.reason) ?? []), i]);
  }
  return [...kinds]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, byReason]) => ({
      kind,
      reasons: [...byReason]
        .sort(([, a], [, b]) => b.length - a.length)
        .map(([reason, group]) => ({ reason, items: group })),
    }));
}

/** One version of a document, with the epochs it was current in where they are known. */
export interface VersionRow {
  readonly versionId: string;
  /** When it became queryable (the publish event). */
  readonly queryableAt: string;
  readonly event: string;
  /** Epoch it became current at. */
  readonly fromEpoch?: number;
  /** Epoch it left the view at; undefined while current (or unknown). */
  readonly toEpoch?: number;
  readonly current: boolean;
}

/**
 * The versions a document's history made current, oldest first. Epochs come from the history
 * entries (recorded since the publisher writes them), else from `known` (the versions' chunks
 * still in the store, the record's published epoch); a version left the view at the epoch its
 * successor (or its removal) took effect.
 */
export function versionRows(
  record: DocumentRecord,
  known: ReadonlyMap<string, number> = new Map(),
): VersionRow[] {
  const history: readonly VersionHistoryEntry[] = record.history ?? [];
  const publishes = history.filter((h) => PUBLISH_EVENTS.has(h.event) && h.versionId !== undefined);
  const fromOf = (h: VersionHistoryEntry): number | undefined =>
    h.epoch ??
    known.get(h.versionId!) ??
    (h === publishes.at(-1) && h.versionId === record.currentVersionId
      ? record.publishedEpoch
      : undefined);
  return publishes.map((h, i) => {
    const next = publishes[i + 1];
    const removal = history.find(
      (e) => e.event === 'removed' && e.at >= h.at && (next === undefined || e.at <= next.at),
    );
    const current =
      next === undefined && removal === undefined && h.versionId === record.currentVersionId;
    const from = fromOf(h);
    const to = next !== undefined ? fromOf(next) : removal?.epoch;
    return {
      versionId: h.versionId!,
      queryableAt: h.at,
      event: h.event,
      ...(from === undefined ? {} : { fromEpoch: from }),
      ...(to === undefined ? {} : { toEpoch: to }),
      current,
    };
  });
}
