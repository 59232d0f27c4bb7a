import { describe, expect, it } from 'vitest';
import {
  citationUrl,
  FIELDS,
  judgeCanonical,
  metadataCitation,
  provenanceHeader,
  provenanceOf,
} from '../src/index.js';

const fetched = 'http://127.0.0.1:8080/docs/pricing';

describe('judgeCanonical: whose word a canonical is', () => {
  it.each([
    // [claim, policy, accepted, claimKept]
    [
      'https://docs.other-company.example/official/pricing',
      'same-site',
      undefined,
      'https://docs.other-company.example/official/pricing',
    ],
    ['/docs/pricing', 'same-site', 'http://127.0.0.1:8080/docs/pricing', undefined],
    [
      'https://127.0.0.1:8080/docs/pricing',
      'same-site',
      'https://127.0.0.1:8080/docs/pricing',
      undefined,
    ],
    [
      'http://127.0.0.1:9090/docs/pricing',
      'same-site',
      undefined,
      'http://127.0.0.1:9090/docs/pricing',
    ],
    ['javascript:alert(2)', 'same-site', undefined, undefined],
    ['javascript:alert(2)', 'trust', undefined, undefined],
    ['data:text/html,hi', 'trust', undefined, undefined],
    ['https://user:pw@127.0.0.1:8080/x', 'same-site', undefined, undefined],
    [
      'https://docs.other-company.example/p',
      'trust',
      'https://docs.other-company.example/p',
      undefined,
    ],
    ['/docs/pricing', 'ignore', undefined, undefined],
    [`https://127.0.0.1:8080/${'a'.repeat(3000)}`, 'trust', undefined, undefined],
  ] as const)('%s under %s', (claim, policy, accepted, kept) => {
    const j = judgeCanonical(claim, fetched, policy);
    expect(j.canonicalUrl).toBe(accepted);
    expect(j.canonicalClaim).toBe(kept);
  });

  it('same site ignores case, a trailing dot and one leading www.; a subdomain is another site', () => {
    const from = 'https://www.Example.com./a';
    expect(judgeCanonical('https://example.com/b', from).canonicalUrl).toBe(
      'https://example.com/b',
    );
    expect(judgeCanonical('https://docs.example.com/b', from).canonicalClaim).toBe(
      'https://docs.example.com/b',
    );
  });
});

describe('citations are the fetched URL unless a canonical was accepted', () => {
  const meta = {
    [FIELDS.chunkId]: 'c',
    [FIELDS.documentId]: 'docs:1',
    [FIELDS.versionId]: 'v',
    [FIELDS.sourceId]: 'docs',
    [FIELDS.ordinal]: 0,
    [FIELDS.from]: 1,
    [FIELDS.to]: 2,
    [FIELDS.current]: true,
    [FIELDS.url]: 'http://127.0.0.1:8080/p',
    [FIELDS.finalUrl]: 'http://127.0.0.1:8080/p/',
    [FIELDS.title]: 'Pricing',
    [FIELDS.heading]: '',
    [FIELDS.headingPath]: '[]',
    [FIELDS.retrievedAt]: '2026-12-01T00:00:00Z',
    [FIELDS.contentChangedAt]: '2026-12-01T00:00:00Z',
    [FIELDS.contentHash]: 'h',
    [FIELDS.tokenCount]: 3,
    [FIELDS.acquisition]: 'raw',
  };

  it('a claim is never cited; the fetched (final) URL is', () => {
    const claimed = { ...meta, [FIELDS.canonicalClaim]: 'https://docs.other-company.example/x' };
    expect(provenanceOf(claimed).source).toBe('http://127.0.0.1:8080/p/');
    expect(provenanceHeader(provenanceOf(claimed))).toMatch(
      /^Source: http:\/\/127\.0\.0\.1:8080\/p\/ /,
    );
  });

  it('an accepted canonical is cited (the control: the rule can pick a canonical)', () => {
    const accepted = { ...meta, [FIELDS.canonicalUrl]: 'http://127.0.0.1:8080/pricing' };
    expect(provenanceOf(accepted).source).toBe('http://127.0.0.1:8080/pricing');
    expect(metadataCitation(accepted)).toBe('http://127.0.0.1:8080/pricing');
  });

  it('a stored non-http canonical (written before these rules) is never cited', () => {
    const old = { ...meta, [FIELDS.canonicalUrl]: 'javascript:alert(2)' };
    expect(provenanceOf(old).source).toBe('http://127.0.0.1:8080/p/');
    expect(citationUrl({ url: 'https://a.example/', finalUrl: 'vbscript:x' })).toBe(
      'https://a.example/',
    );
  });
});
