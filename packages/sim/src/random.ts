/**
 * Seeded, order-independent randomness. Every generated thing (a host, a page, a section,
 * a revision) gets its own generator derived from a string key, so pages can be built
 * lazily in any order and still come out byte-identical for the same seed.
 */

/** 32-bit FNV-1a followed by a murmur3 finaliser: a cheap, well-mixed string hash. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }

  static from(...parts: ReadonlyArray<string | number>): Rng {
    return new Rng(hash32(parts.join('\u0001')));
  }

  /** mulberry32: float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max] inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      const a = out[i] as T;
      out[i] = out[j] as T;
      out[j] = a;
    }
    return out;
  }
}

const CONSONANTS = 'bdfgklmnprstvz';
const VOWELS = 'aeiou';
const SYLLABLE_COUNT = CONSONANTS.length * VOWELS.length; // 70
const COINED_SYLLABLES = 5;
const COINED_SPACE = SYLLABLE_COUNT ** COINED_SYLLABLES; // 1,680,700,000
// Odd, not a multiple of 5 or 7: coprime with 70^5, so multiplying by it permutes the space.
const SCRAMBLE = 1_103_515_243;

/**
 * Coins a made-up ten-letter word for `id`, injective over 0 <= id < 70^5: two different ids
 * never give the same word, and every coined word has the same length, so one fact phrase can
 * never be a substring of another. The seed permutes syllables and scrambles ids so that
 * neighbouring ids do not look alike and different seeds give different vocabularies.
 */
export class Coiner {
  private readonly syllables: string[];
  private readonly offset: number;

  constructor(seed: number) {
    const all: string[] = [];
    for (const c of CONSONANTS) for (const v of VOWELS) all.push(c + v);
    this.syllables = Rng.from('syllables', seed).shuffle(all);
    this.offset = hash32(`coin-offset:${seed}`) % COINED_SPACE;
  }

  coin(id: number): string {
    if (!Number.isInteger(id) || id < 0 || id >= COINED_SPACE) {
      throw new RangeError(`coined word id out of range: ${id}`);
    }
    // BigInt keeps the modular multiply exact beyond 2^53.
    let n = Number((BigInt(id) * BigInt(SCRAMBLE) + BigInt(this.offset)) % BigInt(COINED_SPACE));
    let word = '';
    for (let i = 0; i < COINED_SYLLABLES; i++) {
      word += this.syllables[n % SYLLABLE_COUNT];
      n = Math.floor(n / SYLLABLE_COUNT);
    }
    return word;
  }
}
