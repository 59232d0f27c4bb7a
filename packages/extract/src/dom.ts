import { parseHTML } from 'linkedom';
import { collapseSpace, isSpace } from './whitespace.js';

/**
 * The slice of the DOM this package touches. linkedom's own typings need the DOM lib, which
 * this workspace does not load (core stays runtime-neutral), so the shape is declared here.
 */
export interface DomNode {
  readonly nodeType: number;
  readonly nodeName: string;
  readonly parentNode: DomNode | null;
  readonly parentElement: DomElement | null;
  readonly childNodes: ArrayLike<DomNode>;
  readonly firstChild: DomNode | null;
  readonly nextSibling: DomNode | null;
  readonly previousSibling: DomNode | null;
  textContent: string | null;
  remove(): void;
  cloneNode(deep?: boolean): DomNode;
  appendChild(node: DomNode): DomNode;
  insertBefore(node: DomNode, ref: DomNode | null): DomNode;
  replaceWith(...nodes: DomNode[]): void;
}

export interface DomElement extends DomNode {
  readonly tagName: string;
  readonly localName: string;
  readonly children: ArrayLike<DomElement>;
  readonly firstElementChild: DomElement | null;
  readonly nextElementSibling: DomElement | null;
  id: string;
  className: string;
  innerHTML: string;
  readonly outerHTML: string;
  readonly attributes: ArrayLike<{ readonly name: string; readonly value: string }>;
  getAttribute(name: string): string | null;
  getAttributeNode(name: string): { readonly value: string } | null;
  setAttribute(name: string, value: string): void;
  removeAttribute(name: string): void;
  hasAttribute(name: string): boolean;
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
  getElementsByTagName(name: string): ArrayLike<DomElement>;
  closest(selector: string): DomElement | null;
  contains(other: DomNode | null): boolean;
  matches(selector: string): boolean;
}

export interface DomDocument extends DomNode {
  readonly documentElement: DomElement;
  readonly head: DomElement | null;
  readonly body: DomElement | null;
  readonly firstElementChild: DomElement | null;
  title: string;
  createElement(tag: string): DomElement;
  createTextNode(text: string): DomNode;
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
  getElementsByTagName(name: string): ArrayLike<DomElement>;
}

export const ELEMENT_NODE = 1;
export const TEXT_NODE = 3;
export const CDATA_SECTION_NODE = 4;

/** Parses an HTML string into a linkedom document (no scripts run, no network). */
export function parseDocument(html: string): DomDocument {
  // In HTML content `<![CDATA[` opens a bogus comment that ends at the next `>`; linkedom
  // would read the rest of the page as character data (seen on XenForo forums).
  const document = parseRaw(
    html.includes('<![CDATA[') ? html.replace(/<!\[CDATA\[[^>]*>/g, '') : html,
  );
  // linkedom builds the tree as written, not as the HTML5 tree builder would: with no <html>
  // tag, elements before <head>, or a nested <html>, `document.body` misses the real body and
  // Readability sees an empty page. Rebuild such documents around the body holding the text.
  // The common case, decided without a tree walk: one <body> tag in the source and a body
  // with content where the document expects it.
  const current = document.body;
  if (
    current?.firstChild &&
    current.parentNode === document.documentElement &&
    (html.match(/<body[\s>]/gi) ?? []).length === 1
  )
    return document;
  const bodies = Array.from(document.querySelectorAll('body'));
  if (bodies.length === 0) return document;
  let real = bodies[0]!;
  for (const b of bodies)
    if ((b.textContent ?? '').length > (real.textContent ?? '').length) real = b;
  if (
    current === real ||
    (current && (current.textContent ?? '').length >= (real.textContent ?? '').length)
  ) {
    return document;
  }
  const headParts = Array.from(document.querySelectorAll('title, meta, link, base'))
    .filter((el) => !el.closest('body'))
    .map((el) => el.outerHTML)
    .join('');
  const lang = document.querySelector('html[lang]')?.getAttribute('lang');
  return parseRaw(
    `<!DOCTYPE html><html${lang ? ` lang="${lang.replace(/"/g, '')}"` : ''}><head>${headParts}</head>${real.outerHTML}</html>`,
  );
}

function parseRaw(html: string): DomDocument {
  const { document } = parseHTML(html) as unknown as { document: DomDocument };
  return document;
}

export function isElement(node: DomNode | null | undefined): node is DomElement {
  return node !== null && node !== undefined && node.nodeType === ELEMENT_NODE;
}

/** Elements of a live or static collection as an array, so removal while iterating is safe. */
export function elements(list: ArrayLike<DomElement>): DomElement[] {
  return Array.from(list);
}

/**
 * The class attribute as written. linkedom's `className` and `getAttribute('class')` build a
 * token set and join it on every read; the attribute node is the same string without that.
 */
export function classOf(el: DomElement): string {
  return el.getAttributeNode('class')?.value ?? '';
}

/** Where a collapsed-length count stands: characters so far, and a space pending before the next one. */
interface CollapsedCount {
  n: number;
  gap: boolean;
}

/** Adds `s` to a collapsed-length count (as {@link textOf} would collapse and trim it). */
function countCollapsed(s: string, at: CollapsedCount): void {
  let { n, gap } = at;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c <= 32 || c >= 0xa0) && isSpace(c)) {
      if (n > 0) gap = true;
      continue;
    }
    if (gap) {
      n++;
      gap = false;
    }
    n++;
  }
  at.n = n;
  at.gap = gap;
}

/** `textOf(node).length`, counted without building the collapsed string. */
export function textLength(node: DomNode): number {
  const at = { n: 0, gap: false };
  countCollapsed(node.textContent ?? '', at);
  return at.n;
}

/**
 * Calls `take` with the text of each text node under `node`, in document order, until it
 * returns false; true when every text node was taken.
 */
function eachText(node: DomNode, take: (text: string) => boolean): boolean {
  let n = node.firstChild;
  while (n !== null) {
    const type = n.nodeType;
    if (type === TEXT_NODE || type === CDATA_SECTION_NODE) {
      if (!take(n.textContent ?? '')) return false;
    } else if (type === ELEMENT_NODE && n.firstChild !== null) {
      n = n.firstChild;
      continue;
    }
    // Next in document order without entering n: its sibling, or an ancestor's sibling.
    let next: DomNode | null = n.nextSibling;
    for (let up: DomNode | null = n; next === null; ) {
      up = up.parentNode;
      if (up === null || up === node) return true;
      next = up.nextSibling;
    }
    n = next;
  }
  return true;
}

/**
 * `node.textContent` when that is at most `max` characters long, else undefined: the text
 * nodes are read in document order and the walk stops once `max` is passed, so a rule that
 * only looks at short elements never builds the text of a long one (a page's outer boxes).
 */
export function shortTextContent(node: DomNode, max: number): string | undefined {
  let text = '';
  const whole = eachText(node, (t) => {
    text += t;
    return text.length <= max;
  });
  return whole ? text : undefined;
}

/**
 * `textOf(node)` when that is at most `max` characters long, else undefined, read as
 * {@link shortTextContent} reads: the limit is on the collapsed text, so indentation in the
 * source does not count against it, and the walk stops once the collapsed text passes it.
 */
export function shortText(node: DomNode, max: number): string | undefined {
  let raw = '';
  const at = { n: 0, gap: false };
  const ok = eachText(node, (t) => {
    raw += t;
    countCollapsed(t, at);
    return at.n <= max;
  });
  return ok ? collapseSpace(raw) : undefined;
}

/** Whitespace-collapsed text of a node. */
export function textOf(node: DomNode): string {
  return collapseSpace(node.textContent ?? '');
}
