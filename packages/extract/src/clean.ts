import {
  classOf,
  type DomDocument,
  type DomElement,
  type DomNode,
  elements,
  isElement,
  shortText,
  shortTextContent,
  TEXT_NODE,
  textLength,
  textOf,
} from './dom.js';
import { FenceScanner } from './fence.js';
import { LANG_ATTR, languageOfPre } from './markdown.js';
import {
  collectUnder,
  invalidateElements,
  isHeading,
  isLink,
  selectAll,
  tagIn,
  tagOf,
  textLengthOf,
} from './select.js';
import { collapseSpace, isSpace } from './whitespace.js';

/** Marks a heading whose wrapping link to another page was unwrapped (a card's title). */
export const CARD_LINK_ATTR = 'data-rf-card';

/** Text of a heading permalink: pilcrow, hash, link emoji, section sign, or a permalink label. */
const ANCHOR_GLYPH =
  /^(?:¶|#|🔗|§|⚓|🔗︎|link|permalink|permanent link|link to this (?:heading|section|headline)|direct link to .*|anchor)$/i;
const ANCHOR_CLASS =
  /(?:^|\s)(?:headerlink|hash-link|anchor|anchorjs-link|anchor-link|header-anchor|heading-anchor|headinganchor|permalink|heading-link|autolink-headings?|title-link|deep-link|sl-anchor-link)(?:\s|$)/i;
const PERMALINK_CLASS = /(?:^|\s)(?:headerlink|hash-link)(?:\s|$)/;
const GUTTER_CLASS = /(?:^|\s)(?:linenos|gutter)(?:\s|$)/;
/**
 * Text for screen readers only: the utility every CSS framework ships under one of these names
 * (Tailwind and Bootstrap 3-4 `sr-only`, Bootstrap 5 and most design systems `visually-hidden`,
 * WordPress `screen-reader-text`, HTML5 Boilerplate `visuallyhidden`). Removed only inside a
 * link or button, where it names the control ("(opens in a new tab)", "Section titled …",
 * "Twitter" on an icon): elsewhere it is often the only text form of what an icon shows, such
 * as the Yes / No of a plan-comparison table's check marks, and stays.
 */
const SCREEN_READER_CLASS =
  /(?:^|\s)(?:sr-only|visually-hidden|visuallyhidden|screen-reader-text|screen-reader-only|screenreader-only)(?:\s|$)/i;
/** Longest screen-reader-only text removed: a label, never a whole block someone hid by mistake. */
const SCREEN_READER_MAX_CHARS = 200;
const SKIP_LINK = /^(?:skip|jump) (?:to|navigation)\b|^skip to (?:main )?content$/i;
const SKIP_CLASS =
  /(?:^|\s)(?:skip-link|skip-links|skip-to-content|skiplink|skip-nav|skipnav|visually-hidden-focusable)(?:\s|$)/i;
const EDIT_TEXT =
  /^(?:✏️?\s*)?(?:edit this page|edit on github|edit on gitlab|edit page|edit this article|edit this doc(?:ument)?|improve this (?:page|doc|article)|suggest (?:an )?edits?|view (?:page )?source|show source|edit source|report an issue with this page|open an issue)\s*(?:on github)?\.?$/i;
const BREADCRUMB = /(?:^|[\s_-])bread-?crumbs?(?:$|[\s_-])/i;
const SHARE =
  /(?:^|[\s_-])(?:share|sharing|social-share|social-links|share-buttons?|sharedaddy|addthis|addtoany|a2a_kit|shareaholic|social-icons?)(?:$|[\s_-])/i;
const PAGINATION =
  /(?:^|[\s_-])(?:pagination|pagination-nav|pager|post-navigation|prev-next|next-prev|page-nav|nav-previous-next)(?:$|[\s_-])/i;
const SHARE_TEXT =
  /\b(?:share|tweet|facebook|twitter|linkedin|pinterest|whatsapp|reddit|email|copy link|x\.com)\b/i;

/** Per-post action links of forums and Q&A sites: controls, not content. */
const ACTION_TEXT =
  /^(?:share|improve this (?:question|answer|post)|follow|unfollow|flag|report|edit|add (?:a )?comment|reply|quote|cite|permalink|copy link|link|upvote|downvote|show \d+ more (?:comments?|replies)|load more (?:comments|replies)|show (?:\d+ )?more comments?|like|bookmark)$/i;
/** Page-feedback widgets ("Was this page helpful? Yes / No"). */
const FEEDBACK_TEXT =
  /^(?:was this (?:page|article|section|content|documentation|information|answer|guide|tutorial) (?:helpful|useful)|did (?:this|you find this) (?:page|article|answer) (?:help(?:ful)?|useful)|is this (?:page|article) (?:helpful|useful)|how (?:helpful|useful) (?:was|is) this (?:page|article)|rate this (?:page|article)|help us improve (?:this page|our docs))/i;

/** What `cleanDocument` removed, for diagnostics and tests. */
export interface CleanStats {
  feedback: number;
  actions: number;
  anchors: number;
  skipLinks: number;
  editLinks: number;
  breadcrumbs: number;
  share: number;
  pagination: number;
  /** Drop-down menus a script opens (language, topic, version pickers). */
  menus: number;
  /** Screen-reader-only labels (`sr-only`, `visually-hidden`, …). */
  screenReaderOnly: number;
}

export interface CleanOptions {
  /** Also unwrap links to other pages that hold a heading (cards). Default false. */
  readonly unwrapLinkedHeadings?: boolean;
}

/**
 * Removes page furniture that is never content, in place, before any extraction: heading
 * permalinks (inside or beside their heading), screen-reader labels of links and buttons, copy
 * labels beside code, skip links, "Edit this page", breadcrumbs, share bars, scripts and
 * styles; and pins each code block's language on the `<pre>` so it survives Readability's
 * class cleanup.
 */
export function cleanDocument(doc: DomDocument, options: CleanOptions = {}): CleanStats {
  const stats: CleanStats = {
    feedback: 0,
    actions: 0,
    anchors: 0,
    skipLinks: 0,
    editLinks: 0,
    breadcrumbs: 0,
    share: 0,
    pagination: 0,
    menus: 0,
    screenReaderOnly: 0,
  };
  removeScriptsAndStyles(doc);
  stats.actions += cleanCodeBlocks(doc);
  const found = findHeadingsAndPermalinks(doc);
  for (const h of found.headings) separateBoxedParts(doc, h);
  stats.anchors += removePermalinks(doc, found);
  const body = doc.body;
  if (!body) return stats;
  unwrapHeadingLinks(doc, found.headings, options);
  stats.feedback = removeFeedback(doc, body);
  const controls = removeFurniture(doc, body, stats);
  stats.pagination += removeSequenceBars(controls.sequenceLinks);
  stats.menus = removeScriptMenus(body, controls.toggles, controls.byId);
  for (const el of controls.screenReaderOnly) {
    if (!body.contains(el)) continue;
    el.remove();
    stats.screenReaderOnly++;
  }
  return stats;
}

/**
 * Scripts, styles, templates, stylesheet links, `<svg>` and `<noscript>` — except a
 * `<noscript>` holding a document (a heading or main landmark and real text), which is
 * unwrapped: it is what a reader without JavaScript gets, and forum software serves whole
 * threads there.
 */
function removeScriptsAndStyles(doc: DomDocument): void {
  let moved = false;
  for (const el of selectAll(
    doc,
    doc,
    tagIn('script', 'style', 'noscript', 'template', 'link', 'svg'),
  )) {
    if (
      el.nodeName === 'NOSCRIPT' &&
      el.parentNode &&
      el.querySelector('h1, h2, main, article, [role="main"]') &&
      textLength(el) >= 500
    ) {
      while (el.firstChild) el.parentNode.insertBefore(el.firstChild, el);
      moved = true;
    }
    el.remove();
  }
  if (moved) invalidateElements(doc);
}

/**
 * Each `<pre>`: its language pinned (Readability strips classes), line-number gutters, copy
 * buttons and copy labels beside it removed, terminal colouring undone. Returns the copy
 * labels removed.
 */
function cleanCodeBlocks(doc: DomDocument): number {
  let removed = 0;
  // Boxes already searched for copy labels: the code blocks of one article share their
  // ancestors, and searching those again for each block cost time in the square of them.
  const searched = new Set<DomElement>();
  for (const pre of selectAll(doc, doc, tagIn('pre'))) {
    const lang = languageOfPre(pre);
    if (lang) pre.setAttribute(LANG_ATTR, lang);
    for (const junk of elements(
      pre.querySelectorAll('button, .linenos, .lineno, .line-numbers-rows, .gutter'),
    ))
      junk.remove();
    removeLineNumbers(pre);
    unrenderTerminalMarkup(pre, lang);
    removed += removeCopyLabels(pre, searched);
  }
  return removed;
}

interface HeadingsAndPermalinks {
  /** h1–h6 in document order. */
  readonly headings: DomElement[];
  /** Links inside a heading or `dt`, or of a permalink class: permalink candidates. */
  readonly anchors: DomElement[];
  /** In-page links set beside the heading they point at. */
  readonly besideHeading: DomElement[];
}

/**
 * One tag-only walk instead of class and descendant selectors (each a whole-tree walk that
 * reads every element's class list): headings, links and table cells. Line-number cells
 * (`td.linenos`, `td.gutter`) are removed on the way.
 */
function findHeadingsAndPermalinks(doc: DomDocument): HeadingsAndPermalinks {
  const found: HeadingsAndPermalinks = { headings: [], anchors: [], besideHeading: [] };
  const open: DomElement[] = [];
  for (const el of selectAll(
    doc,
    doc,
    tagIn('h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'dt', 'a', 'td'),
  )) {
    while (open.length > 0 && !open[open.length - 1]!.contains(el)) open.pop();
    const tag = el.nodeName;
    if (tag === 'A') {
      if (open.length > 0 || PERMALINK_CLASS.test(classOf(el))) found.anchors.push(el);
      else if (besideOwnHeading(el)) found.besideHeading.push(el);
    } else if (tag === 'TD') {
      if (GUTTER_CLASS.test(classOf(el))) el.remove();
    } else {
      if (tag !== 'DT') found.headings.push(el);
      open.push(el);
    }
  }
  return found;
}

/** Heading permalinks, inside or beside their heading. Returns how many went. */
function removePermalinks(doc: DomDocument, found: HeadingsAndPermalinks): number {
  let removed = 0;
  for (const a of found.besideHeading) {
    a.remove();
    removed++;
  }
  for (const a of found.anchors) {
    const text = textOf(a);
    const cls = classOf(a);
    if (
      ANCHOR_CLASS.test(cls) ||
      (text === '' && a.getAttribute('href')?.startsWith('#')) ||
      ANCHOR_GLYPH.test(text) ||
      (a.getAttribute('aria-hidden') === 'true' && text.length <= 2)
    ) {
      if (ANCHOR_CLASS.test(cls) && text.length > 3 && !ANCHOR_GLYPH.test(text)) {
        // A heading whose whole text is the link: keep the words, drop the link.
        a.replaceWith(doc.createTextNode(a.textContent ?? ''));
      } else {
        a.remove();
      }
      removed++;
    }
  }
  return removed;
}

/**
 * mdBook-style `<a href="#x"><h2>Title</h2></a>`: an in-page link around nothing but a
 * heading is a permalink; the heading is content. A link to another page around a heading
 * (a card) is unwrapped only off articles: on a listing the cards are the content, while
 * on an article they are its related stories, which Readability drops as links.
 */
function unwrapHeadingLinks(
  doc: DomDocument,
  headings: readonly DomElement[],
  options: CleanOptions,
): void {
  let moved = false;
  for (const h of headings) {
    const a = h.parentNode ? enclosingLink(h) : null;
    if (!a?.parentNode) continue;
    const permalink = (a.getAttribute('href') ?? '').startsWith('#') && textOf(a) === textOf(h);
    if (!permalink && !options.unwrapLinkedHeadings) continue;
    // The card still points at another page: promo detection reads that (see promo.ts).
    if (!permalink) h.setAttribute(CARD_LINK_ATTR, '');
    while (a.firstChild) a.parentNode.insertBefore(a.firstChild, a);
    a.remove();
    moved = true;
  }
  if (moved) invalidateElements(doc);
}

/** What the furniture walk collects for the rules that run after it. */
interface FurnitureControls {
  readonly sequenceLinks: DomElement[];
  readonly toggles: DomElement[];
  readonly screenReaderOnly: DomElement[];
  /** The body's elements by id (the first of each): menus are found by it. */
  readonly byId: Map<string, DomElement>;
}

/**
 * One walk over the body: skip links, "Edit this page", per-post actions, breadcrumbs,
 * pagination and share bars go; the controls later rules need (sequence links, menu toggles,
 * screen-reader labels in controls, elements by id) are collected.
 */
function removeFurniture(doc: DomDocument, body: DomElement, stats: CleanStats): FurnitureControls {
  const controls: FurnitureControls = {
    sequenceLinks: [],
    toggles: [],
    screenReaderOnly: [],
    byId: new Map(),
  };
  for (const el of selectAll(doc, body, () => true)) {
    if (!el.parentNode) continue;
    const id = el.id ?? '';
    if (id !== '' && !controls.byId.has(id)) controls.byId.set(id, el);
    const tag = el.nodeName;
    if ((tag === 'A' || tag === 'BUTTON') && namesPanel(el)) controls.toggles.push(el);
    if (tag === 'A') removeFurnitureLink(el, stats, controls);
    else removeFurnitureBlock(el, tag, id, stats, controls);
  }
  return controls;
}

function removeFurnitureLink(a: DomElement, stats: CleanStats, controls: FurnitureControls): void {
  if (isSequenceLink(a)) controls.sequenceLinks.push(a);
  const text = textOf(a);
  const href = a.getAttribute('href') ?? '';
  if ((href.startsWith('#') && SKIP_LINK.test(text)) || SKIP_CLASS.test(classOf(a))) {
    a.remove();
    stats.skipLinks++;
  } else if (EDIT_TEXT.test(text)) {
    removeWithLonelyParent(a);
    stats.editLinks++;
  } else if (ACTION_TEXT.test(text) && !a.closest('p, li, td')) {
    a.remove();
    stats.actions++;
  }
}

function removeFurnitureBlock(
  el: DomElement,
  tag: string,
  id: string,
  stats: CleanStats,
  controls: FurnitureControls,
): void {
  const cls = classOf(el);
  if (SKIP_CLASS.test(cls)) {
    el.remove();
    stats.skipLinks++;
  } else if (
    SCREEN_READER_CLASS.test(cls) &&
    el.closest('a, button') !== null &&
    shortText(el, SCREEN_READER_MAX_CHARS) !== undefined
  ) {
    // Removed after the menu and sequence rules, which recognise a control by its label.
    controls.screenReaderOnly.push(el);
  } else if (
    BREADCRUMB.test(cls) ||
    BREADCRUMB.test(id) ||
    /breadcrumb/i.test(el.getAttribute('aria-label') ?? '') ||
    /BreadcrumbList/.test(el.getAttribute('itemtype') ?? '')
  ) {
    if (textLength(el) < 600) {
      el.remove();
      stats.breadcrumbs++;
    }
  } else if (
    PAGINATION.test(cls) ||
    (tag === 'NAV' &&
      /pagination|docs pages|previous|next/i.test(el.getAttribute('aria-label') ?? ''))
  ) {
    if (textLength(el) < 300) {
      el.remove();
      stats.pagination++;
    }
  } else if (
    (SHARE.test(cls) || SHARE.test(id)) &&
    tag !== 'BODY' &&
    tag !== 'MAIN' &&
    tag !== 'ARTICLE'
  ) {
    const text = textOf(el);
    if (text.length < 300 && (text === '' || SHARE_TEXT.test(text) || SHARE_TEXT.test(cls))) {
      el.remove();
      stats.share++;
    }
  }
}

/** Attributes by which a control names the element it opens: `aria-controls`, `data-*`. */
function panelIdsOf(el: DomElement): string[] {
  const ids: string[] = [];
  const attrs = el.attributes;
  for (let i = 0; i < attrs.length; i++) {
    const { name, value } = attrs[i]!;
    if (name === 'aria-controls') ids.push(...value.split(/\s+/).filter((v) => v !== ''));
    else if (name.startsWith('data-') && /^#?[A-Za-z][\w:.-]*$/.test(value))
      ids.push(value.startsWith('#') ? value.slice(1) : value);
  }
  return ids;
}

/**
 * A control that does nothing without a script and names an element to open: a button, or a
 * link to nowhere (`href="#"`, none, `javascript:`), with `aria-controls` or a `data-*`
 * attribute naming an id. Tabs are not menus.
 */
function namesPanel(el: DomElement): boolean {
  // Most links go somewhere: that is read first.
  if (el.nodeName === 'A') {
    const href = (el.getAttribute('href') ?? '').trim();
    if (href !== '' && href !== '#' && !/^javascript:/i.test(href)) return false;
  }
  if (el.getAttribute('role') === 'tab') return false;
  return panelIdsOf(el).length > 0;
}

/** A menu's trigger is a label ("English ▾", "Topics"), not a sentence. */
const TRIGGER_MAX_CHARS = 40;

/**
 * Drop-down menus a script opens (a page's language, topic and version pickers): the element a
 * script-only control names ({@link namesPanel}) when it is a menu, three or more links that
 * are at least 40 % of its text (prose runs under a fifth; a version picker's dates and
 * "no changes" notes sit beside its links), and not a tab panel or the page's main content. The menu goes,
 * and so does its trigger's label. A collapsed panel of prose that a toggle opens is content
 * and stays (protectContent reveals it).
 */
function removeScriptMenus(
  body: DomElement,
  toggles: readonly DomElement[],
  byId: ReadonlyMap<string, DomElement>,
): number {
  if (toggles.length === 0) return 0;
  let removed = 0;
  for (const toggle of toggles) {
    if (!toggle.parentNode) continue;
    let opened = false;
    for (const id of panelIdsOf(toggle)) {
      const panel = byId.get(id);
      // Still on the page: the walk that indexed it may have removed it or a box around it.
      if (!panel || !body.contains(panel) || panel === toggle || panel.contains(toggle)) continue;
      if (panel.getAttribute('role') === 'tabpanel') continue;
      if (panel.querySelector('h1, main, article, [role="main"]')) continue;
      const links = collectUnder(panel, isLink);
      if (links.length < 3 || textLengthOf(links) < 0.4 * textLength(panel)) continue;
      panel.remove();
      removed++;
      opened = true;
    }
    if (opened && textLength(toggle) <= TRIGGER_MAX_CHARS) toggle.remove();
  }
  return removed;
}

const DIGITS = /^\d{1,6}$/;

/**
 * Line numbers written into a code block with no class to name them: each line is an element
 * holding exactly two elements, a number and the line's code, and the numbers of the block's
 * lines count up by one (`<div><span>1</span><div>export …</div></div>`, as CSS-in-JS code
 * renderers write them). They are removed, so `1export` does not reach the text. A line whose
 * first token happens to be a number is not such a pair (its tokens are many elements or text),
 * and numbers that do not count up one by one are left.
 */
function removeLineNumbers(pre: DomElement): void {
  const numbers: DomElement[] = [];
  for (const line of collectUnder(pre, (el) => el.children.length === 2)) {
    const first = line.firstElementChild!;
    if (first.children.length > 0 || !DIGITS.test(textOf(first))) continue;
    let ownText = false;
    for (let c = line.firstChild; c && !ownText; c = c.nextSibling)
      if (c.nodeType === TEXT_NODE && (c.textContent ?? '').trim() !== '') ownText = true;
    if (!ownText) numbers.push(first);
  }
  if (numbers.length < 2) return;
  const start = Number(textOf(numbers[0]!));
  if (!numbers.every((n, i) => Number(textOf(n)) === start + i)) return;
  for (const n of numbers) n.remove();
}

/** Boxes whose spacing comes from CSS, not from text: `<span>`s and `<div>`s. */
const BOX_TAGS = new Set(['SPAN', 'DIV']);

/**
 * A heading built of styled boxes with no space between them (`<span>amount</span><span
 * class="type">integer</span>`) shows its parts apart on screen, spaced by CSS, and its text
 * reads "amountinteger". Between two adjacent boxes of a heading that each hold two or more
 * characters and meet without whitespace, a space is put. Single letters (a drop capital,
 * letter-by-letter animation) and inline formatting (`<b>`, `<code>`) are left as they are.
 */
function separateBoxedParts(doc: DomDocument, heading: DomElement): void {
  for (const box of collectUnder(heading, (el) => BOX_TAGS.has(el.nodeName))) {
    const next = box.nextSibling;
    if (!next || !isElement(next) || !BOX_TAGS.has(next.nodeName)) continue;
    const left = box.textContent ?? '';
    const right = next.textContent ?? '';
    if (left.trim().length < 2 || right.trim().length < 2) continue;
    if (isSpace(left.charCodeAt(left.length - 1)) || isSpace(right.charCodeAt(0))) continue;
    box.parentNode?.insertBefore(doc.createTextNode(' '), next);
  }
}

/** Languages of terminal sessions and shell code; undefined is a block with no language. */
const TERMINAL_LANGS = new Set([
  'console',
  'shell-session',
  'shellsession',
  'terminal',
  'shell',
  'sh',
  'bash',
  'zsh',
  'text',
  'plaintext',
  'txt',
  'output',
]);
/** An opening tag that colours terminal output: `<font color="#4E9A06">`, `<span style="…">`. */
const COLOUR_TAG = /<(?:font|span|u|b)\s+(?:color|style)\s*=\s*"[^"<>]*"\s*>/gi;
/** The tags terminal-to-HTML converters write, opening or closing. */
const TERMINAL_TAG = /<\/?(?:font|span|u|b|i|strong|em)(?:\s+[a-z-]+\s*=\s*"[^"<>]*")*\s*>/gi;
const ENTITY = /&(?:(amp|lt|gt|quot|apos)|#(\d{1,6})|#x([0-9a-f]{1,6}));/gi;
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/**
 * Terminal output a page's script renders (termynal and the like): the block's text is the
 * session coloured by tag (`$ <font color="#4E9A06">fastapi</font> dev`), which shows as
 * markup to a reader without the script. In a block of no language or a shell/console one
 * whose text holds two or more colouring tags, the tags are removed and the entities they
 * carried (`&apos;`) decoded, leaving the session as it reads on screen. Markup samples
 * (`language-html`) are never touched.
 */
function unrenderTerminalMarkup(pre: DomElement, lang: string | undefined): void {
  if (lang !== undefined && !TERMINAL_LANGS.has(lang)) return;
  const text = pre.textContent ?? '';
  if (!text.includes('<')) return;
  COLOUR_TAG.lastIndex = 0;
  let colours = 0;
  while (COLOUR_TAG.exec(text) !== null && colours < 2) colours++;
  if (colours < 2) return;
  const plain = text
    .replace(TERMINAL_TAG, '')
    .replace(
      ENTITY,
      (all, name: string | undefined, dec: string | undefined, hex: string | undefined) => {
        if (name !== undefined) return NAMED[name.toLowerCase()] ?? all;
        const code = dec !== undefined ? Number(dec) : Number.parseInt(hex ?? '', 16);
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : all;
      },
    );
  // The text goes where it was: into the `<code>` inside, whose attributes name the language.
  const code = pre.querySelector('code');
  (code ?? pre).textContent = plain;
  if (code) for (const other of Array.from(pre.childNodes)) if (other !== code) other.remove();
}

/**
 * HTML link types that move through a sequence of pages (`rel="prev"`, `next`, `first`,
 * `last`, `up`), and keyboard shortcuts (`accesskey`), which generators put on the links of
 * a page's navigation bar (DocBook's Prev / Up / Home / Next tables, Texinfo's headers, forum
 * pagers) and prose does not carry.
 */
const SEQUENCE_REL = /(?:^|\s)(?:prev|previous|next|first|last|up)(?:\s|$)/i;
function isSequenceLink(a: DomElement): boolean {
  return a.hasAttribute('accesskey') || SEQUENCE_REL.test(a.getAttribute('rel') ?? '');
}

/**
 * What a navigation bar's text stays under; what a wrapper may add to it (a chapter title);
 * the longest run of text outside its links (a cell's page title, not a sentence).
 */
const BAR_MAX_TEXT = 300;
const BAR_WRAPPER_TEXT = 80;
const BAR_MAX_RUN = 60;

/** The longest whitespace-collapsed text node under `node` that is not inside a link. */
function longestRunOutsideLinks(node: DomNode): number {
  let longest = 0;
  for (let c = node.firstChild; c; c = c.nextSibling) {
    if (c.nodeType === TEXT_NODE) longest = Math.max(longest, textLength(c));
    else if (isElement(c) && c.nodeName !== 'A')
      longest = Math.max(longest, longestRunOutsideLinks(c));
  }
  return longest;
}
const BAR_STOP = tagIn('body', 'main', 'article', 'h1', 'h2', 'pre');

/**
 * Removes navigation bars found by their links: the smallest element holding two or more
 * sequence links ({@link isSequenceLink}), widened to the wrappers that add little text of
 * their own (the bar's caption row, its `<div>`), under 300 characters, with no run of text
 * outside its links longer than a page title (60 characters: a sentence is prose) and no
 * heading, code or landmark. One such link alone (a "Next" in a sentence) removes nothing.
 */
function removeSequenceBars(links: DomElement[]): number {
  if (links.length < 2) return 0;
  const marked = new Set(links);
  const count = (el: DomElement) => {
    let n = 0;
    for (const a of links) if (el.contains(a)) n++;
    return n;
  };
  const blocked = (el: DomElement) =>
    BAR_STOP(el, tagOf(el)) ||
    collectUnder(el, BAR_STOP).length > 0 ||
    longestRunOutsideLinks(el) > BAR_MAX_RUN;
  let removed = 0;
  for (const a of links) {
    if (!a.parentNode || !marked.has(a)) continue;
    let bar: DomElement | undefined;
    for (let p = a.parentElement; p; p = p.parentElement) {
      if (textLength(p) > BAR_MAX_TEXT || blocked(p)) break;
      if (count(p) >= 2) {
        bar = p;
        break;
      }
    }
    if (!bar) continue;
    const size = textLength(bar);
    for (let p = bar.parentElement; p; p = p.parentElement) {
      const t = textLength(p);
      if (t > BAR_MAX_TEXT || t > size + BAR_WRAPPER_TEXT || blocked(p)) break;
      bar = p;
    }
    for (const l of links) if (bar.contains(l)) marked.delete(l);
    bar.remove();
    removed++;
  }
  return removed;
}

/**
 * Per-post furniture of forums and Q&A sites, read from a short element's whole text: a post's
 * date line ("answered Mar 3, 2021 at 10:02", "edited 2 days ago"), reaction and member counts
 * ("12 likes", "Posts: 340", "Joined 2019"), a user card's reputation badges, and the sign-in /
 * ask prompts forum software puts under every thread.
 */
const POST_LINE =
  /^(?:(?:asked|answered|edited|commented|modified|updated|posted|last edited:?|replied)\s+(?:on\s+)?(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:,? \d{4})?|\d{1,2} (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?(?:,? \d{4})?|\d{4}-\d{2}-\d{2}|\d+ (?:second|minute|hour|day|week|month|year)s? ago|yesterday|today)(?:,? at \d{1,2}:\d{2}(?:\s?[ap]m)?)?(?: by .{1,40})?|\d[\d,.]*k? (?:likes?|reactions?|upvotes?|votes?|replies|answers?|comments?|views?)|(?:posts|messages|reputation|reaction score|points|followers|joined)\s*:?\s*[\d,.]+k?|\d[\d,.]* posts? · joined .{1,20})$/i;
const BADGES = /\b\d[\d,.]*k?\s*(?:gold|silver|bronze) badges?\b/i;
const PROMPT =
  /^(?:create an account or sign in to (?:comment|reply|answer|post).{0,60}|you (?:need to|must) (?:be a member|be logged in|log in|sign in|register)(?: in order)? to .{1,60}|sign up for a new account in our community.{0,40}|register a new account|already have an account\? sign in here\.?|start asking to get answers|find the answer to your question by asking\.?|explore related questions|see similar questions with these tags\.?|sorted by: reset to default.{0,80}|(?:log|sign) in to (?:reply|comment|answer|join the conversation)\.?)$/i;

const CLUTTER_TAGS = tagIn(
  'div',
  'span',
  'p',
  'li',
  'time',
  'a',
  'small',
  'dd',
  'section',
  'footer',
);

/**
 * Removes that furniture from an extracted content root, in place; run after the root is
 * chosen, because a thread's dates and user cards are part of what makes Readability pick it.
 */
export function removePostClutter(body: DomElement): number {
  const text = body.textContent ?? '';
  if (
    !/badge|asked|answered|edited|commented|posted|replied|likes?\b|joined|account|sorted by|question|log in|sign in|member/i.test(
      text,
    )
  )
    return 0;
  let removed = 0;
  for (const el of collectUnder(body, CLUTTER_TAGS)) {
    if (!el.parentNode) continue;
    const raw = shortTextContent(el, 240);
    if (raw === undefined) continue;
    const t = collapseSpace(raw);
    if (t === '' || t.length > 200) continue;
    const card = BADGES.test(t);
    if (!card && !POST_LINE.test(t) && !PROMPT.test(t)) continue;
    // A user card (name, reputation, badges) goes whole: the largest short ancestor holding it.
    let top = el;
    if (card) {
      for (let p = el.parentElement; p && p.nodeName !== 'BODY'; p = p.parentElement) {
        if (shortText(p, 200) === undefined || p.querySelector('p, pre, blockquote, ul, ol, table'))
          break;
        top = p;
      }
    }
    top.remove();
    removed++;
  }
  return removed;
}

/** Removes "Was this page helpful?" blocks: the largest short element that opens with the question. */
const FEEDBACK_TAGS = tagIn(
  'div',
  'section',
  'aside',
  'form',
  'p',
  'span',
  'h2',
  'h3',
  'h4',
  'h5',
  'label',
  'legend',
  'fieldset',
);

function removeFeedback(doc: DomDocument, body: DomElement): number {
  if (
    !/was this|did (?:this|you find)|is this (?:page|article)|how (?:helpful|useful)|rate this|help us improve/i.test(
      body.textContent ?? '',
    )
  )
    return 0;
  let removed = 0;
  for (const el of selectAll(doc, body, FEEDBACK_TAGS)) {
    if (!el.parentNode) continue;
    const text = shortText(el, 200);
    if (text === undefined || !FEEDBACK_TEXT.test(text)) continue;
    let top = el;
    for (
      let p = el.parentElement;
      p && p.nodeName !== 'BODY' && p.nodeName !== 'MAIN' && p.nodeName !== 'ARTICLE';
      p = p.parentElement
    ) {
      const t = shortText(p, 200);
      if (t === undefined || !FEEDBACK_TEXT.test(t)) break;
      top = p;
    }
    top.remove();
    removed++;
  }
  return removed;
}

/** What a code block's copy control says, as a button label or the tooltip beside it. */
const COPY_TEXT = /^(?:copy|copied!?|copy code|copy to clipboard|copied to clipboard!?)$/i;
/** How far up from a `<pre>` its copy control may sit (the code frame's own boxes). */
const COPY_LABEL_LEVELS = 3;
/** Most text a code frame's toolbar holds (a language name, "Copy", "Copied!"). */
const COPY_TOOLBAR_MAX_CHARS = 60;

/**
 * The copy control of a code block drawn outside the `<pre>` (a toolbar or tooltip in the code
 * frame: `<div class="frame"><pre>…</pre><div><button/><div>Copy</div></div></div>`): in the
 * short boxes within {@link COPY_LABEL_LEVELS} levels of the block, beside it rather than
 * around it, every element whose whole text is a copy label. Readability drops the button and
 * keeps the tooltip's word.
 */
function removeCopyLabels(pre: DomElement, searched: Set<DomElement>): number {
  let removed = 0;
  let inner: DomElement = pre;
  for (let level = 0; level < COPY_LABEL_LEVELS; level++) {
    const box = inner.parentElement;
    if (!box || box.nodeName === 'BODY') break;
    const beside = inner;
    inner = box;
    if (searched.has(box)) continue;
    searched.add(box);
    for (let el = box.firstElementChild; el; ) {
      const next = el.nextElementSibling;
      // A short box beside the block: the control itself, or a toolbar holding it.
      if (
        el !== beside &&
        el.nodeName !== 'PRE' &&
        shortText(el, COPY_TOOLBAR_MAX_CHARS) !== undefined
      )
        removed += removeCopyLabelsIn(el);
      el = next;
    }
  }
  return removed;
}

/** Removes `el` when its whole text is a copy label, else the outermost such boxes inside it. */
function removeCopyLabelsIn(el: DomElement): number {
  const text = shortText(el, 24);
  if (text !== undefined && COPY_TEXT.test(text)) {
    el.remove();
    return 1;
  }
  let removed = 0;
  for (let child = el.firstElementChild; child; ) {
    const next = child.nextElementSibling;
    removed += removeCopyLabelsIn(child);
    child = next;
  }
  return removed;
}

/**
 * A permalink set beside its heading rather than inside it (`<h2 id="x">…</h2><a href="#x">`,
 * Starlight, many static-site themes): an in-page link whose target is the heading right next
 * to it, with no more text than the heading's own plus a label ("Section titled …").
 */
function besideOwnHeading(a: DomElement): boolean {
  const href = a.getAttribute('href');
  if (href === null || href.length < 2 || href[0] !== '#') return false;
  let target: string;
  try {
    target = decodeURIComponent(href.slice(1));
  } catch {
    target = href.slice(1);
  }
  let before: DomNode | null = a.previousSibling;
  while (before && !isElement(before)) before = before.previousSibling;
  for (const sib of [before, a.nextElementSibling]) {
    if (!isElement(sib) || !isHeading(sib, tagOf(sib)) || sib.id !== target) continue;
    const heading = textLength(sib);
    return shortText(a, heading + 40) !== undefined;
  }
  return false;
}

function enclosingLink(el: DomElement): DomElement | null {
  for (let p = el.parentElement; p; p = p.parentElement) if (tagOf(p) === 'a') return p;
  return null;
}

function removeWithLonelyParent(el: DomElement): void {
  const parent = el.parentElement;
  if (parent && parent.nodeName !== 'BODY' && textOf(parent) === textOf(el)) parent.remove();
  else el.remove();
}

const HEADING_TAIL = /\s+(?:¶|#+|🔗︎?|§|⚓|Permalink|Link to this heading)\s*$|(?:¶|🔗︎?|§|⚓)\s*$/u;
const LINE_JUNK =
  /^(?:\[?(?:✏️?\s*)?(?:edit this page|edit on github|edit page|improve this page|suggest an edit|view page source|show source)\]?(?:\([^)]*\))?|skip to (?:main )?content|\[skip to (?:main )?content\]\(#[^)]*\))\s*$/i;

/**
 * Normalises Markdown text: NFC, no trailing spaces, no-break and zero-width spaces outside
 * code, heading permalink glyphs stripped, at most one blank line between blocks. Lines inside
 * fenced code and table rows are left exactly as they are (apart from NFC).
 */
export function normalizeMarkdown(markdown: string): string {
  const lines = markdown.normalize('NFC').replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  const fences = new FenceScanner();
  let blank = 0;
  for (const raw of lines) {
    const role = fences.next(raw);
    if (role === 'code' || role === 'close') {
      out.push(raw);
      continue;
    }
    if (role === 'open') {
      blank = 0;
      out.push(raw.trimEnd());
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(raw)) {
      blank = 0;
      out.push(raw);
      continue;
    }
    let line = raw
      .replace(/[\u00a0\u2007\u202f]/g, ' ')
      .replace(/\u200b|\u2060|\ufeff/g, '')
      .trimEnd();
    if (/^#{1,6}\s/.test(line)) line = line.replace(HEADING_TAIL, '').trimEnd();
    if (/^#{1,6}$/.test(line)) line = '';
    if (LINE_JUNK.test(line.trim())) line = '';
    if (line.trim() === '') {
      blank++;
      if (blank === 1 && out.length > 0) out.push('');
      continue;
    }
    blank = 0;
    out.push(line);
  }
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  return out.join('\n');
}
