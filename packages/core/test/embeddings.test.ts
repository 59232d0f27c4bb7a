import { Embeddings } from '@langchain/core/embeddings';
import { describe, expect, it } from 'vitest';
import {
  HASHING_EMBEDDINGS_DEFAULT_DIMENSIONS,
  HashingEmbeddings,
  isRagfreshError,
} from '../src/index.js';

const dot = (a: number[], b: number[]) => a.reduce((sum, v, i) => sum + v * b[i]!, 0);
const norm = (a: number[]) => Math.sqrt(dot(a, a));

describe('HashingEmbeddings', () => {
  const embeddings = new HashingEmbeddings();

  it('is a LangChain Embeddings with 1024 dimensions by default', async () => {
    expect(embeddings).toBeInstanceOf(Embeddings);
    expect(HASHING_EMBEDDINGS_DEFAULT_DIMENSIONS).toBe(1024);
    expect(await embeddings.embedQuery('hello world')).toHaveLength(1024);
    expect((await new HashingEmbeddings({ dimensions: 7 }).embedQuery('hello world')).length).toBe(
      7,
    );
  });

  it('gives unit vectors, also for empty text and tiny dimensions', async () => {
    const texts = [
      '',
      '   ',
      '!!!',
      'a',
      'The quick brown fox jumps over the lazy dog.',
      'ß'.repeat(5000),
    ];
    for (const dimensions of [1, 2, 16, 256, 1536]) {
      const vectors = await new HashingEmbeddings({ dimensions }).embedDocuments(texts);
      for (const v of vectors) {
        expect(v).toHaveLength(dimensions);
        expect(norm(v)).toBeCloseTo(1, 12);
        expect(v.every(Number.isFinite)).toBe(true);
      }
    }
  });

  it('is deterministic: same text, same vector, pinned to golden values', async () => {
    const a = await embeddings.embedQuery('Snapshot epochs keep readers consistent.');
    const b = (
      await new HashingEmbeddings().embedDocuments(['Snapshot epochs keep readers consistent.'])
    )[0]!;
    expect(b).toEqual(a);
    // Golden values: they pin the algorithm, so a change to hashing or weighting shows here.
    // (Vectors must be identical on every machine: only integer hashing and ordered doubles.)
    const golden = await new HashingEmbeddings({ dimensions: 8 }).embedQuery(
      'ragfresh keeps indexes fresh',
    );
    expect(golden.map((v) => Number(v.toFixed(12)))).toMatchInlineSnapshot(`
      [
        0.312759205976,
        -0.474524083934,
        0.046987861555,
        0.182566171251,
        0.250355326099,
        0.046987861555,
        -0.297343187654,
        0.69869284177,
      ]
    `);
  });

  it('normalises case and Unicode composition (NFC) before hashing', async () => {
    const [upper, lower, decomposed, composed] = await embeddings.embedDocuments([
      'CAFÉ Crème',
      'café crème',
      'cafe\u0301 cre\u0300me',
      'caf\u00e9 cr\u00e8me',
    ]);
    expect(upper).toEqual(lower);
    expect(decomposed).toEqual(composed);
    expect(lower).toEqual(composed);
  });

  it('is lexical: shared words and fragments score higher than unrelated text', async () => {
    const [query, near, inflected, unrelated, synonym] = await embeddings.embedDocuments([
      'how to rotate the api key',
      'rotate your API key in the settings',
      'rotating api keys',
      'photosynthesis in green plants',
      'regenerate the access token',
    ]);
    expect(dot(query!, near!)).toBeGreaterThan(0.25);
    expect(dot(query!, inflected!)).toBeGreaterThan(dot(query!, unrelated!));
    expect(dot(query!, near!)).toBeGreaterThan(dot(query!, unrelated!) + 0.2);
    // Not semantic: a paraphrase with other words is not recognised as close.
    expect(dot(query!, synonym!)).toBeLessThan(dot(query!, near!));
  });

  it('uses word order through bigrams', async () => {
    const [ab, ba] = await embeddings.embedDocuments(['alpha beta gamma', 'gamma beta alpha']);
    expect(dot(ab!, ba!)).toBeLessThan(0.999);
    expect(dot(ab!, ba!)).toBeGreaterThan(0.3);
  });

  it('rejects bad dimensions with INVALID_ARGUMENT', () => {
    for (const dimensions of [0, -1, 1.5, Number.NaN]) {
      let error: unknown;
      try {
        new HashingEmbeddings({ dimensions });
      } catch (e) {
        error = e;
      }
      expect(isRagfreshError(error, 'INVALID_ARGUMENT')).toBe(true);
    }
  });
});
