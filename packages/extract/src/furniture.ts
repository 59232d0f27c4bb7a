import { classOf, type DomDocument, type DomElement, shortTextContent, textLength } from './dom.js';
import { closestWhere, collectUnder, type ElementTest, selectAll, tagIn } from './select.js';
import { collapseSpace } from './whitespace.js';

/** Marks a caption found by its class before Readability drops class names. */
export const CAPTION_ATTR = 'data-rf-caption';

/** `figcaption, [data-rf-caption]` */
const isCaption: ElementTest = (el, tag) => tag === 'figcaption' || el.hasAttribute(CAPTION_ATTR);

/**
 * A class token naming a caption or a photo credit (`wp-caption-text`, `newsCaption`,
 * `image-credit`), not one that only mentions it (`rating__caption-sr`: a screen-reader label).
 */
const CAPTION_TOKEN = /(?:caption|credit)s?(?:[-_]?text)?$/i;
const captionClass = (cls: string) =>
  cls.split(/\s+/).some((t) => t !== '' && CAPTION_TOKEN.test(t));
const NOT_CAPTION = new Set([
  'TABLE',
  'CAPTION',
  'THEAD',
  'TBODY',
  'TR',
  'TD',
  'TH',
  'BODY',
  'MAIN',
  'ARTICLE',
]);

/** An image or video within three levels up: what a caption is the caption of. */
function besideMedia(el: DomElement): boolean {
  let p = el.parentElement;
  for (let i = 0; i < 3 && p && p.nodeName !== 'BODY'; i++, p = p.parentElement)
    if (p.querySelector('img, picture, video')) return true;
  return false;
}

/**
 * Marks caption text that is not a `<figcaption>`: an element whose class names a caption or
 * credit, beside an image or video, with no media or table inside (a wrapper holding the image
 * is not the caption) and under 400 characters. Runs on the cleaned page, before Readability
 * drops class names.
 */
export function markCaptions(doc: DomDocument): number {
  const body = doc.body;
  if (!body) return 0;
  let marked = 0;
  for (const el of selectAll(doc, body, (e) => e.hasAttribute('class'))) {
    if (NOT_CAPTION.has(el.nodeName) || !captionClass(classOf(el))) continue;
    if (el.querySelector('img, picture, video, iframe, table')) continue;
    if (shortTextContent(el, 400) === undefined || !besideMedia(el)) continue;
    el.setAttribute(CAPTION_ATTR, '');
    marked++;
  }
  return marked;
}

/**
 * A `<figcaption>` of a figure that holds code or a table ("Listing 4-1: …", "Table 2: …"):
 * it titles the listing, as a heading would, and documentation keeps it. Photo captions and
 * credits are what article text leaves out.
 */
function namesCodeOrTable(caption: DomElement): boolean {
  if (caption.nodeName !== 'FIGCAPTION') return false;
  const figure = closestWhere(caption, IS_FIGURE);
  return figure !== null && collectUnder(figure, CODE_OR_TABLE).length > 0;
}
const IS_FIGURE = tagIn('figure');
const CODE_OR_TABLE = tagIn('pre', 'table');

/**
 * Removes image and figure captions from a content root, in place: `<figcaption>` (not the
 * title of a code listing or a table) and the captions {@link markCaptions} found. Only in
 * running prose: when the root's paragraphs (outside figures and captions) hold at least three
 * times the captions' text. On a gallery or a product grid the captions are the items' names
 * and stay.
 */
export function removeCaptions(root: DomElement): number {
  const captions = collectUnder(root, isCaption).filter(
    (el) =>
      !(el.parentElement && closestWhere(el.parentElement, isCaption)) && !namesCodeOrTable(el),
  );
  if (captions.length === 0) return 0;
  let captionText = 0;
  for (const c of captions) captionText += textLength(c);
  let prose = 0;
  for (const p of collectUnder(root, tagIn('p'))) {
    if (closestWhere(p, (el, tag) => tag === 'figure' || isCaption(el, tag))) continue;
    prose += textLength(p);
  }
  if (prose < 3 * captionText) return 0;
  for (const c of captions) c.remove();
  return captions.length;
}

const MONTH = '(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\\.?';
const WEEKDAY = '(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\\.?';
const DATE = `(?:${WEEKDAY},?\\s+)?(?:${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?,?\\s+\\d{4}|\\d{1,2}(?:st|nd|rd|th)?\\s+${MONTH},?\\s+\\d{4}|${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?|\\d{1,2}\\s+${MONTH}|\\d{4}-\\d{2}-\\d{2}|\\d{1,2}[/.]\\d{1,2}[/.]\\d{2,4}|\\d+\\s+(?:second|minute|min|hour|hr|day|week|month|year)s?\\s+ago|yesterday|today)`;
/** A clock time: `10:48`, `5:27 am CST`, `10.48am` (a dot only with am/pm: `4.50` is a number). */
const TIME =
  '(?:\\d{1,2}:\\d{2}(?:\\s*[ap]\\.?m\\.?)?|\\d{1,2}\\.\\d{2}\\s*[ap]\\.?m\\.?)(?:\\s+[a-z]{2,4})?';
const STAMP = `(?:${DATE}(?:,?\\s*(?:at\\s+)?${TIME})?|${TIME}(?:,?\\s*${DATE})?)`;
const STAMP_LABEL =
  '(?:(?:first\\s+|originally\\s+)?(?:published|updated|posted|last updated|last modified|modified|created|released)(?:\\s+on)?\\s*:?\\s*)';
const ONE_STAMP = `${STAMP_LABEL}?${STAMP}`;
/** A line that is nothing but publication stamps: "Updated 11:21 pm CST, Tuesday, November 19, 2019". */
const DATELINE = new RegExp(`^(?:${ONE_STAMP})(?:\\s*[|;,·•-]?\\s*${ONE_STAMP})*\\.?$`, 'i');

const DATELINE_TAGS = tagIn('p', 'div', 'span', 'time', 'li', 'small', 'dd', 'header');

/**
 * Removes an article's publication stamps from a content root, in place: short elements whose
 * whole text is dates and times, optionally labelled ("Published 1 day ago", "Updated: 10:48,
 * Tue, Nov 19, 2019 | 11:05"). At most two per root: a thread or a listing dates every item,
 * and there the dates are part of each item.
 */
export function removeDatelines(root: DomElement): number {
  const found: DomElement[] = [];
  for (const el of collectUnder(root, DATELINE_TAGS)) {
    const raw = shortTextContent(el, 200);
    if (raw === undefined) continue;
    const t = collapseSpace(raw);
    if (t === '' || t.length > 90 || !DATELINE.test(t)) continue;
    if (found.some((f) => f.contains(el))) continue;
    found.push(el);
    if (found.length > 2) return 0;
  }
  for (const el of found) el.remove();
  return found.length;
}
