import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HashingEmbeddings } from '../src/index.js';
import { PINNED_DIMENSIONS, PINNED_TEXTS } from './hashing-pins.js';

interface Pins {
  readonly sha256: Record<string, Record<string, string>>;
  readonly full16: Record<string, number[]>;
}

const pins = JSON.parse(
  readFileSync(new URL('./fixtures/hashing-embeddings.pinned.json', import.meta.url), 'utf8'),
) as Pins;

const digest = (v: readonly number[]) =>
  createHash('sha256')
    .update(new Uint8Array(Float64Array.from(v).buffer))
    .digest('hex');

// Vectors recorded from the implementation before the allocation-free rewrite: the output must
// stay bit-identical (every stored index built with HashingEmbeddings depends on it).
describe('HashingEmbeddings output is pinned bit for bit', () => {
  it('covers every pinned text and dimension', () => {
    expect(Object.keys(pins.sha256).sort()).toEqual(PINNED_TEXTS.map(([n]) => n).sort());
    for (const byDims of Object.values(pins.sha256))
      expect(
        Object.keys(byDims)
          .map(Number)
          .sort((a, b) => a - b),
      ).toEqual([...PINNED_DIMENSIONS]);
  });

  for (const dimensions of PINNED_DIMENSIONS) {
    it(`${dimensions} dimensions: the sha256 of each vector's float64 bytes is unchanged`, () => {
      const e = new HashingEmbeddings({ dimensions });
      const got = Object.fromEntries(
        PINNED_TEXTS.map(([name, text]) => [name, digest(e.embedText(text))]),
      );
      const want = Object.fromEntries(
        PINNED_TEXTS.map(([name]) => [name, pins.sha256[name]![String(dimensions)]]),
      );
      expect(got).toEqual(want);
    });
  }

  it('16 dimensions: exact values (Object.is per component, so -0 and +0 differ)', () => {
    const e = new HashingEmbeddings({ dimensions: 16 });
    for (const [name, want] of Object.entries(pins.full16)) {
      const text = PINNED_TEXTS.find(([n]) => n === name)![1];
      const got = e.embedText(text);
      expect(got.length).toBe(16);
      got.forEach((x, i) => {
        expect(Object.is(x, want[i]), `${name}[${i}] = ${x}, pinned ${want[i]}`).toBe(true);
      });
    }
  });

  it('the same instance gives the same vector however calls interleave', () => {
    const e = new HashingEmbeddings({ dimensions: 64 });
    const [, page] = PINNED_TEXTS.find(([n]) => n === 'page-6k')!;
    const first = digest(e.embedText(page));
    e.embedText('ß'.repeat(5000));
    e.embedText('');
    expect(digest(e.embedText(page))).toBe(first);
    expect(first).toBe(pins.sha256['page-6k']!['64']);
  });
});
