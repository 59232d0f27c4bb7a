import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../src/config.js';

const base = {
  userAgent: 'bot/1.0 (+https://example.org/bot)',
  sources: [{ id: 'docs', urls: ['https://docs.example.org/'], every: '6h' }],
};

describe('config boilerplate (per-host boilerplate learning)', () => {
  it('is passed through: absent (on with defaults), false (off), or options', () => {
    expect(resolveConfig(base, '/tmp').settings.boilerplate).toEqual({});
    expect(resolveConfig({ ...base, boilerplate: false }, '/tmp').settings.boilerplate).toBe(false);
    expect(
      resolveConfig({ ...base, boilerplate: { minShare: 0.8, minPages: 4 } }, '/tmp').settings
        .boilerplate,
    ).toEqual({ minShare: 0.8, minPages: 4 });
  });

  it('refuses true, out-of-range values and unknown keys, one line naming the field and the fix', () => {
    for (const [value, line] of [
      [true, 'config boilerplate: true is not allowed; use false.'],
      [{ minShare: 2 }, 'config boilerplate.minShare: 2 is out of range; use a number <= 1.'],
      [{ minPages: 1 }, 'config boilerplate.minPages: 1 is out of range; use a number >= 2.'],
      [
        { minShrae: 0.5 },
        'config boilerplate.minShrae: is not a known key; did you mean boilerplate.minShare?',
      ],
    ] as const) {
      expect(() => resolveConfig({ ...base, boilerplate: value }, '/tmp')).toThrow(line);
    }
  });
});
