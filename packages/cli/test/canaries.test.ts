import { documentId } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { latestCanaries } from '../src/canaries.js';
import { resolveConfig } from '../src/config.js';

const base = (canaries: unknown) => ({
  userAgent: 'b/1 (+https://e.org/b)',
  sources: [{ id: 'shop', urls: ['https://shop.example/policies/returns'], canaries }],
});

describe('sources[].canaries in the config', () => {
  it('reads expect as a phrase, a URL or an object, and resolves the URL to its documentId', () => {
    const [source] = resolveConfig(
      base([
        { query: 'return window', expect: '14 days' },
        { query: 'returns page', expect: 'https://SHOP.example/policies/returns?utm_source=x' },
        { query: 'q', expect: { section: 'Return window', phrase: '14 days' }, k: 3 },
      ]),
    ).sources;
    const id = documentId('shop', 'https://shop.example/policies/returns');
    expect(source?.canaries).toEqual([
      { query: 'return window', expect: { phrase: '14 days' } },
      // The URL as the source lists it: chunks carry that string.
      {
        query: 'returns page',
        expect: { url: 'https://shop.example/policies/returns' },
        documentId: id,
      },
      { query: 'q', expect: { phrase: '14 days', section: 'Return window' }, k: 3 },
    ]);
  });

  it.each([
    [[{ expect: 'x' }], /sources\[0\]\.canaries\[0\]\.query: is missing/],
    [[{ query: 'q', expect: {} }], /sources\[0\]\.canaries\[0\]\.expect: names nothing/],
    [[{ query: 'q', expect: 'x', k: 0 }], /sources\[0\]\.canaries\[0\]\.k: 0 is /],
    [
      [{ query: 'q', expect: 'https://user:pw@shop.example/' }],
      /sources\[0\]\.canaries\[0\]\.expect\.url: /,
    ],
    ['nope', /sources\[0\]\.canaries: expected a list/],
  ])('refuses %j with one line naming the field', (canaries, message) => {
    expect(() => resolveConfig(base(canaries))).toThrow(message);
  });

  it('status shows the newest run that ran canaries, the last result per canary and phase', () => {
    const at = '2026-12-01T00:00:00.000Z';
    const r = (phase: 'staged' | 'current', ok: boolean, epoch: number) => ({
      sourceId: 'shop',
      query: 'q',
      phase,
      ok,
      epoch,
      at,
    });
    const run = (startedAt: string, canaries?: ReturnType<typeof r>[]) => ({
      runId: startedAt,
      sourceId: 'shop',
      startedAt,
      finishedAt: startedAt,
      complete: true,
      counts: {},
      alerts: [],
      ...(canaries === undefined ? {} : { canaries }),
    });
    const latest = latestCanaries([
      run('3'),
      run('2', [r('staged', true, 4), r('current', true, 4), r('current', false, 5)]),
      run('1', [r('staged', false, 2)]),
    ]);
    expect(latest.runAt).toBe('2');
    expect(latest.results.map((x) => [x.phase, x.ok, x.epoch])).toEqual([
      ['staged', true, 4],
      ['current', false, 5],
    ]);
  });
});
