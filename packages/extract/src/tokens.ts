import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { RagfreshError } from '@ragfresh/core';
import type { TiktokenBPE } from 'js-tiktoken/lite';
import { isSpace } from './whitespace.js';

/** Counts tokens the way the embedder will; plug another one in for non-OpenAI embedders. */
export interface TokenCounter {
  /** Stable name, part of the chunker version (a different tokenizer cuts differently). */
  readonly name: string;
  count(text: string): number;
}

export type TiktokenEncodingName =
  | 'cl100k_base'
  | 'o200k_base'
  | 'p50k_base'
  | 'p50k_edit'
  | 'r50k_base'
  | 'gpt2';

const ENCODINGS: readonly TiktokenEncodingName[] = [
  'cl100k_base',
  'o200k_base',
  'p50k_base',
  'p50k_edit',
  'r50k_base',
  'gpt2',
];
const require = createRequire(import.meta.url);
const cache = new Map<TiktokenEncodingName, TokenCounter>();
const loadedEncodings = new Set<TiktokenEncodingName>();

/**
 * A tiktoken counter whose ranks are loaded from the installed `js-tiktoken/ranks/<name>`
 * module on first count, never on creation: the ranks are megabytes of JSON, and a process
 * that builds a pipeline but never extracts (a CLI `status`, a no-change refresh) should not
 * pay for them. Never from the network. Special-token text counts as plain text.
 */
export function tiktokenCounter(encoding: TiktokenEncodingName = 'cl100k_base'): TokenCounter {
  const cached = cache.get(encoding);
  if (cached) return cached;
  if (!ENCODINGS.includes(encoding)) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `unknown tiktoken encoding ${JSON.stringify(encoding)}; use one of ${ENCODINGS.join(', ')}.`,
      {
        scope: 'extract',
      },
    );
  }
  let fast: ((text: string) => number) | undefined;
  const counter: TokenCounter = {
    name: `tiktoken:${encoding}`,
    count: (text: string) => {
      if (text === '') return 0;
      fast ??= memoisedCount(encoding);
      return fast(text);
    },
  };
  cache.set(encoding, counter);
  return counter;
}

/** Pieces remembered per encoding before the memo starts over (bounds memory on huge runs). */
const MEMO_LIMIT = 200_000;

/**
 * Counts like `Tiktoken.encode(text).length`, faster: the text is split with the encoding's own
 * pre-tokenizer pattern (BPE never merges across its pieces, so the count is the sum over
 * pieces), and each distinct piece is counted once and remembered. Words repeat across a site's
 * pages. A piece not seen before is merged here, not by `Tiktoken.encode`: that call sets up
 * its regexes and sets per piece and rescans every byte pair with a string key per pair on each
 * merge, while this one keeps each pair's rank and only re-ranks the two pairs a merge touches
 * (tiktoken's own algorithm; same merges, same ties, same count).
 */
function memoisedCount(encoding: TiktokenEncodingName): (text: string) => number {
  loadedEncodings.add(encoding);
  const loaded = require(`js-tiktoken/ranks/${encoding}`) as {
    default?: TiktokenBPE;
  } & TiktokenBPE;
  const bpe = loaded.default ?? loaded;
  const ranks = byteRanks(bpe);
  const memo = new Map<string, number>();
  const countPiece = (piece: string): number => {
    let c = memo.get(piece);
    if (c === undefined) {
      // An ASCII piece is its own UTF-8 bytes.
      c = pieceCount(isAscii(piece) ? piece : Buffer.from(piece, 'utf8').toString('latin1'), ranks);
      if (memo.size >= MEMO_LIMIT) memo.clear();
      memo.set(piece, c);
    }
    return c;
  };
  if (bpe.pat_str === CL100K_PATTERN) {
    return (text) => {
      let n = 0;
      cl100kPieces(text, (from, to) => {
        n += countPiece(text.slice(from, to));
      });
      return n;
    };
  }
  const pattern = new RegExp(bpe.pat_str, 'gu');
  return (text) => {
    const pieces = text.match(pattern);
    if (pieces === null) return 0;
    let n = 0;
    for (const piece of pieces) n += countPiece(piece);
    return n;
  };
}

/** Every unit below 0x80: the string is its own UTF-8 bytes. */
function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** cl100k_base's pre-tokenizer pattern, as its ranks file gives it. */
const CL100K_PATTERN =
  "('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** Code point classes of the cl100k pattern: letter, number, line break, other space, the rest. */
const LETTER = 1;
const NUMBER = 2;
const BREAK = 3;
const SPACE = 4;
const OTHER = 5;
const bmpClasses = new Uint8Array(0x10000);
const astralClasses = new Map<number, number>();

function classifyCodePoint(cp: number): number {
  if (cp === 10 || cp === 13) return BREAK;
  if (isSpace(cp)) return SPACE;
  const ch = String.fromCodePoint(cp);
  if (/\p{L}/u.test(ch)) return LETTER;
  if (/\p{N}/u.test(ch)) return NUMBER;
  return OTHER;
}

/** The class of the code point at `i` (a lone surrogate is a code point of its own, OTHER). */
function classAt(text: string, i: number): number {
  const cp = text.codePointAt(i)!;
  if (cp < 0x10000) {
    let k = bmpClasses[cp]!;
    if (k === 0) {
      k = classifyCodePoint(cp);
      bmpClasses[cp] = k;
    }
    return k;
  }
  let k = astralClasses.get(cp);
  if (k === undefined) {
    k = classifyCodePoint(cp);
    astralClasses.set(cp, k);
  }
  return k;
}

/** UTF-16 units of the code point at `i`. */
function widthAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 0xd800 || c > 0xdbff || i + 1 >= text.length) return 1;
  const d = text.charCodeAt(i + 1);
  return d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
}

/** End of the run of code points of class `k` starting at `i` (`i` when there is none). */
function runEnd(text: string, i: number, k: number): number {
  let j = i;
  while (j < text.length && classAt(text, j) === k) j += widthAt(text, j);
  return j;
}

/** End of the contraction (`'s`, `'re`, `'ll`, …, either case) at `i`, or 0. */
function contractionEnd(text: string, i: number): number {
  const a = text[i + 1];
  if (a === undefined) return 0;
  if ('sStTmMdD'.includes(a)) return i + 2;
  const b = text[i + 2];
  if (b === undefined) return 0;
  if ('rRvV'.includes(a) && (b === 'e' || b === 'E')) return i + 3;
  if ((a === 'l' || a === 'L') && (b === 'l' || b === 'L')) return i + 3;
  return 0;
}

/**
 * The pieces `text.match(new RegExp(CL100K_PATTERN, 'gu'))` returns, as `[from, to)` ranges, by
 * one scan: the regex engine spends most of a count on that pattern's Unicode classes. Each
 * branch below is one alternative of the pattern, tried in its order:
 * `'s|'t|'re|'ve|'m|'ll|'d`, `[^\r\n\p{L}\p{N}]?\p{L}+`, `\p{N}{1,3}`,
 * ` ?[^\s\p{L}\p{N}]+[\r\n]*`, `\s*[\r\n]+`, `\s+(?!\S)`, `\s+`.
 */
export function cl100kPieces(text: string, piece: (from: number, to: number) => void): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    let end = 0;
    const c0 = text.charCodeAt(i);
    if (c0 === 0x27) end = contractionEnd(text, i);
    if (end === 0) {
      const k0 = classAt(text, i);
      const w0 = widthAt(text, i);
      if (k0 === LETTER) end = runEnd(text, i, LETTER);
      else if ((k0 === SPACE || k0 === OTHER) && i + w0 < n && classAt(text, i + w0) === LETTER)
        end = runEnd(text, i + w0, LETTER);
      else if (k0 === NUMBER) {
        end = i + w0;
        for (let d = 1; d < 3 && end < n && classAt(text, end) === NUMBER; d++)
          end += widthAt(text, end);
      } else if (k0 === OTHER) end = runEnd(text, runEnd(text, i, OTHER), BREAK);
      else if (c0 === 0x20 && i + 1 < n && classAt(text, i + 1) === OTHER)
        end = runEnd(text, runEnd(text, i + 1, OTHER), BREAK);
      else {
        // A whitespace run (every \s is one UTF-16 unit): up to and with its last line break;
        // else all of it at the end of the text, or all but the space before the next word.
        let j = i;
        let lastBreak = -1;
        for (; j < n; j++) {
          const k = classAt(text, j);
          if (k === BREAK) lastBreak = j;
          else if (k !== SPACE) break;
        }
        if (lastBreak >= 0) end = lastBreak + 1;
        else if (j === n || j - 1 === i) end = j;
        else end = j - 1;
      }
    }
    piece(i, end);
    i = end;
  }
}

/** Token bytes (one char per byte, latin1) to rank, read from the ranks file as js-tiktoken reads it. */
function byteRanks(bpe: TiktokenBPE): Map<string, number> {
  const ranks = new Map<string, number>();
  for (const line of bpe.bpe_ranks.split('\n')) {
    if (line === '') continue;
    const [, offsetStr, ...tokens] = line.split(' ');
    const offset = Number.parseInt(offsetStr ?? '', 10);
    // Later lines overwrite earlier ones, as in js-tiktoken's table.
    for (let i = 0; i < tokens.length; i++)
      ranks.set(Buffer.from(tokens[i]!, 'base64').toString('latin1'), offset + i);
  }
  return ranks;
}

/**
 * Tokens of one pre-tokenized piece (its UTF-8 bytes as a latin1 string): the whole piece when
 * it is a token, else byte-pair merges, lowest rank first (leftmost on ties), until no adjacent
 * pair is a token. `starts[i]` is where part i begins; `pairRank[i]` the rank of parts i and i+1
 * together (Infinity when not a token).
 */
function pieceCount(bytes: string, ranks: Map<string, number>): number {
  const n = bytes.length;
  if (n <= 1 || ranks.has(bytes)) return 1;
  const starts: number[] = [];
  const pairRank: number[] = [];
  for (let i = 0; i <= n; i++) starts.push(i);
  const rankOf = (i: number): number => {
    // Parts i and i+1 span starts[i] .. starts[i + 2].
    if (i + 2 >= starts.length) return Number.POSITIVE_INFINITY;
    return ranks.get(bytes.slice(starts[i]!, starts[i + 2]!)) ?? Number.POSITIVE_INFINITY;
  };
  for (let i = 0; i < n - 1; i++) pairRank.push(rankOf(i));
  for (;;) {
    let min = Number.POSITIVE_INFINITY;
    let at = -1;
    for (let i = 0; i < pairRank.length; i++) {
      if (pairRank[i]! < min) {
        min = pairRank[i]!;
        at = i;
      }
    }
    if (at < 0) break;
    starts.splice(at + 1, 1);
    pairRank.splice(at + 1, 1);
    if (at < pairRank.length) pairRank[at] = rankOf(at);
    if (at > 0) pairRank[at - 1] = rankOf(at - 1);
  }
  // js-tiktoken drops a part that has no rank (only possible for a byte missing from the table).
  let count = 0;
  for (let i = 0; i + 1 < starts.length; i++)
    if (ranks.has(bytes.slice(starts[i]!, starts[i + 1]!))) count++;
  return count;
}

/** True once a counter of this encoding has loaded its ranks (for start-up cost tests). */
export function tiktokenRanksLoaded(encoding: TiktokenEncodingName = 'cl100k_base'): boolean {
  return loadedEncodings.has(encoding);
}
