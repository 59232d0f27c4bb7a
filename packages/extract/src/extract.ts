import { Readability } from '@mozilla/readability';
import { RagfreshError } from '@ragfresh/core';
import type { BoilerplateModel } from './boilerplate.js';
import { cleanDocument, normalizeMarkdown, removePostClutter } from './clean.js';
import {
  CAPTION_MAX_CHARS,
  CONTENTS_ATTR,
  markChildContents,
  placeContents,
  restoreContents,
} from './contents.js';
import {
  classifyFacts,
  collectPageFacts,
  type DetectOptions,
  type DocumentCheck,
  type PageFacts,
} from './detect.js';
import {
  classOf,
  type DomDocument,
  type DomElement,
  elements,
  parseDocument,
  textLength,
  textOf,
} from './dom.js';
import { markCaptions, removeCaptions, removeDatelines } from './furniture.js';
import { toMarkdown } from './markdown.js';
import { removePromoBlocks } from './promo.js';
import { isHiddenElement, protectContent, removeHidden, revealStreamedContent } from './protect.js';
import { findRepeatedRegion, ITEM_ATTR } from './region.js';
import { restoreDroppedProse } from './restore.js';
import {
  closestWhere,
  collectUnder,
  type ElementTest,
  hasAnyClass,
  isChrome,
  isLink,
  linkTextLength,
  selectAll,
  tagOf,
} from './select.js';
import { stripTitleAffixes, type TitleAffixes, titleRoot } from './title.js';

/** Which part of the page the Markdown came from. */
export type ExtractionMethod = 'readability' | 'container' | 'body';

/**
 * - `auto` (default): Readability, unless the page does not declare itself an article and a
 *   semantic container (main, article, [role=main], a documentation body) holds more than
 *   twice the non-link text Readability kept; docs/extract.md has the benchmark that chose it.
 * - `readability`: Readability.js alone (the benchmark baseline).
 * - `container`: the densest semantic container, Readability only when none exists.
 */
export type ExtractStrategy = 'auto' | 'readability' | 'container';

export interface ExtractOptions {
  /** URL the HTML came from; relative links are resolved against it. */
  readonly url?: string;
  readonly strategy?: ExtractStrategy;
  /**
   * `auto` switches to the container when Readability kept less than this share of the
   * container's non-link text. Default {@link DEFAULT_FALLBACK_RATIO}.
   */
  readonly fallbackRatio?: number;
  /**
   * `auto` never falls back on a page that declares itself an article (og:type, JSON-LD).
   * Default true; false only to reproduce the benchmark's rule comparison.
   */
  readonly articleGuard?: boolean;
  /** Host boilerplate to drop from the Markdown (see `BoilerplateModel`). */
  readonly boilerplate?: BoilerplateModel;
  /** Site affixes of the host's titles (see `learnTitleAffixes`), dropped from `rootTitle`. */
  readonly titleAffixes?: TitleAffixes;
}

export interface ExtractedPage {
  readonly title: string;
  /**
   * The title without the site's name (" | Product | Company"), for rooting heading paths:
   * learned affixes first, then `og:site_name`, then the page's h1 when the title starts with it.
   */
  readonly rootTitle: string;
  /** Cleaned, normalised Markdown of the main content. */
  readonly markdown: string;
  readonly method: ExtractionMethod;
  readonly lang?: string;
  /**
   * The `<link rel="canonical">` href exactly as the page wrote it: the page's claim, unchecked
   * (possibly relative, another site's, or `javascript:`). `preparePage` judges it
   * (`judgeCanonical` in `@ragfresh/core`) before anything cites it.
   */
  readonly canonicalUrl?: string;
  readonly byline?: string;
  /** Blocks removed by the boilerplate model. */
  readonly boilerplateRemoved: number;
}

export const DEFAULT_FALLBACK_RATIO = 0.5;

const ARTICLE_LD =
  /"@type"\s*:\s*(?:"(?:News|Blog|Scholarly|Tech|Report|Opinion|Analysis|Review)?Article"|"BlogPosting"|"LiveBlogPosting"|\[[^\]]*"(?:News|Blog)?Article")/;

const DISCUSSION_LD =
  /"@type"\s*:\s*(?:"(?:QAPage|DiscussionForumPosting|CollectionPage|Product|TechArticle|APIReference)"|\[[^\]]*"(?:QAPage|DiscussionForumPosting|CollectionPage|Product|TechArticle|APIReference)")/;

/**
 * The page declares itself a thread, a collection, a product or a technical reference
 * (JSON-LD): site builders and forum software add an `Article` declaration to every page, so
 * a more specific type next to it wins.
 */
export function declaresNonArticle(doc: DomDocument, hints: SourceHints = {}): boolean {
  return ldJson(doc, hints).some((t) => DISCUSSION_LD.test(t));
}

/** The page declares itself an article (og:type or JSON-LD): Readability's home ground. */
export function declaresArticle(doc: DomDocument, hints: SourceHints = {}): boolean {
  if (metaContent(doc, 'meta[property="og:type"]', hints, 'og:type')?.toLowerCase() === 'article')
    return true;
  return ldJson(doc, hints).some((t) => ARTICLE_LD.test(t));
}

/**
 * The HTML a document was parsed from. A selector for an attribute value that never occurs in
 * the source cannot match, so its whole-tree walk is skipped.
 */
export interface SourceHints {
  readonly html?: string;
}

const mayContain = (hints: SourceHints, needle: string) =>
  hints.html === undefined || hints.html.includes(needle);

function ldJson(doc: DomDocument, hints: SourceHints): string[] {
  if (!mayContain(hints, 'application/ld+json')) return [];
  return elements(doc.querySelectorAll('script[type="application/ld+json"]')).map(
    (s) => s.textContent ?? '',
  );
}

const classTest = (name: string): ElementTest => {
  const names = new Set([name]);
  return (el) => hasAnyClass(el, names);
};
/** Every class name a container test looks for (see {@link isContainer}). */
const CONTAINER_CLASSES = new Set<string>();
/** The container tests that pass only on an element with one of those classes. */
const CLASS_TESTS = new Set<ElementTest>();
/** A container test on a class name, and on more when `also` is given. */
const containerClass = (name: string, also?: ElementTest): ElementTest => {
  CONTAINER_CLASSES.add(name);
  const has = classTest(name);
  const test: ElementTest = also ? (el, tag) => has(el, tag) && also(el, tag) : has;
  CLASS_TESTS.add(test);
  return test;
};
const RST_CONTENT = classTest('rst-content');
/**
 * Semantic containers and documentation-theme content wrappers, in order of preference. Each
 * is a test rather than a selector: the page is listed once (select.ts) and every test reads
 * the element directly.
 */
const CONTAINER_TESTS: readonly ElementTest[] = [
  (_el, tag) => tag === 'main',
  (el) => el.getAttribute('role') === 'main',
  (_el, tag) => tag === 'article',
  containerClass('theme-doc-markdown'),
  // `.rst-content .document`
  containerClass('document', (el) => ancestorWith(el, (p) => RST_CONTENT(p, ''))),
  containerClass('md-content'),
  containerClass('devsite-article-body'),
  containerClass('markdown-body'),
  (el) => el.id === 'main-content',
  (el) => el.id === 'content',
];
const OTHER_TESTS = CONTAINER_TESTS.filter((t) => !CLASS_TESTS.has(t));
const BY_CLASS = CONTAINER_TESTS.filter((t) => CLASS_TESTS.has(t));
/**
 * Any of {@link CONTAINER_TESTS}, the class attribute read once for all the class tests: they
 * run only when it holds one of their names.
 */
const isContainer: ElementTest = (el, tag) =>
  OTHER_TESTS.some((t) => t(el, tag)) ||
  (hasAnyClass(el, CONTAINER_CLASSES) && BY_CLASS.some((t) => t(el, tag)));

function ancestorWith(el: DomElement, test: (p: DomElement) => boolean): boolean {
  for (let p = el.parentElement; p; p = p.parentElement) if (test(p)) return true;
  return false;
}

const NOT_CONTENT_TAGS = new Set(['nav', 'aside', 'footer', 'dialog']);
const NOT_CONTENT_ROLES = new Set([
  'navigation',
  'complementary',
  'contentinfo',
  'banner',
  'search',
  'dialog',
]);
const NOT_CONTENT_CLASSES = new Set([
  'toc',
  'table-of-contents',
  'sidebar',
  'pagination',
  'pagination-nav',
  'theme-doc-toc-mobile',
  'theme-doc-footer',
  'feedback',
  'page-feedback',
]);

/**
 * Chrome inside a page or a content root: landmarks other than main (`nav`, `aside`,
 * `footer`, dialogs and their ARIA roles), tables of contents, sidebars, pagination, feedback
 * blocks, and what is hidden from assistive technology (`aria-hidden`, `aria-modal` layers).
 */
function isNotContent(el: DomElement, tag: string): boolean {
  if (NOT_CONTENT_TAGS.has(tag)) return true;
  // A contents list of the pages below this one is what a chapter index page says.
  if (el.hasAttribute(CONTENTS_ATTR)) return false;
  const role = el.getAttribute('role');
  if (role !== null && NOT_CONTENT_ROLES.has(role)) return true;
  if (el.id === 'toc' || hasAnyClass(el, NOT_CONTENT_CLASSES)) return true;
  return el.getAttribute('aria-modal') === 'true' || el.getAttribute('aria-hidden') === 'true';
}

interface Candidate {
  readonly el: DomElement;
  readonly text: number;
  readonly linkText: number;
  /** Link-made main content (a card grid under the main heading), scored with its link text. */
  readonly grid: boolean;
}

function measure(el: DomElement, grid = false): Candidate {
  const text = textLength(el);
  return { el, text, linkText: Math.min(linkTextLength(el), text), grid };
}

const score = (c: Candidate) => c.text - c.linkText + (c.grid ? 0.5 * c.linkText : 0);

/**
 * A grid of links that is the page's content, not its navigation: the main landmark, holding
 * a heading, with at least four links that read as titles (two or more words on average) and
 * not inside a nav.
 */
function isLinkGrid(el: DomElement): boolean {
  if (!(el.nodeName === 'MAIN' || el.getAttribute('role') === 'main' || el.nodeName === 'ARTICLE'))
    return false;
  if (!el.querySelector('h1, h2')) return false;
  const links = collectUnder(el, isLink).filter((a) => !closestWhere(a, isChrome));
  if (links.length < 4) return false;
  let words = 0;
  for (const a of links) words += textOf(a).split(' ').length;
  return words / links.length >= 2;
}

/** The semantic container with the most non-link text; a tighter one wins when nearly as rich. */
export function pickContainer(doc: DomDocument): DomElement | undefined {
  return pickCandidate(doc)?.el;
}

function pickCandidate(doc: DomDocument): Candidate | undefined {
  // One pass over the page for all tests; candidates are then taken test by test.
  const found = selectAll(doc, doc, isContainer);
  if (found.length === 0) return undefined;
  const seen = new Set<DomElement>();
  const candidates: Candidate[] = [];
  for (const test of CONTAINER_TESTS) {
    for (const el of found) {
      if (seen.has(el) || !test(el, tagOf(el))) continue;
      seen.add(el);
      const c = measure(el);
      if (c.text < 200) continue;
      if (c.linkText / c.text < 0.5) candidates.push(c);
      else if (isLinkGrid(el)) candidates.push({ ...c, grid: true });
    }
  }
  if (candidates.length === 0) return undefined;
  candidates.sort((a, b) => score(b) - score(a));
  let best = candidates[0]!;
  for (const c of candidates) {
    if (c !== best && score(c) >= 0.85 * score(best) && containsNode(best.el, c.el)) best = c;
  }
  return best;
}

/**
 * Filter and sort widgets: radio buttons and checkboxes with their labels, drop-down lists.
 * Their words are choices for the reader's screen ("All (851)", "Over 10 hours"), not content.
 */
function removeChoiceControls(doc: DomDocument, root: DomElement): void {
  const controls = selectAll(doc, root, (_el, tag) => tag === 'input' || tag === 'select');
  if (controls.length === 0) return;
  let labelFor: Map<string, DomElement> | undefined;
  for (const el of controls) {
    if (!el.parentNode) continue;
    if (el.nodeName === 'SELECT') {
      el.remove();
      continue;
    }
    const type = el.getAttribute('type')?.toLowerCase();
    if (type !== 'radio' && type !== 'checkbox') continue;
    let label = el.closest('label');
    if (!label && el.id) {
      if (!labelFor) {
        labelFor = new Map();
        for (const l of elements(root.querySelectorAll('label'))) {
          const f = l.getAttribute('for');
          if (f && !labelFor.has(f)) labelFor.set(f, l);
        }
      }
      label = labelFor.get(el.id) ?? null;
    }
    if (label?.parentNode && textLength(label) <= 80) label.remove();
    el.remove();
  }
}

/** The source names a radio button, a checkbox or a drop-down: only then is the tree walked. */
const CHOICE_SOURCE = /<select\b|type\s*=\s*["']?(?:radio|checkbox)/i;

const COMMENTS = /(?:^|[\s_-])(?:comments?|repl(?:y|ies)|responses?|discussion)(?:$|[\s_-])/i;

/** Items marked up as comments or replies (class or id), or a region that says it holds them. */
function looksLikeComments(region: DomElement): boolean {
  const marked = (el: DomElement) => COMMENTS.test(`${classOf(el)} ${el.id}`);
  if (marked(region)) return true;
  const items = elements(region.querySelectorAll(`[${ITEM_ATTR}]`));
  return items.length > 0 && items.filter(marked).length >= 0.5 * items.length;
}

function containsOrIs(outer: DomElement, inner: DomElement): boolean {
  return outer === inner || containsNode(outer, inner);
}

function containsNode(outer: DomElement, inner: DomElement): boolean {
  for (let p = inner.parentElement; p; p = p.parentElement) if (p === outer) return true;
  return false;
}

/** Chrome inside a content root: landmarks other than main, TOCs, sidebars, hidden elements. */
export function stripNonContent(el: DomElement, hidden = true): DomElement {
  for (const junk of collectUnder(el, isNotContent)) removeWithCaption(junk, el);
  if (hidden) removeHidden(el);
  return el;
}

/**
 * The same chrome, removed from the whole page before Readability and the container search
 * run: neither then spends time on it or scores it. A block holding the page's heading or main
 * landmark, or most of its text, stays (bad markup wraps whole pages in `<nav>` or `<aside>`);
 * the content root is stripped again after.
 */
function stripChrome(doc: DomDocument, body: DomElement): void {
  const total = (body.textContent ?? '').length;
  for (const el of selectAll(doc, body, isNotContent)) {
    if (!body.contains(el)) continue;
    if (el.querySelector('h1, main, article, [role="main"]')) continue;
    if ((el.textContent ?? '').length > 0.5 * total) continue;
    removeWithCaption(el, body);
  }
}

/** Navigation: a `nav`, the navigation role, a table of contents. */
function isNavigation(el: DomElement): boolean {
  return (
    tagOf(el) === 'nav' ||
    el.getAttribute('role') === 'navigation' ||
    el.id === 'toc' ||
    hasAnyClass(el, TOC_CLASSES)
  );
}
const TOC_CLASSES = new Set(['toc', 'table-of-contents', 'theme-doc-toc-mobile']);

/**
 * Removes a block of chrome, and, for navigation, the box around it when all that box has left is a short
 * caption without links or headings (`<div><div>Table of contents</div><nav>…</nav></div>`):
 * the caption names what was removed and would stand alone in the text. `root` and the boxes
 * of a page's main content never go.
 */
function removeWithCaption(junk: DomElement, root: DomElement): void {
  const box = junk.parentElement;
  junk.remove();
  if (!box || box === root || !isNavigation(junk) || !containsNode(root, box)) return;
  const tag = tagOf(box);
  if (tag === 'body' || tag === 'main' || tag === 'article') return;
  const left = textLength(box);
  if (left === 0 || left > CAPTION_MAX_CHARS) return;
  if (box.querySelector('a, h1, h2, h3, h4, h5, h6, img, pre, table')) return;
  box.remove();
}

/**
 * A declared article whose body is built like reference material or a thread: code blocks,
 * data tables or several dated posts. The declaration then says more about the site builder
 * than about the page, and the container rule applies. Read on the container as found,
 * counting only what {@link stripNonContent} would keep, so an article is never cloned.
 */
function builtLikeReference(root: DomElement): boolean {
  const kept = (el: DomElement) => {
    for (let p: DomElement | null = el; p && p !== root; p = p.parentElement) {
      if (isNotContent(p, tagOf(p)) || isHiddenElement(p)) return false;
    }
    return true;
  };
  let pres = 0;
  for (const pre of elements(root.querySelectorAll('pre'))) {
    if (kept(pre) && ++pres >= 2) return true;
  }
  for (const t of elements(root.querySelectorAll('table'))) {
    if (t.querySelector('table') || !kept(t)) continue;
    let rows = 0;
    for (const tr of elements(t.querySelectorAll('tr'))) if (kept(tr) && ++rows >= 4) return true;
  }
  return false;
}

function metaContent(
  doc: DomDocument,
  selector: string,
  hints: SourceHints = {},
  needle?: string,
): string | undefined {
  if (needle !== undefined && !mayContain(hints, needle)) return undefined;
  const v = doc.querySelector(selector)?.getAttribute('content')?.trim();
  return v ? v : undefined;
}

function resolveLinks(root: DomElement, base: string | undefined): void {
  if (base === undefined) return;
  for (const a of elements(root.querySelectorAll('a[href]'))) {
    const href = a.getAttribute('href') ?? '';
    if (href.startsWith('#') || /^[a-z][a-z0-9+.-]*:/i.test(href)) continue;
    try {
      a.setAttribute('href', new URL(href, base).href);
    } catch {
      /* an unparsable href stays as written */
    }
  }
  for (const img of elements(root.querySelectorAll('img[src]'))) {
    const src = img.getAttribute('src') ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(src)) continue;
    try {
      img.setAttribute('src', new URL(src, base).href);
    } catch {
      /* keep */
    }
  }
}

/** The first non-empty title candidate, whitespace-collapsed, NFC. */
function firstTitle(candidates: ReadonlyArray<string | undefined>): string {
  for (const c of candidates) {
    const t = c?.replace(/\s+/g, ' ').trim();
    if (t) return t.normalize('NFC');
  }
  return '';
}

export interface ParsePageOptions {
  /** URL the HTML came from; relative links are resolved against it. */
  readonly url?: string;
}

/**
 * One parse of one page, for classification and then extraction on the same tree
 * (architecture §8: each page is parsed once, classification first). Call `classify()` before
 * `extract()`: extraction rewrites the tree, so a `classify()` after it parses the HTML again.
 */
export interface ParsedPage {
  readonly html: string;
  /** "Not the document" detection ({@link detectNotDocument}) on this parse. */
  classify(options?: DetectOptions): DocumentCheck;
  /** Main-content extraction ({@link extractPage}) on this parse. */
  extract(options?: ExtractOptions): ExtractedPage;
}

/** Parses a page once; see {@link ParsedPage}. Throws EXTRACT_FAILED for input that is not a string. */
export function parsePage(html: string, options: ParsePageOptions = {}): ParsedPage {
  if (typeof html !== 'string') {
    throw new RagfreshError(
      'EXTRACT_FAILED',
      'extractPage needs the HTML as a string; decode bytes with decodeHtml first.',
      {
        scope: 'extract',
      },
    );
  }
  return new Page(html, options.url);
}

class Page implements ParsedPage {
  readonly html: string;
  readonly #url: string | undefined;
  readonly #doc: DomDocument;
  /** Read before anything rewrites the tree: cleaning removes scripts, JSON-LD included. */
  readonly #declaredArticle: boolean;
  readonly #declaredOther: boolean;
  readonly #lang: string | undefined;
  readonly #canonicalUrl: string | undefined;
  #revealed = false;
  #facts: PageFacts | undefined;
  #consumed = false;

  constructor(html: string, url: string | undefined) {
    this.html = html;
    this.#url = url;
    this.#doc = parseDocument(html);
    const hints = { html };
    const ld = ldJson(this.#doc, hints);
    this.#declaredArticle =
      metaContent(this.#doc, 'meta[property="og:type"]', hints, 'og:type')?.toLowerCase() ===
        'article' || ld.some((t) => ARTICLE_LD.test(t));
    this.#declaredOther = ld.some((t) => DISCUSSION_LD.test(t));
    this.#lang = this.#doc.documentElement?.getAttribute('lang')?.trim() || undefined;
    this.#canonicalUrl = mayContain(hints, 'canonical')
      ? this.#doc.querySelector('link[rel="canonical"]')?.getAttribute('href')?.trim() || undefined
      : undefined;
  }

  #reveal(): void {
    if (this.#revealed) return;
    this.#revealed = true;
    revealStreamedContent(this.#doc);
  }

  classify(options: DetectOptions = {}): DocumentCheck {
    if (!this.#facts) {
      if (this.#consumed) {
        const fresh = parseDocument(this.html);
        revealStreamedContent(fresh);
        this.#facts = collectPageFacts(fresh);
      } else {
        this.#reveal();
        this.#facts = collectPageFacts(this.#doc);
      }
    }
    return classifyFacts(this.#facts, options);
  }

  extract(options: ExtractOptions = {}): ExtractedPage {
    if (this.#consumed) return new Page(this.html, this.#url).extract(options);
    this.#consumed = true;
    return extractFrom(this.#doc, this.html, {
      url: options.url ?? this.#url,
      options,
      declaredArticle: this.#declaredArticle,
      declaredOther: this.#declaredOther,
      lang: this.#lang,
      canonicalUrl: this.#canonicalUrl,
      reveal: () => this.#reveal(),
    });
  }
}

/**
 * Extracts the main content of an HTML page as clean Markdown. Pure: no network, no scripts.
 * Throws EXTRACT_FAILED only for input that is not a string. `parsePage(html).extract()` is
 * the same on a parse that classification can share.
 */
export function extractPage(html: string, options: ExtractOptions = {}): ExtractedPage {
  return parsePage(html, options.url === undefined ? {} : { url: options.url }).extract(options);
}

interface ExtractContext {
  readonly url: string | undefined;
  readonly options: ExtractOptions;
  readonly declaredArticle: boolean;
  readonly declaredOther: boolean;
  readonly lang: string | undefined;
  readonly canonicalUrl: string | undefined;
  readonly reveal: () => void;
}

function extractFrom(doc: DomDocument, html: string, cx: ExtractContext): ExtractedPage {
  const { options } = cx;
  const strategy = options.strategy ?? 'auto';
  const declared =
    strategy === 'auto' &&
    (options.articleGuard ?? true) &&
    cx.declaredArticle &&
    !cx.declaredOther;
  const contents = strategy === 'readability' ? [] : prepareTree(doc, html, cx, declared);
  const titles = readTitles(doc, html);
  const rivals = strategy === 'readability' ? NO_RIVALS : findRivals(doc, strategy, declared);
  const chosen = chooseRoot(doc, html, strategy, options, rivals, contents);
  const { markdown, boilerplateRemoved } = renderRoot(chosen.root, strategy, cx);
  const title =
    strategy === 'readability'
      ? (chosen.readabilityTitle ?? titles.ogTitle ?? titles.docTitle ?? '').trim()
      : chosen.readabilityTitle?.replace(/\s+/g, ' ').trim() || titles.fallback;
  const learned = options.titleAffixes ? stripTitleAffixes(title, options.titleAffixes) : title;
  const { lang, canonicalUrl } = cx;
  const { byline } = chosen;
  return {
    title,
    rootTitle: titleRoot(learned, { siteName: titles.siteName, h1: titles.h1 }),
    markdown,
    method: chosen.method,
    ...(lang ? { lang } : {}),
    ...(canonicalUrl ? { canonicalUrl } : {}),
    ...(byline ? { byline: byline.trim() } : {}),
    boilerplateRemoved,
  };
}

/**
 * The tree rewrites every strategy but Readability alone makes before a root is chosen:
 * streamed content revealed, furniture cleaned, content protected from Readability's class
 * rules, child contents marked, choice controls and captions handled, chrome stripped off
 * declared articles. Returns the contents lists Readability will be made to keep.
 */
function prepareTree(
  doc: DomDocument,
  html: string,
  cx: ExtractContext,
  declared: boolean,
): DomElement[] {
  cx.reveal();
  cleanDocument(doc, { unwrapLinkedHeadings: !(cx.declaredArticle && !cx.declaredOther) });
  protectContent(doc);
  const contents = markChildContents(doc, cx.url);
  if (doc.body && CHOICE_SOURCE.test(html)) removeChoiceControls(doc, doc.body);
  // A page whose source never names a caption or credit has no caption class to mark.
  if (/caption|credit/i.test(html)) markCaptions(doc);
  // Off declared articles only: on an article Readability's scoring reads the page around it.
  if (doc.body && !declared) stripChrome(doc, doc.body);
  return contents;
}

interface PageTitles {
  readonly docTitle: string;
  readonly ogTitle: string | undefined;
  readonly siteName: string | undefined;
  readonly h1: string | undefined;
  /** og:title, then the h1, then `<title>`: used when Readability finds none. */
  readonly fallback: string;
}

/** Read before Readability runs: it moves the h1 and the head's metadata is read once. */
function readTitles(doc: DomDocument, html: string): PageTitles {
  const docTitle = doc.head ? doc.title : '';
  const ogTitle = metaContent(doc, 'meta[property="og:title"]', { html }, 'og:title');
  const siteName = metaContent(doc, 'meta[property="og:site_name"]', { html }, 'og:site_name');
  const h1El = doc.querySelector('h1');
  const h1 = h1El ? textOf(h1El) : undefined;
  return { docTitle, ogTitle, siteName, h1, fallback: firstTitle([ogTitle, h1, docTitle]) };
}

/** What may replace Readability's choice: the container and a block of repeated items. */
interface Rivals {
  /** The semantic container, stripped, copied before Readability rewrites the tree. */
  readonly container?: DomElement;
  readonly containerScore: number;
  /** A block of repeated items outside the container, stripped and copied. */
  readonly region?: DomElement;
  readonly regionScore: number;
}

const NO_RIVALS: Rivals = { containerScore: 0, regionScore: 0 };

function findRivals(doc: DomDocument, strategy: ExtractStrategy, declared: boolean): Rivals {
  const picked = pickCandidate(doc);
  const isArticle = declared && !(picked && builtLikeReference(picked.el));
  // Readability rewrites the tree, so the container is copied first, unless the article
  // guard already rules it out.
  const container =
    picked && !isArticle ? stripNonContent(picked.el.cloneNode(true) as DomElement) : undefined;
  const containerScore = container && picked ? score(measure(container, picked.grid)) : 0;
  if (strategy !== 'auto' || isArticle || !doc.body)
    return { container, containerScore, regionScore: 0 };
  // A block of repeated items (posts, rows, cards, sections) outside the container, or on a
  // page without one: of such pages Readability often keeps one post or a one-line intro. Its
  // items are marked before Readability moves them (see chooseRoot).
  const found = findRepeatedRegion(doc.body);
  if (!found || found.score < 500 || (container && picked && containsOrIs(picked.el, found.el)))
    return { container, containerScore, regionScore: 0 };
  const region = stripNonContent(found.el.cloneNode(true) as DomElement);
  return { container, containerScore, region, regionScore: score(measure(region, true)) };
}

interface ChosenRoot {
  readonly root: DomElement | undefined;
  readonly method: ExtractionMethod;
  readonly readabilityTitle?: string;
  readonly byline?: string;
}

/** Readability's choice, the container or the repeated block (docs/extract.md §2 step 4). */
function chooseRoot(
  doc: DomDocument,
  html: string,
  strategy: ExtractStrategy,
  options: ExtractOptions,
  rivals: Rivals,
  contents: readonly DomElement[],
): ChosenRoot {
  const { container } = rivals;
  if (strategy === 'container' && container) return { root: container, method: 'container' };
  const ratio = options.fallbackRatio ?? DEFAULT_FALLBACK_RATIO;
  // Readability drops link lists by their density: a chapter's contents goes back after it.
  const copies = placeContents(doc, contents);
  const article = runReadability(doc);
  const readabilityTitle = article?.title ?? undefined;
  const byline = article?.byline ?? undefined;
  const found = {
    ...(readabilityTitle !== undefined ? { readabilityTitle } : {}),
    ...(byline !== undefined ? { byline } : {}),
  };
  const content = article?.content ?? undefined;
  if (!content) {
    if (container) return { root: container, method: 'container', ...found };
    return { ...bodyRoot(html, strategy), ...found };
  }
  // Readability's choice gets the same chrome stripping as the container path.
  const root = strategy === 'readability' ? content : stripNonContent(content);
  restoreContents(root, copies);
  if (strategy !== 'auto') return { root, method: 'readability', ...found };
  const { region } = rivals;
  // Readability's choice, measured once for both comparisons.
  const kept = container || region ? score(measure(root)) : 0;
  if (container && kept < ratio * rivals.containerScore)
    return { root: container, method: 'container', ...found };
  if (region && kept < ratio * rivals.regionScore) {
    // Readability kept one of the items (a thread's first post, one card): the block is
    // the rest of it. Kept none: the items stand beside its choice, which gives way unless
    // they are the comments under an article.
    const holdsItem = root.querySelector(`[${ITEM_ATTR}]`) !== null;
    if (holdsItem || !looksLikeComments(region))
      return { root: region, method: 'container', ...found };
  }
  // Readability left out an introduction or whole sections the container holds.
  const restored = container ? restoreDroppedProse(root, container) : undefined;
  if (restored) return { root: restored, method: 'container', ...found };
  return { root, method: 'readability', ...found };
}

type ReadabilityArticle = ReturnType<Readability<DomElement>['parse']>;

function runReadability(doc: DomDocument): ReadabilityArticle {
  try {
    return new Readability<DomElement>(doc as never, {
      serializer: (el) => el as unknown as DomElement,
    }).parse();
  } catch {
    // Readability throws on some malformed trees (null parent in _grabArticle); fall through.
    return null;
  }
}

/** Nothing chosen: the body of a fresh parse, stripped. */
function bodyRoot(html: string, strategy: ExtractStrategy): ChosenRoot {
  const body = parseDocument(html).body;
  if (!body) return { root: undefined, method: 'readability' };
  return { root: stripNonContent(body, strategy !== 'readability'), method: 'body' };
}

/** The chosen root's last furniture removed, links resolved, as normalised Markdown. */
function renderRoot(
  root: DomElement | undefined,
  strategy: ExtractStrategy,
  cx: ExtractContext,
): { markdown: string; boilerplateRemoved: number } {
  if (root && strategy !== 'readability') {
    removePromoBlocks(root);
    removePostClutter(root);
    removeCaptions(root);
    removeDatelines(root);
  }
  if (root) resolveLinks(root, cx.url);
  // The root is this call's own (Readability's output, a copy, or a fresh parse's body).
  const markdown = root ? normalizeMarkdown(toMarkdown(root, { consume: true })) : '';
  if (!cx.options.boilerplate) return { markdown, boilerplateRemoved: 0 };
  const stripped = cx.options.boilerplate.strip(markdown);
  return { markdown: stripped.markdown, boilerplateRemoved: stripped.removed };
}
