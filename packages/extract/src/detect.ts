import type { PublishContract } from '@ragfresh/core';
import {
  classOf,
  type DomDocument,
  type DomElement,
  parseDocument,
  textLength,
  textOf,
} from './dom.js';
import { type ElementTest, hasAnyClass, selectAll, tagIn, tagOf } from './select.js';

/** Why a fetched page is not the document it claims to be, or breaks its source's contract. */
export type NotDocumentCode =
  | 'HTTP_STATUS'
  | 'CONSENT_WALL'
  | 'BOT_CHALLENGE'
  | 'LOGIN_WALL'
  | 'SOFT_404'
  | 'ERROR_PAGE'
  | 'RATE_LIMITED'
  | 'EMPTY_APP_SHELL'
  | 'EMPTY'
  | 'CONTRACT_MIN_CHARS'
  | 'CONTRACT_REQUIRED_PHRASE'
  | 'CONTRACT_SHRINK'
  | 'CONTRACT_CHUNK_COUNT';

export interface CheckReason {
  readonly code: NotDocumentCode;
  /** One line saying which signal fired, with its numbers. */
  readonly detail: string;
}

export interface DocumentCheck {
  readonly ok: boolean;
  readonly reasons: readonly CheckReason[];
  /**
   * Status phrases (a "404" or "Too Many Requests" title, a "page not found" sentence) the page
   * shows without interstitial evidence on the page itself (a non-2xx status, challenge markup
   * or script). They leave `ok` true: documentation about an error code reads exactly like
   * this. The refresh engine acts on them only with host evidence (a Retry-After header, the
   * host's error page, the same body at several URLs); see docs/extract.md.
   */
  readonly unconfirmed?: readonly CheckReason[];
}

export { NOT_DOCUMENT_CODES, type NotDocumentReasonCode } from './codes.js';

/** Codes whose title and phrase rules name an HTTP status: they need interstitial evidence. */
const STATUS_PHRASE_CODES: ReadonlySet<NotDocumentCode> = new Set([
  'SOFT_404',
  'RATE_LIMITED',
  'ERROR_PAGE',
]);

export interface DetectOptions {
  /** HTTP status of the response, if known. */
  readonly status?: number;
  /** Extracted Markdown of the page, if already computed; its length is a signal. */
  readonly markdown?: string;
}

const APP_ROOT_IDS = new Set([
  'root',
  'app',
  '__next',
  '__nuxt',
  '___gatsby',
  'svelte',
  'main-app',
  'application',
]);
/** A JavaScript app's mount point: `#root, #app, #__next, [data-reactroot], app-root, [ng-app]`, … */
const isAppRoot: ElementTest = (el, tag) =>
  APP_ROOT_IDS.has(el.id) ||
  tag === 'app-root' ||
  el.hasAttribute('data-reactroot') ||
  el.hasAttribute('ng-version') ||
  el.hasAttribute('ng-app');
const CHALLENGE_IDS = new Set([
  'challenge-form',
  'challenge-running',
  'challenge-stage',
  'cf-challenge-running',
  'px-captcha',
  'ddg-captcha',
]);
const CHALLENGE_CLASSES = new Set([
  'cf-browser-verification',
  'cf-turnstile',
  'g-recaptcha',
  'h-captcha',
]);
const CF_ERROR = new Set(['cf-error-details']);
/**
 * A script only a challenge page runs: Cloudflare's challenge options (`window._cf_chl_opt`)
 * or its challenge orchestration. Not `/cdn-cgi/challenge-platform/…/scripts/jsd/`: Cloudflare's
 * bot detections inject that one into ordinary pages too.
 */
function challengeScriptOf(el: DomElement): string | undefined {
  const src = el.getAttribute('src');
  if (src !== null) return /\/challenge-platform\/.*\/orchestrate\//.test(src) ? src : undefined;
  return (el.textContent ?? '').includes('_cf_chl_opt') ? 'inline window._cf_chl_opt' : undefined;
}
/** A bot-challenge widget: Cloudflare's challenge and Turnstile, reCAPTCHA, hCaptcha, PerimeterX, DataDome. */
const isChallenge: ElementTest = (el, tag) => {
  if (CHALLENGE_IDS.has(el.id) || hasAnyClass(el, CHALLENGE_CLASSES)) return true;
  if (el.hasAttribute('data-sitekey')) return true;
  if (tag === 'form' && el.id === 'captcha-form') return true;
  if (tag === 'iframe' && (el.getAttribute('src') ?? '').includes('captcha')) return true;
  if (!hasAnyClass(el, CF_ERROR)) return false;
  for (let p = el.parentElement; p; p = p.parentElement) if (p.id === 'cf-wrapper') return true;
  return false;
};
/** A form posting to a consent endpoint: `form[action*="consent"]`, `cookie`, `gdpr`. */
const isConsentForm: ElementTest = (el, tag) => {
  if (tag !== 'form') return false;
  const action = el.getAttribute('action');
  return (
    action !== null &&
    (action.includes('consent') || action.includes('cookie') || action.includes('gdpr'))
  );
};
const HIDDEN_STYLE = /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)/i;
/** Hidden from the reader in the served HTML: `hidden`, `aria-hidden="true"`, `display: none`. */
function hiddenInPage(el: DomElement): boolean {
  for (let p: DomElement | null = el; p; p = p.parentElement) {
    if (p.hasAttribute('hidden') || p.getAttribute('aria-hidden') === 'true') return true;
    if (HIDDEN_STYLE.test(p.getAttribute('style') ?? '')) return true;
  }
  return false;
}
/**
 * A password field the reader sees. A hidden one (a site's sign-in drawer, Discourse's
 * `#hidden-login-form`, a lock form shown only when a page is locked) walls nothing off.
 */
const isPasswordField: ElementTest = (el, tag) =>
  tag === 'input' && el.getAttribute('type')?.toLowerCase() === 'password' && !hiddenInPage(el);
const CONSENT_ID =
  /(?:^|[\s_-])(?:cookie|cookies|consent|gdpr|onetrust|didomi|qc-cmp2?|sp_message|truste|cookiebot|usercentrics|privacy-banner|cookie-law|cc-window|fc-consent)(?:$|[\s_-])/i;

const TITLE_CHALLENGE =
  /^(?:just a moment\.*|attention required!? \| cloudflare|checking your browser.*|one more step|please wait\.*|ddos-guard|security check|are you a robot\??|verify(?:ing)? you are human|human verification|pardon our interruption|robot check)$/i;
/** A 403 said in the title: a status phrase (an "Access denied" docs page exists too). */
const TITLE_FORBIDDEN = /^access denied$/i;
const TITLE_LOGIN =
  /^(?:sign in|log ?in|login|sign in to .*|log in to .*|log in \| .*|sign in \| .*|.* - sign in|.* \| log ?in|login required|members only)$/i;
const TITLE_404 =
  /(?:^|\b)(?:404|page not found|not found|file not found|page (?:does not|doesn't|could not|cannot|can't) (?:exist|be found)|no longer (?:available|exists)|nothing (?:was )?found|oops!?)(?:\b|$)/i;
const TITLE_ERROR =
  /^(?:error(?: \d{3})?|\d{3} error|an error (?:has )?occurred|something went wrong|(?:internal )?server error|service (?:temporarily )?unavailable|bad gateway|gateway time-?out|application error|unexpected error|oops,? something went wrong)[.!]?$/i;
const TITLE_RATE =
  /(?:too many requests|rate limit(?:ed)?|429|slow down|request limit exceeded|temporarily (?:blocked|unavailable))/i;
const TITLE_CONSENT =
  /^(?:before you continue.*|privacy (?:settings|choices|preferences)|cookie (?:settings|consent|preferences)|we value your privacy|your privacy choices)$/i;

/** Pages shorter than this (collapsed characters) get the phrase backstop. */
export const BACKSTOP_MAX_CHARS = 1200;

/** Phrases consulted only when structure left the page short and unexplained. */
const BACKSTOP: ReadonlyArray<readonly [NotDocumentCode, RegExp]> = [
  [
    'BOT_CHALLENGE',
    /enable javascript and cookies to continue|checking (?:if the site connection is secure|your browser before accessing)|verify (?:that )?you are (?:a )?human|are you a robot|complete the security check|press (?:&|and) hold|unusual traffic from your (?:computer|network)|ray id:/i,
  ],
  [
    'CONSENT_WALL',
    /(?:accept|agree to) (?:all )?(?:cookies|the use of cookies)|we (?:and our partners )?use cookies|manage (?:cookie )?(?:preferences|settings)|consent to (?:the use of )?(?:your )?(?:data|cookies)/i,
  ],
  [
    'LOGIN_WALL',
    /(?:sign|log) in to (?:continue|view|read|access)|you (?:must|need to) (?:be )?(?:logged|signed) in|subscribe to (?:continue|keep) reading|this content is for (?:members|subscribers)/i,
  ],
  [
    'SOFT_404',
    /(?:page|file) (?:you (?:are|were) looking for|you requested) (?:could not|cannot|can't|was not|wasn't|does not|doesn't|no longer)|this page (?:could not be found|does not exist|doesn't exist|isn't available)|error 404|404 not found/i,
  ],
  [
    'RATE_LIMITED',
    /too many requests|you have been rate.?limited|rate limit exceeded|try again (?:later|in a (?:few|moment))/i,
  ],
  [
    'EMPTY_APP_SHELL',
    /you need to enable javascript to run this app|please enable javascript|this (?:app|site|page) requires javascript|javascript is (?:required|disabled)/i,
  ],
];

/**
 * Everything detection reads from the DOM, collected in one walk so the decision can be re-run
 * (with the extracted Markdown, once known) without touching the DOM again.
 */
export interface PageFacts {
  readonly title: string;
  readonly h1: string;
  /** Characters of whitespace-collapsed body text, scripts and styles removed, `<noscript>` kept. */
  readonly textChars: number;
  /**
   * That text itself when it is under {@link BACKSTOP_MAX_CHARS} (the phrase backstop reads
   * only short pages), else empty: a long page's text is measured, not copied.
   */
  readonly text: string;
  readonly scripts: number;
  readonly scriptSrcs: number;
  /** An app mount point with almost no text, described (`<div#root>`). */
  readonly emptyRoot?: string;
  readonly challengeWidget?: string;
  /** A challenge page's own script (see `challengeScriptOf`), described. */
  readonly challengeScript?: string;
  readonly passwordField: boolean;
  readonly consentLayer?: { readonly describe: string; readonly chars: number };
  readonly consentForm?: string;
}

/**
 * Collects {@link PageFacts} from a parsed document. Removes scripts, styles and templates
 * from it (what cleaning does first anyway), so extraction can run on the same tree after.
 * Every check is a filter over the page's element listing (select.ts): measured on the
 * benchmark pages, that costs less than the raw-HTML prescreens (lower-casing the source and
 * five regex scans) that used to decide which checks could be skipped.
 */
export function collectPageFacts(doc: DomDocument): PageFacts {
  const title = doc.head ? doc.title.replace(/\s+/g, ' ').trim() : '';
  let scripts = 0;
  let scriptSrcs = 0;
  let inlineBytes = 0;
  // <noscript> stays: it is what a reader without JavaScript sees (Discourse serves whole
  // threads there), and an app shell's "enable JavaScript" note is short anyway.
  let challengeScript: string | undefined;
  for (const el of selectAll(doc, doc, tagIn('script', 'style', 'template'))) {
    if (el.nodeName === 'SCRIPT') {
      scripts++;
      if (el.hasAttribute('src')) scriptSrcs++;
      else inlineBytes += (el.textContent ?? '').length;
      // Read here: the element walk below runs after scripts are gone.
      challengeScript ??= challengeScriptOf(el);
    }
    el.remove();
  }
  // One pass over the page for every element-shaped signal, each kept as the first (or every)
  // element of its kind in document order.
  let widget: DomElement | undefined;
  let h1El: DomElement | undefined;
  let emptyRoot: DomElement | undefined;
  let consentForm: DomElement | undefined;
  let passwordField = false;
  for (const el of selectAll(
    doc,
    doc,
    (e, tag) =>
      tag === 'h1' || tag === 'form' || tag === 'input' || isChallenge(e, tag) || isAppRoot(e, tag),
  )) {
    const tag = tagOf(el);
    if (widget === undefined && isChallenge(el, tag)) widget = el;
    if (h1El === undefined && tag === 'h1') h1El = el;
    if (emptyRoot === undefined && isAppRoot(el, tag) && textLength(el) < 40) emptyRoot = el;
    if (consentForm === undefined && isConsentForm(el, tag)) consentForm = el;
    if (isPasswordField(el, tag)) passwordField = true;
  }
  const challengeWidget = widget ? describe(widget) : undefined;
  const body = doc.body;
  const consent = findConsentLayer(doc);
  // The phrase backstop reads only short pages: longer ones are measured, not copied.
  const textChars = body ? textLength(body) : 0;
  return {
    title,
    h1: h1El ? textOf(h1El) : '',
    textChars,
    text: body && textChars < BACKSTOP_MAX_CHARS ? textOf(body) : '',
    scripts: scripts + (inlineBytes > 20_000 ? 1 : 0),
    scriptSrcs,
    ...(emptyRoot
      ? {
          emptyRoot: `<${emptyRoot.localName}${emptyRoot.id ? `#${emptyRoot.id}` : ''}>`,
        }
      : {}),
    ...(challengeWidget ? { challengeWidget } : {}),
    ...(challengeScript ? { challengeScript } : {}),
    passwordField,
    ...(consent
      ? { consentLayer: { describe: describe(consent), chars: textLength(consent) } }
      : {}),
    ...(consentForm ? { consentForm: describe(consentForm) } : {}),
  };
}

/**
 * Tells whether fetched HTML is the document or something standing in front of it: a consent
 * wall, a bot challenge, a login wall, a soft 404 or error page, a rate-limit page or an empty
 * JavaScript app shell. Structural signals decide first; a phrase list is only a backstop for
 * short pages. Parses the HTML; `parsePage(html).classify()` does the same on a tree that
 * extraction then reuses.
 */
export function detectNotDocument(html: string, options: DetectOptions = {}): DocumentCheck {
  return classifyFacts(collectPageFacts(parseDocument(html)), options);
}

/**
 * Interstitial evidence on the page itself, or undefined: what a status phrase needs before it
 * counts. A documentation page about an error code has the phrase; an interstitial also has
 * the status, or the challenge machinery that serves it.
 */
function pageEvidence(
  s: PageFacts,
  status: number | undefined,
  mdLen: number | undefined,
): string | undefined {
  if (status !== undefined && (status < 200 || status >= 300)) return `HTTP status ${status}`;
  if (s.challengeWidget) return `challenge element ${s.challengeWidget}`;
  if (s.challengeScript) return `challenge script ${s.challengeScript}`;
  // Nothing but the phrase, a "go home" link and a footer: the page is the status page itself,
  // with no explanation to index (an error-code doc page explains in a few hundred characters).
  // Under 40 chars the page is EMPTY anyway, which says more.
  const chars = mdLen ?? s.textChars;
  if (chars >= 40 && chars < (mdLen === undefined ? STATUS_PAGE_MIN_CHARS : STATUS_PAGE_MIN_MD))
    return `only ${chars} chars of text beside it`;
  return undefined;
}

/** Visible text below which a page with a status phrase holds nothing but the status. */
const STATUS_PAGE_MIN_CHARS = 120;
/** Extracted Markdown below which the same holds. */
const STATUS_PAGE_MIN_MD = 60;

/** The decision of {@link detectNotDocument} on facts already collected. Pure. */
export function classifyFacts(s: PageFacts, options: DetectOptions = {}): DocumentCheck {
  const reasons: CheckReason[] = [];
  const unconfirmed: CheckReason[] = [];
  const add = (code: NotDocumentCode, detail: string) => {
    if (!reasons.some((r) => r.code === code)) reasons.push({ code, detail });
  };
  const { status } = options;
  const evidence = pageEvidence(s, status, options.markdown?.trim().length);
  // A status phrase blocks only with evidence beside it; without, it is reported, not acted on.
  const statusPhrase = (code: NotDocumentCode, detail: string) => {
    if (evidence !== undefined) add(code, `${detail}; ${evidence}`);
    else if (!unconfirmed.some((r) => r.code === code)) unconfirmed.push({ code, detail });
  };
  if (status !== undefined && (status < 200 || status >= 300)) {
    if (status === 429) add('RATE_LIMITED', 'HTTP 429 Too Many Requests');
    else add('HTTP_STATUS', `HTTP status ${status}`);
  }
  const textLen = s.textChars;
  const mdLen = options.markdown?.trim().length;
  const heads = `${s.title} | ${s.h1}`;
  const short = textLen < 1500;

  // Empty app shell: a mount point without text, scripts doing the work.
  if (textLen < 250 && s.scripts > 0 && (s.emptyRoot !== undefined || s.scriptSrcs >= 2)) {
    add(
      'EMPTY_APP_SHELL',
      `${textLen} chars of text, ${s.scripts} scripts${s.emptyRoot ? `, empty mount point ${s.emptyRoot}` : ''}`,
    );
  }

  // Bot challenge: challenge widgets or scripts, or a challenge title, on a short page.
  if (TITLE_CHALLENGE.test(s.title) && textLen < 3000)
    add('BOT_CHALLENGE', `challenge title ${JSON.stringify(s.title)}`);
  else if (s.challengeWidget && textLen < 1000)
    add('BOT_CHALLENGE', `challenge element ${s.challengeWidget} on a page of ${textLen} chars`);
  else if (s.challengeScript && textLen < 1000)
    add('BOT_CHALLENGE', `challenge script ${s.challengeScript} on a page of ${textLen} chars`);
  else if (TITLE_FORBIDDEN.test(s.title) && textLen < 3000)
    statusPhrase('BOT_CHALLENGE', `access-denied title ${JSON.stringify(s.title)}`);

  // Login wall: a password field and little else.
  if (s.passwordField && (textLen < 2000 || (mdLen !== undefined && mdLen < 500))) {
    add('LOGIN_WALL', `password form on a page of ${textLen} chars`);
  } else if (TITLE_LOGIN.test(s.title) && short)
    add('LOGIN_WALL', `login title ${JSON.stringify(s.title)}`);

  // Consent wall: a consent layer that holds most of the page's text.
  if (s.consentLayer) {
    const rest = textLen - s.consentLayer.chars;
    // OneTrust-style preference centres carry kilobytes of cookie tables next to a real page:
    // only the text outside the layer says whether the document is there.
    if (rest < 800) {
      add(
        'CONSENT_WALL',
        `consent layer ${s.consentLayer.describe} holds ${s.consentLayer.chars} of ${textLen} chars`,
      );
    }
  }
  if (s.consentForm && textLen < 2500)
    add('CONSENT_WALL', `consent form ${s.consentForm} on a page of ${textLen} chars`);
  if (TITLE_CONSENT.test(s.title) && textLen < 3000)
    add('CONSENT_WALL', `consent title ${JSON.stringify(s.title)}`);

  // Soft 404 / rate limit: the title or h1 says so and the page is short.
  if (TITLE_404.test(heads) && textLen < 2500 && status !== 404)
    statusPhrase(
      'SOFT_404',
      `not-found title/h1 ${JSON.stringify(heads)} on a page of ${textLen} chars`,
    );
  if (TITLE_RATE.test(heads) && textLen < 2500)
    statusPhrase('RATE_LIMITED', `rate-limit title/h1 ${JSON.stringify(heads)}`);
  // Error page served with 200: the title's leading part names an error, and the page (or what
  // extraction kept of it) is short: a legal footer and a "go home" link, not a document.
  const titleHead = s.title.split(/\s+[|\u2013\u2014·:-]\s+/)[0] ?? '';
  if (
    (TITLE_ERROR.test(titleHead) || TITLE_ERROR.test(s.h1)) &&
    (textLen < 1500 || (mdLen !== undefined && mdLen < 400))
  )
    statusPhrase(
      'ERROR_PAGE',
      `error title/h1 ${JSON.stringify(heads)} on a page of ${textLen} chars`,
    );

  // Backstop phrases, only for short pages nothing above explained (or suggested).
  if (reasons.length === 0 && unconfirmed.length === 0 && textLen < BACKSTOP_MAX_CHARS) {
    for (const [code, re] of BACKSTOP) {
      const m = re.exec(s.text);
      if (m) {
        const detail = `short page (${textLen} chars) says ${JSON.stringify(m[0])}`;
        if (STATUS_PHRASE_CODES.has(code)) statusPhrase(code, detail);
        else add(code, detail);
        break;
      }
    }
  }
  if (reasons.length === 0 && (mdLen !== undefined ? mdLen < 40 : textLen < 40)) {
    add(
      'EMPTY',
      `${mdLen ?? textLen} chars of ${mdLen !== undefined ? 'extracted' : 'visible'} text`,
    );
  }
  return {
    ok: reasons.length === 0,
    reasons,
    ...(unconfirmed.length === 0 ? {} : { unconfirmed }),
  };
}

function describe(el: DomElement): string {
  const id = el.id ? `#${el.id}` : '';
  const cls =
    typeof el.className === 'string' && el.className.trim()
      ? `.${el.className.trim().split(/\s+/).slice(0, 2).join('.')}`
      : '';
  return `<${el.localName}${id}${cls}>`;
}

function findConsentLayer(doc: DomDocument): DomElement | undefined {
  const body = doc.body;
  if (!body) return undefined;
  let best: DomElement | undefined;
  let bestLen = 0;
  for (const el of selectAll(doc, body, tagIn('div', 'section', 'aside', 'dialog', 'form'))) {
    // Each attribute on its own: the pattern's words are bounded, so none spans two of them.
    if (
      !CONSENT_ID.test(el.id ?? '') &&
      !CONSENT_ID.test(classOf(el)) &&
      !CONSENT_ID.test(el.getAttribute('aria-label') ?? '')
    )
      continue;
    // A consent layer never holds the page's own heading or main content.
    if (el.querySelector('main, article, h1')) continue;
    if (!/cookie|consent|privacy|partners|personal data|gdpr/i.test(textOf(el))) continue;
    const len = textLength(el);
    if (len > bestLen) {
      best = el;
      bestLen = len;
    }
  }
  return best;
}

/** The last good version a candidate is compared against. */
export interface PreviousVersionFacts {
  readonly textChars: number;
  readonly chunkCount?: number;
}

/**
 * Per-source contract checks on extracted text: minimum characters, required phrases
 * (case-insensitive) and the largest allowed shrink and chunk-count change against the last
 * good version.
 */
export function checkContract(
  candidate: { readonly text: string; readonly chunkCount?: number },
  contract: PublishContract,
  previous?: PreviousVersionFacts,
): DocumentCheck {
  const reasons: CheckReason[] = [];
  const chars = candidate.text.length;
  if (contract.minChars !== undefined && chars < contract.minChars) {
    reasons.push({
      code: 'CONTRACT_MIN_CHARS',
      detail: `${chars} chars, contract needs at least ${contract.minChars}`,
    });
  }
  const lower = candidate.text.normalize('NFC').toLowerCase();
  for (const phrase of contract.requiredPhrases ?? []) {
    if (!lower.includes(phrase.normalize('NFC').toLowerCase())) {
      reasons.push({
        code: 'CONTRACT_REQUIRED_PHRASE',
        detail: `required phrase ${JSON.stringify(phrase)} is missing`,
      });
    }
  }
  if (previous && previous.textChars > 0 && contract.maxShrink !== undefined) {
    const shrink = 1 - chars / previous.textChars;
    if (shrink > contract.maxShrink) {
      reasons.push({
        code: 'CONTRACT_SHRINK',
        detail: `text shrank ${(shrink * 100).toFixed(1)}% (${previous.textChars} -> ${chars} chars), contract allows ${(contract.maxShrink * 100).toFixed(1)}%`,
      });
    }
  }
  if (
    previous?.chunkCount !== undefined &&
    previous.chunkCount > 0 &&
    candidate.chunkCount !== undefined &&
    contract.maxChunkCountChange !== undefined
  ) {
    const change = Math.abs(candidate.chunkCount - previous.chunkCount) / previous.chunkCount;
    if (change > contract.maxChunkCountChange) {
      reasons.push({
        code: 'CONTRACT_CHUNK_COUNT',
        detail: `chunk count changed ${(change * 100).toFixed(0)}% (${previous.chunkCount} -> ${candidate.chunkCount}), contract allows ${(contract.maxChunkCountChange * 100).toFixed(0)}%`,
      });
    }
  }
  return { ok: reasons.length === 0, reasons };
}

/** Both checks at once: `detectNotDocument` on the HTML, then `checkContract` on the text. */
export function validateDocument(
  html: string,
  extracted: { readonly markdown: string; readonly chunkCount?: number },
  options: DetectOptions & {
    readonly contract?: PublishContract;
    readonly previous?: PreviousVersionFacts;
  } = {},
): DocumentCheck {
  const detected = detectNotDocument(html, { ...options, markdown: extracted.markdown });
  const contract = options.contract
    ? checkContract(
        {
          text: extracted.markdown,
          ...(extracted.chunkCount !== undefined ? { chunkCount: extracted.chunkCount } : {}),
        },
        options.contract,
        options.previous,
      )
    : { ok: true, reasons: [] };
  const reasons = [...detected.reasons, ...contract.reasons];
  return {
    ok: reasons.length === 0,
    reasons,
    ...(detected.unconfirmed === undefined ? {} : { unconfirmed: detected.unconfirmed }),
  };
}
