import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configJsonSchema, configProblems, suggest } from '../src/config-schema.js';

const ok = {
  userAgent: 'bot/1.0 (+https://example.org/bot)',
  sources: [{ id: 'docs', urls: ['https://docs.example.org/a'] }],
};
const src = (extra: Record<string, unknown>) => ({
  ...ok,
  sources: [{ id: 'docs', urls: ['https://e.org/'], ...extra }],
});

describe('config schema: one line per problem, with the fix', () => {
  it.each<[string, unknown, string[]]>([
    [
      'typos with their suggestion',
      src({ evry: '6h', sitemap: ['https://e.org/s.xml'] }),
      [
        'config sources[0].evry: is not a known key; did you mean sources[0].every?',
        'config sources[0].sitemap: is not a known key; did you mean sources[0].sitemaps?',
      ],
    ],
    [
      'the allow-list key misspelt',
      { ...ok, fetch: { allowList: ['127.0.0.1:8080'] } },
      ['config fetch.allowList: is not a known key; did you mean fetch.allow?'],
    ],
    [
      'a known key one level too deep',
      { ...ok, fetch: { network: { allowPrivateNetworks: true } } },
      ['config fetch.network: is not a known key; did you mean fetch.allowPrivateNetworks?'],
    ],
    [
      'a singular for a plural',
      { ...ok, fetch: { allowPrivateNetwork: true } },
      [
        'config fetch.allowPrivateNetwork: is not a known key; did you mean fetch.allowPrivateNetworks?',
      ],
    ],
    [
      'an allow-list entry that is empty',
      { ...ok, fetch: { allow: [' '] } },
      [
        'config fetch.allow[0]: " " is not an entry; use a host, host:port or CIDR string, e.g. "127.0.0.1:8080", "docs.internal", "10.1.2.0/24".',
      ],
    ],
    [
      'an allow-list that is not a list',
      { ...ok, fetch: { allow: '127.0.0.1' } },
      ['config fetch.allow: expected a list, got string "127.0.0.1"; write it as an array.'],
    ],
    [
      'ranges',
      { ...ok, embeddings: { kind: 'hashing', dimensions: -3 }, chunking: { maxTokens: 0 } },
      [
        'config embeddings.dimensions: -3 is out of range; use a number >= 1.',
        'config chunking.maxTokens: 0 is out of range; use a number >= 16.',
      ],
    ],
    [
      'wrong types',
      { ...ok, deletion: { autoApprove: 'yes' }, fetch: { robots: 1 } },
      [
        'config deletion.autoApprove: expected a boolean, got string "yes"; write true or false.',
        'config fetch.robots: expected a boolean, got number 1; write true or false.',
      ],
    ],
    [
      'an enum',
      src({ acquisition: 'browser' }),
      [
        'config sources[0].acquisition: "browser" is not allowed; use "raw" or "rendered" or "auto".',
      ],
    ],
    [
      'a classification code that is none, and a typo beside it',
      src({ classify: { ignore: ['soft404'], ignor: [] } }),
      [
        'config sources[0].classify.ignore[0]: "soft404" is not a classification code; use one of http_status, consent_wall, bot_challenge, login_wall, soft_404, error_page, rate_limited, empty_app_shell, empty.',
        'config sources[0].classify.ignor: is not a known key; did you mean sources[0].classify.ignore?',
      ],
    ],
    [
      'a canonical policy',
      src({ canonical: 'always' }),
      [
        'config sources[0].canonical: "always" is not allowed; use "same-site" or "trust" or "ignore".',
      ],
    ],
    [
      // The fetcher's own check: `status` refuses what `refresh` would (control: a good entry passes).
      'allow-list entries the fetcher would refuse',
      {
        ...ok,
        fetch: { allow: ['127.0.0.1:8080', '10.0.0.0/33', 'http://docs.internal/', '10.0.0.0/'] },
      },
      [
        'config fetch.allow[1]: "10.0.0.0/33" has a bad prefix length; use a CIDR like 10.0.0.0/8.',
        'config fetch.allow[2]: "http://docs.internal/" is neither a CIDR, an address, a host name nor host:port; use e.g. 10.1.2.0/24, 127.0.0.1:8080 or docs.internal.',
        'config fetch.allow[3]: "10.0.0.0/" has a bad prefix length; use a CIDR like 10.0.0.0/8.',
      ],
    ],
    [
      'a queue without its Redis URL',
      { ...ok, queue: { prefix: 'rf' } },
      ['config queue.redis: is missing; set it to a Redis URL such as "redis://127.0.0.1:6379".'],
    ],
    [
      'a queue with a host for a URL, a bad prefix and a typo',
      { ...ok, queue: { redis: '127.0.0.1:6379', prefix: 'a:b', prefx: 'x' } },
      [
        'config queue.redis: "127.0.0.1:6379" is not a Redis URL; use "redis://host:6379[/db]" or "rediss://…".',
        'config queue.prefix: "a:b" is not a key prefix; use letters, digits, ".", "_" or "-" with at most one {hash tag} (default "ragfresh", "{ragfresh}" on a cluster).',
        'config queue.prefx: is not a known key; did you mean queue.prefix?',
      ],
    ],
  ])('%s', (_name, raw, expected) => {
    expect(configProblems(raw)).toEqual(expected);
  });

  it('accepts every documented key, a connector of any store name, and instances', () => {
    expect(configProblems(ok)).toEqual([]);
    expect(
      configProblems({
        ...src({
          every: '6h',
          contract: { minChars: 200, maxShrink: 0.5 },
          markdownTwin: true,
          classify: { ignore: ['soft_404', 'login_wall'] },
        }),
        connector: { store: 'libsql', url: 'file:index.db' },
        fetch: { allow: ['127.0.0.1:8080'], minIntervalMs: 0 },
        deletion: { goneChecks: 3, minGoneAge: '48h', autoApprove: false },
      }),
    ).toEqual([]);
    expect(configProblems({ ...ok, queue: { redis: 'redis://127.0.0.1:6379/2' } })).toEqual([]);
    expect(
      configProblems({ ...ok, queue: { redis: 'rediss://r.example:6380', prefix: 'rf-prod' } }),
    ).toEqual([]);
    expect(
      configProblems({
        ...ok,
        queue: { redis: 'redis://node-1:7000', prefix: '{rf-prod}', cluster: true },
      }),
    ).toEqual([]);
    expect(configProblems({ ...ok, connector: () => ({}) })).toEqual([]);
    expect(configProblems({ ...ok, embeddings: { embedDocuments() {}, embedQuery() {} } })).toEqual(
      [],
    );
  });

  it('suggests by edit distance, case and prefix, and not at random', () => {
    expect(suggest('Every', ['every', 'urls'])).toBe('every');
    expect(suggest('allowPrivate', ['allow', 'allowPrivateNetworks'])).toBe('allowPrivateNetworks');
    expect(suggest('colour', ['every', 'urls'])).toBeUndefined();
  });

  it('exports a JSON Schema that refuses unknown keys', () => {
    const schema = configJsonSchema() as {
      properties: Record<string, { additionalProperties?: boolean }>;
      additionalProperties: boolean;
      required: string[];
    };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['userAgent', 'sources']);
    expect(schema.properties.fetch?.additionalProperties).toBe(false);
    expect(schema.properties.queue).toMatchObject({
      additionalProperties: false,
      required: ['redis'],
    });
    expect(JSON.stringify(schema)).not.toContain('readOnly');
  });
});

describe('the published JSON Schema file', () => {
  it('is up to date (regenerate: node packages/cli/schema/generate.mjs after tsc -b)', () => {
    const file = new URL('../schema/ragfresh.config.schema.json', import.meta.url);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(configJsonSchema());
  });
});
