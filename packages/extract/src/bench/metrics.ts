/** Scoring functions exactly as defined by ../shared/bench/extraction/README.md. */

export function words(text: string): string[] {
  return text.match(/[\p{L}\p{N}_]+/gu) ?? [];
}

function multiset(items: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(i, (m.get(i) ?? 0) + 1);
  return m;
}

/** 4-token shingles, case-sensitive; a text of 1-3 tokens is one short shingle. */
export function shingles(text: string): Map<string, number> {
  const t = words(text);
  if (t.length === 0) return new Map();
  if (t.length < 4) return multiset([t.join(' ')]);
  const out: string[] = [];
  for (let i = 0; i + 4 <= t.length; i++) out.push(`${t[i]} ${t[i + 1]} ${t[i + 2]} ${t[i + 3]}`);
  return multiset(out);
}

export interface PageCounts {
  readonly tp: number;
  readonly fp: number;
  readonly fn: number;
}

export function shingleCounts(truth: string, pred: string): PageCounts {
  const t = shingles(truth);
  const p = shingles(pred);
  let tp = 0;
  let fp = 0;
  let fn = 0;
  for (const [k, n] of p) {
    const m = t.get(k) ?? 0;
    tp += Math.min(n, m);
    fp += Math.max(0, n - m);
  }
  for (const [k, m] of t) fn += Math.max(0, m - (p.get(k) ?? 0));
  return { tp, fp, fn };
}

/** ScrapingHub corpus score: F1 of the macro-mean precision and macro-mean recall. */
export function scrapinghubScore(pages: readonly PageCounts[]): {
  precision: number;
  recall: number;
  f1: number;
} {
  let pSum = 0;
  let pN = 0;
  let rSum = 0;
  let rN = 0;
  for (const { tp, fp, fn } of pages) {
    if (tp + fp > 0) {
      pSum += fp === 0 && fn === 0 ? 1 : tp / (tp + fp);
      pN++;
    }
    if (tp + fn > 0) {
      rSum += fp === 0 && fn === 0 ? 1 : tp / (tp + fn);
      rN++;
    }
  }
  const precision = pN === 0 ? 0 : pSum / pN;
  const recall = rN === 0 ? 0 : rSum / rN;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { precision, recall, f1 };
}

/** WCXB per-page F1: lower-case bag of words. */
export function wcxbF1(truth: string, pred: string): number {
  const t = multiset(words(truth.toLowerCase()));
  const p = multiset(words(pred.toLowerCase()));
  let tn = 0;
  for (const n of t.values()) tn += n;
  let pn = 0;
  for (const n of p.values()) pn += n;
  if (tn === 0) return pn === 0 ? 1 : 0;
  if (pn === 0) return 0;
  let overlap = 0;
  for (const [w, n] of p) overlap += Math.min(n, t.get(w) ?? 0);
  if (overlap === 0) return 0;
  const precision = overlap / pn;
  const recall = overlap / tn;
  return (2 * precision * recall) / (precision + recall);
}
