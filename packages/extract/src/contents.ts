import { type DomDocument, type DomElement, textLength } from './dom.js';
import {
  collectUnder,
  isChrome,
  isHeading,
  isLink,
  linkTextLength,
  selectAll,
  tagOf,
  textLengthOf,
} from './select.js';

/** Marks a table of contents that lists the pages below this one: content, not chrome. */
export const CONTENTS_ATTR = 'data-rf-contents';

const LISTS = new Set(['ul', 'ol', 'dl']);
const NAV_ROLES = new Set([
  'navigation',
  'complementary',
  'banner',
  'contentinfo',
  'menu',
  'menubar',
]);
/**
 * A caption over a list or a block of navigation ("Table of Contents", "In this chapter",
 * "On this page") is short.
 */
export const CAPTION_MAX_CHARS = 40;

/**
 * The path prefix of the pages below a page: its path without the extension
 * (`/docs/current/indexes` for `indexes.html`, whose sections are `indexes-intro.html`), its
 * directory for an index page (`/library/` for `/library/index.html` or `/library/`).
 */
function stemOf(path: string): string {
  const slash = path.lastIndexOf('/');
  const name = path.slice(slash + 1);
  const dot = name.lastIndexOf('.');
  const base = dot > 0 ? name.slice(0, dot) : name;
  if (base === '' || base.toLowerCase() === 'index') return path.slice(0, slash + 1);
  return path.slice(0, slash + 1) + base;
}

/**
 * Whether the list's links lead to the pages below this one: at least three links, four in five
 * of them to another page of the same host whose path starts with this page's stem
 * ({@link stemOf}: `forms/formsets/` under `forms/`, `indexes-intro.html` under
 * `indexes.html`). An in-page table of contents (`#section`) repeats the headings and is
 * chrome; a list of sibling pages (related posts of a blog, a site menu) is not what this
 * page says.
 */
function listsPagesBelow(links: readonly DomElement[], page: URL): boolean {
  if (links.length < 3) return false;
  const stem = stemOf(page.pathname);
  // Stops as soon as more than a fifth of the links lead elsewhere: a site menu parses few.
  const allowed = Math.floor(0.2 * links.length);
  let elsewhere = 0;
  for (const a of links) {
    if (isBelow(a.getAttribute('href'), page, stem)) continue;
    if (++elsewhere > allowed) return false;
  }
  return true;
}

function isBelow(href: string | null, page: URL, stem: string): boolean {
  if (!href || href.startsWith('#')) return false;
  let target: URL;
  try {
    target = new URL(href, page);
  } catch {
    return false;
  }
  return (
    target.host === page.host &&
    target.pathname !== page.pathname &&
    target.pathname.startsWith(stem)
  );
}

/**
 * Whether an element is, or sits inside, a list, a landmark, or a navigation or menu role.
 * Lists share ancestors, so each ancestor's answer is remembered for the next list.
 */
function insideTest(): (el: DomElement | null) => boolean {
  const memo = new Map<DomElement, boolean>();
  const inside = (el: DomElement | null): boolean => {
    if (el === null) return false;
    const known = memo.get(el);
    if (known !== undefined) return known;
    const tag = tagOf(el);
    const role = el.getAttribute('role');
    const found =
      LISTS.has(tag) ||
      isChrome(el, tag) ||
      (role !== null && NAV_ROLES.has(role)) ||
      inside(el.parentElement);
    memo.set(el, found);
    return found;
  };
  return inside;
}

/**
 * Whether a heading of the page sits beside the list: an ancestor up to three levels above it
 * holds a heading outside the list, as a chapter's title sits over its contents. A site menu
 * hangs beside the page's column, further from its headings.
 */
function besideHeading(list: DomElement): boolean {
  let p: DomElement | null = list.parentElement;
  for (let up = 0; p !== null && up < 3; up++, p = p.parentElement) {
    for (const h of collectUnder(p, isHeading)) if (!list.contains(h)) return true;
  }
  return false;
}

/**
 * Finds the tables of contents that list the pages below the current one (a DocBook chapter's
 * `div.toc`, a Sphinx `toctree`, a docs section's index of its pages) and marks each with
 * {@link CONTENTS_ATTR}. On a chapter or section index page that list is what the page says;
 * readers ask what a chapter covers. A list qualifies when it is all links (85 % of its text),
 * leads to pages under this page's directory ({@link listsPagesBelow}), sits outside the
 * page's chrome and beside one of its headings. A short caption in the same box ("Table of
 * Contents") is taken with it. Needs the page's URL; returns the lists marked.
 */
export function markChildContents(doc: DomDocument, url: string | undefined): DomElement[] {
  const body = doc.body;
  if (!body || url === undefined) return [];
  let page: URL;
  try {
    page = new URL(url);
  } catch {
    return [];
  }
  const marked: DomElement[] = [];
  const inside = insideTest();
  for (const list of selectAll(doc, body, (_el, tag) => LISTS.has(tag))) {
    // The outermost list only (a nested list is part of its parent's contents), and none
    // inside the page's chrome, where most link lists are menus.
    if (inside(list.parentElement)) continue;
    const text = textLength(list);
    if (text === 0) continue;
    const links = collectUnder(list, isLink);
    if (textLengthOf(links) < 0.85 * text) continue;
    if (!listsPagesBelow(links, page) || !besideHeading(list)) continue;
    const box = list.parentElement;
    const target =
      box && box !== body && box.children.length <= 2 && textLength(box) - text <= CAPTION_MAX_CHARS
        ? box
        : list;
    // The list is marked too: its own class may read as chrome (`dl.toc` in `div.toc`).
    list.setAttribute(CONTENTS_ATTR, '');
    target.setAttribute(CONTENTS_ATTR, '');
    marked.push(target);
  }
  return marked;
}

/** The placeholder put before each marked list; its index into the copies kept. */
const SLOT_ATTR = 'data-rf-contents-slot';
/**
 * The placeholder's text: one invisible separator, so Readability neither drops it as an
 * empty paragraph nor scores it (it counts under 25 characters).
 */
const SLOT_TEXT = '\u2063';

/**
 * Before Readability, which drops link lists by their link density: puts a one-character
 * placeholder paragraph before each marked list, numbers the list, and returns a copy of each.
 * Readability may rebuild the tree from its HTML when it retries, so node identity would not
 * survive; attributes do. The tree Readability scores is otherwise unchanged.
 */
export function placeContents(doc: DomDocument, lists: readonly DomElement[]): DomElement[] {
  const copies: DomElement[] = [];
  for (const list of lists) {
    if (!list.parentNode) continue;
    const slot = doc.createElement('p');
    slot.setAttribute(SLOT_ATTR, String(copies.length));
    slot.appendChild(doc.createTextNode(SLOT_TEXT));
    for (const el of [list, ...collectUnder(list, (e) => e.hasAttribute(CONTENTS_ATTR))])
      el.setAttribute(CONTENTS_ATTR, String(copies.length));
    list.parentNode.insertBefore(slot, list);
    copies.push(list.cloneNode(true) as DomElement);
  }
  return copies;
}

/**
 * After Readability: a list it dropped comes back at its placeholder when the lists are what
 * the page is about, an index page whose own text (Readability's choice without link text) is
 * no longer than the dropped lists. Beside a long article, a list of the pages under it is a
 * directory's link block ("movers in each city"), not its content. Placeholders are removed
 * either way; returns how many lists came back.
 */
export function restoreContents(root: DomElement, copies: readonly DomElement[]): number {
  if (copies.length === 0) return 0;
  const slots = collectUnder(root, (el) => el.hasAttribute(SLOT_ATTR));
  if (slots.length === 0) return 0;
  const kept = new Set<string>();
  for (const el of collectUnder(root, (e) => e.hasAttribute(CONTENTS_ATTR)))
    kept.add(el.getAttribute(CONTENTS_ATTR) ?? '');
  const dropped = slots.map((slot) => {
    const at = slot.getAttribute(SLOT_ATTR) ?? '';
    return kept.has(at) ? undefined : copies[Number(at)];
  });
  let listed = 0;
  for (const list of dropped) if (list && !list.parentNode) listed += textLength(list);
  const own = textLength(root) - linkTextLength(root);
  const hub = listed > 0 && own <= listed;
  let back = 0;
  slots.forEach((slot, i) => {
    const list = dropped[i];
    if (hub && list && !list.parentNode) {
      slot.replaceWith(list);
      back++;
    } else slot.remove();
  });
  return back;
}
