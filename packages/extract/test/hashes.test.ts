import { describe, expect, it } from 'vitest';
import {
  BoilerplateModel,
  groupNearDuplicates,
  hammingDistance,
  learnBoilerplateByHost,
  normalizedTextHash,
  simhash64,
} from '../src/index.js';

const passage =
  'Workers pull jobs from the queue and acknowledge them when done. Run one worker process per CPU core and let the supervisor restart them when they exit. Each worker answers health checks while it can reach the queue, and drains in-flight jobs before it stops.';

describe('hashes', () => {
  it('normalised-text hash ignores whitespace and Unicode composition', () => {
    expect(normalizedTextHash('Cafe\u0301  au\n\nlait ')).toBe(normalizedTextHash('Café au lait'));
    expect(normalizedTextHash('Café au lait')).not.toBe(normalizedTextHash('Café au lait!'));
  });

  it('simhash: near-identical texts are close, unrelated texts are far', () => {
    const a = simhash64(passage);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(hammingDistance(a, simhash64(`${passage} Updated.`))).toBeLessThanOrEqual(6);
    expect(
      hammingDistance(
        a,
        simhash64(
          'Completely different text about baking bread with sourdough starter and rye flour at home on weekends.',
        ),
      ),
    ).toBeGreaterThan(12);
  });

  it('groups the same passage served under several URLs', () => {
    const groups = groupNearDuplicates(
      [
        { id: 'https://a.example/docs/workers', fingerprint: simhash64(passage) },
        {
          id: 'https://b.example/other',
          fingerprint: simhash64(
            'Baking bread with sourdough starter and rye flour at home on weekends takes patience and a warm kitchen.',
          ),
        },
        { id: 'https://a.example/docs/workers?ref=nav', fingerprint: simhash64(passage) },
        {
          id: 'https://mirror.example/workers',
          fingerprint: simhash64(passage.replace('CPU core', 'CPU  core')),
        },
      ],
      { maxDistance: 3 },
    );
    expect(groups).toEqual([
      [
        'https://a.example/docs/workers',
        'https://a.example/docs/workers?ref=nav',
        'https://mirror.example/workers',
      ],
      ['https://b.example/other'],
    ]);
  });
});

describe('BoilerplateModel', () => {
  const page = (body: string) =>
    `- [Home](/)\n- [Pricing](/pricing)\n\n${body}\n\nSubscribe to our newsletter for weekly tips.\n\n\`\`\`\nshared code sample\n\`\`\`\n\n© 2026 Acme`;
  const pages = [
    page('First article about queues and their workers.'),
    page('Second article about scaling.'),
    page('Third article on retries.'),
    page('Fourth article about metrics.'),
  ];

  it('learns blocks repeated on a share of the host pages and strips them, keeping code', () => {
    const model = BoilerplateModel.learn('acme.example', pages, { minShare: 0.5 });
    const out = model.strip(page('A fifth article with fresh content.'));
    expect(out.markdown).toBe(
      'A fifth article with fresh content.\n\n```\nshared code sample\n```',
    );
    expect(out.removed).toBe(3);
  });

  it('keeps blocks below the share', () => {
    const model = BoilerplateModel.learn('acme.example', [...pages, 'x', 'y', 'z', 'w', 'v'], {
      minShare: 0.5,
    });
    expect(model.isBoilerplate('Subscribe to our newsletter for weekly tips.')).toBe(false);
  });

  it('round-trips through JSON', () => {
    const model = BoilerplateModel.learn('acme.example', pages);
    const json = JSON.parse(JSON.stringify(model));
    expect(json.format).toBe('ragfresh-boilerplate/1');
    const back = BoilerplateModel.fromJSON(json);
    expect(back.size).toBe(model.size);
    expect(back.strip(pages[0]!)).toEqual(model.strip(pages[0]!));
    expect(() => BoilerplateModel.fromJSON({ format: 'x' } as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });

  it('learns one model per host', () => {
    const models = learnBoilerplateByHost([
      ...pages.map((markdown, i) => ({ url: `https://acme.example/p${i}`, markdown })),
      { url: 'https://solo.example/', markdown: 'alone' },
    ]);
    expect([...models.keys()]).toEqual(['acme.example']);
  });
});
