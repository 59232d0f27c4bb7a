import { createRequire } from 'node:module';
import TurndownService from 'turndown';
import { classOf, type DomElement, type DomNode, isElement } from './dom.js';
import { FenceScanner } from './fence.js';
import { isLinkableHref, isLinkableImage } from './href.js';
import { LEVEL_ATTR } from './protect.js';

// turndown-plugin-gfm ships no types; only its strikethrough and task-list rules are used (its
// table rule needs HTMLTableElement.rows, which linkedom lacks, and keeps header-less tables as HTML).
const { strikethrough, taskListItems } = createRequire(import.meta.url)('turndown-plugin-gfm') as {
  strikethrough: TurndownService.Plugin;
  taskListItems: TurndownService.Plugin;
};

/** Attribute the cleaner writes on `<pre>` so the language survives Readability's class stripping. */
export const LANG_ATTR = 'data-rf-lang';

const LANG_CLASS = [
  /(?:^|\s)(?:language|lang)-([A-Za-z0-9_+#.-]+)/,
  /(?:^|\s)highlight-(?:source-|text-)?([A-Za-z0-9_+#-]+)/,
  /(?:^|\s)brush:\s*([A-Za-z0-9_+#-]+)/,
  /(?:^|\s)sourceCode\s+([A-Za-z0-9_+#-]+)/,
];
const NOT_A_LANGUAGE = new Set([
  'default',
  'none',
  'notranslate',
  'plain',
  'text',
  'plaintext',
  'nohighlight',
  'source',
  'highlight',
]);

/** Language named by a class list (`language-x`, `lang-x`, `highlight-x`, `brush: x`, ...). */
export function languageOfClass(className: string): string | undefined {
  for (const re of LANG_CLASS) {
    const m = re.exec(className);
    const lang = m?.[1]?.toLowerCase();
    if (lang !== undefined && !NOT_A_LANGUAGE.has(lang)) return lang;
  }
  return undefined;
}

/** Language of a `<pre>`: its own marks, a `<code>` child, then up to three wrapping elements. */
export function languageOfPre(pre: DomElement): string | undefined {
  const marked = pre.getAttribute(LANG_ATTR);
  if (marked) return marked;
  const own = pre.getAttribute('data-lang') ?? pre.getAttribute('data-language');
  if (own) return own.toLowerCase();
  const fromOwn = languageOfClass(classOf(pre));
  if (fromOwn) return fromOwn;
  const code = pre.querySelector('code');
  if (code) {
    const l =
      code.getAttribute('data-lang') ??
      code.getAttribute('data-language') ??
      languageOfClass(classOf(code));
    if (l) return l.toLowerCase();
  }
  let parent = pre.parentElement;
  for (let i = 0; i < 3 && parent; i++, parent = parent.parentElement) {
    const l = parent.getAttribute('data-lang') ?? languageOfClass(classOf(parent));
    if (l) return l.toLowerCase();
  }
  return undefined;
}

function fenceFor(code: string): string {
  let longest = 0;
  for (const m of code.matchAll(/`{3,}/g)) longest = Math.max(longest, m[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

const CELL_OPEN = '\uE000';
const CELL_CLOSE = '\uE001';
const ROW_OPEN = '\uE002';
const ROW_CLOSE = '\uE003';

function cellText(content: string): string {
  return content
    .replace(/[\uE000-\uE003]/g, ' ')
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\|/g, '\\|')
    .trim();
}

function isHeaderRow(row: DomElement): boolean {
  if (row.parentElement?.nodeName === 'THEAD') return true;
  const cells = Array.from(row.children).filter((c) => c.nodeName === 'TD' || c.nodeName === 'TH');
  return cells.length > 0 && cells.every((c) => c.nodeName === 'TH');
}

/** A table nested in another, or used to lay out blocks, is rendered as its content. */
function isLayoutTable(table: DomElement): boolean {
  if (table.querySelector('table')) return true;
  if (table.parentElement?.closest('table')) return false;
  const rows = table.querySelectorAll('tr').length;
  const blocks = table.querySelectorAll('p, div > div, ul, ol, h1, h2, h3, h4').length;
  return rows <= 2 && blocks > 3;
}

function span(cell: DomElement): number {
  const n = Number.parseInt(cell.getAttribute('colspan') ?? '1', 10);
  return Number.isFinite(n) && n > 1 ? Math.min(n, 50) : 1;
}

function addTables(service: TurndownService): void {
  service.addRule('rfTableCell', {
    filter: ['th', 'td'],
    replacement: (content, node) => {
      const extra = span(node as unknown as DomElement) - 1;
      return CELL_OPEN + cellText(content) + CELL_CLOSE + `${CELL_OPEN}${CELL_CLOSE}`.repeat(extra);
    },
  });
  service.addRule('rfTableRow', {
    filter: 'tr',
    replacement: (content, node) => {
      const row = node as unknown as DomElement;
      if (!row.closest('table')) {
        // A row whose table was taken apart upstream: keep its cells readable as one line.
        const cells = Array.from(content.matchAll(/\uE000([\s\S]*?)\uE001/g), (c) => c[1] ?? '');
        return `\n\n| ${cells.join(' | ')} |\n\n`;
      }
      const header = isHeaderRow(row) ? 'h' : 'b';
      return ROW_OPEN + header + content + ROW_CLOSE;
    },
  });
  service.addRule('rfTableSection', {
    filter: ['thead', 'tbody', 'tfoot'],
    replacement: (content) => content,
  });
  service.addRule('rfTableCaption', {
    filter: 'caption',
    replacement: (content) => `${cellText(content)}\n\n`,
  });
  service.addRule('rfTable', {
    filter: 'table',
    replacement: (content, node) => {
      const table = node as unknown as DomElement;
      const rows: Array<{ header: boolean; cells: string[] }> = [];
      let before = '';
      let cursor = 0;
      for (const m of content.matchAll(/\uE002([hb])([\s\S]*?)\uE003/g)) {
        before += content.slice(cursor, m.index);
        cursor = (m.index ?? 0) + m[0].length;
        const cells = Array.from(
          (m[2] ?? '').matchAll(/\uE000([\s\S]*?)\uE001/g),
          (c) => c[1] ?? '',
        );
        rows.push({ header: m[1] === 'h', cells });
      }
      const caption = before.replace(/[\uE000-\uE003]/g, '').trim();
      if (rows.length === 0 || isLayoutTable(table)) {
        const flat = content.replace(/\uE002[hb]/g, '\n\n').replace(/[\uE000-\uE003]/g, ' ');
        return `\n\n${flat.trim()}\n\n`;
      }
      const width = Math.max(...rows.map((r) => r.cells.length));
      if (width === 1 && rows.length <= 2) {
        return `\n\n${rows.map((r) => r.cells[0] ?? '').join('\n\n')}\n\n`;
      }
      const line = (cells: string[]) => {
        const padded = [...cells];
        while (padded.length < width) padded.push('');
        return `| ${padded.join(' | ')} |`;
      };
      const headerIndex = rows.findIndex((r) => r.header);
      const head = headerIndex === 0 ? rows[0]! : undefined;
      const body = head ? rows.slice(1) : rows;
      const out = [
        line(head ? head.cells : Array(width).fill('')),
        `| ${Array(width).fill('---').join(' | ')} |`,
      ];
      for (const r of body) out.push(line(r.cells));
      return `\n\n${caption ? `${caption}\n\n` : ''}${out.join('\n')}\n\n`;
    },
  });
}

/**
 * Text of a code block. Highlighters that draw each line as a block element (`<span
 * class="line">` holding token spans, or one `<div>` a line) leave no newline characters in
 * the text: such line wrappers are joined with newlines.
 */
export function codeText(pre: DomElement): string {
  const text = pre.textContent ?? '';
  if (text.includes('\n')) return text;
  let holder: DomElement = pre;
  while (holder.children.length === 1 && holder.firstElementChild)
    holder = holder.firstElementChild;
  const lines = Array.from(holder.children);
  if (lines.length < 2) return text;
  const tag = lines[0]!.nodeName;
  if (!lines.every((l) => l.nodeName === tag)) return text;
  if (tag !== 'DIV' && !lines.every((l) => l.children.length > 0 || (l.textContent ?? '') === ''))
    return text;
  return lines.map((l) => l.textContent ?? '').join('\n');
}

function addCode(service: TurndownService): void {
  service.addRule('rfPre', {
    filter: (node) => node.nodeName === 'PRE',
    replacement: (_content, node) => {
      const pre = node as unknown as DomElement;
      const lang = languageOfPre(pre) ?? '';
      const code = codeText(pre)
        .replace(/\r\n?/g, '\n')
        .replace(/^\n+|\n+$/g, '');
      if (code.trim() === '') return '';
      const fence = fenceFor(code);
      return `\n\n${fence}${lang}\n${code}\n${fence}\n\n`;
    },
  });
}

/** Indents continuation lines of a list item, except fenced code, which stays byte-exact. */
function indentOutsideFences(content: string, width: number): string {
  const pad = ' '.repeat(width);
  const fences = new FenceScanner();
  return content
    .split('\n')
    .map((line, i) => {
      if (fences.next(line) !== 'text') return line;
      return i === 0 || line === '' ? line : pad + line;
    })
    .join('\n');
}

function addLists(service: TurndownService): void {
  service.addRule('rfListItem', {
    filter: 'li',
    replacement: (content, node, options) => {
      const li = node as unknown as DomElement;
      const parent = li.parentElement;
      let prefix = `${options.bulletListMarker ?? '-'} `;
      if (parent?.nodeName === 'OL') {
        const start = Number.parseInt(parent.getAttribute('start') ?? '1', 10);
        const index = Array.prototype.indexOf.call(parent.children, li);
        prefix = `${(Number.isFinite(start) ? start : 1) + index}. `;
      }
      const body = content.replace(/^\n+/, '').replace(/\n+$/, '');
      if (body.trim() === '') return '';
      return `${prefix}${indentOutsideFences(body, prefix.length)}${li.nextSibling ? '\n' : ''}`;
    },
  });
}

function addCleanup(service: TurndownService): void {
  service.remove((node) =>
    /^(?:SCRIPT|STYLE|NOSCRIPT|TEMPLATE|IFRAME|BUTTON|SELECT|TEXTAREA|INPUT|SVG|CANVAS|OBJECT|EMBED)$/i.test(
      node.nodeName,
    ),
  );
  service.addRule('rfHeading', {
    filter: ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'],
    replacement: (content, node) => {
      // Readability renames an in-body h1 to h2; the level pinned before it ran is the truth.
      const pinned = Number((node as unknown as DomElement).getAttribute(LEVEL_ATTR));
      const level = pinned >= 1 && pinned <= 6 ? pinned : Number(node.nodeName.charAt(1));
      const text = content
        .replace(/\s*\n\s*/g, ' ')
        .replace(/\s+/g, ' ')
        .trim();
      if (text === '') return '';
      return `\n\n${'#'.repeat(level)} ${text}\n\n`;
    },
  });
  service.addRule('rfImage', {
    filter: 'img',
    replacement: (_content, node) => {
      const img = node as unknown as DomElement;
      const alt = (img.getAttribute('alt') ?? '').replace(/\s+/g, ' ').trim();
      const src = img.getAttribute('src') ?? '';
      if (alt === '' || src === '' || !isLinkableImage(src)) return '';
      return `![${alt.replace(/[[\]]/g, '\\$&')}](${src.replace(/[()\s]/g, encodeURIComponent)})`;
    },
  });
  service.addRule('rfLink', {
    filter: (node) => node.nodeName === 'A' && node.getAttribute('href') !== null,
    replacement: (content, node) => {
      const href = (node as unknown as DomElement).getAttribute('href') ?? '';
      const text = content.replace(/\s*\n\s*/g, ' ').trim();
      if (text === '') return '';
      // An in-page anchor, or a target other than http(s), mailto or relative: the text stays.
      if (href === '' || href.startsWith('#') || !isLinkableHref(href)) return content;
      // A link around a heading (a card title): the heading line stays a heading, linked.
      const heading = /^(#{1,6}) (.+)$/m.exec(content.trim());
      if (heading && content.trim().startsWith('#')) {
        const rest = content.trim().slice(heading[0].length).trim();
        const url = href.replace(/[()\s]/g, encodeURIComponent);
        return `\n\n${heading[1]} [${heading[2]}](${url})\n\n${rest === '' ? '' : `${rest}\n\n`}`;
      }
      return `[${text}](${href.replace(/[()\s]/g, encodeURIComponent)})`;
    },
  });
}

let shared: TurndownService | undefined;

/** The one configured turndown instance: ATX headings, fenced code with languages, GFM tables. */
export function markdownService(): TurndownService {
  if (shared) return shared;
  const service = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    fence: '```',
    bulletListMarker: '-',
    emDelimiter: '*',
    strongDelimiter: '**',
    hr: '---',
  });
  service.use([strikethrough, taskListItems]);
  addCleanup(service);
  addLists(service);
  addTables(service);
  addCode(service);
  shared = service;
  return service;
}

export interface ToMarkdownOptions {
  /**
   * The element is the caller's own copy, dropped after this call: convert it in place.
   * turndown otherwise deep-copies its input before collapsing whitespace in it. The element
   * is detached and its text nodes rewritten.
   */
  readonly consume?: boolean;
}

/**
 * Markdown of an element or document. Not mutated unless `consume` is set (turndown works on
 * a copy); orphan table rows are wrapped in a table either way ({@link adoptOrphanRows}).
 */
export function toMarkdown(node: DomNode | string, options: ToMarkdownOptions = {}): string {
  if (typeof node === 'string') return convert(node);
  if (!isElement(node)) return convert(node as unknown as TurndownService.Node);
  adoptOrphanRows(node);
  if (!options.consume) return convert(node as unknown as TurndownService.Node);
  // turndown copies its input with `input.cloneNode(true)`; for this one call the element
  // answers that with itself. Detached first, so nothing above it is read as its context.
  node.remove();
  Object.defineProperty(node, 'cloneNode', { value: () => node, configurable: true });
  try {
    return convert(node as unknown as TurndownService.Node);
  } finally {
    delete (node as { cloneNode?: unknown }).cloneNode;
  }
}

function convert(input: TurndownService.Node | string): string {
  return markdownService()
    .turndown(input)
    .replace(/[\uE000-\uE003]/g, '');
}

const TABLE_PARTS = new Set(['TABLE', 'THEAD', 'TBODY', 'TFOOT']);

/**
 * Readability sometimes keeps a table's body but not the table (its top candidate was the
 * `<tbody>`); such rows are put back into a table so they still become a GFM table.
 */
export function adoptOrphanRows(root: DomElement): void {
  for (const part of Array.from(root.querySelectorAll('thead, tbody, tfoot, tr'))) {
    const parent = part.parentElement;
    if (!parent || TABLE_PARTS.has(parent.nodeName) || part.closest('table')) continue;
    const doc = (part as unknown as { ownerDocument: { createElement(tag: string): DomElement } })
      .ownerDocument;
    const table = doc.createElement('table');
    parent.insertBefore(table, part);
    // Move the whole run of sibling rows, so one table comes out and not one per row.
    let next: DomNode | null = part;
    while (next) {
      const after: DomNode | null = next.nextSibling;
      if (isElement(next)) {
        if (!TABLE_PARTS.has(next.nodeName) && next.nodeName !== 'TR') break;
        table.appendChild(next);
      } else if ((next.textContent ?? '').trim() === '') {
        next.remove();
      } else break;
      next = after;
    }
  }
}

export { isElement };
