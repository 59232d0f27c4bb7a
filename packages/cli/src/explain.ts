import {
  canonicalKey,
  type DocumentRecord,
  documentId,
  errorMessage,
  type ReviewItem,
  type Tombstone,
} from '@ragfresh/core';
import type { ExplainOutput, Verdict } from '@ragfresh/mcp';
import type { ResolvedSource } from './config.js';
import type { Runtime } from './runtime.js';
import { goneWaitLine } from './status.js';

type Finding = ExplainOutput['documents'][number];
type Reason = Finding['reasons'][number];

/** History events an explanation quotes (newest first). */
const EXPLAIN_EVENTS = 5;

/** Worst first: what a URL "is" when several facts hold. */
const ORDER: readonly Verdict[] = [
  'gone',
  'quarantined',
  'held',
  'stale',
  'not-indexed',
  'current',
];
const worst = (verdicts: readonly Verdict[]): Verdict =>
  ORDER.find((v) => verdicts.includes(v)) ?? 'not-indexed';

function verdictOf(r: DocumentRecord, pending: readonly ReviewItem[]): Verdict {
  if (r.status === 'tombstoned') return 'gone';
  if (r.status === 'quarantined') return 'quarantined';
  if (pending.length > 0) return 'held';
  if (r.currentVersionId === undefined) return 'not-indexed';
  return r.status === 'degraded' ? 'stale' : 'current';
}

/** The reasons the ledger recorded on a document, its review items and its tombstone. */
function reasonsOf(
  r: DocumentRecord,
  pending: readonly ReviewItem[],
  tombstone: Tombstone | undefined,
  gone: string | undefined,
): Reason[] {
  const out: Reason[] = [];
  if (tombstone !== undefined)
    out.push({
      kind: 'tombstone',
      at: tombstone.createdAt,
      detail: `${tombstone.reason} (approved by ${tombstone.approvedBy})${tombstone.evidence.length > 0 ? `: ${tombstone.evidence.join('; ')}` : ''}`,
    });
  for (const reason of r.statusReasons)
    out.push({ kind: 'status', detail: `${r.status}: ${reason}` });
  for (const i of pending)
    out.push({
      kind: 'review',
      at: i.createdAt,
      detail: `${i.kind}/${i.reason} pending review (${i.id})${i.evidence.length > 0 ? `: ${i.evidence.join('; ')}` : ''}`,
    });
  if (gone !== undefined) out.push({ kind: 'gone-evidence', detail: gone });
  if (r.currentVersionId === undefined && r.status !== 'tombstoned')
    out.push({ kind: 'unpublished', detail: 'known URL with no version ever published' });
  for (const h of (r.history ?? []).slice(-EXPLAIN_EVENTS).reverse())
    out.push({
      kind: 'event',
      at: h.at,
      detail: `${h.event}${h.versionId === undefined ? '' : ` ${h.versionId.slice(0, 12)}`}${h.reasons.length > 0 ? `: ${h.reasons.join('; ')}` : ''}`,
    });
  return out;
}

/** Why a source has no record of `url` (its policy refuses it, or no run has seen it). */
function notSeen(source: ResolvedSource, url: string): Finding {
  try {
    canonicalKey(url, source.identity);
  } catch (err) {
    return {
      sourceId: source.id,
      verdict: 'not-indexed',
      reasons: [{ kind: 'not-addressable', detail: errorMessage(err) }],
    };
  }
  const listed = (source.urls ?? []).includes(url);
  return {
    sourceId: source.id,
    documentId: documentId(source.id, url, source.identity),
    verdict: 'not-indexed',
    reasons: [
      {
        kind: 'not-seen',
        detail: listed
          ? "listed in the source's urls but never fetched: no refresh has reached it yet"
          : "no record: not in the source's urls, sitemaps or llms.txt when last read, or not reached by a refresh yet",
      },
    ],
  };
}

/**
 * Why `url` is what it is in every source (or `sourceId`), from the records the engine wrote:
 * the document's status and reasons, its pending review items, tombstone, gone checks and
 * latest history events. Reads only. Returns the records' highest published epoch beside it,
 * for the caller's store check.
 */
export async function explainUrl(
  rt: Pick<Runtime, 'config' | 'state'>,
  url: string,
  sourceId?: string,
): Promise<{ readonly explanation: ExplainOutput; readonly stateEpoch: number }> {
  const sources = rt.config.sources.filter((s) => sourceId === undefined || s.id === sourceId);
  const pending = await rt.state.listReviewItems({ status: 'pending' });
  const documents: Finding[] = [];
  const known: Verdict[] = [];
  let stateEpoch = 0;
  for (const source of sources) {
    const seen = notSeen(source, url);
    const record =
      seen.documentId === undefined ? undefined : await rt.state.getDocument(seen.documentId);
    if (record === undefined) {
      documents.push(seen);
      continue;
    }
    stateEpoch = Math.max(stateEpoch, record.publishedEpoch ?? 0);
    const items = pending.filter((i) => i.documentId === record.documentId);
    const [lastRun] = await rt.state.listRuns(source.id, 1);
    const gone =
      (record.goneCount ?? 0) > 0 && record.status !== 'tombstoned'
        ? goneWaitLine(
            record,
            rt.config.settings.deletion,
            lastRun === undefined
              ? undefined
              : new Date(Date.parse(lastRun.startedAt) + source.everyMs).toISOString(),
          )
        : undefined;
    const verdict = verdictOf(record, items);
    known.push(verdict);
    documents.push({
      sourceId: source.id,
      documentId: record.documentId,
      verdict,
      status: record.status,
      reasons: reasonsOf(record, items, await rt.state.getTombstone(record.documentId), gone),
    });
  }
  // Known somewhere: what it is there; nowhere: not indexed.
  return {
    explanation: { url, verdict: known.length > 0 ? worst(known) : 'not-indexed', documents },
    stateEpoch,
  };
}
