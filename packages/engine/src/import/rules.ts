import { documentId, errorMessage, type ReviewItem, sha256Hex } from '@ragfresh/core';
import type { EngineContext } from '../context.js';
import { proposeItem } from '../review.js';
import type { EngineSource } from '../types.js';
import type { ImportRow } from './row.js';

/** ISO-8601 date-time that states its offset; anything else is refused, never guessed. */
const ZONED_TIME =
  /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)$/i;

export type FetchTime =
  | { readonly ok: true; readonly at: string }
  | { readonly ok: false; readonly why: string };

/** The row's fetch time as UTC ISO, or why it cannot be used. `fallback` is the export's own time. */
export function fetchTimeOf(row: ImportRow, fallback: string | undefined): FetchTime {
  const raw = row.loadedTime ?? fallback;
  if (raw === undefined)
    return { ok: false, why: 'the row has no fetch time and the import gave none (--fetched-at)' };
  if (!ZONED_TIME.test(raw.trim()))
    return { ok: false, why: `fetch time ${JSON.stringify(raw)} has no timezone` };
  const ms = Date.parse(raw.trim().replace(' ', 'T'));
  if (!Number.isFinite(ms))
    return { ok: false, why: `fetch time ${JSON.stringify(raw)} is not a date` };
  return { ok: true, at: new Date(ms).toISOString() };
}

export type Identity =
  | { readonly ok: true; readonly documentId: string }
  | { readonly ok: false; readonly why: string };

/** Identity is the requested URL under the source's policy; canonical, loaded and referrer URLs never are. */
export function identityOf(source: EngineSource, row: ImportRow): Identity {
  try {
    return { ok: true, documentId: documentId(source.id, row.url, source.identity) };
  } catch (err) {
    return { ok: false, why: errorMessage(err) };
  }
}

/** Why a row went to review instead of being published. Each is a stable reason of the review item. */
export const IMPORT_REVIEW = Object.freeze({
  identity: 'source identity needs review',
  fetchTime: 'fetch time needs review',
  empty: 'empty content in an export',
  conflict: 'conflicting versions at one fetch time',
});

const hash = (s: string) => sha256Hex(s).slice(0, 24);

/**
 * Records a review item for an imported row. The id is derived from what the item is about,
 * so importing the same export again records nothing new (whatever the item's status).
 */
export async function reviewRow(
  ctx: EngineContext,
  subject: { readonly sourceId: string; readonly url: string; readonly documentId?: string },
  reason: string,
  key: string,
  evidence: readonly string[],
): Promise<ReviewItem | undefined> {
  const docId = subject.documentId ?? `${subject.sourceId}:unidentified-${hash(subject.url)}`;
  const id = `import:${hash(`${reason}\n${docId}\n${key}`)}`;
  // One item per (reason, document, key), whatever became of it: a decided conflict stays decided.
  return proposeItem(
    ctx,
    { sourceId: subject.sourceId, documentId: docId, url: subject.url },
    { id, kind: 'ingestion', reason, evidence },
    () => true,
  );
}
