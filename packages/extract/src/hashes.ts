import { sha256Hex } from '@ragfresh/core';

/** NFC, every whitespace run one space, trimmed: the text whose hash says "content changed". */
export function normalizeText(text: string): string {
  return text.normalize('NFC').replace(/\s+/gu, ' ').trim();
}

/** sha256 hex of {@link normalizeText}: whitespace and Unicode composition changes do not count. */
export function normalizedTextHash(text: string): string {
  return sha256Hex(normalizeText(text));
}

/** sha256 hex of a chunk's NFC text (the `Chunk.contentHash`). */
export function chunkHash(text: string): string {
  return sha256Hex(text.normalize('NFC'));
}

const WORD = /[\p{L}\p{N}_]+/gu;

/**
 * Final avalanche of the FNV-1a shingle hashes (murmur3 fmix32), so neighbouring shingles
 * spread over all bits. The shingle hash is FNV-1a over UTF-16 code units with a seed.
 */
function fmix32(x: number): number {
  let h = x;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

export interface SimHashOptions {
  /** Words per shingle. Default 3. */
  readonly shingle?: number;
}

/**
 * 64-bit SimHash over lower-cased word shingles, as 16 hex digits. Texts that share most of
 * their shingles differ in few bits; compare with {@link hammingDistance}.
 */
export function simhash64(text: string, options: SimHashOptions = {}): string {
  const size = Math.max(1, options.shingle ?? 3);
  const words = normalizeText(text).toLowerCase().match(WORD) ?? [];
  const weights = new Int32Array(64);
  // A shingle's two seeded hashes, computed over its words as if joined with single spaces
  // (FNV-1a is sequential, so no joined string is built per shingle).
  const feature = (from: number, to: number) => {
    let hi = (0x811c9dc5 ^ 0x9e3779b9) >>> 0;
    let lo = (0x811c9dc5 ^ 0x7f4a7c15) >>> 0;
    for (let w = from; w < to; w++) {
      if (w > from) {
        hi = Math.imul(hi ^ 32, 0x01000193) >>> 0;
        lo = Math.imul(lo ^ 32, 0x01000193) >>> 0;
      }
      const word = words[w]!;
      for (let i = 0; i < word.length; i++) {
        const c = word.charCodeAt(i);
        hi = Math.imul(hi ^ c, 0x01000193) >>> 0;
        lo = Math.imul(lo ^ c, 0x01000193) >>> 0;
      }
    }
    hi = fmix32(hi);
    lo = fmix32(lo);
    for (let b = 0; b < 32; b++) {
      weights[b]! += ((hi >>> b) & 1) * 2 - 1;
      weights[b + 32]! += ((lo >>> b) & 1) * 2 - 1;
    }
  };
  if (words.length > 0 && words.length < size) feature(0, words.length);
  for (let i = 0; i + size <= words.length; i++) feature(i, i + size);
  let hi = 0;
  let lo = 0;
  for (let b = 0; b < 32; b++) {
    if ((weights[b] ?? 0) > 0) hi |= 1 << b;
    if ((weights[b + 32] ?? 0) > 0) lo |= 1 << b;
  }
  return (hi >>> 0).toString(16).padStart(8, '0') + (lo >>> 0).toString(16).padStart(8, '0');
}

function popcount32(x: number): number {
  let v = x >>> 0;
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff;
}

/** Bits in which two 16-hex fingerprints differ (0..64). */
export function hammingDistance(a: string, b: string): number {
  const ah = Number.parseInt(a.slice(0, 8), 16);
  const al = Number.parseInt(a.slice(8, 16), 16);
  const bh = Number.parseInt(b.slice(0, 8), 16);
  const bl = Number.parseInt(b.slice(8, 16), 16);
  return popcount32(ah ^ bh) + popcount32(al ^ bl);
}

export interface NearDuplicateItem {
  readonly id: string;
  /** A {@link simhash64} fingerprint. */
  readonly fingerprint: string;
}

/**
 * Groups items whose fingerprints are within `maxDistance` bits (transitively), so the same
 * passage served under several URLs becomes one group. Groups keep input order, singletons
 * included; candidates are found by splitting the 64 bits into `maxDistance + 1` bands, of
 * which at least one must match exactly (pigeonhole), so no pair within the distance is missed.
 */
export function groupNearDuplicates(
  items: readonly NearDuplicateItem[],
  options: { readonly maxDistance?: number } = {},
): string[][] {
  const maxDistance = Math.min(15, Math.max(0, options.maxDistance ?? 3));
  const bands = maxDistance + 1;
  const parent = items.map((_, i) => i);
  const find = (i: number): number => {
    let r = i;
    while (parent[r] !== r) r = parent[r]!;
    while (parent[i] !== r) {
      const next = parent[i]!;
      parent[i] = r;
      i = next;
    }
    return r;
  };
  const union = (a: number, b: number) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
  };
  const bits = items.map((it) =>
    BigInt(`0x${it.fingerprint.padStart(16, '0')}`)
      .toString(2)
      .padStart(64, '0'),
  );
  for (let band = 0; band < bands; band++) {
    const from = Math.floor((band * 64) / bands);
    const to = Math.floor(((band + 1) * 64) / bands);
    const buckets = new Map<string, number[]>();
    bits.forEach((b, i) => {
      const key = b.slice(from, to);
      const list = buckets.get(key) ?? [];
      list.push(i);
      buckets.set(key, list);
    });
    for (const list of buckets.values()) {
      for (let x = 0; x < list.length; x++) {
        for (let y = x + 1; y < list.length; y++) {
          const i = list[x]!;
          const j = list[y]!;
          if (
            find(i) !== find(j) &&
            hammingDistance(items[i]!.fingerprint, items[j]!.fingerprint) <= maxDistance
          )
            union(i, j);
        }
      }
    }
  }
  const groups = new Map<number, string[]>();
  items.forEach((it, i) => {
    const r = find(i);
    const g = groups.get(r) ?? [];
    g.push(it.id);
    groups.set(r, g);
  });
  return [...groups.values()];
}

/**
 * A duplicate-group id per item, for flat chunk metadata: items of one near-duplicate group
 * (see {@link groupNearDuplicates}) share `rf-dup:<smallest fingerprint in the group>`, so a
 * reader can collapse a group to one result that cites every URL. Deterministic for a set of
 * items, whatever their order; an item alone gets its own fingerprint's id.
 */
export function duplicateGroupIds(
  items: readonly NearDuplicateItem[],
  options: { readonly maxDistance?: number } = {},
): Map<string, string> {
  const fingerprintOf = new Map(items.map((it) => [it.id, it.fingerprint]));
  const out = new Map<string, string>();
  for (const group of groupNearDuplicates(items, options)) {
    const key = group.map((id) => fingerprintOf.get(id) ?? '').sort()[0] ?? '';
    for (const id of group) out.set(id, `rf-dup:${key}`);
  }
  return out;
}
