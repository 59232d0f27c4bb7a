// One audit for every pipeline of the freshness bench, over what an ordinary reader of the
// current view retrieves: chunks as (url, text), grouped by the URL the pipeline indexed them
// under. The ground truth comes from the simulated web (its unique phrases per page and section,
// and the faults the bench applied), never from a pipeline's own counters.
import { textHash } from './changed-chunks.ts';

/** One chunk of a current view, as a reader gets it. */
export interface ViewChunk {
  readonly url: string;
  readonly text: string;
}

/** What a page should look like in the index after a round. */
export interface PageTruth {
  /** ok: serves its document; trap: serves something else (its last good copy must stay); gone: 410. */
  readonly state: 'ok' | 'trap' | 'gone';
  /** Phrases the current version holds (the sim's unique phrases, plus bench edit sentences). */
  readonly phrases: readonly string[];
  /** Phrases only earlier versions held. */
  readonly retired: readonly string[];
}

/** Text of the sim's interstitials (consent wall, challenge, soft 404, app shell, login, error pages). */
const INTERSTITIAL = [
  'we need your consent before you can continue',
  'checking if the site connection is secure',
  'review the security of your connection',
  'enable javascript and cookies to continue',
  "couldn't find the page you were looking for",
  'you need to enable javascript to run this app',
  'you need to sign in to view this page',
  'this page has been permanently removed',
  'service unavailable',
  'too many requests',
];

const norm = (s: string) => s.toLowerCase().replace(/\s+/g, ' ');

export function isInterstitial(text: string): boolean {
  const t = norm(text);
  return INTERSTITIAL.some((sig) => t.includes(sig));
}

export interface Audit {
  /** Documents in the view whose text lacks a phrase of the current version or holds an earlier one. */
  readonly stale: number;
  /** Pages that should be indexed (serving, or trapped with a good copy) with no chunk in the view. */
  readonly lost: number;
  /** Trapped pages whose good copy is gone from the view (absent, or no longer its text). */
  readonly goodCopiesLost: number;
  /** Pages answering 410 that still have chunks in the view. */
  readonly goneIndexed: number;
  readonly interstitialChunks: number;
  /** Chunks beyond the first with the same (url, text). */
  readonly duplicateChunks: number;
  readonly chunks: number;
}

export function groupByUrl(view: readonly ViewChunk[]): Map<string, ViewChunk[]> {
  const byUrl = new Map<string, ViewChunk[]>();
  for (const c of view) byUrl.set(c.url, [...(byUrl.get(c.url) ?? []), c]);
  return byUrl;
}

export function audit(view: readonly ViewChunk[], truth: ReadonlyMap<string, PageTruth>): Audit {
  const byUrl = groupByUrl(view);
  let stale = 0;
  let lost = 0;
  let goodCopiesLost = 0;
  let goneIndexed = 0;
  for (const [url, t] of truth) {
    const chunks = byUrl.get(url) ?? [];
    const text = norm(chunks.map((c) => c.text).join('\n'));
    const holdsCurrent = t.phrases.every((p) => text.includes(norm(p)));
    const holdsRetired = t.retired.some((p) => text.includes(norm(p)));
    if (t.state === 'gone') {
      if (chunks.length > 0) goneIndexed++;
      continue;
    }
    if (chunks.length === 0) {
      lost++;
      if (t.state === 'trap') goodCopiesLost++;
      continue;
    }
    if (!holdsCurrent || holdsRetired) stale++;
    if (t.state === 'trap' && !holdsCurrent) goodCopiesLost++;
  }
  const seen = new Set<string>();
  let duplicateChunks = 0;
  for (const c of view) {
    const key = `${c.url}\u0000${textHash(c.text)}`;
    if (seen.has(key)) duplicateChunks++;
    seen.add(key);
  }
  return {
    stale,
    lost,
    goodCopiesLost,
    goneIndexed,
    interstitialChunks: view.filter((c) => isInterstitial(c.text)).length,
    duplicateChunks,
    chunks: view.length,
  };
}

/** A view reduced to what the concurrent reader compares: url -> hashes of its chunk texts. */
export type ViewHashes = Map<string, Set<string>>;

export function hashes(view: readonly ViewChunk[]): ViewHashes {
  const out: ViewHashes = new Map();
  for (const c of view) {
    const set = out.get(c.url) ?? new Set<string>();
    set.add(textHash(c.text));
    out.set(c.url, set);
  }
  return out;
}

/**
 * The concurrent reader's verdict over one round: among documents present both before and
 * after the round, those it saw with no chunk at some moment (none), and those it saw holding
 * chunks only the old version had together with chunks only the new version has (two versions).
 */
export function readerVerdict(
  before: ViewHashes,
  after: ViewHashes,
  seen: readonly ViewHashes[],
): { twoVersions: number; none: number } {
  let twoVersions = 0;
  let none = 0;
  for (const [url, old] of before) {
    const now = after.get(url);
    if (now === undefined || old.size === 0 || now.size === 0) continue;
    const oldOnly = new Set([...old].filter((h) => !now.has(h)));
    const newOnly = new Set([...now].filter((h) => !old.has(h)));
    let sawNone = false;
    let sawTwo = false;
    for (const snap of seen) {
      const s = snap.get(url);
      if (s === undefined || s.size === 0) sawNone = true;
      else if ([...s].some((h) => oldOnly.has(h)) && [...s].some((h) => newOnly.has(h)))
        sawTwo = true;
    }
    if (sawNone) none++;
    if (sawTwo) twoVersions++;
  }
  return { twoVersions, none };
}
