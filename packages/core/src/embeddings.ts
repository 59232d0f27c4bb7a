import { Embeddings, type EmbeddingsParams } from '@langchain/core/embeddings';
import { RagfreshError } from './errors.js';

export interface HashingEmbeddingsParams extends EmbeddingsParams {
  /** Vector length. Default 1024. */
  readonly dimensions?: number;
}

/** Default vector length of {@link HashingEmbeddings}. */
export const HASHING_EMBEDDINGS_DEFAULT_DIMENSIONS = 1024;

const WORD = /[\p{L}\p{M}\p{N}]+/gu;
const WORD_WEIGHT = 1;
const BIGRAM_WEIGHT = 2;
const CHAR_NGRAM_WEIGHT = 0.25;
const INDEX_SEED = 0x5f3759df;
const SIGN_SEED = 0x2545f491;
const utf8 = new TextEncoder();

/**
 * Deterministic, offline embeddings by feature hashing. **Lexical, not semantic**: texts are
 * close when they share words, word pairs and character fragments, not when they mean the
 * same thing ("car" and "automobile" are unrelated). Use it for tests, demos, conformance
 * runs and offline smoke checks — never as a stand-in for a real embedding model's quality.
 *
 * Algorithm (stable; changing it changes every vector):
 * 1. text → NFC → `toLowerCase()` (locale-independent) → NFC;
 * 2. features: each word (maximal run of letters, marks and digits) with weight 1, each pair
 *    of adjacent words with weight 2, and each character 3-, 4- and 5-gram (by code point) of
 *    the words joined by single spaces and padded with one space each side, with weight 0.25;
 *    a feature seen `n` times counts `weight * (1 + ln n)` (sublinear term frequency, so a
 *    long chunk's common words do not drown a rare one);
 * 3. each feature's UTF-8 bytes are hashed with MurmurHash3 (x86, 32-bit): one seed picks the
 *    dimension (`hash mod dimensions`), another the sign (signed hashing, so collisions cancel
 *    out on average instead of piling up);
 * 4. the vector is L2-normalised. A text with no word gets the unit vector of the `<empty>`
 *    feature, so every output has norm 1.
 * Only integer hashing and IEEE-754 double arithmetic in a fixed order are involved, so the
 * same text gives bit-identical vectors on any machine and Node version.
 */
export class HashingEmbeddings extends Embeddings {
  readonly dimensions: number;

  constructor(params: HashingEmbeddingsParams = {}) {
    super(params);
    const dimensions = params.dimensions ?? HASHING_EMBEDDINGS_DEFAULT_DIMENSIONS;
    if (!Number.isSafeInteger(dimensions) || dimensions < 1 || dimensions > 1 << 20) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `HashingEmbeddings dimensions ${String(dimensions)} must be an integer from 1 to ${1 << 20}.`,
        { scope: 'embeddings' },
      );
    }
    this.dimensions = dimensions;
  }

  async embedDocuments(documents: string[]): Promise<number[][]> {
    return documents.map((text) => this.embedText(text));
  }

  async embedQuery(document: string): Promise<number[]> {
    return this.embedText(document);
  }

  /** The synchronous core of both methods. */
  embedText(text: string): number[] {
    if (typeof text !== 'string') {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `HashingEmbeddings can only embed strings, got ${typeof text}.`,
        {
          scope: 'embeddings',
        },
      );
    }
    const vector = new Array<number>(this.dimensions).fill(0);
    const words = text.normalize('NFC').toLowerCase().normalize('NFC').match(WORD) ?? [];
    if (words.length === 0) {
      this.add(vector, '<empty>', 1);
    } else {
      // Insertion order of the map is the order features were first seen: deterministic.
      const features = new Map<string, { count: number; weight: number }>();
      const see = (feature: string, weight: number) => {
        const f = features.get(feature);
        if (f === undefined) features.set(feature, { count: 1, weight });
        else f.count += 1;
      };
      for (let i = 0; i < words.length; i += 1) {
        see(`w:${words[i]}`, WORD_WEIGHT);
        if (i + 1 < words.length) see(`b:${words[i]} ${words[i + 1]}`, BIGRAM_WEIGHT);
      }
      const chars = Array.from(` ${words.join(' ')} `);
      for (let n = 3; n <= 5; n += 1) {
        for (let start = 0; start + n <= chars.length; start += 1) {
          see(`c:${chars.slice(start, start + n).join('')}`, CHAR_NGRAM_WEIGHT);
        }
      }
      for (const [feature, { count, weight }] of features)
        this.add(vector, feature, weight * (1 + Math.log(count)));
    }
    let sumOfSquares = 0;
    for (const v of vector) sumOfSquares += v * v;
    // Signed collisions can cancel every feature of a tiny text out; fall back to `<empty>`.
    if (sumOfSquares === 0) {
      this.add(vector, '<empty>', 1);
      sumOfSquares = 1;
    }
    const norm = Math.sqrt(sumOfSquares);
    return vector.map((v) => v / norm);
  }

  private add(vector: number[], feature: string, weight: number): void {
    const bytes = utf8.encode(feature);
    const index = murmur3(bytes, INDEX_SEED) % this.dimensions;
    const sign = (murmur3(bytes, SIGN_SEED) & 1) === 0 ? 1 : -1;
    vector[index] = (vector[index] ?? 0) + sign * weight;
  }
}

/** MurmurHash3 x86 32-bit of `bytes`, as an unsigned integer. */
function murmur3(bytes: Uint8Array, seed: number): number {
  let h = seed >>> 0;
  const blocks = bytes.length & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = bytes.length & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= bytes[blocks + 2]! << 16;
    if (tail >= 2) k ^= bytes[blocks + 1]! << 8;
    k ^= bytes[blocks]!;
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
