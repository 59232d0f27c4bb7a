import {
  FIELDS,
  HEADING_SEPARATOR,
  metadataCitation,
  type PublishCandidate,
  type PublishReport,
  sha256Hex,
} from '@ragfresh/core';
import { hammingDistance, simhash64 } from '@ragfresh/extract';
import type { EngineContext } from './context.js';

/**
 * Largest Hamming distance (of 64 SimHash bits over the extracted text) at which two documents
 * count as one page under several URLs. Measured by `pnpm bench:duplicates` (docs/duplicates.md):
 * at 3, no pair of 7,140 distinct pages on one template merges (their minimum is 8), 0.4 % of
 * spec-sheet siblings differing only in name, price and SKU do, and 8.75 % of copies (print
 * views, changed date lines) are missed — 1.9 % of their chunks, the rest having identical text.
 * Merging is the worse error (a wrong citation), so the threshold errs on missing.
 */
export const DUPLICATE_MAX_DISTANCE = 3;

/** Prefix of every near-duplicate group id (`rf_dup`). */
export const DUPLICATE_GROUP_PREFIX = 'rf-dup:';

interface Member {
  readonly fingerprint: string;
  readonly group: string;
  readonly bands: readonly string[];
}

/** The 64 bits cut into `count` bands (as equal as 64 allows), each band's bits as a key. */
function bandsOf(fingerprint: string, count: number): string[] {
  const bits = BigInt(`0x${fingerprint.padStart(16, '0')}`)
    .toString(2)
    .padStart(64, '0');
  const out: string[] = [];
  for (let b = 0; b < count; b++) {
    const from = Math.floor((b * 64) / count);
    const to = Math.floor(((b + 1) * 64) / count);
    out.push(`${b}:${bits.slice(from, to)}`);
  }
  return out;
}

/**
 * Banded LSH over document fingerprints: the 64 bits split into `maxDistance + 1` bands, so two
 * fingerprints within the distance share at least one band exactly (pigeonhole) and a lookup
 * compares a fingerprint with its bucket mates only, never with the whole corpus.
 */
export class DuplicateIndex {
  readonly maxDistance: number;
  readonly #bandCount: number;
  readonly #members = new Map<string, Member>();
  readonly #buckets = new Map<string, Set<string>>();
  readonly #groupSizes = new Map<string, number>();

  constructor(maxDistance: number = DUPLICATE_MAX_DISTANCE) {
    this.maxDistance = Math.min(15, Math.max(0, Math.floor(maxDistance)));
    this.#bandCount = this.maxDistance + 1;
  }

  get size(): number {
    return this.#members.size;
  }

  /** What the index holds for a document (its last published fingerprint and group). */
  get(documentId: string): { readonly fingerprint: string; readonly group: string } | undefined {
    return this.#members.get(documentId);
  }

  /** Documents other than those holding this group id. */
  holders(group: string): number {
    return this.#groupSizes.get(group) ?? 0;
  }

  set(documentId: string, fingerprint: string, group: string): void {
    this.delete(documentId);
    const bands = bandsOf(fingerprint, this.#bandCount);
    this.#members.set(documentId, { fingerprint, group, bands });
    for (const band of bands) {
      const bucket = this.#buckets.get(band);
      if (bucket === undefined) this.#buckets.set(band, new Set([documentId]));
      else bucket.add(documentId);
    }
    this.#groupSizes.set(group, (this.#groupSizes.get(group) ?? 0) + 1);
  }

  /** Puts back what the index held for a document before an assignment (`undefined`: nothing). */
  restore(
    documentId: string,
    entry: { readonly fingerprint: string; readonly group: string } | undefined,
  ): void {
    if (entry === undefined) this.delete(documentId);
    else this.set(documentId, entry.fingerprint, entry.group);
  }

  delete(documentId: string): void {
    const m = this.#members.get(documentId);
    if (m === undefined) return;
    this.#members.delete(documentId);
    for (const band of m.bands) {
      const bucket = this.#buckets.get(band);
      bucket?.delete(documentId);
      if (bucket?.size === 0) this.#buckets.delete(band);
    }
    const left = (this.#groupSizes.get(m.group) ?? 1) - 1;
    if (left <= 0) this.#groupSizes.delete(m.group);
    else this.#groupSizes.set(m.group, left);
  }

  /** Other documents within `maxDistance` bits of the fingerprint, nearest first. */
  neighbours(
    fingerprint: string,
    except?: string,
  ): { documentId: string; group: string; distance: number }[] {
    const seen = new Set<string>();
    const out: { documentId: string; group: string; distance: number }[] = [];
    for (const band of bandsOf(fingerprint, this.#bandCount)) {
      for (const id of this.#buckets.get(band) ?? []) {
        if (id === except || seen.has(id)) continue;
        seen.add(id);
        const m = this.#members.get(id)!;
        const distance = hammingDistance(fingerprint, m.fingerprint);
        if (distance <= this.maxDistance) out.push({ documentId: id, group: m.group, distance });
      }
    }
    return out.sort((a, b) => a.distance - b.distance || (a.group < b.group ? -1 : 1));
  }

  /**
   * The group a document's new version joins, recorded in the index:
   * - near documents of its previous group: it keeps that group (a changed date line does not
   *   move a page to another group);
   * - else near other documents: the smallest of their group ids (already-published chunks of
   *   other documents are never rewritten, so two groups a page bridges stay two);
   * - else alone: its previous group if no other document holds it, else a new id from its
   *   fingerprint (a page that stopped being a copy leaves its group).
   */
  assign(documentId: string, fingerprint: string): string {
    const previous = this.#members.get(documentId);
    const groups = [...new Set(this.neighbours(fingerprint, documentId).map((n) => n.group))];
    let group: string;
    if (previous !== undefined && groups.includes(previous.group)) group = previous.group;
    else if (groups.length > 0) group = [...groups].sort()[0]!;
    else if (previous !== undefined && this.holders(previous.group) === 1) group = previous.group;
    else {
      group = `${DUPLICATE_GROUP_PREFIX}${fingerprint}`;
      // The founder's id is taken by documents that are no longer near this fingerprint.
      if (this.holders(group) > 0) group = `${group}-${sha256Hex(documentId).slice(0, 8)}`;
    }
    this.set(documentId, fingerprint, group);
    return group;
  }
}

/**
 * Gives each candidate of a publish batch its fingerprint and near-duplicate group (on the
 * candidate, for the document record, and on every chunk, as `rf_dup`). One per engine context
 * ({@link duplicateGrouperFor}): the index is built on the first batch from the state's records
 * (one scan, shared with a refresh's), then kept up to date by the context's own assignments,
 * so a publish consumer does not rescan the state per batch.
 */
export class DuplicateGrouper {
  readonly #ctx: EngineContext;
  readonly #maxDistance: number;
  #index: Promise<DuplicateIndex> | undefined;
  /** What the index held for each document of the last assigned batch, before it. */
  readonly #before = new Map<string, { fingerprint: string; group: string } | undefined>();

  constructor(ctx: EngineContext, maxDistance: number = DUPLICATE_MAX_DISTANCE) {
    this.#ctx = ctx;
    this.#maxDistance = maxDistance;
  }

  #load(): Promise<DuplicateIndex> {
    this.#index ??= (async () => {
      const index = new DuplicateIndex(this.#maxDistance);
      for (const r of await this.#ctx.records.all()) {
        if (r.fingerprint === undefined || r.duplicateGroup === undefined) continue;
        if (r.currentVersionId === undefined || r.status === 'tombstoned') continue;
        index.set(r.documentId, r.fingerprint, r.duplicateGroup);
      }
      return index;
    })();
    return this.#index;
  }

  /** The batch with groups assigned; candidates without text pass unchanged. */
  async assign(candidates: readonly PublishCandidate[]): Promise<PublishCandidate[]> {
    if (candidates.every((c) => c.text === undefined)) return [...candidates];
    const index = await this.#load();
    this.#before.clear();
    const groups = new Map<string, { fingerprint: string; group: string }>();
    // Document-id order: the same batch gives the same groups whatever order pages finished in.
    const ordered = [...candidates].sort((a, b) => (a.documentId < b.documentId ? -1 : 1));
    for (const c of ordered) {
      if (c.text === undefined) continue;
      const fingerprint = c.fingerprint ?? simhash64(c.text);
      this.#before.set(c.documentId, index.get(c.documentId));
      groups.set(c.documentId, { fingerprint, group: index.assign(c.documentId, fingerprint) });
    }
    return candidates.map((c) => {
      const g = groups.get(c.documentId);
      if (g === undefined) return c;
      return {
        ...c,
        fingerprint: g.fingerprint,
        duplicateGroup: g.group,
        chunks: c.chunks.map((ch) => ({ ...ch, duplicateGroup: g.group })),
      };
    });
  }

  /**
   * After the batch's publication: documents whose new version did not become current (rejected,
   * not verified, held for a later batch) get their previous entry back, so the index keeps
   * matching what the store serves.
   */
  async settle(report: PublishReport): Promise<void> {
    if (this.#before.size === 0 || this.#index === undefined) return;
    const index = await this.#index;
    for (const r of report.documents) {
      if (!this.#before.has(r.documentId)) continue;
      if (r.outcome !== 'published' && r.outcome !== 'unchanged')
        index.restore(r.documentId, this.#before.get(r.documentId));
    }
    this.#before.clear();
  }
}

const grouperOf = new WeakMap<EngineContext, DuplicateGrouper>();

/** The context's grouper (one index per engine context, whatever number of publish queues). */
export function duplicateGrouperFor(ctx: EngineContext): DuplicateGrouper {
  let grouper = grouperOf.get(ctx);
  if (grouper === undefined) {
    grouper = new DuplicateGrouper(ctx);
    grouperOf.set(ctx, grouper);
  }
  return grouper;
}

/** One URL a collapsed result is found at. */
export interface Citation {
  readonly url: string;
  readonly title: string;
  /** Heading path joined with ` > ` (empty at the top of a page). */
  readonly heading: string;
  readonly documentId: string;
}

/** A result standing for every hit of one duplicate group: the best-ranked hit, and every citation. */
export interface CollapsedHit<T> {
  readonly hit: T;
  readonly members: readonly T[];
  readonly citations: readonly Citation[];
}

function citationOf(meta: Readonly<Record<string, unknown>>): Citation {
  const s = (key: string) => (typeof meta[key] === 'string' ? (meta[key] as string) : '');
  let heading = s(FIELDS.heading);
  if (heading === '' && s(FIELDS.headingPath) !== '') {
    try {
      const path: unknown = JSON.parse(s(FIELDS.headingPath));
      if (Array.isArray(path)) heading = path.map(String).join(HEADING_SEPARATOR);
    } catch {
      // A hand-written heading_path that is not JSON: no heading.
    }
  }
  return {
    url: metadataCitation(meta) ?? s(FIELDS.source),
    title: s(FIELDS.title),
    heading,
    documentId: s(FIELDS.documentId),
  };
}

const MONTH =
  '(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\\.?';
const DATE_OR_TIME = new RegExp(
  [
    '\\b\\d{4}-\\d{2}-\\d{2}(?:[t ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:z|[+-]\\d{2}:?\\d{2})?)?\\b',
    '\\b\\d{1,2}/\\d{1,2}/\\d{2,4}\\b',
    '\\b\\d{1,2}\\.\\d{1,2}\\.\\d{4}\\b',
    `\\b${MONTH} \\d{1,2}(?:st|nd|rd|th)?,? \\d{4}\\b`,
    `\\b\\d{1,2}(?:st|nd|rd|th)? ${MONTH},? \\d{4}\\b`,
    '\\b\\d{1,2}:\\d{2}(?::\\d{2})?(?: ?[ap]\\.?m\\b)?',
  ].join('|'),
  'gi',
);

/**
 * A chunk's text with dates and times masked and whitespace folded: two copies of a passage on
 * near-duplicate pages (a print view, a footer or "updated" date) compare equal, two spec sheets
 * whose name, price or SKU differ do not.
 */
export function passageShape(text: string): string {
  return text.replace(DATE_OR_TIME, '<date>').replace(/\s+/g, ' ').trim().toLowerCase();
}

/**
 * Collapses ranked hits (best first) that are copies of one passage: the same chunk text
 * (`content_hash`), or the same position (`rf_ordinal`) in near-duplicate documents (`rf_dup`),
 * transitively. With `textOf`, a same-position match also needs the same text once dates and
 * times are masked ({@link passageShape}), so a near-duplicate group never merges passages that
 * differ in anything else (a price, a name). Each group becomes one result at its best member's
 * rank, citing every member's URL once. Hits without these fields stay on their own.
 */
export function collapseDuplicateHits<T>(
  hits: readonly T[],
  metadataOf: (hit: T) => Readonly<Record<string, unknown>>,
  textOf?: (hit: T) => string,
): CollapsedHit<T>[] {
  const parent = hits.map((_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) {
      parent[i] = parent[parent[i]!]!;
      i = parent[i]!;
    }
    return i;
  };
  const firstByKey = new Map<string, number>();
  hits.forEach((hit, i) => {
    const m = metadataOf(hit);
    const keys: string[] = [];
    const hash = m[FIELDS.contentHash];
    if (typeof hash === 'string' && hash !== '') keys.push(`h:${hash}`);
    const group = m[FIELDS.duplicateGroup];
    const ordinal = m[FIELDS.ordinal];
    if (typeof group === 'string' && group !== '' && typeof ordinal === 'number')
      keys.push(
        textOf === undefined
          ? `g:${group}#${ordinal}`
          : `g:${group}#${ordinal}#${sha256Hex(passageShape(textOf(hit)))}`,
      );
    for (const key of keys) {
      const j = firstByKey.get(key);
      if (j === undefined) firstByKey.set(key, i);
      else {
        const a = find(i);
        const b = find(j);
        if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
      }
    }
  });
  const byRoot = new Map<number, T[]>();
  hits.forEach((hit, i) => {
    const root = find(i);
    const list = byRoot.get(root);
    if (list === undefined) byRoot.set(root, [hit]);
    else list.push(hit);
  });
  return [...byRoot.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, members]) => {
      const citations: Citation[] = [];
      const seen = new Set<string>();
      for (const member of members) {
        const c = citationOf(metadataOf(member));
        const key = `${c.url}\u0000${c.heading}`;
        if (seen.has(key)) continue;
        seen.add(key);
        citations.push(c);
      }
      return { hit: members[0]!, members, citations };
    });
}
