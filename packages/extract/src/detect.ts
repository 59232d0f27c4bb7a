import type { PublishContract } from '@ragfresh/core';
import { type DomDocument, type DomElement, elements, parseDocument, textOf } from './dom.js';

/** Why a fetched page is not the document it claims to be, or breaks its source's contract. */
export type NotDocumentCode =
  | 'HTTP_STATUS'
  | 'CONSENT_WALL'
  | 'BOT_CHALLENGE'
  | 'LOGIN_WALL'
  | 'SOFT_404'
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
}

export interface DetectOptions {
  /** HTTP status of the response, if known. */
  readonly status?: number;
  /** Extracted Markdown of the page, if already computed; its length is a signal. */
  readonly markdown?: string;
}

const APP_ROOT =
  '#root, #app, #__next, #__nuxt, #___gatsby, #svelte, [data-reactroot], [ng-version], app-root, [ng-app], #main-app, #application';
const CHALLENGE_SELECTORS =
  '#challenge-form, #challenge-running, #challenge-stage, #cf-challenge-running, .cf-browser-verification, #cf-wrapper .cf-error-details, .cf-turnstile, script[src*="/cdn-cgi/challenge-platform/"], .g-recaptcha, .h-captcha, iframe[src*="captcha"], [data-sitekey], #px-captcha, #ddg-captcha, form#captcha-form';
const CONSENT_ID =
  /(?:^|[\s_-])(?:cookie|cookies|consent|gdpr|onetrust|didomi|qc-cmp2?|sp_message|truste|cookiebot|usercentrics|privacy-banner|cookie-law|cc-window|fc-consent)(?:$|[\s_-])/i;

const TITLE_CHALLENGE =
  /^(?:just a moment\.*|attention required!? \| cloudflare|checking your browser.*|one more step|please wait\.*|ddos-guard|security check|are you a robot\??|access denied|verify(?:ing)? you are human|human verification|pardon our interruption|robot check)$/i;
const TITLE_LOGIN =
  /^(?:sign in|log ?in|login|sign in to .*|log in to .*|log in \| .*|sign in \| .*|.* - sign in|.* \| log ?in|login required|members only)$/i;
const TITLE_404 =
  /(?:^|\b)(?:404|page not found|not found|file not found|page (?:does not|doesn't|could not|cannot|can't) (?:exist|be found)|no longer (?:available|exists)|nothing (?:was )?found|oops!?)(?:\b|$)/i;
const TITLE_RATE =
  /(?:too many requests|rate limit(?:ed)?|429|slow down|request limit exceeded|temporarily (?:blocked|unavailable))/i;
const TITLE_CONSENT =
  /^(?:before you continue.*|privacy (?:settings|choices|preferences)|cookie (?:settings|consent|preferences)|we value your privacy|your privacy choices)$/i;

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

interface PageSignals {
  readonly title: string;
  readonly h1: string;
  readonly text: string;
  readonly scripts: number;
  readonly scriptSrcs: number;
  readonly doc: DomDocument;
}

function signals(html: string): PageSignals {
  const doc = parseDocument(html);
  const title = doc.head ? doc.title.replace(/\s+/g, ' ').trim() : '';
  const scripts = elements(doc.querySelectorAll('script'));
  const scriptSrcs = scripts.filter((s) => s.hasAttribute('src')).length;
  const inlineBytes = scripts.reduce(
    (n, s) => n + (s.hasAttribute('src') ? 0 : (s.textContent ?? '').length),
    0,
  );
  // <noscript> stays: it is what a reader without JavaScript sees (Discourse serves whole
  // threads there), and an app shell's "enable JavaScript" note is short anyway.
  for (const el of elements(doc.querySelectorAll('script, style, template'))) el.remove();
  const h1El = doc.querySelector('h1');
  const body = doc.body;
  return {
    title,
    h1: h1El ? textOf(h1El) : '',
    text: body ? textOf(body) : '',
    scripts: scripts.length + (inlineBytes > 20_000 ? 1 : 0),
    scriptSrcs,
    doc,
  };
}

/**
 * Tells whether fetched HTML is the document or something standing in front of it: a consent
 * wall, a bot challenge, a login wall, a soft 404, a rate-limit page or an empty JavaScript app
 * shell. Structural signals decide first; a phrase list is only a backstop for short pages.
 */
export function detectNotDocument(html: string, options: DetectOptions = {}): DocumentCheck {
  const reasons: CheckReason[] = [];
  const add = (code: NotDocumentCode, detail: string) => {
    if (!reasons.some((r) => r.code === code)) reasons.push({ code, detail });
  };
  const { status } = options;
  if (status !== undefined && (status < 200 || status >= 300)) {
    if (status === 429) add('RATE_LIMITED', 'HTTP 429 Too Many Requests');
    else add('HTTP_STATUS', `HTTP status ${status}`);
  }
  const s = signals(html);
  const textLen = s.text.length;
  const mdLen = options.markdown?.trim().length;
  const heads = `${s.title} | ${s.h1}`;
  const short = textLen < 1500;

  // Empty app shell: a mount point without text, scripts doing the work.
  const roots = elements(s.doc.querySelectorAll(APP_ROOT));
  const emptyRoot = roots.find((r) => textOf(r).length < 40);
  if (textLen < 250 && s.scripts > 0 && (emptyRoot !== undefined || s.scriptSrcs >= 2)) {
    add(
      'EMPTY_APP_SHELL',
      `${textLen} chars of text, ${s.scripts} scripts${emptyRoot ? `, empty mount point <${emptyRoot.localName}${emptyRoot.id ? `#${emptyRoot.id}` : ''}>` : ''}`,
    );
  }

  // Bot challenge: challenge widgets or a challenge title on a short page.
  const widget = s.doc.querySelector(CHALLENGE_SELECTORS);
  if (TITLE_CHALLENGE.test(s.title) && textLen < 3000)
    add('BOT_CHALLENGE', `challenge title ${JSON.stringify(s.title)}`);
  else if (widget && textLen < 1000)
    add('BOT_CHALLENGE', `challenge element ${describe(widget)} on a page of ${textLen} chars`);

  // Login wall: a password field and little else.
  const password = s.doc.querySelector('input[type="password"]');
  if (password && (textLen < 2000 || (mdLen !== undefined && mdLen < 500))) {
    add('LOGIN_WALL', `password form on a page of ${textLen} chars`);
  } else if (TITLE_LOGIN.test(s.title) && short)
    add('LOGIN_WALL', `login title ${JSON.stringify(s.title)}`);

  // Consent wall: a consent layer that holds most of the page's text.
  const consent = findConsentLayer(s.doc);
  if (consent) {
    const layerLen = textOf(consent).length;
    const rest = textLen - layerLen;
    // OneTrust-style preference centres carry kilobytes of cookie tables next to a real page:
    // only the text outside the layer says whether the document is there.
    if (rest < 800) {
      add(
        'CONSENT_WALL',
        `consent layer ${describe(consent)} holds ${layerLen} of ${textLen} chars`,
      );
    }
  }
  const consentForm = s.doc.querySelector(
    'form[action*="consent"], form[action*="cookie"], form[action*="gdpr"]',
  );
  if (consentForm && textLen < 2500)
    add('CONSENT_WALL', `consent form ${describe(consentForm)} on a page of ${textLen} chars`);
  if (TITLE_CONSENT.test(s.title) && textLen < 3000)
    add('CONSENT_WALL', `consent title ${JSON.stringify(s.title)}`);

  // Soft 404 / rate limit: the title or h1 says so and the page is short.
  if (TITLE_404.test(heads) && textLen < 2500 && status !== 404)
    add('SOFT_404', `not-found title/h1 ${JSON.stringify(heads)} on a page of ${textLen} chars`);
  if (TITLE_RATE.test(heads) && textLen < 2500)
    add('RATE_LIMITED', `rate-limit title/h1 ${JSON.stringify(heads)}`);

  // Backstop phrases, only for short pages nothing above explained.
  if (reasons.length === 0 && textLen < 1200) {
    for (const [code, re] of BACKSTOP) {
      const m = re.exec(s.text);
      if (m) {
        add(code, `short page (${textLen} chars) says ${JSON.stringify(m[0])}`);
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
  return { ok: reasons.length === 0, reasons };
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
  for (const el of elements(body.querySelectorAll('div, section, aside, dialog, form'))) {
    const marker = `${el.id ?? ''} ${typeof el.className === 'string' ? el.className : ''} ${el.getAttribute('aria-label') ?? ''}`;
    if (!CONSENT_ID.test(marker)) continue;
    // A consent layer never holds the page's own heading or main content.
    if (el.querySelector('main, article, h1')) continue;
    if (!/cookie|consent|privacy|partners|personal data|gdpr/i.test(textOf(el))) continue;
    const len = textOf(el).length;
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
  return { ok: reasons.length === 0, reasons };
}
