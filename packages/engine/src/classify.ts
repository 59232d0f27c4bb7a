import type { PageOutcome } from './extract.js';

/** The part of a page outcome the classify stage reads (PageOutcome and extract's PreparedPage fit). */
export interface Classified {
  readonly kind: string;
  readonly reasons?: readonly string[];
}

/** True when classification called the page an empty JavaScript app shell (the `auto` render signal). */
export function isAppShell(outcome: Classified): boolean {
  return (
    outcome.kind === 'not-the-document' &&
    (outcome.reasons ?? []).some((r) => /^empty_app_shell/i.test(r))
  );
}

/** What the engine does with a classified page. */
export type Verdict =
  | { readonly kind: 'document'; readonly doc: Extract<PageOutcome, { kind: 'document' }> }
  | {
      readonly kind: 'not-the-document';
      readonly reasons: readonly string[];
      /** Per-source alerts the verdict raises (an empty extraction is a shape break). */
      readonly alerts: readonly string[];
    };

/**
 * The classify stage's verdict: a page that is not the document (consent wall, challenge,
 * login wall, soft 404, empty shell, empty extraction) never becomes a candidate.
 */
export function classifyOutcome(url: string, outcome: PageOutcome): Verdict {
  if (outcome.kind === 'document') return { kind: 'document', doc: outcome };
  const empty = outcome.reasons.some((r) => /^empty/i.test(r));
  return {
    kind: 'not-the-document',
    reasons: outcome.reasons,
    alerts: empty ? [`empty-extraction: ${url}`] : [],
  };
}
