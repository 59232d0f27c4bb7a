/**
 * Fenced code in Markdown, by CommonMark's rules: the one place that decides which lines are
 * code. An opening fence is up to three spaces, then three or more backticks or tildes, then an
 * info string — which, after backticks, holds no backtick (```` ```x``` ```` opening a line is
 * inline code, not a fence). A closing fence is up to three spaces, at least as many of the
 * same character, then only spaces or tabs: ```` ```js ```` inside a block is code. A tab or
 * four spaces before the marker is indented text, not a fence. A block never closed runs to
 * the end of the text.
 */
const OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const CLOSE = /^ {0,3}(`{3,}|~{3,})[ \t]*$/;

/** The marker (```` ``` ````, `~~~~`, …) of a line that opens a fenced block, or undefined. */
export function fenceOpening(line: string): string | undefined {
  const m = OPEN.exec(line);
  if (m === null) return undefined;
  const marker = m[1]!;
  return marker[0] === '`' && m[2]!.includes('`') ? undefined : marker;
}

/** Whether `line` closes the block `marker` opened. */
export function closesFence(line: string, marker: string): boolean {
  const m = CLOSE.exec(line);
  return m !== null && m[1]![0] === marker[0] && m[1]!.length >= marker.length;
}

/** What a line is, read in order: a fence, a line of code inside one, or text outside. */
export type FenceLine = 'open' | 'code' | 'close' | 'text';

/** Reads Markdown line by line and says which lines are fenced code (see the rules above). */
export class FenceScanner {
  #marker: string | undefined;

  /** The role of the next line; call once per line, in order. */
  next(line: string): FenceLine {
    if (this.#marker !== undefined) {
      if (!closesFence(line, this.#marker)) return 'code';
      this.#marker = undefined;
      return 'close';
    }
    this.#marker = fenceOpening(line);
    return this.#marker === undefined ? 'text' : 'open';
  }
}
