import { createRequire } from 'node:module';
import { RagfreshError } from '@ragfresh/core';
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';

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
 * pieces), and each distinct piece is encoded once and remembered. Words repeat across a site's
 * pages, and js-tiktoken's encoder builds a string key per byte pair, so this removes most of
 * the per-page tokenizer cost with identical counts.
 */
function memoisedCount(encoding: TiktokenEncodingName): (text: string) => number {
  loadedEncodings.add(encoding);
  const loaded = require(`js-tiktoken/ranks/${encoding}`) as {
    default?: TiktokenBPE;
  } & TiktokenBPE;
  const ranks = loaded.default ?? loaded;
  const enc = new Tiktoken(ranks);
  const pattern = new RegExp(ranks.pat_str, 'gu');
  const memo = new Map<string, number>();
  return (text) => {
    let n = 0;
    for (const m of text.matchAll(pattern)) {
      const piece = m[0];
      let c = memo.get(piece);
      if (c === undefined) {
        c = enc.encode(piece, [], []).length;
        if (memo.size >= MEMO_LIMIT) memo.clear();
        memo.set(piece, c);
      }
      n += c;
    }
    return n;
  };
}

/** True once a counter of this encoding has loaded its ranks (for start-up cost tests). */
export function tiktokenRanksLoaded(encoding: TiktokenEncodingName = 'cl100k_base'): boolean {
  return loadedEncodings.has(encoding);
}
