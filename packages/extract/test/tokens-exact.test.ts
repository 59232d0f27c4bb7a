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
});
