import { errorMessage, type Reason } from '@ragfresh/core';
import type { PageContext, PageInput, PageOutcome, PagePipeline } from './extract.js';

/**
 * Per-page work limits, checked on the decoded body before anything parses it. Measured on
 * `@ragfresh/extract` (see docs/benchmarks.md and the issue 12 notes): the parse and extraction
 * cost grows with the square of the element nesting depth (500 levels ≈ 5 s, 1,000 ≈ 17 s,
 * 10,000 overflows the stack), and tokenising a run of text without whitespace grows with the
 * square of its length (2,000 chars ≈ 0.8 s, 25,000 ≈ 3 min). Plain size is linear (≈ 4 s/MB).
 * A pre-screen is the only bound that also holds for synchronous work no timer can interrupt.
 */
export interface PageLimits {
  /** Decoded body characters. Default 2,000,000. */
  readonly maxChars: number;
  /** Element nesting depth (elements with optional end tags and void elements do not nest). Default 256. */
  readonly maxDepth: number;
  /** Longest run of text without whitespace. Default 1,000. */
  readonly maxRunChars: number;
  /** Sum of the squares of the text runs longer than 100 chars (their tokenising cost). Default 25,000,000. */
  readonly maxRunCost: number;
  /**
   * Chunks of one page (each is embedded and stored). Default 2,000: a page at `maxChars` cuts
   * into about 1,000 chunks of 512 tokens, so only a page of many tiny sections (or an export
   * row that provides its own chunks) reaches it.
   */
  readonly maxChunks: number;
}

export const DEFAULT_PAGE_LIMITS: PageLimits = Object.freeze({
  maxChars: 2_000_000,
  maxDepth: 256,
  maxRunChars: 1_000,
  maxRunCost: 25_000_000,
  maxChunks: 2_000,
});

/** The code `screenPage` gives a blank body (an import row's empty body is judged elsewhere). */
export const EMPTY_BODY = 'empty-body';

/** The reason codes `screenPage` and `processBounded` refuse a page with over a limit. */
export const PAGE_LIMIT_CODES: ReadonlySet<string> = new Set([
  'page-too-large',
  'page-too-deep',
  'text-run-too-long',
  'text-runs-too-costly',
  'too-many-chunks',
]);

/** `too-many-chunks` when a page cut into more chunks than the limit allows. */
export function chunkCountRefusal(count: number, limits: PageLimits): Reason | undefined {
  return count > limits.maxChunks
    ? {
        code: 'too-many-chunks',
        detail: `the page cuts into ${count} chunks, over the ${limits.maxChunks}-chunk limit`,
      }
    : undefined;
}

// Elements that never nest: void elements, and those whose end tag HTML lets authors omit
// (an unclosed <p> or <li> list would otherwise look a thousand levels deep).
const FLAT = new Set(
  (
    'area base br col embed hr img input link meta param source track wbr keygen frame ' +
    'p li dt dd option optgroup tr td th thead tbody tfoot colgroup caption rp rt rb rtc html head body'
  ).split(' '),
);
// Their content is text the extractor does not tokenise as page text.
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'xmp', 'noscript', 'template', 'svg']);
// Inline elements do not break a run of text; block elements do.
const INLINE = new Set(
  'a span b i em strong code small sub sup mark abbr kbd s u q cite var time font bdi bdo dfn ins del data'.split(
    ' ',
  ),
);

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 0 || c === 160;
}

/** True when the body holds nothing but whitespace and NUL bytes (or nothing). */
export function isBlankBody(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (!isSpace(text.charCodeAt(i))) return false;
  return true;
}

function tagName(html: string, from: number): { name: string; end: number } {
  let j = from;
  while (j < html.length) {
    const c = html.charCodeAt(j);
    // letters, digits, '-', ':'
    if (
      (c >= 97 && c <= 122) ||
      (c >= 65 && c <= 90) ||
      (c >= 48 && c <= 57) ||
      c === 45 ||
      c === 58
    )
      j++;
    else break;
  }
  return { name: html.slice(from, j).toLowerCase(), end: j };
}

/** Index of the `>` closing a tag opened before `from`, skipping quoted attribute values. */
function tagEnd(html: string, from: number): number {
  let quote = 0;
  for (let j = from; j < html.length; j++) {
    const c = html.charCodeAt(j);
    if (quote !== 0) {
      if (c === quote) quote = 0;
    } else if (c === 34 || c === 39) quote = c;
    else if (c === 62) return j;
  }
  return html.length;
}

interface Scan {
  depth: number;
  longestRun: number;
  runCost: number;
}

/** One linear pass: nesting depth of elements, and the runs of text without whitespace. */
function scanHtml(html: string, markup: boolean): Scan {
  const out: Scan = { depth: 0, longestRun: 0, runCost: 0 };
  let depth = 0;
  let run = 0;
  const endRun = () => {
    if (run > out.longestRun) out.longestRun = run;
    if (run > 100) out.runCost += run * run;
    run = 0;
  };
  let i = 0;
  while (i < html.length) {
    const c = html.charCodeAt(i);
    if (markup && c === 60 /* < */) {
      const next = html.charCodeAt(i + 1);
      if (html.startsWith('!--', i + 1)) {
        const close = html.indexOf('-->', i + 4);
        i = close < 0 ? html.length : close + 3;
        continue;
      }
      if (next === 33 || next === 63 /* ! ? */) {
        i = tagEnd(html, i + 2) + 1;
        continue;
      }
      if (next === 47 /* / */) {
        const { name, end } = tagName(html, i + 2);
        if (name !== '') {
          if (!FLAT.has(name) && depth > 0) depth--;
          if (!INLINE.has(name)) endRun();
          i = tagEnd(html, end) + 1;
          continue;
        }
      } else {
        const { name, end } = tagName(html, i + 1);
        if (name !== '') {
          const close = tagEnd(html, end);
          const selfClosing = html.charCodeAt(close - 1) === 47;
          if (!INLINE.has(name)) endRun();
          if (RAW_TEXT.has(name) && !selfClosing) {
            const rest = indexOfEndTag(html, name, close + 1);
            i = rest < 0 ? html.length : rest;
            continue;
          }
          if (!selfClosing && !FLAT.has(name)) {
            depth++;
            if (depth > out.depth) out.depth = depth;
          }
          i = close + 1;
          continue;
        }
      }
    }
    if (isSpace(c)) endRun();
    else run++;
    i++;
  }
  endRun();
  return out;
}

/** Index of `</name` (any case) at or after `from`, or -1. */
function indexOfEndTag(html: string, name: string, from: number): number {
  const re = new RegExp(`</${name}`, 'ig');
  re.lastIndex = from;
  return re.exec(html)?.index ?? -1;
}

/**
 * The engine's pre-screen: empty when the page may be parsed, else the reasons it is
 * refused (`empty-body`, `page-too-large`, `page-too-deep`, `text-run-too-long`,
 * `text-runs-too-costly`), each naming the limit.
 */
export function screenPage(input: PageInput, limits: PageLimits = DEFAULT_PAGE_LIMITS): Reason[] {
  const { text } = input;
  if (isBlankBody(text))
    return [
      {
        code: EMPTY_BODY,
        detail: `the response body is empty (${text.length} chars of whitespace or NUL)`,
      },
    ];
  if (text.length > limits.maxChars)
    return [
      {
        code: 'page-too-large',
        detail: `${text.length} chars, over the ${limits.maxChars}-char page limit`,
      },
    ];
  const markup = !/markdown|text\/plain/i.test(input.contentType ?? '');
  const scan = scanHtml(text, markup);
  const reasons: Reason[] = [];
  if (scan.depth > limits.maxDepth)
    reasons.push({
      code: 'page-too-deep',
      detail: `elements nest ${scan.depth} levels, over the ${limits.maxDepth}-level limit`,
    });
  if (scan.longestRun > limits.maxRunChars)
    reasons.push({
      code: 'text-run-too-long',
      detail: `${scan.longestRun} chars without whitespace, over the ${limits.maxRunChars}-char limit`,
    });
  else if (scan.runCost > limits.maxRunCost)
    reasons.push({
      code: 'text-runs-too-costly',
      detail: `long runs of text without whitespace cost ${scan.runCost}, over ${limits.maxRunCost}`,
    });
  return reasons;
}

/**
 * Runs the page pipeline on one page with the pre-screen in front, the chunk count checked
 * after, and every throw caught: a page the engine cannot read is not the document, with its
 * own reason, and only that page is affected.
 */
export async function processBounded(
  pipeline: PagePipeline,
  input: PageInput,
  context: PageContext,
  limits: PageLimits = DEFAULT_PAGE_LIMITS,
): Promise<PageOutcome> {
  const refused = screenPage(input, limits);
  if (refused.length > 0) return { kind: 'not-the-document', reasons: refused };
  try {
    const outcome = await pipeline.process(input, context);
    const tooMany =
      outcome.kind === 'document' ? chunkCountRefusal(outcome.chunks.length, limits) : undefined;
    return tooMany === undefined ? outcome : { kind: 'not-the-document', reasons: [tooMany] };
  } catch (err) {
    return {
      kind: 'not-the-document',
      reasons: [{ code: 'extract-failed', detail: oneLine(err) }],
    };
  }
}

/** An error as one bounded line (a stack overflow's message can be long). */
export function oneLine(err: unknown): string {
  const m = errorMessage(err).replace(/\s+/g, ' ').trim();
  return m.length > 300 ? `${m.slice(0, 300)}…` : m;
}
