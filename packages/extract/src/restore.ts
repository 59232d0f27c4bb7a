import { type DomElement, type DomNode, TEXT_NODE } from './dom.js';
import { closestWhere, isHeading } from './select.js';

/** Elements that are one unit of content whatever they hold. */
const UNIT_TAGS = new Set(['P', 'PRE', 'TABLE', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
/** Elements that make a block structure: an element holding none of them is one unit. */
const STRUCT_TAGS = new Set([
  'DIV',
  'SECTION',
  'P',
  'UL',
  'OL',
  'LI',
  'TABLE',
  'PRE',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'BLOCKQUOTE',
  'DL',
  'FIGURE',
  'ARTICLE',
  'ASIDE',
  'HEADER',
  'FOOTER',
  'NAV',
  'FORM',
  'MAIN',
]);
const HEADING = /^H[1-6]$/;

/** Word ids: each distinct lower-cased word run of the page gets a small integer. */
type Vocab = Map<string, number>;
/** Trigram keys pack three ids below 2^17 into one exact integer (< 2^51). */
const ID_LIMIT = 131072;

/**
 * Word ids of a subtree, text nodes kept apart (`<li>a</li><li>b</li>` is two words). With
 * `spans`, each of its elements met on the way gets the [start, end) of its own words in the
 * result, so the words of blocks inside the subtree need no second pass.
 */
function wordsOf(
  node: DomNode,
  vocab: Vocab,
  spans?: Map<DomNode, readonly [number, number]>,
): number[] {
  const out: number[] = [];
  const visit = (n: DomNode) => {
    if (spans?.has(n)) {
      const start = out.length;
      spans.delete(n);
      visit(n);
      spans.set(n, [start, out.length]);
      return;
    }
    if (n.nodeType === TEXT_NODE) {
      const m = (n.textContent ?? '').toLowerCase().match(/[\p{L}\p{N}_]+/gu);
      if (m)
        for (const w of m) {
          let id = vocab.get(w);
          if (id === undefined) {
            id = vocab.size;
            vocab.set(w, id);
          }
          out.push(id);
        }
      return;
    }
    const kids = n.childNodes;
    for (let i = 0; i < kids.length; i++) visit(kids[i]!);
  };
  visit(node);
  return out;
}

const gram = (ws: readonly number[], i: number) =>
  (ws[i]! * ID_LIMIT + ws[i + 1]!) * ID_LIMIT + ws[i + 2]!;

function trigrams(words: readonly number[]): Set<number> {
  const s = new Set<number>();
  for (let i = 0; i + 3 <= words.length; i++) s.add(gram(words, i));
  return s;
}

/** Leaf blocks of a tree in document order: paragraphs, code, tables, headings, and elements holding no block. */
function collectUnits(el: DomElement, out: DomElement[]): boolean {
  let holds = false;
  const kids = el.children;
  for (let i = 0; i < kids.length; i++) {
    const ch = kids[i]!;
    const start = out.length;
    const inner = collectUnits(ch, out);
    if (UNIT_TAGS.has(ch.nodeName) || !inner) {
      out.length = start;
      out.push(ch);
    }
    holds ||= inner || STRUCT_TAGS.has(ch.nodeName);
  }
  return holds;
}

function linkChars(el: DomElement): number {
  let n = 0;
  const links = el.querySelectorAll('a');
  for (let i = 0; i < links.length; i++) n += (links[i]!.textContent ?? '').length;
  return n;
}

type Verdict = 'kept' | 'prose' | 'heading' | 'other';

/**
 * The label that opens a note, tip or warning box in documentation ("Note", "Tip:", "Warning").
 * Readability's conditional cleaning drops such boxes when a link is a fifth of their text
 * ("Note: see Installation").
 */
const CALLOUT_LABEL =
  /^(?:notes?|tips?|hint|warning|caution|important|danger|attention|info|remark|see also)\s*:?$/i;
const CALLOUT_INLINE = /^(?:notes?|tips?|hint|warning|caution|important|danger|attention)\s*:/i;
/** A callout box holds a paragraph or two, not a section. */
const CALLOUT_MAX_CHARS = 1500;

/** The first non-blank text node of a subtree. */
function firstText(node: DomNode): DomNode | undefined {
  if (node.nodeType === TEXT_NODE) return (node.textContent ?? '').trim() === '' ? undefined : node;
  const kids = node.childNodes;
  for (let i = 0; i < kids.length; i++) {
    const t = firstText(kids[i]!);
    if (t !== undefined) return t;
  }
  return undefined;
}

/**
 * A note, tip or warning box: an element, not a heading, whose text (20 to 1,500 characters)
 * opens with a callout label written as its own text ("<strong>Note</strong> …",
 * "<p>Tip</p><p>…</p>") or followed by a colon ("Warning: …").
 */
function isCallout(el: DomElement, text: string): boolean {
  if (HEADING.test(el.nodeName) || text.length < 20) return false;
  const node = firstText(el);
  const first = (node?.textContent ?? '').trim();
  if (!CALLOUT_LABEL.test(first) && !CALLOUT_INLINE.test(first)) return false;
  // A section titled "Notes" or "Tips" is not a box.
  const parent = node?.parentElement;
  return !(parent && closestWhere(parent, isHeading));
}

/**
 * Whether a unit is, or sits in, a callout box below the root. Ancestors only grow, so the
 * walk up stops at the first one over the size of a box; what is found for an element is
 * remembered for the other units under it (one text read per element, not one per unit).
 */
function calloutTest(root: DomElement): (el: DomElement) => boolean {
  const memo = new Map<DomElement, boolean>();
  const within = (el: DomElement | null): boolean => {
    if (el === null || el === root) return false;
    const known = memo.get(el);
    if (known !== undefined) return known;
    const text = (el.textContent ?? '').trim();
    const found =
      text.length <= CALLOUT_MAX_CHARS && (isCallout(el, text) || within(el.parentElement));
    memo.set(el, found);
    return found;
  };
  return within;
}

/**
 * Readability keeps its best-scored block and the siblings it rates well; on reference pages
 * it can leave out an introduction before the first section or whole later sections, which the
 * semantic container holds. Given Readability's choice (`kept`) and the container, returns the
 * container with those passages back when there are some, or undefined:
 * - the container must hold Readability's choice (90 % of its word trigrams);
 * - the container's leaf blocks missing from the choice are taken in runs (between blocks the
 *   choice has); a run after the choice's last block never comes back (author bios, video
 *   transcripts, fine print, comments follow an article); one before or inside it comes back
 *   only when it is all document prose: paragraphs and list items
 *   of eight words or more with under 30 % link text, code blocks, and headings, with at least
 *   95 % of its words in those and under 15 % link text overall. A run holding anything else
 *   (dates, "Read more", short labels: a related-posts grid, a sign-in box) stays out whole;
 * - at least 20 restored words, else Readability's choice stands.
 * Every other block of the container that the choice lacks is then removed from the container,
 * in place (pass a copy: the extractor's container is already one), and it is returned.
 */
export function restoreDroppedProse(
  kept: DomElement,
  container: DomElement,
): DomElement | undefined {
  const vocab: Vocab = new Map();
  const keptWords = wordsOf(kept, vocab);
  if (keptWords.length === 0) return undefined;
  const units: DomElement[] = [];
  collectUnits(container, units);
  const spans = new Map<DomNode, readonly [number, number]>();
  for (const el of units) spans.set(el, [0, 0]);
  const containerWords = wordsOf(container, vocab, spans);
  // More distinct words than the keys can pack: no page of prose has that many.
  if (vocab.size >= ID_LIMIT) return undefined;
  const keptGrams = trigrams(keptWords);
  const containerGrams = trigrams(containerWords);
  let covered = 0;
  for (const g of keptGrams) if (containerGrams.has(g)) covered++;
  if (covered < 0.9 * keptGrams.size) return undefined;
  const keptSet = new Set(keptWords);
  const inKept = (ws: readonly number[]) => {
    if (ws.length < 3) return ws.every((w) => keptSet.has(w));
    let missing = 0;
    for (let i = 0; i + 3 <= ws.length; i++) if (!keptGrams.has(gram(ws, i))) missing++;
    return missing <= 0.5 * (ws.length - 2);
  };
  const judged: Array<{
    el: DomElement;
    verdict: Verdict;
    words: number;
    text: number;
    links: number;
    callout: boolean;
  }> = [];
  const inCallout = calloutTest(container);
  for (const el of units) {
    const [start, end] = spans.get(el)!;
    const ws = containerWords.slice(start, end);
    if (ws.length === 0) continue;
    if (inKept(ws)) {
      judged.push({ el, verdict: 'kept', words: ws.length, text: 0, links: 0, callout: false });
      continue;
    }
    const text = (el.textContent ?? '').length;
    const links = linkChars(el);
    const tag = el.nodeName;
    let verdict: Verdict = 'other';
    // A note or warning box reads as prose with up to half its text in links: "see X" is
    // what such boxes say. Its label alone ("Note") counts like a heading.
    const callout = inCallout(el);
    if (HEADING.test(tag)) verdict = 'heading';
    else if (tag === 'PRE' ? ws.length >= 3 : ws.length >= 8 && links < 0.3 * text)
      verdict = 'prose';
    else if (callout && CALLOUT_LABEL.test((el.textContent ?? '').trim())) verdict = 'heading';
    else if (callout && ws.length >= 3 && links < 0.5 * text) verdict = 'prose';
    judged.push({ el, verdict, words: ws.length, text, links, callout });
  }
  let restored = 0;
  const drop: DomElement[] = [];
  let lastKept = -1;
  for (let k = 0; k < judged.length; k++) if (judged[k]!.verdict === 'kept') lastKept = k;
  for (let i = 0; i < judged.length; ) {
    if (judged[i]!.verdict === 'kept') {
      i++;
      continue;
    }
    let j = i;
    while (j < judged.length && judged[j]!.verdict !== 'kept') j++;
    const run = judged.slice(i, j);
    let prose = 0;
    let all = 0;
    let text = 0;
    let links = 0;
    for (const u of run) {
      all += u.words;
      if (!u.callout) {
        text += u.text;
        links += u.links;
      }
      if (u.verdict !== 'other') prose += u.words;
    }
    // After the last block of the choice come a page's supplements (author bios, transcripts,
    // fine print, comments): only a run before or inside the choice comes back.
    const back = i < lastKept && prose >= 0.95 * all && (text === 0 || links < 0.15 * text);
    for (const u of run) {
      if (back && u.verdict === 'prose') restored += u.words;
      else if (!back || u.verdict === 'other') drop.push(u.el);
    }
    i = j;
  }
  if (restored < 20) return undefined;
  for (const el of drop) el.remove();
  return container;
}
