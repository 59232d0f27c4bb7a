// Inputs whose HashingEmbeddings vectors are pinned in fixtures/hashing-embeddings.pinned.json.
// The pins were recorded from the per-feature-allocation implementation (before the allocation-free
// rewrite), so any change to tokenising, feature order, hashing or arithmetic order shows here.

const VOCABULARY = [
  'the',
  'index',
  'stays',
  'fresh',
  'when',
  'pages',
  'change',
  'snapshot',
  'epoch',
  'reader',
  'publisher',
  'verify',
  'queryable',
  'chunk',
  'version',
  'document',
  'HTTP',
  'ETag',
  '304',
  'Last-Modified',
  'café',
  'naïve',
  'Straße',
  'Köln',
  '日本語',
  '中文',
  'שלום',
  'مرحبا',
  'e\u0301cole',
  '𝐀𝐁𝐂',
  '𠀀𠀁',
  'API',
  'v2.3.1',
  'x86_64',
  "don't",
  'co-operate',
  'ÆØÅ',
  'İstanbul',
];

/** Deterministic pseudo-random page of about `chars` characters (a Markdown-ish web page). */
export function pageText(seed: number, chars: number): string {
  let x = seed >>> 0;
  const next = () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x;
  };
  const parts: string[] = [];
  let length = 0;
  let sentence = 0;
  while (length < chars) {
    if (sentence % 9 === 0)
      parts.push(`\n\n## Section ${sentence / 9} — ${VOCABULARY[next() % VOCABULARY.length]}\n\n`);
    const words = 6 + (next() % 14);
    const s: string[] = [];
    for (let i = 0; i < words; i++) s.push(VOCABULARY[next() % VOCABULARY.length]!);
    const line = `${s.join(next() % 5 === 0 ? ', ' : ' ')}${next() % 7 === 0 ? '?' : '.'} `;
    parts.push(line);
    length += line.length;
    sentence++;
  }
  return parts.join('');
}

/** Named inputs: edge cases of the tokeniser and the n-gram walk, plus page-sized texts. */
export const PINNED_TEXTS: ReadonlyArray<readonly [name: string, text: string]> = [
  ['empty', ''],
  ['spaces', '   \n\t '],
  ['punctuation', '!!! ??? ... --- ***'],
  ['one-letter', 'a'],
  ['two-letters', 'ab'],
  ['fox', 'The quick brown fox jumps over the lazy dog.'],
  ['repeated-word', 'fresh fresh fresh fresh fresh fresh fresh'],
  ['case-and-nfc', 'CAFÉ Crème cafe\u0301 cre\u0300me'],
  ['cjk', '日本語のテキストと中文文本、そして한국어 텍스트'],
  ['rtl', 'עברית: שלום עולם — العربية: مرحبا بالعالم'],
  ['astral-letters', '𝐀𝐁𝐂 mathematical 𠀀𠀁𠀂 extension-B 𝒳'],
  ['emoji', 'emoji 🚀🧪👩🏽‍💻 and 🇯🇵 flags 🏳️‍🌈'],
  ['combining', 'e\u0301 vs é, a\u0308 vs ä, Å vs A\u030a'],
  ['digits', '2026-01-01 v2.3.1 404 410 x86_64 ١٢٣ ๑๒๓'],
  ['turkish-dotted', 'İstanbul ISTANBUL istanbul ıi'],
  ['sharp-s-long', 'ß'.repeat(5000)],
  ['long-word', `${'supercalifragilistic'.repeat(40)} end`],
  [
    'markdown',
    '# Title\n\n- item **bold** _em_ `code()`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```ts\nconst x = 1;\n```',
  ],
  ['page-2k', pageText(1, 2_000)],
  ['page-6k', pageText(2, 6_000)],
  ['page-12k', pageText(3, 12_000)],
];

/** Vector lengths pinned for every text (1 and 2 exercise the collision fallback to `<empty>`). */
export const PINNED_DIMENSIONS: readonly number[] = [1, 2, 7, 64, 1024, 1536];
