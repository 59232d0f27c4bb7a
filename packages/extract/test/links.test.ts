import { describe, expect, it } from 'vitest';
import { extractPage, isLinkableHref, preparePage, unlinkUnsafeMarkdown } from '../src/index.js';

const ctx = { documentId: 'docs:links', sourceId: 'docs', retrievedAt: '2026-12-01T00:00:00Z' };

function page(body: string): string {
  return `<!doctype html><html><head><title>Links</title></head><body><main><article>
<h1>Links</h1>
<p>The widget API answers every request within the configured budget, and the rest of this page
explains how budgets are chosen, measured and reported back to the caller in the response.</p>
${body}
<p>Budgets are per tenant. A tenant that exceeds its budget is slowed down, never refused, and
the slow-down is visible in the response headers so that clients can back off on their own.</p>
</article></main></body></html>`;
}

const md = (body: string) =>
  extractPage(page(body), { url: 'https://docs.example.com/guide/links' }).markdown;

describe('links: only http(s), mailto and relative targets stay links', () => {
  it.each([
    ['data:', 'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=='],
    ['javascript:', 'javascript:alert(2)'],
    ['JavaScript: with case, spaces and a tab', '  Java\tScript:alert(3)'],
    ['vbscript:', 'vbscript:msgbox(1)'],
    ['file:', 'file:///etc/passwd'],
    ['blob:', 'blob:https://docs.example.com/9f2c'],
    ['a custom scheme', 'slack://open?team=T1'],
  ])('a %s link keeps its text and loses its target', (_name, href) => {
    const out = md(`<p>Read <a href="${href}">the budget table</a> before tuning.</p>`);
    expect(out).toContain('Read the budget table before tuning.');
    expect(out).not.toContain('](');
    expect(out.toLowerCase()).not.toMatch(/data:|script:|file:|blob:|slack:/);
  });

  it('http(s), mailto and relative links stay links (the control: the rule can keep a link)', () => {
    const out = md(
      `<p>See <a href="https://status.example.com/">the status page</a>, <a href="/guide/budgets">budgets</a> and <a href="mailto:support@example.com">support</a>.</p>`,
    );
    expect(out).toContain('[the status page](https://status.example.com/)');
    expect(out).toContain('[budgets](https://docs.example.com/guide/budgets)');
    expect(out).toContain('[support](mailto:support@example.com)');
  });

  it('an image whose source is not http(s) is dropped; an http(s) one stays', () => {
    const out = md(
      `<p><img alt="chart" src="javascript:alert(1)"><img alt="budget chart" src="/img/budget.png"></p>`,
    );
    expect(out).toContain('![budget chart](https://docs.example.com/img/budget.png)');
    expect(out).not.toContain('javascript');
    expect(out).not.toContain('![chart]');
  });

  it('isLinkableHref reads the scheme as a browser does', () => {
    expect(isLinkableHref('HTTPS://x.example/')).toBe(true);
    expect(isLinkableHref('../up')).toBe(true);
    expect(isLinkableHref('\u0001 javascript:x')).toBe(false);
    expect(isLinkableHref('jav\nascript:x')).toBe(false);
  });
});

describe('Markdown taken as it came follows the same rule', () => {
  it('unlinks inline links, images, autolinks and reference definitions, not code', () => {
    const input = [
      '# Budgets',
      '',
      'Read [the table](javascript:alert(1)) and [the guide](https://docs.example.com/g "Guide").',
      '![x](data:image/png;base64,AAAA) ![ok](https://docs.example.com/a.png)',
      'Mail <mailto:a@example.com> or <vbscript:msgbox(1)>.',
      '[ref]: file:///etc/passwd',
      '[good]: https://docs.example.com/ok',
      '```md',
      '[kept](javascript:void(0))',
      '```',
    ].join('\n');
    expect(unlinkUnsafeMarkdown(input).split('\n')).toEqual([
      '# Budgets',
      '',
      'Read the table and [the guide](https://docs.example.com/g "Guide").',
      ' ![ok](https://docs.example.com/a.png)',
      'Mail <mailto:a@example.com> or vbscript:msgbox(1).',
      '',
      '[good]: https://docs.example.com/ok',
      '```md',
      '[kept](javascript:void(0))',
      '```',
    ]);
  });

  it('a Markdown twin page is unlinked before it is chunked', () => {
    const out = preparePage(
      {
        text: '# Twin\n\nOpen [the console](javascript:steal()) to see the budget of every tenant, measured per minute and reported in headers.\n',
        contentType: 'text/markdown',
        url: 'https://docs.example.com/twin',
        finalUrl: 'https://docs.example.com/twin',
        acquisition: 'markdown-twin',
      },
      ctx,
    );
    expect(out.kind).toBe('document');
    if (out.kind !== 'document') return;
    expect(out.prepared.text).toContain('Open the console to see');
    expect(out.prepared.text).not.toContain('javascript');
  });
});

describe('preparePage judges the page canonical against the fetched URL', () => {
  const withCanonical = (href: string) =>
    page('').replace('<title>', `<link rel="canonical" href="${href}"><title>`);
  const prepare = (href: string, canonical?: 'same-site' | 'trust' | 'ignore') => {
    const out = preparePage(
      {
        text: withCanonical(href),
        contentType: 'text/html',
        url: 'http://127.0.0.1:8080/pricing',
        finalUrl: 'http://127.0.0.1:8080/pricing?ref=1',
        acquisition: 'raw',
      },
      { ...ctx, ...(canonical === undefined ? {} : { canonical }) },
    );
    if (out.kind !== 'document') throw new Error('expected a document');
    const p = out.prepared.chunks[0]!.provenance;
    return { page: out.canonicalUrl, claim: out.canonicalClaim, chunk: p };
  };

  it('an off-site canonical is only the page claim; a same-site one is accepted', () => {
    const off = prepare('https://docs.other-company.example/official/pricing');
    expect(off.page).toBeUndefined();
    expect(off.chunk.canonicalUrl).toBeUndefined();
    expect(off.chunk.canonicalClaim).toBe('https://docs.other-company.example/official/pricing');
    const same = prepare('/pricing');
    expect(same.chunk.canonicalUrl).toBe('http://127.0.0.1:8080/pricing');
    expect(same.chunk.canonicalClaim).toBeUndefined();
  });

  it('a javascript: canonical is dropped under every policy', () => {
    for (const policy of ['same-site', 'trust', 'ignore'] as const) {
      const j = prepare('javascript:alert(2)', policy);
      expect([j.chunk.canonicalUrl, j.chunk.canonicalClaim]).toEqual([undefined, undefined]);
    }
  });

  it('trust accepts another site; ignore keeps nothing', () => {
    const url = 'https://docs.other-company.example/official/pricing';
    expect(prepare(url, 'trust').chunk.canonicalUrl).toBe(url);
    const ignored = prepare('/pricing', 'ignore').chunk;
    expect([ignored.canonicalUrl, ignored.canonicalClaim]).toEqual([undefined, undefined]);
  });
});
