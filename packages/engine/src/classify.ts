import { type DocumentRecord, type Reason, reasonLine, sameContentVersion } from '@ragfresh/core';
import type { Fetcher, OkResult } from '@ragfresh/fetch';
import type { ExtractedDocument, PageOutcome } from './extract.js';
import type { HostEvidence } from './interstitial-evidence.js';
import type { EngineSource } from './types.js';

/** The part of a page outcome the classify stage reads (PageOutcome and extract's PreparedPage fit). */
export interface Classified {
  readonly kind: string;
  readonly reasons?: readonly Reason[];
}

/** Codes of a page with nothing to index: an alert (`empty-extraction`) as well as a verdict. */
const EMPTY_CODES: ReadonlySet<string> = new Set(['empty', 'empty_app_shell', 'empty-body']);

/** True when classification called the page an empty JavaScript app shell (the `auto` render signal). */
export function isAppShell(outcome: Classified): boolean {
  return (
    outcome.kind === 'not-the-document' &&
    (outcome.reasons ?? []).some((r) => r.code === 'empty_app_shell')
  );
}

/** What the engine does with a classified page. */
export type Verdict =
  | {
      readonly kind: 'document';
      readonly doc: ExtractedDocument;
      /**
       * Verdicts that did not block it, labelled by how: `unconfirmed` (a status phrase the page
       * alone does not prove), `ignored` (by `classify.ignore`), `accepted` (by a reviewer); the
       * detail is the verdict's line. The run's event for the page carries them.
       */
      readonly labels: readonly Reason[];
    }
  | {
      readonly kind: 'not-the-document';
      readonly reasons: readonly Reason[];
      /** Per-source alerts the verdict raises (an empty extraction is a shape break). */
      readonly alerts: readonly string[];
      /** The page cut as a document all the same (for an accepted review item). */
      readonly asDocument?: ExtractedDocument;
    };

const withoutSuspicion = (doc: ExtractedDocument): ExtractedDocument => {
  const { suspected: _s, ...rest } = doc;
  return rest;
};

/**
 * The classify stage's verdict without host evidence (import rows, anything with no host to
 * ask): a page that is not the document (consent wall, challenge, login wall, soft 404, empty
 * shell, empty extraction) never becomes a candidate, unless the source's `classify.ignore`
 * names every reason; a status phrase the page alone does not prove is a label, not a verdict.
 */
export function classifyOutcome(
  url: string,
  outcome: PageOutcome,
  source?: Pick<EngineSource, 'classify'>,
): Verdict {
  if (outcome.kind === 'document') {
    const labels = (outcome.suspected ?? []).map(
      (r): Reason => ({ code: 'unconfirmed', detail: reasonLine(r) }),
    );
    return { kind: 'document', doc: withoutSuspicion(outcome), labels };
  }
  const ignore = new Set(source?.classify?.ignore ?? []);
  const blocking = outcome.reasons.filter((r) => !ignore.has(r.code));
  if (blocking.length === 0 && outcome.asDocument !== undefined) {
    return {
      kind: 'document',
      doc: withoutSuspicion(outcome.asDocument),
      labels: outcome.reasons.map(
        (r): Reason => ({ code: 'ignored', detail: `by classify.ignore: ${reasonLine(r)}` }),
      ),
    };
  }
  const empty = outcome.reasons.some((r) => EMPTY_CODES.has(r.code));
  return {
    kind: 'not-the-document',
    reasons: outcome.reasons,
    alerts: empty ? [`empty-extraction: ${url}`] : [],
    ...(outcome.asDocument === undefined
      ? {}
      : { asDocument: withoutSuspicion(outcome.asDocument) }),
  };
}

/** What the classify stage of a fetched page reads besides the page. */
export interface JudgeContext {
  readonly fetcher: Pick<Fetcher, 'fetch'>;
  readonly source: Pick<EngineSource, 'id' | 'classify'>;
  readonly evidence: HostEvidence;
  /** The version a reviewer accepted as the document despite its verdict, if any. */
  accepted(documentId: string): Promise<{ versionId: string; by: string } | undefined>;
}

/**
 * The classify stage of a fetched page: the page's own verdict, then host evidence for each
 * status phrase it shows (see `HostEvidence`: a confirmed phrase becomes a reason, with the
 * evidence appended), the source's `classify.ignore`, and a reviewer's acceptance of exactly
 * this content (`persistent-not-the-document`). A later content change is judged afresh.
 */
export async function judgePage(
  cx: JudgeContext,
  page: { readonly url: string; readonly documentId: string; readonly record?: DocumentRecord },
  outcome: PageOutcome,
  result: OkResult,
): Promise<Verdict> {
  let judged = outcome;
  // The version already published is the document it was judged to be: not asked (or
  // labelled) again.
  if (
    outcome.kind === 'document' &&
    sameContentVersion(page.record?.currentVersionId, outcome.versionId)
  )
    return { kind: 'document', doc: withoutSuspicion(outcome), labels: [] };
  if (outcome.kind === 'document' && (outcome.suspected ?? []).length > 0) {
    const confirmed: Reason[] = [];
    for (const reason of outcome.suspected ?? []) {
      const why = await cx.evidence.find(cx.fetcher, cx.source.id, {
        url: page.url,
        documentId: page.documentId,
        code: reason.code,
        text: outcome.text,
        contentHash: outcome.contentHash,
        result,
        ...(page.record?.currentVersionId === undefined || page.record.textChars === undefined
          ? {}
          : { publishedChars: page.record.textChars }),
      });
      if (why !== undefined)
        confirmed.push({ code: reason.code, detail: `${reason.detail}; ${why}` });
    }
    if (confirmed.length > 0)
      judged = { kind: 'not-the-document', reasons: confirmed, asDocument: outcome };
  }
  const verdict = classifyOutcome(page.url, judged, cx.source);
  if (verdict.kind === 'document' || verdict.asDocument === undefined) return verdict;
  const accepted = await cx.accepted(page.documentId);
  if (accepted?.versionId !== verdict.asDocument.versionId) return verdict;
  return {
    kind: 'document',
    doc: verdict.asDocument,
    labels: verdict.reasons.map(
      (r): Reason => ({ code: 'accepted', detail: `by ${accepted.by}: ${reasonLine(r)}` }),
    ),
  };
}
