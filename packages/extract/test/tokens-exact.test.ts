import { createRequire } from 'node:module';
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';
import { describe, expect, it } from 'vitest';
import { extractPage, tiktokenCounter } from '../src/index.js';
import { fixture } from './helpers.js';

const require = createRequire(import.meta.url);
const ranks = require('js-tiktoken/ranks/cl100k_base') as { default?: TiktokenBPE } & TiktokenBPE;
const reference = new Tiktoken(ranks.default ?? ranks);

describe('tiktokenCounter counts exactly what js-tiktoken encodes', () => {
  const samples = [
    ...['sphinx.html', 'docusaurus.html', 'code-comments.html', 'wide-table.html'].map(
      (f) => extractPage(fixture(f)).markdown,
    ),
    'Ünïcödé — 日本語のテキスト、絵文字 👩🏽‍💻 and  double  spaces\n\n\n  indented\tlines   ',
    "it's we'll they've I'M 12345678 3.14159 <|endoftext|> ```js\nconst x = 1;\n```",
  ];
  it('on extracted pages and edge cases (spaces, digits, contractions, emoji, special text)', () => {
    const counter = tiktokenCounter();
    for (const text of samples) {
      expect(counter.count(text)).toBe(reference.encode(text, [], []).length);
      // A second time, from the memo.
      expect(counter.count(text)).toBe(reference.encode(text, [], []).length);
    }
  });

  // Pieces that are no token of their own go through the byte-pair merge: long letter runs
  // without spaces (CJK, repeated letters), emoji runs, lone surrogates, other encodings.
  const merged = [
    '中文'.repeat(40),
    '日本語のテキストをここに長く書きます、句読点も。'.repeat(5),
    'a'.repeat(400),
    'ab'.repeat(200),
    'Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen',
    '🙂'.repeat(50),
    'x\ud800y\udc00z',
    'pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism',
  ];
  it('through the byte-pair merge, in cl100k_base and o200k_base', () => {
    for (const name of ['cl100k_base', 'o200k_base'] as const) {
      const bpe = require(`js-tiktoken/ranks/${name}`) as { default?: TiktokenBPE } & TiktokenBPE;
      const ref = new Tiktoken(bpe.default ?? bpe);
      const counter = tiktokenCounter(name);
      for (const text of merged) expect(counter.count(text)).toBe(ref.encode(text, [], []).length);
    }
  });
});
