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

/**
 * A tiktoken counter whose ranks are loaded from the installed `js-tiktoken/ranks/<name>`
 * module on first use (never from the network). Special-token text counts as plain text.
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
  const loaded = require(`js-tiktoken/ranks/${encoding}`) as {
    default?: TiktokenBPE;
  } & TiktokenBPE;
  const enc = new Tiktoken(loaded.default ?? loaded);
  const counter: TokenCounter = {
    name: `tiktoken:${encoding}`,
    count: (text: string) => (text === '' ? 0 : enc.encode(text, [], []).length),
  };
  cache.set(encoding, counter);
  return counter;
}
