import { FenceScanner } from './fence.js';

/**
 * Which link targets may stay links in chunk text. Chunks end up in prompts and in apps that
 * render Markdown, so a page must not be able to plant a `javascript:`, `data:`, `vbscript:`,
 * `file:`, `blob:` or custom-scheme link there: only http(s) and mailto (and relative references,
 * which resolve against the http(s) page) stay links; any other link keeps its text and loses
 * its target. The scheme is read the way a browser reads it (leading spaces and control
 * characters ignored, tabs and newlines inside removed, any case), so `java\tscript:` is caught.
 */
const LINK_SCHEMES = new Set(['http', 'https', 'mailto']);
const IMAGE_SCHEMES = new Set(['http', 'https']);

function schemeOf(target: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: what the URL parser strips, we strip.
  const cleaned = target.replace(/[\t\n\r]/g, '').replace(/^[\u0000-\u0020]+/, '');
  const m = /^([a-z][a-z0-9+.-]*):/i.exec(cleaned);
  return m === null ? undefined : m[1]!.toLowerCase();
}

/** Whether a link's `href` may stay a Markdown link (http, https, mailto or relative). */
export function isLinkableHref(href: string): boolean {
  const scheme = schemeOf(href);
  return scheme === undefined || LINK_SCHEMES.has(scheme);
}

/** Whether an image's `src` may stay a Markdown image (http, https or relative). */
export function isLinkableImage(src: string): boolean {
  const scheme = schemeOf(src);
  return scheme === undefined || IMAGE_SCHEMES.has(scheme);
}

/** `[text](target "title")` and `![alt](target)`, one level of brackets inside the text. */
const INLINE_LINK =
  /(!?)\[((?:[^[\]\\\n]|\\.|\[[^[\]\n]*\])*)\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(\s+(?:"[^"\n]*"|'[^'\n]*'|\([^)\n]*\)))?\s*\)/g;
/** `<scheme:…>` autolinks. */
const AUTOLINK = /<([a-z][a-z0-9+.-]{1,31}:[^\s<>]*)>/gi;
/** `[label]: target` reference definitions. */
const DEFINITION = /^( {0,3}\[[^\]\n]+\]:\s*)(<[^>\n]*>|\S+)(.*)$/;

function unlinkLine(line: string): string {
  const definition = DEFINITION.exec(line);
  if (definition !== null) {
    const target = definition[2]!.replace(/^<|>$/g, '');
    return isLinkableHref(target) ? line : '';
  }
  return line
    .replace(INLINE_LINK, (whole, bang: string, text: string, target: string) => {
      const t = target.replace(/^<|>$/g, '');
      if (bang === '!') return isLinkableImage(t) ? whole : '';
      return isLinkableHref(t) ? whole : text;
    })
    .replace(AUTOLINK, (whole, target: string) => (isLinkableHref(target) ? whole : target));
}

/**
 * Markdown taken as it came (a Markdown twin, an export row) under the same rule as extracted
 * HTML: links and images whose target is not http(s), mailto (links) or relative keep their text
 * (an image its nothing) and lose the target. Fenced code is left alone: it shows syntax.
 */
export function unlinkUnsafeMarkdown(markdown: string): string {
  if (!/\]\(|\]:|<[a-z]/i.test(markdown)) return markdown;
  const fences = new FenceScanner();
  return markdown
    .split('\n')
    .map((line) => (fences.next(line) === 'text' ? unlinkLine(line) : line))
    .join('\n');
}
