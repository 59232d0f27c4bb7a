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
  let enc: Tiktoken | undefined;
  const counter: TokenCounter = {
    name: `tiktoken:${encoding}`,
    count: (text: string) => {
      if (text === '') return 0;
      enc ??= loadEncoding(encoding);
      return enc.encode(text, [], []).length;
    },
  };
  cache.set(encoding, counter);
  return counter;
}

function loadEncoding(encoding: TiktokenEncodingName): Tiktoken {
  loadedEncodings.add(encoding);
  const loaded = require(`js-tiktoken/ranks/${encoding}`) as {
    default?: TiktokenBPE;
  } & TiktokenBPE;
  return new Tiktoken(loaded.default ?? loaded);
}

/** True once a counter of this encoding has loaded its ranks (for start-up cost tests). */
export function tiktokenRanksLoaded(encoding: TiktokenEncodingName = 'cl100k_base'): boolean {
  return loadedEncodings.has(encoding);
}
