import { type DomDocument, type DomElement, type DomNode, textLength } from './dom.js';
import { isSpace } from './whitespace.js';

/**
 * Whole-page element lookups without a whole-tree walk each.
 *
 * linkedom keeps a document as one linked list of every node (elements, their attributes,
 * text, end markers), and each `querySelectorAll` compiles its selector and walks that whole
 * list. The cleaning rules that run before Readability ask about thirty such page-wide
 * questions per page; each of those walks cost more than the question. Here the page's
 * elements are listed once, in document order, with their tag names, and every question
 * is a filter over that list.
 *
 * The list is a snapshot. Removing elements is safe: a removed element, or anything inside
 * one, is no longer under the root and is skipped. Elements created or moved in after the
 * snapshot are not in it, so code that inserts elements calls {@link invalidateElements}.
 */
/**
 * An element's tag name in lower case, as selectors match it. The parser gives lower case;
 * elements created by name keep the case they were created with (Readability renames
 * `<font>` to `SPAN` and `<div>` to `P`), and selectors match those case-insensitively too.
 */
export function tagOf(el: DomElement): string {
  const name = el.localName;
  const c = name.charCodeAt(0);
  return c >= 65 && c <= 90 ? name.toLowerCase() : name;
}

interface Snapshot {
  readonly els: readonly DomElement[];
  /** Lower-case tag name of each element ({@link tagOf}). */
  readonly tags: readonly string[];
}

const snapshots = new WeakMap<DomDocument, Snapshot>();

/**
 * Calls `visit` for each element below `parent` in document order, walking element children
 * only (not the text and attribute nodes between them). As querySelectorAll does, a
 * `<template>`'s content is not part of the page.
 */
function eachElement(
  parent: DomElement | DomDocument,
  visit: (el: DomElement, tag: string) => void,
): void {
  for (let el = parent.firstElementChild; el !== null; el = el.nextElementSibling) {
    const tag = tagOf(el);
    visit(el, tag);
    if (tag !== 'template') eachElement(el, visit);
  }
}

function take(doc: DomDocument): Snapshot {
  const els: DomElement[] = [];
  const tags: string[] = [];
  eachElement(doc, (el, tag) => {
    els.push(el);
    tags.push(tag);
  });
  return { els, tags };
}

function snapshotOf(doc: DomDocument): Snapshot {
  let s = snapshots.get(doc);
  if (!s) {
    s = take(doc);
    snapshots.set(doc, s);
  }
  return s;
}

/** Forgets the page's element list; the next lookup lists the page again. */
export function invalidateElements(doc: DomDocument): void {
  snapshots.delete(doc);
}

/**
 * Whether elements are still descendants of `root` (not `root` itself), each ancestor looked
 * at once per question: what is known of a parent is remembered for its other children.
 */
class Within {
  readonly #root: DomNode;
  readonly #yes = new Set<DomNode>();
  readonly #no = new Set<DomNode>();
  constructor(root: DomNode) {
    this.#root = root;
  }
  has(el: DomElement): boolean {
    const path: DomNode[] = [];
    let ok: boolean;
    for (let p = el.parentNode; ; p = p.parentNode) {
      if (p === null || this.#no.has(p)) {
        ok = false;
        break;
      }
      if (p === this.#root || this.#yes.has(p)) {
        ok = true;
        break;
      }
      path.push(p);
    }
    const known = ok ? this.#yes : this.#no;
    for (const q of path) known.add(q);
    return ok;
  }
}

/** Test for {@link selectAll}: the element and its lower-case tag name. */
export type ElementTest = (el: DomElement, tag: string) => boolean;

/**
 * The elements under `root` (the document or an element of it, `root` itself excluded) that
 * pass `test`, in document order: what `root.querySelectorAll(selector)` returns, with the
 * selector written as a function.
 */
export function selectAll(doc: DomDocument, root: DomNode, test: ElementTest): DomElement[] {
  const { els, tags } = snapshotOf(doc);
  const within = new Within(root);
  const out: DomElement[] = [];
  for (let i = 0; i < els.length; i++) {
    const el = els[i]!;
    if (test(el, tags[i]!) && within.has(el)) out.push(el);
  }
  return out;
}

/** The first element {@link selectAll} would return, or null. */
export function selectFirst(doc: DomDocument, root: DomNode, test: ElementTest): DomElement | null {
  const { els, tags } = snapshotOf(doc);
  const within = new Within(root);
  for (let i = 0; i < els.length; i++) {
    const el = els[i]!;
    if (test(el, tags[i]!) && within.has(el)) return el;
  }
  return null;
}

/** A test matching any of the given tag names (lower case). */
export function tagIn(...names: string[]): ElementTest {
  const set = new Set(names);
  return (_el, tag) => set.has(tag);
}

/**
 * The elements under `root` that pass `test`, found by one walk of `root`'s element children
 * (not the text and attribute nodes between them): for subtrees, where a snapshot of the page
 * would not pay off.
 */
export function collectUnder(root: DomElement, test: ElementTest): DomElement[] {
  const out: DomElement[] = [];
  eachElement(root, (el, tag) => {
    if (test(el, tag)) out.push(el);
  });
  return out;
}

/** Whether the class attribute holds any of the given names as a token (`.a, .b`). */
export function hasAnyClass(el: DomElement, names: ReadonlySet<string>): boolean {
  const cls = el.getAttributeNode('class')?.value;
  if (!cls) return false;
  // A substring search per name, then its token boundaries: no split per element.
  for (const name of names) {
    for (let at = cls.indexOf(name); at >= 0; at = cls.indexOf(name, at + 1)) {
      const end = at + name.length;
      if (
        (at === 0 || isSpace(cls.charCodeAt(at - 1))) &&
        (end === cls.length || isSpace(cls.charCodeAt(end)))
      )
        return true;
    }
  }
  return false;
}

/** `el.closest(selector)` with the selector written as a test: `el` itself, then its ancestors. */
export function closestWhere(el: DomElement, test: ElementTest): DomElement | null {
  for (let p: DomElement | null = el; p !== null; p = p.parentElement)
    if (test(p, tagOf(p))) return p;
  return null;
}

/** Headings, `h1` to `h6`. */
export const isHeading: ElementTest = tagIn('h1', 'h2', 'h3', 'h4', 'h5', 'h6');
/** Links. */
export const isLink: ElementTest = tagIn('a');
/** The page-chrome landmarks: `nav, header, footer, aside`. */
export const isChrome: ElementTest = tagIn('nav', 'header', 'footer', 'aside');

/** Characters of link text under `el` (each link's collapsed text). */
export function linkTextLength(el: DomElement): number {
  return textLengthOf(collectUnder(el, isLink));
}

/** Collapsed characters of the given elements together (links already collected, say). */
export function textLengthOf(els: readonly DomElement[]): number {
  let n = 0;
  for (const el of els) n += textLength(el);
  return n;
}
