import { classOf, type DomDocument, type DomElement, textLength } from './dom.js';
import {
  closestWhere,
  collectUnder,
  type ElementTest,
  invalidateElements,
  isChrome,
  linkTextLength,
  selectAll,
  tagIn,
} from './select.js';

/** Attribute that keeps a heading's own level through Readability (which renames h1 to h2). */
export const LEVEL_ATTR = 'data-rf-level';

const HIDDEN_STYLE =
  /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)/i;

/** Hidden by the `hidden` attribute or an inline `display: none` / `visibility: hidden`. */
export function isHiddenElement(el: DomElement): boolean {
  return el.hasAttribute('hidden') || HIDDEN_STYLE.test(el.getAttribute('style') ?? '');
}

function unhide(el: DomElement): void {
  el.removeAttribute('hidden');
  el.removeAttribute('aria-hidden');
  const style = el.getAttribute('style');
  if (style !== null) el.setAttribute('style', style.replace(new RegExp(HIDDEN_STYLE, 'gi'), ';'));
}

/** `[hidden], [style*="none"], [style*="hidden"]`: what may hide an element, cheaply tested. */
const mayBeHidden: ElementTest = (el) => {
  if (el.hasAttribute('hidden')) return true;
  const style = el.getAttribute('style');
  return style !== null && (style.includes('none') || style.includes('hidden'));
};

/**
 * Content a server sends hidden on purpose, for a script to put in place. React streaming SSR
 * renders `<template id="B:n">` placeholders in the page and the finished subtrees later in
 * `<div hidden id="S:n">`, swapped in by `$RC`: do the swap. Failing that, a hidden element
 * outside the page's chrome that holds most of the page's text is the document, not chrome.
 * Runs on the freshly parsed tree, before classification counts text.
 */
export function revealStreamedContent(doc: DomDocument): number {
  const body = doc.body;
  if (!body) return 0;
  let revealed = 0;
  let candidates = selectAll(doc, body, mayBeHidden);
  const segments = candidates.filter((el) => el.hasAttribute('hidden') && el.id.startsWith('S:'));
  for (const segment of segments) {
    const n = segment.id.slice(2);
    const placeholder = doc.querySelector(`template[id="B:${n}"], [id="B:${n}"]`);
    unhide(segment);
    if (placeholder?.parentNode && !placeholder.contains(segment)) {
      const wrapper = doc.createElement('div');
      while (segment.firstChild) wrapper.appendChild(segment.firstChild);
      placeholder.replaceWith(wrapper);
      segment.remove();
    }
    revealed++;
  }
  if (segments.length > 0) {
    invalidateElements(doc);
    candidates = selectAll(doc, body, mayBeHidden);
  }
  const hidden = candidates.filter(
    (el) =>
      isHiddenElement(el) && !(el.parentElement && closestWhere(el.parentElement, mayBeHidden)),
  );
  const lengths = hidden.map((el) => (el.textContent ?? '').length);
  // Cheap first: only a hidden block of some size is worth measuring the page for.
  if (!lengths.some((n) => n >= 500)) return revealed;
  const total = (body.textContent ?? '').length;
  const visible = total - lengths.reduce((x, y) => x + y, 0);
  hidden.forEach((el, i) => {
    const len = lengths[i]!;
    // Only when the visible page is next to nothing without it: hidden related posts beside a
    // real article stay hidden (and are removed from the content root later).
    if (
      len >= 500 &&
      visible < 0.25 * len &&
      !el.closest('nav, header, footer, aside, dialog, [role="dialog"]')
    ) {
      unhide(el);
      revealed++;
    }
  });
  return revealed;
}

/**
 * A CSS utility class (Tailwind and the like: `overflow-hidden`, `scroll-mt-20`, `md:hidden`,
 * `w-1/2`) describes looks, not what the element is; Readability's class patterns read
 * `hidden`, `scroll`, `extra` in such names as boilerplate. Recognised by shape: a variant
 * prefix (`md:`), brackets, a numeric or scale value at the end (`mt-20`, `w-1/2`, `h-full`),
 * or a scrolling/overflow property as the first word (`overflow-hidden`, `scroll-smooth`; the
 * ones Readability misreads — `text-description` is a name, not a utility). Component names with a digit
 * inside (`layout__2-sidebars`) are not utilities: their words still mean something.
 */
const UTILITY_TOKEN =
  /^[a-z0-9-]+:|[[\]]|^-?[a-z]+(?:-[a-z]+)*-(?:\d+(?:\.\d+)?|\d+\/\d+|px|full|auto|screen|none)$|^-?(?:overflow|overscroll|scroll|snap|visibility|whitespace)-[a-z]/;

/** Elements whose whole job is content: their classes are never a reason to drop them. */
const CONTENT_TAGS = new Set([
  'PRE',
  'CODE',
  'KBD',
  'SAMP',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'TABLE',
  'THEAD',
  'TBODY',
  'TR',
  'TD',
  'TH',
  'DL',
  'DT',
  'DD',
  'FIGURE',
  'FIGCAPTION',
  'BLOCKQUOTE',
]);

export interface ProtectStats {
  utilityTokens: number;
  contentElements: number;
  panels: number;
  /** In-text `<aside>` boxes (notes, tips, warnings) kept as content. */
  callouts: number;
}

/** Elements of running text: an `<aside>` beside one of them sits in the flow of the text. */
const FLOW_TAGS = new Set([
  'P',
  'PRE',
  'UL',
  'OL',
  'DL',
  'TABLE',
  'BLOCKQUOTE',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
]);
const NOT_CALLOUT_PARTS =
  'nav, form, iframe, input, select, textarea, aside, blockquote, article, header, footer, img, picture, video, figure';
const CALLOUT_MIN_CHARS = 20;
const CALLOUT_MAX_CHARS = 1500;
const CALLOUT_MAX_LINK_SHARE = 0.3;

/**
 * An `<aside>` in the flow of the text: a note, tip or warning box between paragraphs
 * (Starlight, many themes). Readability deletes every `<aside>` and the chrome rules treat it as
 * a sidebar; in documentation it often holds the one sentence that matters ("this deletes your
 * data"). Kept when it stands among paragraphs, code or lists, outside the page's landmarks, and
 * is short written text (a paragraph, list or code inside; no quote, link preview, form or
 * nested navigation; links under a third of its text; no explicit `complementary` role). The
 * page's own sidebars are beside the content, not inside it.
 */
function isCallout(aside: DomElement): boolean {
  const parent = aside.parentElement;
  if (!parent || closestWhere(parent, isChrome)) return false;
  const role = aside.getAttribute('role');
  if (role !== null && role !== 'note') return false;
  let inFlow = false;
  for (let sib = parent.firstElementChild; sib; sib = sib.nextElementSibling)
    if (sib !== aside && FLOW_TAGS.has(sib.nodeName)) {
      inFlow = true;
      break;
    }
  if (!inFlow) return false;
  // A quote of another post (a blockquote inside), a link preview (a header, an article or an
  // image: forum software's "onebox"), a form or a menu is not a note.
  if (aside.querySelector(NOT_CALLOUT_PARTS)) return false;
  // A box of written text holds a paragraph, a list or code; a bare "Last update: …" line does not.
  if (!aside.querySelector('p, li, pre')) return false;
  const text = textLength(aside);
  if (text < CALLOUT_MIN_CHARS || text > CALLOUT_MAX_CHARS) return false;
  return linkTextLength(aside) <= CALLOUT_MAX_LINK_SHARE * text;
}

/** Renames in-text callout `<aside>`s to `<div role="note">` (see {@link isCallout}). */
function keepCallouts(doc: DomDocument, body: DomElement): number {
  let kept = 0;
  for (const aside of selectAll(doc, body, tagIn('aside'))) {
    if (!isCallout(aside)) continue;
    const box = doc.createElement('div');
    for (const { name, value } of Array.from(aside.attributes))
      if (name !== 'role') box.setAttribute(name, value);
    box.setAttribute('role', 'note');
    while (aside.firstChild) box.appendChild(aside.firstChild);
    aside.replaceWith(box);
    kept++;
  }
  if (kept > 0) invalidateElements(doc);
  return kept;
}

/**
 * Protects real content from Readability's class-name rules, in place, after cleaning:
 * - class and id of code, headings, tables, definition lists, figures and quotes (and of
 *   everything inside code and tables) are dropped, so `nextra-code` or `scroll-mt-4` on an
 *   `<h2>` no longer reads as "extra" / "scroll";
 * - CSS utility tokens are dropped from every class list (`hidden` next to a responsive
 *   display token such as `md:block` goes too: the element shows on a wide screen);
 * - collapsed panels (the target of an `aria-controls` toggle, or a "read more" body next to
 *   its toggle button) are unhidden and lose their `hidden`-like classes;
 * - each heading's level is pinned as `data-rf-level`.
 */
export function protectContent(doc: DomDocument): ProtectStats {
  const stats: ProtectStats = {
    utilityTokens: 0,
    contentElements: 0,
    panels: 0,
    callouts: 0,
  };
  const body = doc.body;
  if (!body) return stats;
  stats.callouts = keepCallouts(doc, body);
  // One walk for every id a toggle names, not one whole-tree query per toggle.
  let byId: Map<string, DomElement> | undefined;
  for (const toggle of selectAll(doc, body, (el) => el.hasAttribute('aria-controls'))) {
    for (const id of (toggle.getAttribute('aria-controls') ?? '').split(/\s+/)) {
      if (id === '') continue;
      if (!byId) {
        byId = new Map();
        for (const el of selectAll(doc, doc, (e) => e.hasAttribute('id')))
          if (!byId.has(el.id)) byId.set(el.id, el);
      }
      const panel = byId.get(id);
      if (!panel || closestWhere(panel, isChrome) || panel.nodeName === 'NAV') continue;
      if (textLength(panel) < 40) continue;
      unhide(panel);
      panel.className = (panel.className ?? '').replace(/\S*(?:hidden|collapsed?)\S*/gi, '');
      stats.panels++;
    }
  }
  // Tab panels and other alternatives (a hidden sibling shaped like a visible one): one is
  // shown at a time, all of them are the document (code samples per language, say).
  const panelOrHidden: ElementTest = (el) =>
    el.hasAttribute('hidden') ||
    (el.getAttribute('style') ?? '').includes('none') ||
    el.getAttribute('role') === 'tabpanel';
  for (const el of selectAll(doc, body, panelOrHidden)) {
    if (el.getAttribute('role') !== 'tabpanel' && !(isHiddenElement(el) && hasVisibleTwin(el)))
      continue;
    if (closestWhere(el, isChrome)) continue;
    unhide(el);
    stats.panels++;
  }
  const seenClasses = new Map<string, { dropped: number; kept: string }>();
  const content = new Set<DomElement>();
  for (const block of selectAll(doc, body, tagIn('pre', 'code', 'table'))) {
    if (content.has(block)) continue;
    for (const inner of collectUnder(block, hasClassOrId)) content.add(inner);
  }
  for (const el of selectAll(
    doc,
    body,
    (e, tag) =>
      hasClassOrId(e, tag) ||
      (tag.length === 2 && tag[0] === 'h' && tag[1]! >= '1' && tag[1]! <= '6'),
  )) {
    const tag = el.nodeName;
    if (tag.length === 2 && tag[0] === 'H' && tag[1]! >= '1' && tag[1]! <= '6')
      el.setAttribute(LEVEL_ATTR, tag.charAt(1));
    if (CONTENT_TAGS.has(tag) || content.has(el)) {
      if (el.hasAttribute('class') || el.hasAttribute('id')) stats.contentElements++;
      el.removeAttribute('class');
      // An id is an anchor target here (#section-2), never a reason to drop the element.
      el.removeAttribute('id');
      continue;
    }
    const cls = classOf(el);
    if (!cls) continue;
    // Class lists repeat across a page (every card, every list item): decide each once.
    let decided = seenClasses.get(cls);
    if (!decided) {
      const tokens = cls.split(/\s+/).filter((t) => t !== '');
      const responsive = tokens.some((t) =>
        /^[a-z0-9]+:(?:block|flex|grid|inline|table|contents)/.test(t),
      );
      const kept = tokens.filter(
        (t) => !UTILITY_TOKEN.test(t) && !(responsive && /^(?:hidden|invisible)$/.test(t)),
      );
      decided = { dropped: tokens.length - kept.length, kept: kept.join(' ') };
      seenClasses.set(cls, decided);
    }
    if (decided.dropped > 0) {
      stats.utilityTokens += decided.dropped;
      el.setAttribute('class', decided.kept);
    }
  }
  return stats;
}

const hasClassOrId: ElementTest = (el) => el.hasAttribute('class') || el.hasAttribute('id');

function hasVisibleTwin(el: DomElement): boolean {
  const cls = classOf(el);
  if (cls.trim() === '') return false;
  const parent = el.parentElement;
  if (!parent) return false;
  for (const sib of Array.from(parent.children)) {
    if (sib !== el && sib.nodeName === el.nodeName && classOf(sib) === cls && !isHiddenElement(sib))
      return true;
  }
  return false;
}

/** Removes CSS- or attribute-hidden elements from an extracted root (chrome kept out of view). */
export function removeHidden(root: DomElement): number {
  let removed = 0;
  for (const el of collectUnder(
    root,
    (e) => mayBeHidden(e, '') || e.getAttribute('aria-hidden') === 'true',
  )) {
    if (!el.parentNode) continue;
    if (el.getAttribute('aria-hidden') === 'true' || isHiddenElement(el)) {
      el.remove();
      removed++;
    }
  }
  return removed;
}
