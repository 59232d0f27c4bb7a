import { type DomElement, type DomNode, ELEMENT_NODE, TEXT_NODE } from './dom.js';

/** Tags whose repeated children are items (posts, cards, rows, sections), not prose. */
const ITEM_TAGS = new Set(['DIV', 'LI', 'ARTICLE', 'SECTION', 'TR', 'DL', 'FIGURE']);
const SKIP = new Set(['NAV', 'HEADER', 'FOOTER', 'ASIDE', 'FORM', 'SELECT', 'BUTTON', 'DIALOG']);

/** Marks the items of the region found, so a later reader can tell whether it holds one. */
export const ITEM_ATTR = 'data-rf-item';

export interface RepeatedRegion {
  readonly el: DomElement;
  /** The repeated items (marked with {@link ITEM_ATTR}). */
  readonly items: readonly DomElement[];
  /** Non-link text plus half the link text of the repeated items. */
  readonly score: number;
}

interface Sizes {
  text: number;
  link: number;
}

/**
 * The block made of repeated items that holds the most text: a thread's posts, a listing's
 * cards or rows, a landing page's sections. Found in one bottom-up walk: for each element,
 * the children sharing the most common item tag (three or more, each with some text) are the
 * items when they carry most of the element's text; link text counts half, as on a link grid.
 * The block is then widened to the ancestors that add little text (its heading and intro).
 */
export function findRepeatedRegion(body: DomElement): RepeatedRegion | undefined {
  const sizes = new Map<DomNode, Sizes>();
  let best: { el: DomElement; tag: string; score: number; text: number } | undefined;
  const walk = (node: DomNode, inLink: boolean): Sizes => {
    if (node.nodeType === TEXT_NODE) {
      const n = (node.textContent ?? '').trim().length;
      return { text: n, link: inLink ? n : 0 };
    }
    if (node.nodeType !== ELEMENT_NODE) return { text: 0, link: 0 };
    const el = node as DomElement;
    if (SKIP.has(el.nodeName)) return { text: 0, link: 0 };
    const link = inLink || el.nodeName === 'A';
    const own: Sizes = { text: 0, link: 0 };
    const kids = el.childNodes;
    const byTag = new Map<
      string,
      { n: number; text: number; link: number; small: number; max: number }
    >();
    let elementKids = 0;
    for (let i = 0; i < kids.length; i++) {
      const k = kids[i]!;
      const s = walk(k, link);
      own.text += s.text;
      own.link += s.link;
      if (k.nodeType !== ELEMENT_NODE) continue;
      elementKids++;
      const tag = k.nodeName;
      if (!ITEM_TAGS.has(tag)) continue;
      const g = byTag.get(tag) ?? { n: 0, text: 0, link: 0, small: 0, max: 0 };
      g.n++;
      g.text += s.text;
      g.link += s.link;
      if (s.text < 20) g.small++;
      g.max = Math.max(g.max, s.text);
      byTag.set(tag, g);
    }
    sizes.set(el, own);
    if (elementKids >= 3) {
      for (const [tag, g] of byTag) {
        const items = g.n - g.small;
        // Items are peers: one of them holding most of the text is a page's content column.
        if (items < 3 || g.text < 0.6 * own.text || g.max > 0.5 * g.text) continue;
        const score = g.text - g.link + 0.5 * g.link;
        if (!best || score > best.score) best = { el, tag, score, text: own.text };
      }
    }
    return own;
  };
  walk(body, false);
  if (!best) return undefined;
  const items: DomElement[] = [];
  for (const k of Array.from(best.el.children)) {
    if (k.nodeName !== best.tag || (sizes.get(k)?.text ?? 0) < 20) continue;
    k.setAttribute(ITEM_ATTR, '');
    items.push(k);
  }
  let el = best.el;
  for (let p = el.parentElement; p && p !== body; p = p.parentElement) {
    const s = sizes.get(p);
    if (!s || s.text > 1.25 * best.text) break;
    el = p;
  }
  return { el, items, score: best.score };
}
