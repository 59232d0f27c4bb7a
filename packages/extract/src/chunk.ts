import { RagfreshError } from '@ragfresh/core';
import { closesFence, fenceOpening } from './fence.js';
import { markdownToPlainText } from './plaintext.js';
import { type TokenCounter, tiktokenCounter } from './tokens.js';
import { isSpace } from './whitespace.js';

export interface ChunkOptions {
  /** Token budget a chunk is packed up to. Default 512. */
  readonly maxTokens?: number;
  /** Code blocks and tables up to this size are never cut (a chunk may then exceed maxTokens). Default 1024. */
  readonly hardMaxTokens?: number;
  /**
   * No chunk is smaller than this unless the whole page is: a smaller one joins its next section
   * (a subsection or same-level sibling) or the chunk before it. Default 64.
   */
  readonly minTokens?: number;
  /** Default: tiktoken cl100k_base. */
  readonly counter?: TokenCounter;
  /**
   * Document title. Extraction leaves the page's h1 out when it is the title (Readability's
   * rule); when the Markdown has no level-1 heading, every heading path starts with this.
   */
  readonly title?: string;
}

export interface TextChunk {
  /** Markdown of the chunk, NFC. */
  readonly text: string;
  /** Headings above the chunk, outermost first, as plain text. */
  readonly headingPath: readonly string[];
  readonly tokenCount: number;
}

/** Line put before a piece of a cut code block or table that continues the previous chunk. */
export const CONTINUED_FROM_NOTE = '(continued from the previous chunk)';
/** Line put after a piece of a cut code block or table that continues in the next chunk. */
export const CONTINUES_NOTE = '(continues in the next chunk)';

type BlockKind = 'heading' | 'code' | 'table' | 'text';
interface Block {
  readonly kind: BlockKind;
  readonly text: string;
  readonly level?: number;
  readonly heading?: string;
}

const HEADING = /^\s{0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;

/** Splits Markdown into headings, fenced code, tables and text blocks. `#` lines inside fences are code. */
export function markdownBlocks(markdown: string): Block[] {
  const lines = markdown.normalize('NFC').replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const marker = fenceOpening(line);
    if (marker !== undefined) {
      const body = [line];
      i++;
      while (i < lines.length) {
        const l = lines[i]!;
        body.push(l);
        i++;
        if (closesFence(l, marker)) break;
      }
      blocks.push({ kind: 'code', text: body.join('\n') });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading?.[1] !== undefined) {
      const raw = (heading[2] ?? '').replace(/[ \t]+#+$/, '').trim();
      blocks.push({
        kind: 'heading',
        text: line.trim(),
        level: heading[1].length,
        heading: markdownToPlainText(raw).trim(),
      });
      i++;
      continue;
    }
    if (line.trim() === '') {
      i++;
      continue;
    }
    if (/^\s*\|/.test(line)) {
      const rows: string[] = [];
      while (i < lines.length && /^\s*\|/.test(lines[i]!)) rows.push(lines[i++]!);
      blocks.push({ kind: 'table', text: rows.join('\n') });
      continue;
    }
    const para: string[] = [];
    while (i < lines.length) {
      const l = lines[i]!;
      if (l.trim() === '' || HEADING.test(l) || fenceOpening(l) !== undefined || /^\s*\|/.test(l))
        break;
      para.push(l);
      i++;
    }
    blocks.push({ kind: 'text', text: para.join('\n') });
  }
  return blocks;
}

interface Section {
  readonly path: readonly string[];
  readonly blocks: Block[];
}

function sections(blocks: readonly Block[], title: string | undefined): Section[] {
  const out: Section[] = [];
  const root = title?.replace(/\s+/g, ' ').trim();
  const hasH1 = blocks.some((b) => b.kind === 'heading' && b.level === 1);
  const stack: Array<{ level: number; text: string }> =
    root && !hasH1 ? [{ level: 0, text: root }] : [];
  let current: Section = { path: stack.map((s) => s.text), blocks: [] };
  for (const b of blocks) {
    if (b.kind === 'heading') {
      if (current.blocks.length > 0) out.push(current);
      while (stack.length > 0 && stack[stack.length - 1]!.level >= b.level!) stack.pop();
      stack.push({ level: b.level!, text: b.heading ?? '' });
      current = { path: stack.map((s) => s.text).filter((t) => t !== ''), blocks: [b] };
    } else {
      current.blocks.push(b);
    }
  }
  if (current.blocks.length > 0) out.push(current);
  return out;
}

interface Ctx {
  readonly max: number;
  readonly hard: number;
  readonly min: number;
  readonly counter: TokenCounter;
  /** Tokens of the blank line joining two blocks (1 for tiktoken, 0 for a word counter). */
  readonly sep: number;
  /**
   * Tokens that joining `a` and `b` with a blank line adds to their counts. BPE splits text at
   * whitespace first, so only the last word of `a` and the first of `b` can change: counting
   * those two, joined and apart, makes the sum of block counts exact (punctuation before a
   * blank line merges with it in cl100k, a plain word does not).
   */
  readonly boundary: (a: string, b: string) => number;
  /** Tokens of a line break joining two lines. */
  readonly nl: number;
}

/** Cuts an oversized fenced block on line boundaries; every piece is a complete fence. */
function cutCode(text: string, ctx: Ctx, lead: number): string[] {
  const lines = text.split('\n');
  const open = lines[0]!;
  const closing =
    lines.length > 1 && /^\s{0,3}(`{3,}|~{3,})\s*$/.test(lines[lines.length - 1]!)
      ? lines[lines.length - 1]!
      : '```';
  const body = lines.slice(1, lines.length > 1 ? -1 : undefined);
  const overhead =
    lead + ctx.counter.count(`${open}\n${closing}\n${CONTINUED_FROM_NOTE}\n${CONTINUES_NOTE}`);
  return packUnits(body, ctx, overhead, ctx.nl).map(
    (piece) => `${open}\n${piece.join('\n')}\n${closing}`,
  );
}

/** Cuts an oversized table on row boundaries; every piece repeats the header rows. */
function cutTable(text: string, ctx: Ctx, lead: number): string[] {
  const rows = text.split('\n');
  const hasHeader = rows.length > 2 && /^\s*\|(?:\s*:?-{3,}:?\s*\|)+\s*$/.test(rows[1]!);
  const header = hasHeader ? rows.slice(0, 2) : [];
  const body = hasHeader ? rows.slice(2) : rows;
  const overhead =
    lead + ctx.counter.count(`${header.join('\n')}\n${CONTINUED_FROM_NOTE}\n${CONTINUES_NOTE}`);
  return packUnits(body, ctx, overhead, ctx.nl).map((piece) => [...header, ...piece].join('\n'));
}

/**
 * Packs units (lines, sentences, words) into pieces of at most `ctx.max - overhead` tokens,
 * each unit counted once. Pieces are balanced (about total / pieces each), so a cut never
 * leaves a sliver of a few tokens at the end.
 */
function packUnits(
  units: readonly string[],
  ctx: Ctx,
  overhead: number,
  joinCost: number,
  counts: readonly number[] = units.map((u) => ctx.counter.count(u)),
): string[][] {
  const budget = Math.max(1, ctx.max - overhead);
  const total = counts.reduce((a, b) => a + b, 0) + joinCost * Math.max(0, units.length - 1);
  const target = total / Math.max(1, Math.ceil(total / budget));
  const pieces: string[][] = [];
  let current: string[] = [];
  let tokens = 0;
  units.forEach((u, i) => {
    const t = counts[i]!;
    const next = tokens + (current.length > 0 ? joinCost : 0) + t;
    if (current.length > 0 && (next > budget || tokens + t / 2 > target)) {
      pieces.push(current);
      current = [];
      tokens = 0;
    }
    tokens += (current.length > 0 ? joinCost : 0) + t;
    current.push(u);
  });
  if (current.length > 0) pieces.push(current);
  return pieces;
}

const SENTENCE_END = /(?<=[.!?\u3002\uff01\uff1f])(?=\s+\S)/gu;
/** Before a space-led word, or between two links written without a space (`[a](x)[b](y)`). */
const WORD_GAP = /(?=\s+\S)|(?<=\))(?=!?\[)/gu;
/** An inline Markdown link or image (its text may hold one level of brackets, its URL one of parentheses). */
const INLINE_LINK =
  /!?\[(?:[^[\]\n]|\[[^[\]\n]*\])*\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+"[^"\n]*")?\)/gu;

/**
 * Splits `text` at the zero-width matches of `boundary`, except inside an inline link or image
 * that fits the budget: a cut there would leave `[Jane` in one chunk and `Doe](https://…)` in
 * the next, a link in neither. (A link longer than the budget, a whole card wrapped in one
 * anchor, is cut like any text.) The units concatenate back to `text`.
 */
function splitOutsideLinks(text: string, boundary: RegExp, ctx: Ctx): string[] {
  const links: Array<[number, number]> = [];
  if (text.includes('](')) {
    const re = new RegExp(INLINE_LINK);
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      if (ctx.counter.count(m[0]) > ctx.max) {
        re.lastIndex = m.index + 1; // the links inside it still hold
        continue;
      }
      links.push([m.index, m.index + m[0].length]);
    }
  }
  const units: string[] = [];
  let start = 0;
  let l = 0;
  for (const m of text.matchAll(boundary)) {
    const at = m.index;
    if (at === 0) continue;
    while (l < links.length && links[l]![1] <= at) l++;
    if (l < links.length && links[l]![0] < at) continue;
    units.push(text.slice(start, at));
    start = at;
  }
  units.push(text.slice(start));
  return units;
}

/**
 * Splits oversized prose at the largest boundary that works: lines (list items), then
 * sentences, then words, then characters. Every unit is counted once, and a unit keeps the
 * whitespace before it, so unit counts add up to the piece's count (BPE tokens start at a space).
 */
function cutText(
  text: string,
  ctx: Ctx,
  whole = ctx.counter.count(text),
  depth = 0,
): Array<{ text: string; tokens: number }> {
  if (whole <= ctx.max) return [{ text, tokens: whole }];
  let units: string[] | undefined;
  let joinCost = 0;
  let joiner = '';
  if (depth === 0 && text.includes('\n')) {
    units = text.split('\n');
    joiner = '\n';
    joinCost = ctx.nl;
  }
  if (units === undefined && depth <= 1) {
    const sentences = splitOutsideLinks(text, SENTENCE_END, ctx);
    if (sentences.length > 1) [units, depth] = [sentences, 1];
  }
  if (units === undefined && depth <= 2) {
    const words = splitOutsideLinks(text, WORD_GAP, ctx);
    if (words.length > 1) [units, depth] = [words, 2];
  }
  if (units === undefined) {
    // One "word" over the budget (a data URI, a hash list): cut by characters.
    const step = Math.max(16, Math.floor((text.length * ctx.max) / whole / 1.1));
    units = [];
    for (let i = 0; i < text.length; i += step) units.push(text.slice(i, i + step));
    depth = 3;
  }
  const out: Array<{ text: string; tokens: number }> = [];
  let run: string[] = [];
  let runCounts: number[] = [];
  const flushRun = () => {
    if (run.length === 0) return;
    for (const piece of packUnits(run, ctx, 0, joinCost, runCounts)) {
      const t = piece.join(joiner).trim();
      if (t !== '') out.push({ text: t, tokens: ctx.counter.count(t) });
    }
    run = [];
    runCounts = [];
  };
  for (const u of units) {
    const t = ctx.counter.count(u);
    if (depth < 3 && t > ctx.max) {
      flushRun();
      out.push(...cutText(u.trim(), ctx, ctx.counter.count(u.trim()), depth + 1));
    } else {
      run.push(u);
      runCounts.push(t);
    }
  }
  flushRun();
  return out;
}

interface Draft {
  parts: string[];
  tokens: number;
  path: readonly string[];
  /** Heading paths of the parts that carry text (not only a heading). */
  contentPaths: Array<readonly string[]>;
  headingOnly: boolean;
  /** Pieces of a cut block are never merged with each other. */
  sealed: boolean;
}

/** Packs a section's blocks onto `drafts` (the chunks so far, which a cut block may take a lead from). */
function packSection(section: Section, ctx: Ctx, drafts: Draft[]): void {
  let cur: Draft | undefined;
  const flush = () => {
    if (cur && cur.parts.length > 0) drafts.push(cur);
    cur = undefined;
  };
  const add = (text: string, tokens: number, heading: boolean) => {
    if (
      cur &&
      cur.tokens + tokens + ctx.sep > ctx.max &&
      !(cur.headingOnly && cur.tokens + tokens + ctx.sep <= ctx.hard)
    )
      flush();
    if (!cur)
      cur = {
        parts: [],
        tokens: 0,
        path: section.path,
        contentPaths: [],
        headingOnly: true,
        sealed: false,
      };
    const last = cur.parts[cur.parts.length - 1];
    cur.tokens += tokens + (last === undefined ? 0 : ctx.boundary(last, text));
    cur.parts.push(text);
    if (!heading && cur.headingOnly) {
      cur.headingOnly = false;
      cur.contentPaths.push(section.path);
    }
  };
  for (const b of section.blocks) {
    const tokens = ctx.counter.count(b.text);
    if (b.kind === 'heading') {
      add(b.text, tokens, true);
      continue;
    }
    if ((b.kind === 'code' || b.kind === 'table') && tokens > ctx.hard) {
      // A heading or a short lead-in before the block rides on its first piece.
      let leadDraft = cur && (cur.headingOnly || cur.tokens < ctx.min) ? cur : undefined;
      const before = drafts[drafts.length - 1];
      if (
        (leadDraft === undefined || leadDraft.headingOnly) &&
        cur === leadDraft &&
        before &&
        !before.sealed &&
        before.tokens < ctx.min
      ) {
        drafts.pop();
        leadDraft = leadDraft ? join(before, leadDraft, ctx) : before;
      }
      const leadCost = leadDraft ? leadDraft.tokens + ctx.sep : 0;
      const pieces =
        b.kind === 'code' ? cutCode(b.text, ctx, leadCost) : cutTable(b.text, ctx, leadCost);
      const lead = leadDraft ? leadDraft.parts : [];
      if (!leadDraft) flush();
      cur = undefined;
      pieces.forEach((piece, k) => {
        const text = [
          ...(k === 0 ? lead : []),
          ...(k > 0 ? [CONTINUED_FROM_NOTE] : []),
          piece,
          ...(k < pieces.length - 1 ? [CONTINUES_NOTE] : []),
        ].join('\n\n');
        const contentPaths =
          k === 0 && leadDraft ? [...leadDraft.contentPaths, section.path] : [section.path];
        drafts.push({
          parts: [text],
          tokens: ctx.counter.count(text),
          path: k === 0 ? commonPrefix(contentPaths) : section.path,
          contentPaths,
          headingOnly: false,
          sealed: true,
        });
      });
      continue;
    }
    if (b.kind === 'text' && tokens > ctx.max) {
      for (const piece of cutText(b.text, ctx, tokens)) add(piece.text, piece.tokens, false);
      continue;
    }
    add(b.text, tokens, false);
  }
  flush();
}

function commonPrefix(paths: ReadonlyArray<readonly string[]>): string[] {
  if (paths.length === 0) return [];
  const out: string[] = [];
  const first = paths[0]!;
  for (let i = 0; i < first.length; i++) {
    if (paths.every((p) => p[i] === first[i])) out.push(first[i]!);
    else break;
  }
  return out;
}

function join(a: Draft, b: Draft, ctx: Ctx): Draft {
  const contentPaths = [...a.contentPaths, ...b.contentPaths];
  return {
    parts: [...a.parts, ...b.parts],
    tokens: a.tokens + b.tokens + ctx.boundary(a.parts[a.parts.length - 1]!, b.parts[0]!),
    // A parent's own text stays under the parent's path; a bare heading adds no text.
    path: contentPaths.length > 0 ? commonPrefix(contentPaths) : commonPrefix([a.path, b.path]),
    contentPaths,
    headingOnly: a.headingOnly && b.headingOnly,
    sealed: a.sealed || b.sealed,
  };
}

/** `b` lies in `a`'s subtree, or both are children of one parent (same-level siblings). */
function related(a: readonly string[], b: readonly string[]): boolean {
  if (a.length <= b.length && a.every((p, i) => b[i] === p)) return true;
  return a.length === b.length && a.slice(0, -1).every((p, i) => b[i] === p);
}

/**
 * Joins chunks under `minTokens` and heading-only chunks to a neighbour: first a bare heading
 * or tiny section to the section that follows it (its subsection or a same-level sibling),
 * then a tiny chunk to the one before it, then, when the hierarchy allows nothing, to any
 * neighbour within `maxTokens + minTokens`, then within `hardMaxTokens`, and last (when both
 * neighbours are too full) to the chunk just past one of them. A heading is never left alone
 * in a chunk.
 */
function mergeSmall(drafts: Draft[], ctx: Ctx): Draft[] {
  const small = (d: Draft) => d.headingOnly || d.tokens < ctx.min;
  const sealedPair = (a: Draft, b: Draft) => a.sealed && b.sealed;
  const fits = (a: Draft, b: Draft, limit: number) => a.tokens + b.tokens + ctx.sep <= limit;
  // 1. Forward, along the hierarchy.
  let list: Draft[] = [];
  for (let i = 0; i < drafts.length; i++) {
    let d = drafts[i]!;
    // A section's own tiny tail joins backward (below), not into the next section.
    const tail = i > 0 && drafts[i - 1]!.path === d.path;
    while (!tail && i + 1 < drafts.length) {
      const next = drafts[i + 1]!;
      if (!small(d) || sealedPair(d, next) || !related(d.path, next.path)) break;
      if (!fits(d, next, ctx.max) && !(d.headingOnly && fits(d, next, ctx.hard))) break;
      d = join(d, next, ctx);
      i++;
    }
    list.push(d);
  }
  // 2. Backward: a tiny chunk joins the one before it when it belongs under it.
  // 3. Then anything still small joins whichever neighbour it fits with.
  // (A last pass lets a chunk still under the minimum grow up to hardMaxTokens rather than
  // stand alone: one larger chunk retrieves better than a sliver.)
  for (const [limit, anyRelation] of [
    [ctx.max, false],
    [ctx.max + ctx.min, true],
    [ctx.hard, true],
  ] as const) {
    const out: Draft[] = [];
    for (const d of list) {
      const prev = out[out.length - 1];
      if (
        prev &&
        (small(d) || (anyRelation && small(prev))) &&
        !sealedPair(prev, d) &&
        !d.headingOnly &&
        (anyRelation || related(prev.path, d.path)) &&
        fits(prev, d, prev.sealed || d.sealed ? ctx.max : limit)
      ) {
        out[out.length - 1] = join(prev, d, ctx);
      } else out.push(d);
    }
    list = out;
  }
  // 4. A heading alone (a run of empty sections at the end of the page) joins its neighbour.
  const out: Draft[] = [];
  for (const d of list) {
    const prev = out[out.length - 1];
    if (prev && (d.headingOnly || prev.headingOnly)) out[out.length - 1] = join(prev, d, ctx);
    else out.push(d);
  }
  return joinPastFull(out, ctx);
}

/**
 * The last resort for a chunk still under the minimum: both neighbours are too full to take it
 * within `hardMaxTokens` (a whole table or code block of nearly that size beside it), so it
 * joins the chunk one further on, before or after, when that one can take it within `maxTokens`.
 * The small section keeps its heading line, so it still reads as its own section; only its
 * place relative to the one full chunk between them changes. Pieces of a cut block are never
 * the target, and nothing moves when a neighbour could have taken it.
 */
function joinPastFull(list: Draft[], ctx: Ctx): Draft[] {
  if (list.length < 3) return list;
  const fits = (a: Draft, b: Draft, limit: number) => a.tokens + b.tokens + ctx.sep <= limit;
  const out = [...list];
  for (let i = 0; i < out.length; i++) {
    const d = out[i]!;
    if (d.tokens >= ctx.min || d.sealed) continue;
    const before = out[i - 1];
    const after = out[i + 1];
    if ((before && fits(before, d, ctx.hard)) || (after && fits(d, after, ctx.hard))) continue;
    const far = out[i - 2];
    const farAfter = out[i + 2];
    if (far && !far.sealed && fits(far, d, ctx.max)) {
      out[i - 2] = join(far, d, ctx);
      out.splice(i, 1);
      i--;
    } else if (farAfter && !farAfter.sealed && fits(d, farAfter, ctx.max)) {
      out[i + 2] = join(d, farAfter, ctx);
      out.splice(i, 1);
      i--;
    }
  }
  return out;
}

/**
 * Where `/\s?\S*\s*$/` matches `text` (its last word with one space before it and the
 * whitespace after it), found from the end: the regex tries every start position from the left,
 * which made it quadratic on long blocks.
 */
function lastWordStart(text: string): number {
  let i = text.length;
  while (i > 0 && isSpace(text.charCodeAt(i - 1))) i--;
  if (i === 0) return 0;
  while (i > 0 && !isSpace(text.charCodeAt(i - 1))) i--;
  return i > 0 ? i - 1 : 0;
}

/**
 * Heading-aware chunking of Markdown. Sections start at heading lines (never at `#` lines in
 * fenced code) and carry their heading path; blocks are packed up to `maxTokens`; code blocks
 * and tables are kept whole up to `hardMaxTokens`, and larger ones are cut on line boundaries
 * with continuation notes; a section's tiny trailing chunk is merged, and a heading-only
 * section joins its first subsection. Deterministic: same input and options, same chunks.
 */
export function chunkMarkdown(markdown: string, options: ChunkOptions = {}): TextChunk[] {
  const max = options.maxTokens ?? 512;
  const hard = Math.max(max, options.hardMaxTokens ?? 1024);
  const min = Math.min(options.minTokens ?? 64, max);
  if (!(Number.isInteger(max) && max >= 16)) {
    throw new RagfreshError('INVALID_ARGUMENT', `maxTokens must be an integer >= 16, got ${max}.`, {
      scope: 'extract',
    });
  }
  const counter = options.counter ?? tiktokenCounter();
  const ctx: Ctx = {
    max,
    hard,
    min,
    counter,
    sep: Math.max(0, counter.count('a\n\nb') - counter.count('a') - counter.count('b')),
    boundary: (a, b) => {
      // With the space before it: cl100k pieces may start with one (" 🙂\n\n" is one piece).
      const tail = a.slice(lastWordStart(a));
      const head = /^\s*\S*/.exec(b)?.[0] ?? '';
      return counter.count(`${tail}\n\n${head}`) - counter.count(tail) - counter.count(head);
    },
    nl: Math.max(0, counter.count('a\nb') - counter.count('a') - counter.count('b')),
  };
  const drafts: Draft[] = [];
  for (const section of sections(markdownBlocks(markdown), options.title))
    packSection(section, ctx, drafts);
  // Token counts are the sums of the counted blocks: the final chunks are not counted again.
  return mergeSmall(drafts, ctx).map((d) => ({
    text: d.parts.join('\n\n'),
    headingPath: [...d.path],
    tokenCount: d.tokens,
  }));
}

/**
 * The one method ragfresh needs from a LangChain `TextSplitter` (`@langchain/textsplitters`),
 * declared structurally so this package does not depend on LangChain.
 */
export interface SectionSplitter {
  splitText(text: string): Promise<string[]>;
}

export interface SplitterChunkOptions {
  /** Counts the tokens reported on each chunk. Default: tiktoken cl100k_base. */
  readonly counter?: TokenCounter;
  /** Roots heading paths when the Markdown has no h1 (as in {@link chunkMarkdown}). */
  readonly title?: string;
}

/**
 * Chunks Markdown with a splitter of your own (a LangChain `TextSplitter`, say) while keeping
 * ragfresh's sections: the splitter sees one section at a time (its heading line, then its
 * text) and every piece it returns carries that section's heading path. A section holding only
 * its heading is given to the next section, so no chunk is a bare heading.
 */
export async function chunkMarkdownWithSplitter(
  markdown: string,
  splitter: SectionSplitter,
  options: SplitterChunkOptions = {},
): Promise<TextChunk[]> {
  const counter = options.counter ?? tiktokenCounter();
  const out: TextChunk[] = [];
  let carried: string[] = [];
  for (const section of sections(markdownBlocks(markdown), options.title)) {
    const texts = section.blocks.map((b) => b.text);
    if (section.blocks.every((b) => b.kind === 'heading')) {
      carried.push(...texts);
      continue;
    }
    const text = [...carried, ...texts].join('\n\n');
    carried = [];
    for (const piece of await splitter.splitText(text)) {
      const t = piece.normalize('NFC').trim();
      if (t === '') continue;
      out.push({ text: t, headingPath: [...section.path], tokenCount: counter.count(t) });
    }
  }
  if (carried.length > 0) {
    const text = carried.join('\n\n');
    const last = out.pop();
    if (last) {
      const joined = `${last.text}\n\n${text}`;
      out.push({ ...last, text: joined, tokenCount: counter.count(joined) });
    } else out.push({ text, headingPath: [], tokenCount: counter.count(text) });
  }
  return out;
}
