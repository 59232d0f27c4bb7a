import { Embeddings, type EmbeddingsParams } from '@langchain/core/embeddings';
import { RagfreshError } from './errors.js';

export interface HashingEmbeddingsParams extends EmbeddingsParams {
  /** Vector length. Default 1024. */
  readonly dimensions?: number;
  /**
   * Mixed into both hash seeds (default 0: the vectors this class always gave). Another seed is
   * another vector space of the same dimensions: what the migration tests use as "a new model".
   */
  readonly seed?: number;
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
  readonly seed: number;
  readonly #indexSeed: number;
  readonly #signSeed: number;

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
    const seed = params.seed ?? 0;
    if (!Number.isSafeInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `HashingEmbeddings seed ${String(seed)} must be an integer from 0 to ${0xffffffff}.`,
        { scope: 'embeddings' },
      );
    }
    this.seed = seed;
    this.#indexSeed = (INDEX_SEED ^ seed) >>> 0;
    this.#signSeed = (SIGN_SEED ^ seed) >>> 0;
  }

  /** Its embedding space: the dimensions and the seed decide every vector (core `space.ts`). */
  spaceIdentity(): {
    readonly className: string;
    readonly options: Readonly<Record<string, number>>;
  } {
    // Subclasses that only observe (CountingEmbeddings) give the same vectors: the same space.
    return {
      className: 'HashingEmbeddings',
      options: { dimensions: this.dimensions, seed: this.seed },
    };
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
    if (words.length === 0) this.add(vector, '<empty>', 1);
    else addFeatures(vector, words, this.#indexSeed, this.#signSeed);
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
    const index = murmur3(bytes, bytes.length, this.#indexSeed) % this.dimensions;
    const sign = (murmur3(bytes, bytes.length, this.#signSeed) & 1) === 0 ? 1 : -1;
    vector[index] = (vector[index] ?? 0) + sign * weight;
  }
}

const KIND_WORD = 0x77; // 'w'
const KIND_BIGRAM = 0x62; // 'b'
const KIND_CHAR = 0x63; // 'c'
const COLON = 0x3a;
/** Scratch kept between calls up to this many feature slots; larger texts get their own. */
const KEEP_SLOTS = 1 << 16;

/**
 * Every feature is a byte range of one UTF-8 encoding of the padded text ` w1 w2 … ` (a word,
 * two words with their space, or 3-5 code points) behind a two-byte `k:` prefix. Features are
 * counted in an open-addressing table over those ranges, so the per-feature work is hashing
 * bytes already encoded: no string, array or `TextEncoder.encode` per feature (that was 13.6
 * ms of a page). Entries keep first-seen order and are added to the vector in that order, with
 * the same arithmetic as before, so vectors are bit-identical to the string-keyed version.
 */
class FeatureTable {
  bytes = new Uint8Array(256);
  /** Byte offset of each code point of the padded text, plus its end. */
  starts = new Int32Array(64);
  /** Open-addressing slots: entry index + 1, 0 = empty. */
  slots = new Int32Array(256);
  slotMask = 255;
  entryHash = new Int32Array(128);
  entryKind = new Uint8Array(128);
  entryFrom = new Int32Array(128);
  entryTo = new Int32Array(128);
  entryCount = new Int32Array(128);
  entries = 0;

  /** Sizes the buffers for a text of `byteCapacity` UTF-8 bytes and `features` features at most. */
  reset(byteCapacity: number, features: number): void {
    if (this.bytes.length < byteCapacity) this.bytes = new Uint8Array(byteCapacity);
    if (this.starts.length < byteCapacity + 1) this.starts = new Int32Array(byteCapacity + 1);
    let slots = 256;
    while (slots < features * 2) slots *= 2;
    if (this.slots.length < slots) this.slots = new Int32Array(slots);
    else this.slots.fill(0, 0, slots);
    this.slotMask = slots - 1;
    if (this.entryHash.length < features) {
      this.entryHash = new Int32Array(features);
      this.entryKind = new Uint8Array(features);
      this.entryFrom = new Int32Array(features);
      this.entryTo = new Int32Array(features);
      this.entryCount = new Int32Array(features);
    }
    this.entries = 0;
  }

  #same(e: number, kind: number, from: number, to: number): boolean {
    if (this.entryKind[e] !== kind) return false;
    const f = this.entryFrom[e]!;
    if (this.entryTo[e]! - f !== to - from) return false;
    const b = this.bytes;
    for (let i = 0; i < to - from; i++) if (b[f + i] !== b[from + i]) return false;
    return true;
  }

  see(kind: number, from: number, to: number, seed: number): void {
    const hash = murmur3Feature(kind, this.bytes, from, to, seed) | 0;
    for (let slot = hash & this.slotMask; ; slot = (slot + 1) & this.slotMask) {
      const held = this.slots[slot]!;
      if (held === 0) {
        const e = this.entries++;
        this.entryHash[e] = hash;
        this.entryKind[e] = kind;
        this.entryFrom[e] = from;
        this.entryTo[e] = to;
        this.entryCount[e] = 1;
        this.slots[slot] = e + 1;
        return;
      }
      const e = held - 1;
      if (this.entryHash[e] === hash && this.#same(e, kind, from, to)) {
        this.entryCount[e] = this.entryCount[e]! + 1;
        return;
      }
    }
  }
}

/** Reused by every call (embedText is synchronous, so calls never overlap). */
const shared = new FeatureTable();

function addFeatures(
  vector: number[],
  words: readonly string[],
  indexSeed: number,
  signSeed: number,
): void {
  const padded = ` ${words.join(' ')} `;
  // Upper bounds: 3 UTF-8 bytes per UTF-16 unit; 2 features per word, 3 per code point.
  const byteCapacity = padded.length * 3;
  const features = words.length * 2 + padded.length * 3;
  const table = features <= KEEP_SLOTS ? shared : new FeatureTable();
  table.reset(byteCapacity, features);
  const bytes = table.bytes;
  const length = utf8.encodeInto(padded, bytes).written;
  const starts = table.starts;
  let codePoints = 0;
  for (let i = 0; i < length; i++) if ((bytes[i]! & 0xc0) !== 0x80) starts[codePoints++] = i;
  starts[codePoints] = length;

  // Words and bigrams in the order the string-keyed version saw them (w:0, b:0 1, w:1, b:1 2, …):
  // words hold no space, so each space of the padded text ends one word and starts the next.
  let from = 1;
  let previousFrom = -1;
  for (let i = 1; i < length; i++) {
    if (bytes[i] !== 0x20) continue;
    if (previousFrom >= 0) table.see(KIND_BIGRAM, previousFrom, i, indexSeed);
    table.see(KIND_WORD, from, i, indexSeed);
    previousFrom = from;
    from = i + 1;
  }
  for (let n = 3; n <= 5; n++) {
    for (let s = 0; s + n <= codePoints; s++)
      table.see(KIND_CHAR, starts[s]!, starts[s + n]!, indexSeed);
  }
  const dims = vector.length;
  for (let e = 0; e < table.entries; e++) {
    const kind = table.entryKind[e]!;
    const weight =
      kind === KIND_WORD ? WORD_WEIGHT : kind === KIND_BIGRAM ? BIGRAM_WEIGHT : CHAR_NGRAM_WEIGHT;
    const index = (table.entryHash[e]! >>> 0) % dims;
    const sign =
      (murmur3Feature(kind, table.bytes, table.entryFrom[e]!, table.entryTo[e]!, signSeed) & 1) ===
      0
        ? 1
        : -1;
    vector[index] = (vector[index] ?? 0) + sign * (weight * (1 + Math.log(table.entryCount[e]!)));
  }
}

/**
 * `murmur3` of the bytes `kind`, `:`, `bytes[from..to)` without copying them: the two prefix
 * bytes shift every block of the range by two, so each block takes the last two bytes of the
 * previous position and the first two of the next.
 */
function murmur3Feature(
  kind: number,
  bytes: Uint8Array,
  from: number,
  to: number,
  seed: number,
): number {
  const length = to - from + 2;
  let h = seed >>> 0;
  const blocks = length & ~3;
  // Virtual byte j is kind (j = 0), ':' (j = 1), else bytes[from + j - 2].
  const at = (j: number): number => (j >= 2 ? bytes[from + j - 2]! : j === 0 ? kind : COLON);
  for (let i = 0; i < blocks; i += 4) {
    const k =
      i === 0
        ? kind | (COLON << 8) | (bytes[from]! << 16) | (bytes[from + 1]! << 24)
        : bytes[from + i - 2]! |
          (bytes[from + i - 1]! << 8) |
          (bytes[from + i]! << 16) |
          (bytes[from + i + 1]! << 24);
    h = mixBlock(h, k);
  }
  const tail = length & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= at(blocks + 2) << 16;
    if (tail >= 2) k ^= at(blocks + 1) << 8;
    k ^= at(blocks);
    h ^= scramble(k);
  }
  return finalize(h, length);
}

/** MurmurHash3 x86 32-bit of `bytes`, as an unsigned integer. */
function murmur3(bytes: Uint8Array, length: number, seed: number): number {
  let h = seed >>> 0;
  const blocks = length & ~3;
  for (let i = 0; i < blocks; i += 4) {
    const k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    h = mixBlock(h, k);
  }
  const tail = length & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= bytes[blocks + 2]! << 16;
    if (tail >= 2) k ^= bytes[blocks + 1]! << 8;
    k ^= bytes[blocks]!;
    h ^= scramble(k);
  }
  return finalize(h, length);
}

// The three steps of MurmurHash3 x86 32-bit shared by `murmur3` and `murmur3Feature`, which
// differ only in where their bytes come from.
function scramble(k: number): number {
  const m = Math.imul(k, 0xcc9e2d51);
  return Math.imul((m << 15) | (m >>> 17), 0x1b873593);
}

function mixBlock(h: number, k: number): number {
  const x = h ^ scramble(k);
  return (Math.imul((x << 13) | (x >>> 19), 5) + 0xe6546b64) | 0;
}

function finalize(hash: number, length: number): number {
  let h = hash ^ length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * `HashingEmbeddings` that count what they are asked to embed: texts and batches through
 * `embedDocuments`, and queries (dimension probes, smoke queries, canaries) apart — so "nothing
 * was re-embedded" is a number a test or a benchmark can read.
 */
export class CountingEmbeddings extends HashingEmbeddings {
  /** Texts passed to `embedDocuments`. */
  texts = 0;
  /** `embedDocuments` calls. */
  batches = 0;
  /** `embedQuery` calls. */
  queries = 0;

  override async embedDocuments(documents: string[]): Promise<number[][]> {
    this.texts += documents.length;
    this.batches += 1;
    return super.embedDocuments(documents);
  }

  override async embedQuery(document: string): Promise<number[]> {
    this.queries += 1;
    return super.embedQuery(document);
  }
}

/**
 * Cosine similarity of two vectors (0 when either is all zeros); a missing coordinate of `b`
 * counts as 0. The reference scoring of the in-process connectors.
 */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
