import { Readability } from '@mozilla/readability';
import { RagfreshError } from '@ragfresh/core';
import type { BoilerplateModel } from './boilerplate.js';
import { cleanDocument, normalizeMarkdown } from './clean.js';
import { type DomDocument, type DomElement, elements, parseDocument, textOf } from './dom.js';
import { toMarkdown } from './markdown.js';

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
}

export interface ExtractedPage {
  readonly title: string;
  /** Cleaned, normalised Markdown of the main content. */
  readonly markdown: string;
  readonly method: ExtractionMethod;
  readonly lang?: string;
  readonly canonicalUrl?: string;
  readonly byline?: string;
  /** Blocks removed by the boilerplate model. */
  readonly boilerplateRemoved: number;
}

export const DEFAULT_FALLBACK_RATIO = 0.5;

const ARTICLE_LD =
  /"@type"\s*:\s*(?:"(?:News|Blog|Scholarly|Tech|Report|Opinion|Analysis|Review)?Article"|"BlogPosting"|"LiveBlogPosting"|\[[^\]]*"(?:News|Blog)?Article")/;

/** The page declares itself an article (og:type or JSON-LD): Readability's home ground. */
export function declaresArticle(doc: DomDocument): boolean {
  const og = doc
    .querySelector('meta[property="og:type"]')
    ?.getAttribute('content')
    ?.trim()
    .toLowerCase();
  if (og === 'article') return true;
  for (const s of elements(doc.querySelectorAll('script[type="application/ld+json"]'))) {
    if (ARTICLE_LD.test(s.textContent ?? '')) return true;
  }
  return false;
}

const CONTAINER_SELECTORS = [
  'main',
  '[role="main"]',
  'article',
  '.theme-doc-markdown',
  '.rst-content .document',
  '.md-content',
  '.devsite-article-body',
  '.markdown-body',
  '#main-content',
  '#content',
];
const NOT_CONTENT =
  'nav, aside, footer, [role="navigation"], [role="complementary"], [role="contentinfo"], [role="banner"], [role="search"], .toc, #toc, .table-of-contents, .sidebar, .pagination, .pagination-nav, .theme-doc-toc-mobile, .theme-doc-footer, .feedback, .page-feedback, header nav, dialog, [aria-hidden="true"]';

interface Candidate {
  readonly el: DomElement;
  readonly text: number;
  readonly linkText: number;
}

function measure(el: DomElement): Candidate {
  const text = textOf(el).length;
  let linkText = 0;
  for (const a of elements(el.querySelectorAll('a'))) linkText += textOf(a).length;
  return { el, text, linkText: Math.min(linkText, text) };
}

const score = (c: Candidate) => c.text - c.linkText;

/** The semantic container with the most non-link text; a tighter one wins when nearly as rich. */
export function pickContainer(doc: DomDocument): DomElement | undefined {
  const seen = new Set<DomElement>();
  const candidates: Candidate[] = [];
  for (const selector of CONTAINER_SELECTORS) {
    for (const el of elements(doc.querySelectorAll(selector))) {
      if (seen.has(el)) continue;
      seen.add(el);
      const c = measure(el);
      if (c.text >= 200 && c.linkText / c.text < 0.5) candidates.push(c);
    }
  }
  if (candidates.length === 0) return undefined;
  candidates.sort((a, b) => score(b) - score(a));
  let best = candidates[0]!;
  for (const c of candidates) {
    if (c !== best && score(c) >= 0.85 * score(best) && containsNode(best.el, c.el)) best = c;
  }
  return best.el;
}

function containsNode(outer: DomElement, inner: DomElement): boolean {
  for (let p = inner.parentElement; p; p = p.parentElement) if (p === outer) return true;
  return false;
}

function stripNonContent(el: DomElement): DomElement {
  for (const junk of elements(el.querySelectorAll(NOT_CONTENT))) junk.remove();
  return el;
}

function metaContent(doc: DomDocument, selector: string): string | undefined {
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

function titleOf(doc: DomDocument, readabilityTitle: string | undefined): string {
  const og = metaContent(doc, 'meta[property="og:title"]');
  const h1 = doc.querySelector('h1');
  const candidates = [
    readabilityTitle,
    og,
    h1 ? textOf(h1) : undefined,
    doc.head ? doc.title : undefined,
  ];
  for (const c of candidates) {
    const t = c?.replace(/\s+/g, ' ').trim();
    if (t) return t.normalize('NFC');
  }
  return '';
}

/**
 * Extracts the main content of an HTML page as clean Markdown. Pure: no network, no scripts.
 * Throws EXTRACT_FAILED only for input that is not a string.
 */
export function extractPage(html: string, options: ExtractOptions = {}): ExtractedPage {
  if (typeof html !== 'string') {
    throw new RagfreshError(
      'EXTRACT_FAILED',
      'extractPage needs the HTML as a string; decode bytes with decodeHtml first.',
      {
        scope: 'extract',
      },
    );
  }
  const strategy = options.strategy ?? 'auto';
  const ratio = options.fallbackRatio ?? DEFAULT_FALLBACK_RATIO;
  const doc = parseDocument(html);
  const lang = doc.documentElement?.getAttribute('lang')?.trim() || undefined;
  const canonicalUrl =
    doc.querySelector('link[rel="canonical"]')?.getAttribute('href')?.trim() || undefined;
  // Read before cleaning: cleanDocument removes scripts, JSON-LD included.
  const isArticle = strategy === 'auto' && (options.articleGuard ?? true) && declaresArticle(doc);
  if (strategy !== 'readability') cleanDocument(doc);

  let container: DomElement | undefined;
  let containerScore = 0;
  if (strategy === 'container' || (strategy === 'auto' && !isArticle)) {
    const picked = pickContainer(doc);
    if (picked) {
      container = stripNonContent(picked.cloneNode(true) as DomElement);
      containerScore = score(measure(container));
    }
  }

  let method: ExtractionMethod = 'readability';
  let root: DomElement | undefined;
  let readabilityTitle: string | undefined;
  let byline: string | undefined;
  const docTitle = doc.head ? doc.title : '';
  const ogTitle = metaContent(doc, 'meta[property="og:title"]');
  const fallbackTitle = titleOf(doc, undefined);
  if (strategy === 'container' && container) {
    root = container;
    method = 'container';
  } else {
    let article: ReturnType<Readability<DomElement>['parse']> = null;
    try {
      article = new Readability<DomElement>(doc as never, {
        serializer: (el) => el as unknown as DomElement,
      }).parse();
    } catch {
      // Readability throws on some malformed trees (null parent in _grabArticle); fall through.
      article = null;
    }
    readabilityTitle = article?.title ?? undefined;
    byline = article?.byline ?? undefined;
    const content = article?.content ?? undefined;
    if (content) {
      root = content;
      if (container && strategy === 'auto') {
        const kept = score(measure(content));
        if (kept < ratio * containerScore) {
          root = container;
          method = 'container';
        }
      }
    } else if (container) {
      root = container;
      method = 'container';
    }
  }
  if (!root) {
    const body = parseDocument(html).body;
    if (body) {
      root = stripNonContent(body);
      method = 'body';
    }
  }
  if (root) resolveLinks(root, options.url);
  let markdown = root ? normalizeMarkdown(toMarkdown(root)) : '';
  let boilerplateRemoved = 0;
  if (options.boilerplate) {
    const stripped = options.boilerplate.strip(markdown);
    markdown = stripped.markdown;
    boilerplateRemoved = stripped.removed;
  }
  const title =
    strategy === 'readability'
      ? (readabilityTitle ?? ogTitle ?? docTitle ?? '').trim()
      : readabilityTitle?.replace(/\s+/g, ' ').trim() || fallbackTitle;
  return {
    title,
    markdown,
    method,
    ...(lang ? { lang } : {}),
    ...(canonicalUrl ? { canonicalUrl } : {}),
    ...(byline ? { byline: byline.trim() } : {}),
    boilerplateRemoved,
  };
}
