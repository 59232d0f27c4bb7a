import { CARD_LINK_ATTR } from './clean.js';
import { type DomElement, textLength, textOf } from './dom.js';
import {
  collectUnder,
  type ElementTest,
  isHeading,
  linkTextLength,
  tagIn,
  tagOf,
} from './select.js';

/**
 * Headings that open a block pointing away from the page: related or recommended items,
 * "you may also like", recently viewed, popular lists, newsletter sign-ups. Worded the way
 * sites word them everywhere, not taken from any one site. "See also" and "Further reading"
 * are not here: on reference pages they are part of the document.
 */
const PROMO_HEADING =
  /^(?:related(?: (?:posts?|articles?|stories|content|reading|news|products?|items?|links|topics|questions|videos|guides|resources|courses|jobs|searches|categories|pages|services|books|threads|discussions|sponsors|brands|tags|reports(?: and studies)?))?|explore related .{1,30}|(?:more|other) (?:related )?(?:items|products|ideas) to (?:explore|consider)|related items to explore|more to explore(?: .{1,40})?|(?:you|we think you) (?:may|might|will|could) (?:also )?(?:like|love|enjoy|be interested in)(?: these| this)?|you (?:may|might) also (?:want to|need|be interested)(?: in| to)?(?: read| see| check out)?|more (?:from|by) .{1,60}|more (?:like this|stories|articles|posts|news|products|to (?:read|explore))|(?:other|more) (?:stories|articles|posts|products) (?:you|we) .{1,40}|recommended(?: for you| (?:articles|posts|products|reading|stories|for you))?|(?:customers|people|shoppers|others)(?: like you)? (?:also|who) (?:bought|viewed|liked|searched|purchased|also viewed).{0,40}|frequently bought together|recently viewed(?: items| products)?|(?:most |)popular(?: now| (?:posts|articles|stories|products|this week))?|trending(?: now| (?:posts|articles|stories|products))?|most (?:read|viewed|shared|popular)|similar (?:products|items|articles|posts|stories|threads|questions|discussions|brands)(?: on .{1,30})?|latest (?:posts|articles|stories|news)|(?:subscribe|sign up|join|register) (?:to|for) (?:our|the) (?:newsletter|mailing list|updates|weekly .{1,30}).{0,40}|(?:our |the )?newsletter|stay (?:in touch|up to date|informed|connected|in the loop)|never miss (?:a|an) .{1,30}|get (?:the latest|our newsletter|updates) .{0,40}|keyboard shortcuts)\s*[.!:…]*$/i;

const HEADING_TAGS = new Set(['H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
const SUB_HEADINGS = tagIn('h2', 'h3', 'h4', 'h5', 'h6');
const FORM_PARTS = tagIn('form', 'input');
const ANY: ElementTest = () => true;
/** `a[href], [data-rf-card]` */
const linkOrCard: ElementTest = (el, tag) =>
  (tag === 'a' && el.hasAttribute('href')) || el.hasAttribute(CARD_LINK_ATTR);

function linkDensity(el: DomElement, text: number): number {
  return text === 0 ? 0 : Math.min(1, linkTextLength(el) / text);
}

/** A link to another page (not an in-page anchor or a script), or a card title that was one. */
function pointsAway(el: DomElement): boolean {
  if (el.hasAttribute(CARD_LINK_ATTR)) return true;
  const href = el.getAttribute('href');
  return href !== null && href !== '' && !href.startsWith('#') && !/^javascript:/i.test(href);
}

function holdsOutgoingLink(el: DomElement): boolean {
  if (pointsAway(el)) return true;
  for (const a of collectUnder(el, linkOrCard)) if (pointsAway(a)) return true;
  return false;
}

/**
 * Cards of other pages: three or more list items (or same-tag siblings of one parent) that
 * nearly all link away, each short, together most of the block's text. Shop carousels lay one
 * empty link over each card, so link density misses them.
 */
function isCardList(blocks: readonly DomElement[], text: number): boolean {
  const parents: DomElement[] = [];
  for (const b of blocks) {
    parents.push(b);
    for (const el of collectUnder(b, ANY)) if (el.children.length >= 3) parents.push(el);
  }
  for (const p of parents) {
    const items = Array.from(p.children).filter((c) => c.nodeName === p.children[0]?.nodeName);
    if (items.length < 3 || items.length < 0.8 * p.children.length) continue;
    let linked = 0;
    let chars = 0;
    for (const item of items) {
      if (holdsOutgoingLink(item)) linked++;
      chars += textLength(item);
    }
    if (linked >= 0.8 * items.length && chars / items.length <= 300 && chars >= 0.4 * text)
      return true;
  }
  return false;
}

/** A block of other pages' titles or a sign-up form: links, a form, cards or little text. */
function looksLikePromo(el: DomElement, text: number): boolean {
  if (text < 400) return true;
  if (el.querySelector('form, input')) return text < 1500;
  return linkDensity(el, text) >= 0.3 || isCardList([el], text);
}

/**
 * Removes related / recommended / newsletter blocks opened by a promo heading, in place: the
 * largest wrapper that the heading opens (its text starts with the heading, no other heading
 * of the same or a higher level inside), or, for a heading among siblings, the heading and the
 * siblings up to the next heading of the same or a higher level. Only when the block reads as
 * a promo (mostly links, a form, or short). Returns the number of blocks removed.
 */
export function removePromoBlocks(root: DomElement): number {
  let removed = 0;
  const total = textLength(root);
  // Not h1: a page whose own title is "Related products" is that list.
  for (const h of collectUnder(root, SUB_HEADINGS)) {
    if (!h.parentNode || !root.contains(h)) continue;
    const title = textOf(h);
    if (title.length > 80 || !PROMO_HEADING.test(title)) continue;
    const level = Number(h.nodeName.charAt(1));
    let wrapper: DomElement | undefined;
    for (let p = h.parentElement; p && p !== root; p = p.parentElement) {
      if (!textOf(p).startsWith(title)) break;
      const rival = collectUnder(p, isHeading).some(
        (o) => o !== h && Number(o.nodeName.charAt(1)) <= level,
      );
      if (rival || textLength(p) > 0.5 * total) break;
      wrapper = p;
    }
    if (wrapper) {
      const text = textLength(wrapper) - title.length;
      if (looksLikePromo(wrapper, text)) {
        wrapper.remove();
        removed++;
      }
      continue;
    }
    const run: DomElement[] = [];
    let text = 0;
    let links = 0;
    let form = false;
    for (let s = h.nextElementSibling; s; s = s.nextElementSibling) {
      if (HEADING_TAGS.has(s.nodeName) && Number(s.nodeName.charAt(1)) <= level) break;
      if (collectUnder(s, isHeading).some((o) => Number(o.nodeName.charAt(1)) <= level)) break;
      run.push(s);
      const t = textLength(s);
      text += t;
      links += linkDensity(s, t) * t;
      if (FORM_PARTS(s, tagOf(s)) || collectUnder(s, FORM_PARTS).length > 0) form = true;
    }
    const promo =
      text < 400 ||
      (form && text < 1500) ||
      (text > 0 && links / text >= 0.3) ||
      isCardList(run, text);
    if (promo) {
      h.remove();
      for (const s of run) s.remove();
      removed++;
    }
  }
  return removed;
}
