import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalKey,
  chunkId,
  chunkUuid,
  documentId,
  isRagfreshError,
  type RagfreshError,
  versionId,
} from '../src/index.js';

const versions = { extractor: 'x1', chunker: 'c1', schema: '1' };

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return isRagfreshError(err) ? err.code : `uncoded: ${String(err)}`;
  }
}

// Labels with "--" in the third and fourth places are reserved (IDNA2008); "xn--…" must be valid
// punycode, which a random label rarely is, so the generator leaves that shape out.
const label = fc
  .stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/)
  .filter((l) => l.slice(2, 4) !== '--');
const host = fc
  .array(label, { minLength: 1, maxLength: 3 })
  .map((labels) => `${labels.join('.')}.example`);
const segment = fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/);
const path = fc.array(segment, { maxLength: 4 }).map((s) => `/${s.join('/')}`);

describe('URL identity policy: normalize', () => {
  it('lower-cases scheme and host, drops default port, fragment and tracking parameters', () => {
    expect(canonicalKey('HTTPS://Docs.Example.COM:443/a/b?utm_source=x&gclid=1#frag')).toBe(
      'https://docs.example.com/a/b',
    );
    expect(canonicalKey('http://example.com:80/')).toBe('http://example.com/');
    expect(canonicalKey('http://example.com:8080/x')).toBe('http://example.com:8080/x');
  });

  it('keeps allow-listed content parameters, sorted, and drops unknown ones by default', () => {
    expect(canonicalKey('https://e.com/p?z=9&page=2&lang=en&utm_medium=m')).toBe(
      'https://e.com/p?lang=en&page=2',
    );
    expect(
      canonicalKey('https://e.com/p?z=9&a=1', { mode: 'normalize', unknownParams: 'keep' }),
    ).toBe('https://e.com/p?a=1&z=9');
    expect(
      canonicalKey('https://e.com/p?sku=4&utm_x=1', { mode: 'normalize', contentParams: ['sku'] }),
    ).toBe('https://e.com/p?sku=4');
  });

  it('property: tracking variants, parameter order and fragments never change the documentId', () => {
    fc.assert(
      fc.property(
        host,
        path,
        fc.array(
          fc.tuple(fc.constantFrom('page', 'lang', 'id'), fc.stringMatching(/^[a-z0-9]{1,6}$/)),
          { maxLength: 3 },
        ),
        fc.array(
          fc.tuple(
            fc.constantFrom('utm_source', 'utm_campaign', 'gclid', 'fbclid', 'mc_eid'),
            fc.stringMatching(/^[a-z0-9]{1,6}$/),
          ),
          { maxLength: 3 },
        ),
        fc.option(fc.stringMatching(/^[a-z0-9]{1,8}$/)),
        (h, p, content, tracking, frag) => {
          const dedup = [...new Map(content.map(([k, v]) => [k, v])).entries()];
          const base = `https://${h}${p}`;
          const q1 = new URLSearchParams(dedup).toString();
          const shuffled = new URLSearchParams([...tracking, ...[...dedup].reverse()]).toString();
          const a = documentId('src', q1 ? `${base}?${q1}` : base);
          const b = documentId(
            'src',
            `${base.replace('https://', 'HTTPS://')}${shuffled ? `?${shuffled}` : ''}${frag ? `#${frag}` : ''}`,
          );
          expect(b).toBe(a);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: canonicalKey is idempotent', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true, withFragments: true }), (url) => {
        const once = canonicalKey(url);
        expect(canonicalKey(once)).toBe(once);
      }),
      { numRuns: 300 },
    );
  });
});

describe('URL identity policy: strict', () => {
  it('accepts canonical URLs and refuses queries and fragments with a coded error', () => {
    expect(canonicalKey('https://E.com/a', { mode: 'strict' })).toBe('https://e.com/a');
    expect(codeOf(() => canonicalKey('https://e.com/a?x=1', { mode: 'strict' }))).toBe(
      'URL_NOT_CANONICAL',
    );
    expect(codeOf(() => canonicalKey('https://e.com/a#top', { mode: 'strict' }))).toBe(
      'URL_NOT_CANONICAL',
    );
  });
});

describe('bad URLs get a coded error, never an id', () => {
  it.each([
    ['https://user:pw@e.com/', 'URL_CREDENTIALS'],
    ['https://user@e.com/', 'URL_CREDENTIALS'],
    ['ftp://e.com/file', 'INVALID_URL'],
    ['javascript:alert(1)', 'INVALID_URL'],
    ['file:///etc/passwd', 'INVALID_URL'],
    ['not a url', 'INVALID_URL'],
    ['', 'INVALID_URL'],
    ['//e.com/x', 'INVALID_URL'],
    ['https://xn--a.example/', 'INVALID_URL'],
  ])('%s -> %s', (url, code) => {
    expect(codeOf(() => documentId('src', url))).toBe(code);
    expect(codeOf(() => documentId('src', url, { mode: 'strict' }))).toBe(code);
  });

  it('an invalid host gets a message about the host, not about the URL being relative', () => {
    try {
      documentId('src', 'https://xn--a.example/');
      expect.unreachable('an invalid punycode host must be refused');
    } catch (err) {
      expect((err as RagfreshError).message).toMatch(/check the host name/);
      expect((err as RagfreshError).message).not.toMatch(/absolute/);
    }
  });

  it('property: arbitrary strings either give a stable id or a coded error', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        let id: string | undefined;
        try {
          id = documentId('src', s);
        } catch (err) {
          expect(isRagfreshError(err)).toBe(true);
          expect(['INVALID_URL', 'URL_CREDENTIALS']).toContain((err as RagfreshError).code);
          return;
        }
        expect(id).toMatch(/^src:[0-9a-f]{24}$/);
        expect(documentId('src', s)).toBe(id);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses bad source ids', () => {
    expect(codeOf(() => documentId('bad id', 'https://e.com/'))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => documentId('', 'https://e.com/'))).toBe('INVALID_ARGUMENT');
  });
});

describe('id determinism', () => {
  it('documentId is pinned across machines (golden values)', () => {
    expect(documentId('docs', 'https://example.com/guide')).toBe(
      documentId('docs', 'https://EXAMPLE.com:443/guide#x'),
    );
    expect(documentId('docs', 'https://example.com/guide')).toMatchInlineSnapshot(
      `"docs:d1caa9c9acb5e3ecf3b84a21"`,
    );
    expect(chunkUuid('docs:abc#vdef#0')).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(chunkUuid('docs:abc#vdef#0')).toBe(chunkUuid('docs:abc#vdef#0'));
    expect(chunkUuid('docs:abc#vdef#0')).not.toBe(chunkUuid('docs:abc#vdef#1'));
  });

  it('uuidV5 matches the RFC 4122 test vector', async () => {
    const { uuidV5 } = await import('../src/hash.js');
    // DNS namespace, name "python.org" (from Python's uuid documentation).
    expect(uuidV5('python.org', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(
      '886313e1-3b8a-5372-9b90-0c9aee199e5d',
    );
  });

  it('property: versionId depends on content, cut and pipeline versions, and on nothing else', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 200 }),
        fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }),
        (text, heading) => {
          const input = { text, chunks: [{ text, headingPath: heading }], versions };
          const v = versionId(input);
          expect(versionId(structuredClone(input))).toBe(v);
          expect(versionId({ ...input, versions: { ...versions, chunker: 'c2' } })).not.toBe(v);
          expect(versionId({ ...input, text: `${text}!` })).not.toBe(v);
          expect(
            versionId({ ...input, chunks: [{ text, headingPath: [...heading, 'extra'] }] }),
          ).not.toBe(v);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('versionId is NFC-insensitive: composed and decomposed text are one version', () => {
    const composed = 'caf\u00e9';
    const decomposed = 'cafe\u0301';
    const mk = (t: string) =>
      versionId({ text: t, chunks: [{ text: t, headingPath: [t] }], versions });
    expect(mk(composed)).toBe(mk(decomposed));
  });

  it('chunkId is <documentId>#<versionId>#<ordinal> and refuses bad parts', () => {
    expect(chunkId('docs:abc', 'vdef', 3)).toBe('docs:abc#vdef#3');
    expect(codeOf(() => chunkId('docs:abc', 'vdef', -1))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => chunkId('a#b', 'vdef', 0))).toBe('INVALID_ARGUMENT');
  });
});
