import { createRequire } from 'node:module';
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';
import { describe, expect, it } from 'vitest';
import { cl100kPieces, extractPage, tiktokenCounter } from '../src/index.js';
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

describe('cl100kPieces splits text as the cl100k_base pattern does', () => {
  const pattern = new RegExp((ranks.default ?? ranks).pat_str, 'gu');
  const pieces = (text: string) => {
    const out: string[] = [];
    cl100kPieces(text, (from, to) => out.push(text.slice(from, to)));
    return out;
  };
  // Letters, numbers (astral ones too), every kind of space and line break, contractions in
  // both cases, punctuation, emoji, combining marks and lone surrogates, in random order.
  const alphabet = [
    'a',
    'Z',
    'é',
    '日',
    '𝒜',
    '1',
    '٣',
    '𝟘',
    'Ⅻ',
    '½',
    ' ',
    '  ',
    '\t',
    '\n',
    '\r',
    '\r\n',
    '\u00a0',
    '\u3000',
    '\u2028',
    '\ufeff',
    "'",
    's',
    'S',
    'r',
    'R',
    'e',
    'E',
    'v',
    'l',
    'L',
    'd',
    'm',
    't',
    '.',
    ',',
    '-',
    '_',
    '#',
    '|',
    '`',
    '🙂',
    '\u0301',
    '\ud800',
    '\udc00',
  ];
  let seed = 7;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const texts = Array.from({ length: 20_000 }, () => {
    let t = '';
    const n = Math.floor(random() * 24);
    for (let i = 0; i < n; i++) t += alphabet[Math.floor(random() * alphabet.length)];
    return t;
  });

  it('on random strings over the characters the pattern tells apart', () => {
    for (const text of texts) expect(pieces(text)).toEqual(text.match(pattern) ?? []);
  });

  it('on edge cases: empty text, trailing spaces, space runs before words and breaks', () => {
    for (const text of [
      '',
      ' ',
      '   ',
      'a  ',
      'a  b',
      ' \n ',
      'x \n\n y',
      "'",
      "'ll'LL'Ve",
      '123456',
    ])
      expect(pieces(text)).toEqual(text.match(pattern) ?? []);
  });

  it('and the counts over those strings are js-tiktoken’s', () => {
    const counter = tiktokenCounter();
    for (const text of texts.slice(0, 2_000))
      expect(counter.count(text)).toBe(reference.encode(text, [], []).length);
  });
});
