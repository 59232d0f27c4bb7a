import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { RagfreshError } from '@ragfresh/core';
import type { TiktokenBPE } from 'js-tiktoken/lite';

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
  const pattern = new RegExp(bpe.pat_str, 'gu');
  const memo = new Map<string, number>();
  return (text) => {
    const pieces = text.match(pattern);
    if (pieces === null) return 0;
    let n = 0;
    for (const piece of pieces) {
      let c = memo.get(piece);
      if (c === undefined) {
        c = pieceCount(Buffer.from(piece, 'utf8').toString('latin1'), ranks);
        if (memo.size >= MEMO_LIMIT) memo.clear();
        memo.set(piece, c);
      }
      n += c;
    }
    return n;
  };
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
