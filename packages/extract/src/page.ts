import {
  type AcquisitionMode,
  type CanonicalJudgement,
  type CanonicalPolicy,
  judgeCanonical,
  normalizeAccess,
  type Reason,
} from '@ragfresh/core';
import type { BoilerplateModel } from './boilerplate.js';
import { type PreparedDocument, pipelineVersions, prepareDocument } from './document.js';
import { parsePage } from './extract.js';
import { unlinkUnsafeMarkdown } from './href.js';
import type { TitleAffixes } from './title.js';
import { type TiktokenEncodingName, type TokenCounter, tiktokenCounter } from './tokens.js';

/** A fetched page, decoded, on its way to extraction. */
export interface PageInput {
  readonly text: string;
  readonly contentType: string;
  /** The URL asked for (identity and provenance). */
  readonly url: string;
  /** The URL the answer came from, after redirects. */
  readonly finalUrl: string;
  readonly acquisition: AcquisitionMode;
}

/** Identity and provenance the chunks of this page will carry. */
export interface PageContext {
  readonly documentId: string;
  readonly sourceId: string;
  /** Time of this observation; also used as `contentChangedAt` (the caller may know better). */
  readonly retrievedAt: string;
  readonly contentChangedAt?: string;
  readonly region?: string;
  readonly authority?: string;
  /** Groups that may read the page (its source's `access`); empty or absent: public. */
  readonly access?: readonly string[];
  readonly sourceModifiedAt?: string;
  /** Whose word the page's `<link rel="canonical">` is (the source's setting; default `same-site`). */
  readonly canonical?: CanonicalPolicy;
}

export interface PagePreparationOptions {
  /** Token budget per chunk. Default 512. */
  readonly maxTokens?: number;
  /** tiktoken encoding used to count tokens (default cl100k_base), or a counter of your own. */
  readonly encoding?: TiktokenEncodingName;
  readonly counter?: TokenCounter;
  /** The host's learned boilerplate, dropped from the Markdown (see `BoilerplateModel`). */
  readonly boilerplate?: BoilerplateModel;
  /** The host's learned title affixes, dropped from the heading-path root. */
  readonly titleAffixes?: TitleAffixes;
}

export interface PreparedPage {
  readonly kind: 'document';
  readonly title: string;
  /** The title heading paths were rooted at (the title without the site's name). */
  readonly rootTitle: string;
  /** The page's canonical, accepted by the source's policy (it is then what chunks are cited by). */
  readonly canonicalUrl?: string;
  /** A canonical the page claimed that the policy refused (another site): provenance only. */
  readonly canonicalClaim?: string;
  readonly prepared: PreparedDocument;
  /**
   * Status phrases the page shows with no interstitial evidence on it (`soft_404: not-found
   * title …`), see `DocumentCheck.unconfirmed`: the page is a document unless its host gives
   * the evidence. Absent when there are none.
   */
  readonly suspected?: readonly Reason[];
}

export interface NotTheDocumentPage {
  readonly kind: 'not-the-document';
  /** Stable reason codes (lower case, e.g. `consent_wall`) with detail. */
  readonly reasons: readonly Reason[];
  /**
   * What the page gives if it is the document after all (a source's `classify.ignore`, an
   * accepted review item): extracted and chunked like any page. Absent when no text was
   * extracted.
   */
  readonly asDocument?: PreparedPage;
}

export type PagePreparation = PreparedPage | NotTheDocumentPage;

const MARKDOWN_TYPES = ['text/markdown', 'text/x-markdown', 'text/plain'];

function firstHeading(markdown: string): string {
  const m = /^#\s+(.+)$/m.exec(markdown);
  return m?.[1]?.trim() ?? '';
}

/** A classification reason as pages carry it: the code lower case (`consent_wall`), as `classify.ignore` names it. */
function pageReasons(reasons: readonly Reason[] | undefined): Reason[] {
  return (reasons ?? []).map((r) => ({ code: r.code.toLowerCase(), detail: r.detail }));
}

/**
 * The pipeline key of {@link preparePage} under these options: extractor, chunker (with the
 * token counter) and schema versions plus the token budget. Stored validators recorded under
 * another key must not be used (the same bytes would now give another version).
 */
export function pagePipelineKey(options: PagePreparationOptions = {}): string {
  const counter = options.counter ?? tiktokenCounter(options.encoding ?? 'cl100k_base');
  const v = pipelineVersions(counter.name);
  return `x${v.extractor}/c${v.chunker}/s${v.schema}/t${options.maxTokens ?? 512}`;
}

/**
 * Page in, document version (or the reasons it is not the document) out: structural "not the
 * document" detection, Readability-or-container extraction to Markdown (Markdown bodies are
 * taken as they are), then heading-aware token-budget chunking with deterministic ids. What the
 * refresh engine and the LangChain loader both run. The same page gives the same versionId on
 * both paths only under the same boilerplate model: both cut under the hosts' learned models
 * through the engine's page step (docs/extract.md § 3).
 */
export function preparePage(
  input: PageInput,
  context: PageContext,
  options: PagePreparationOptions = {},
): PagePreparation {
  const counter = options.counter ?? tiktokenCounter(options.encoding ?? 'cl100k_base');
  const essence = (input.contentType.split(';')[0] ?? '').trim().toLowerCase();
  let markdown: string;
  let title: string;
  let rootTitle: string;
  let canonical: CanonicalJudgement = {};
  let normalized = false;
  let reasons: Reason[] = [];
  let suspected: Reason[] = [];
  if (input.acquisition === 'markdown-twin' || MARKDOWN_TYPES.includes(essence)) {
    markdown = unlinkUnsafeMarkdown(input.text);
    title = firstHeading(markdown);
    rootTitle = title;
  } else {
    // One parse: classification first, on the untouched tree; extraction reuses it. A page
    // that is not the document is extracted too, so an override or an accepted review item
    // can index it as it is.
    const parsed = parsePage(input.text, { url: input.finalUrl });
    const before = parsed.classify({ status: 200 });
    const page = parsed.extract({
      ...(options.boilerplate ? { boilerplate: options.boilerplate } : {}),
      ...(options.titleAffixes ? { titleAffixes: options.titleAffixes } : {}),
    });
    // The signals that depend on what extraction kept (a login form beside a short text).
    const after = before.ok ? parsed.classify({ status: 200, markdown: page.markdown }) : before;
    reasons = pageReasons(after.reasons);
    suspected = pageReasons(after.unconfirmed);
    markdown = page.markdown;
    title = page.title;
    rootTitle = page.rootTitle;
    canonical = judgeCanonical(page.canonicalUrl, input.finalUrl, context.canonical);
    normalized = true;
  }
  if (markdown.trim() === '')
    return {
      kind: 'not-the-document',
      reasons: reasons.length > 0 ? reasons : [{ code: 'empty', detail: 'no text extracted' }],
    };
  const resolvedTitle = title || input.url;
  const prepared = prepareDocument({
    documentId: context.documentId,
    sourceId: context.sourceId,
    markdown,
    normalized,
    provenance: {
      url: input.url,
      finalUrl: input.finalUrl,
      ...canonical,
      title: resolvedTitle,
      retrievedAt: context.retrievedAt,
      contentChangedAt: context.contentChangedAt ?? context.retrievedAt,
      acquisition: input.acquisition,
      ...(context.sourceModifiedAt === undefined
        ? {}
        : { sourceModifiedAt: context.sourceModifiedAt }),
      ...(context.region === undefined ? {} : { region: context.region }),
      ...(context.authority === undefined ? {} : { authority: context.authority }),
      ...(context.access === undefined || context.access.length === 0
        ? {}
        : { access: normalizeAccess(context.access) }),
    },
    chunking: {
      counter,
      title: rootTitle || resolvedTitle,
      ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
    },
  });
  const document: PreparedPage = {
    kind: 'document',
    title: resolvedTitle,
    rootTitle: rootTitle || resolvedTitle,
    ...canonical,
    prepared,
  };
  if (reasons.length > 0) return { kind: 'not-the-document', reasons, asDocument: document };
  return suspected.length === 0 ? document : { ...document, suspected };
}
