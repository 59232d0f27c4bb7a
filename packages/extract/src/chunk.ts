import { RagfreshError } from '@ragfresh/core';
import { markdownToPlainText } from './plaintext.js';
import { type TokenCounter, tiktokenCounter } from './tokens.js';

export interface ChunkOptions {
  /** Token budget a chunk is packed up to. Default 512. */
  readonly maxTokens?: number;
  /** Code blocks and tables up to this size are never cut (a chunk may then exceed maxTokens). Default 1024. */
  readonly hardMaxTokens?: number;
  /** A section's trailing chunk smaller than this is merged into the one before it. Default 64. */
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

const FENCE_OPEN = /^\s{0,3}(`{3,}|~{3,})(.*)$/;
const HEADING = /^\s{0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;

/** Splits Markdown into headings, fenced code, tables and text blocks. `#` lines inside fences are code. */
export function markdownBlocks(markdown: string): Block[] {
  const lines = markdown.normalize('NFC').replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const fence = FENCE_OPEN.exec(line);
    if (fence?.[1] !== undefined && !(fence[1][0] === '`' && (fence[2] ?? '').includes('`'))) {
      const marker = fence[1];
      const body = [line];
      i++;
      while (i < lines.length) {
        const l = lines[i]!;
        body.push(l);
        i++;
        const t = l.trim();
        if (
          t.length >= marker.length &&
          t[0] === marker[0] &&
          /^(`+|~+)$/.test(t) &&
          /^\s{0,3}\S/.test(l)
        )
          break;
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
      if (l.trim() === '' || HEADING.test(l) || FENCE_OPEN.test(l) || /^\s*\|/.test(l)) break;
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
}

/** Cuts an oversized fenced block on line boundaries; every piece is a complete fence. */
function cutCode(text: string, ctx: Ctx): string[] {
  const lines = text.split('\n');
  const open = lines[0]!;
  const closing =
    lines.length > 1 && /^\s{0,3}(`{3,}|~{3,})\s*$/.test(lines[lines.length - 1]!)
      ? lines[lines.length - 1]!
      : '```';
  const body = lines.slice(1, lines.length > 1 ? -1 : undefined);
  return packLines(
    body,
    ctx,
    ctx.counter.count(`${open}\n${closing}\n${CONTINUED_FROM_NOTE}\n${CONTINUES_NOTE}`),
  ).map((piece) => `${open}\n${piece.join('\n')}\n${closing}`);
}

/** Cuts an oversized table on row boundaries; every piece repeats the header rows. */
function cutTable(text: string, ctx: Ctx): string[] {
  const rows = text.split('\n');
  const hasHeader = rows.length > 2 && /^\s*\|(?:\s*:?-{3,}:?\s*\|)+\s*$/.test(rows[1]!);
  const header = hasHeader ? rows.slice(0, 2) : [];
  const body = hasHeader ? rows.slice(2) : rows;
  const overhead = ctx.counter.count(
    `${header.join('\n')}\n${CONTINUED_FROM_NOTE}\n${CONTINUES_NOTE}`,
  );
  return packLines(body, ctx, overhead).map((piece) => [...header, ...piece].join('\n'));
}

function packLines(lines: readonly string[], ctx: Ctx, overhead: number): string[][] {
  const budget = Math.max(1, ctx.max - overhead);
  const pieces: string[][] = [];
  let current: string[] = [];
  let tokens = 0;
  for (const line of lines) {
    const t = ctx.counter.count(`${line}\n`);
    if (current.length > 0 && tokens + t > budget) {
      pieces.push(current);
      current = [];
      tokens = 0;
    }
    current.push(line);
    tokens += t;
  }
  if (current.length > 0) pieces.push(current);
  return pieces;
}

/** Splits oversized prose: by lines (lists), then sentences, then words. */
function cutText(text: string, ctx: Ctx): string[] {
  const units = text.includes('\n') ? text.split('\n') : text.split(/(?<=[.!?])\s+(?=\S)/u);
  if (units.length <= 1) {
    const words = text.split(/(?<=\s)/u);
    const pieces: string[] = [];
    let current = '';
    for (const w of words) {
      if (current !== '' && ctx.counter.count(current + w) > ctx.max) {
        pieces.push(current.trimEnd());
        current = '';
      }
      current += w;
    }
    if (current.trim() !== '') pieces.push(current.trimEnd());
    return pieces;
  }
  const sep = text.includes('\n') ? '\n' : ' ';
  const out: string[] = [];
  let current: string[] = [];
  let tokens = 0;
  for (const u of units) {
    const t = ctx.counter.count(u);
    if (t > ctx.max) {
      if (current.length > 0) out.push(current.join(sep));
      current = [];
      tokens = 0;
      out.push(...cutText(u, ctx));
      continue;
    }
    if (current.length > 0 && tokens + t + 1 > ctx.max) {
      out.push(current.join(sep));
      current = [];
      tokens = 0;
    }
    current.push(u);
    tokens += t + 1;
  }
  if (current.length > 0) out.push(current.join(sep));
  return out;
}

interface Draft {
  parts: string[];
  tokens: number;
  path: readonly string[];
  headingOnly: boolean;
  /** Pieces of a cut block are never merged with their neighbours. */
  sealed: boolean;
}

function packSection(section: Section, ctx: Ctx): Draft[] {
  const drafts: Draft[] = [];
  let cur: Draft | undefined;
  const flush = () => {
    if (cur && cur.parts.length > 0) drafts.push(cur);
    cur = undefined;
  };
  const add = (text: string, tokens: number, heading: boolean) => {
    if (
      cur &&
      cur.tokens + tokens + 1 > ctx.max &&
      !(cur.headingOnly && cur.tokens + tokens + 1 <= ctx.hard)
    )
      flush();
    if (!cur) cur = { parts: [], tokens: 0, path: section.path, headingOnly: true, sealed: false };
    cur.parts.push(text);
    cur.tokens += tokens + (cur.parts.length > 1 ? 1 : 0);
    if (!heading) cur.headingOnly = false;
  };
  for (const b of section.blocks) {
    const tokens = ctx.counter.count(b.text);
    if (b.kind === 'heading') {
      add(b.text, tokens, true);
      continue;
    }
    if ((b.kind === 'code' || b.kind === 'table') && tokens > ctx.hard) {
      const pieces = b.kind === 'code' ? cutCode(b.text, ctx) : cutTable(b.text, ctx);
      const lead = cur?.headingOnly ? cur.parts : [];
      if (!cur?.headingOnly) flush();
      cur = undefined;
      pieces.forEach((piece, k) => {
        const text = [
          ...(k === 0 ? lead : []),
          ...(k > 0 ? [CONTINUED_FROM_NOTE] : []),
          piece,
          ...(k < pieces.length - 1 ? [CONTINUES_NOTE] : []),
        ].join('\n\n');
        drafts.push({
          parts: [text],
          tokens: ctx.counter.count(text),
          path: section.path,
          headingOnly: false,
          sealed: true,
        });
      });
      continue;
    }
    if (b.kind === 'text' && tokens > ctx.max) {
      for (const piece of cutText(b.text, ctx)) add(piece, ctx.counter.count(piece), false);
      continue;
    }
    add(b.text, tokens, false);
  }
  flush();
  // A tiny trailing chunk joins the one before it.
  if (drafts.length >= 2) {
    const last = drafts[drafts.length - 1]!;
    const prev = drafts[drafts.length - 2]!;
    if (
      !last.sealed &&
      !prev.sealed &&
      last.tokens < ctx.min &&
      prev.tokens + last.tokens + 1 <= ctx.max + ctx.min
    ) {
      prev.parts.push(...last.parts);
      prev.tokens += last.tokens + 1;
      drafts.pop();
    }
  }
  return drafts;
}

const startsWith = (path: readonly string[], prefix: readonly string[]) =>
  prefix.length <= path.length && prefix.every((p, i) => path[i] === p);

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
  const ctx: Ctx = { max, hard, min, counter: options.counter ?? tiktokenCounter() };
  const drafts: Draft[] = [];
  for (const section of sections(markdownBlocks(markdown), options.title))
    drafts.push(...packSection(section, ctx));
  // A section holding only its heading (or next to nothing) joins the first chunk of its subsection.
  const merged: Draft[] = [];
  for (let i = 0; i < drafts.length; i++) {
    const d = drafts[i]!;
    const next = drafts[i + 1];
    if (
      next &&
      !d.sealed &&
      !next.sealed &&
      (d.headingOnly || d.tokens < ctx.min) &&
      next.path.length > d.path.length &&
      startsWith(next.path, d.path) &&
      d.tokens + next.tokens + 1 <= ctx.max + ctx.min
    ) {
      drafts[i + 1] = {
        ...next,
        parts: [...d.parts, ...next.parts],
        tokens: d.tokens + next.tokens + 1,
      };
      continue;
    }
    merged.push(d);
  }
  return merged.map((d) => {
    const text = d.parts.join('\n\n');
    return { text, headingPath: [...d.path], tokenCount: ctx.counter.count(text) };
  });
}
