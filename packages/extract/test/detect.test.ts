import { describe, expect, it } from 'vitest';
import { parseDocument } from '../src/dom.js';
import {
  BACKSTOP_MAX_CHARS,
  checkContract,
  collectPageFacts,
  detectNotDocument,
  extractPage,
  validateDocument,
} from '../src/index.js';
import { fixture } from './helpers.js';

const codes = (html: string, options = {}) =>
  detectNotDocument(html, options).reasons.map((r) => r.code);

describe('detectNotDocument', () => {
  it('flags a consent wall by its consent layer, with the numbers', () => {
    const check = detectNotDocument(fixture('consent-wall.html'));
    expect(check.ok).toBe(false);
    expect(check.reasons[0]?.code).toBe('CONSENT_WALL');
    expect(check.reasons[0]?.detail).toMatch(
      /consent layer <div#sp_message_container_1048.* holds \d+ of \d+ chars/,
    );
  });

  it('flags a Cloudflare "Just a moment" challenge', () => {
    expect(codes(fixture('cloudflare-challenge.html'))).toEqual(['BOT_CHALLENGE']);
  });

  it('flags a captcha widget on a short page', () => {
    const html =
      '<html><head><title>Welcome</title></head><body><form id="f"><div class="g-recaptcha" data-sitekey="k"></div><p>Please verify to continue.</p></form></body></html>';
    expect(codes(html)).toEqual(['BOT_CHALLENGE']);
  });

  it('finds every kind of challenge widget and mount point past the source prescreen', () => {
    const page = (body: string) =>
      `<html><head><title>Welcome</title></head><body>${body}<p>Please verify to continue.</p></body></html>`;
    for (const widget of [
      '<div class="cf-turnstile"></div>',
      '<form id="challenge-form" action="/x"></form>',
      '<div id="cf-challenge-running"></div>',
      '<div data-sitekey="k"></div>',
      '<div class="h-captcha"></div>',
      '<iframe title="check" src="https://example.org/captcha/frame"></iframe>',
      '<div id="px-captcha"></div>',
    ])
      expect(codes(page(widget))).toEqual(['BOT_CHALLENGE']);
    // The word alone (prose, a script URL) is no widget.
    expect(codes(page('<p>The challenge: a captcha.</p>'))).toEqual([]);
    const shell = (root: string) =>
      `<html><head><title>App</title><script src="/a.js"></script></head><body>${root}</body></html>`;
    for (const root of ['<div id="app"></div>', "<div id='root'></div>", '<div id=__next></div>'])
      expect(codes(shell(root))).toEqual(['EMPTY_APP_SHELL']);
  });

  it('reports a soft 404 served with status 200 as unconfirmed: the page alone proves nothing', () => {
    const check = detectNotDocument(fixture('soft-404.html'), { status: 200 });
    expect(check.ok).toBe(true);
    expect(check.unconfirmed?.map((r) => r.code)).toEqual(['SOFT_404']);
    expect(check.unconfirmed?.[0]?.detail).toContain('Page Not Found');
  });

  it('flags an empty React shell and names the mount point', () => {
    const check = detectNotDocument(fixture('react-shell.html'));
    expect(check.reasons.map((r) => r.code)).toEqual(['EMPTY_APP_SHELL']);
    expect(check.reasons[0]?.detail).toContain('<div#root>');
  });

  it('flags a login wall by its password field', () => {
    const html =
      '<html><head><title>Acme</title></head><body><main><h1>Welcome back</h1><form action="/session" method="post"><label>Email <input type="email" name="email"></label><label>Password <input type="password" name="password"></label><button>Continue</button></form></main></body></html>';
    expect(codes(html)).toEqual(['LOGIN_WALL']);
  });

  it('a hidden password form (a sign-in drawer, display: none) is no login wall', () => {
    const page = (form: string) =>
      `<html><head><title>Acme</title></head><body><main><h1>Welcome back</h1>${form}<p>Short news.</p></main></body></html>`;
    const field = '<form action="/session"><input type="password" name="p"></form>';
    for (const hidden of [
      `<div style="display: none;">${field}</div>`,
      `<div hidden>${field}</div>`,
      `<aside aria-hidden="true">${field}</aside>`,
      `<div style="color:red; visibility:hidden">${field}</div>`,
    ])
      expect(codes(page(hidden)), hidden).not.toContain('LOGIN_WALL');
    // Control: the same form shown is one.
    expect(codes(page(`<div style="display: block">${field}</div>`))).toEqual(['LOGIN_WALL']);
  });

  it('flags rate limiting from the status; a bare rate-limit page is still empty', () => {
    expect(codes('<html><body><p>ok</p></body></html>', { status: 429 })).toContain('RATE_LIMITED');
    const bare =
      '<html><head><title>429 Too Many Requests</title></head><body><h1>Too Many Requests</h1></body></html>';
    expect(codes(bare)).toEqual(['EMPTY']);
    expect(detectNotDocument(bare).unconfirmed?.map((r) => r.code)).toEqual(['RATE_LIMITED']);
  });

  it('uses the phrase backstop only for short pages nothing structural explained', () => {
    expect(
      codes(
        '<html><body><div><p>Please verify you are a human to continue.</p></div></body></html>',
      ),
    ).toEqual(['BOT_CHALLENGE']);
    const long = `<html><body><main><h1>How captchas work</h1><p>${'A captcha asks you to verify you are a human before a form is accepted. '.repeat(40)}</p></main></body></html>`;
    expect(detectNotDocument(long).ok).toBe(true);
  });

  it('passes real documents: Sphinx, Docusaurus, a long page with a password field in the nav', () => {
    expect(detectNotDocument(fixture('sphinx.html')).ok).toBe(true);
    expect(detectNotDocument(fixture('docusaurus.html')).ok).toBe(true);
    const article = `<html><body><nav><form><input type="password"></form></nav><article><h1>Release notes</h1><p>${'Version 4 changes the storage engine and the upgrade path. '.repeat(60)}</p></article></body></html>`;
    expect(detectNotDocument(article).ok).toBe(true);
  });

  it('flags empty extraction', () => {
    expect(codes('<html><body><div></div></body></html>', { markdown: '' })).toEqual(['EMPTY']);
  });
});

describe('checkContract', () => {
  const text = extractPage(fixture('sphinx.html')).markdown;

  it('accepts a page meeting every clause', () => {
    expect(
      checkContract(
        { text },
        { minChars: 200, requiredPhrases: ['widgets.toml', 'LOADING ORDER'], maxShrink: 0.5 },
        { textChars: text.length + 10 },
      ),
    ).toEqual({
      ok: true,
      reasons: [],
    });
  });

  it('reports each broken clause with its numbers', () => {
    const check = checkContract(
      { text: 'short', chunkCount: 1 },
      {
        minChars: 100,
        requiredPhrases: ['Configuration'],
        maxShrink: 0.3,
        maxChunkCountChange: 0.5,
      },
      { textChars: 1000, chunkCount: 8 },
    );
    expect(check.ok).toBe(false);
    expect(check.reasons.map((r) => r.code)).toEqual([
      'CONTRACT_MIN_CHARS',
      'CONTRACT_REQUIRED_PHRASE',
      'CONTRACT_SHRINK',
      'CONTRACT_CHUNK_COUNT',
    ]);
    expect(check.reasons[2]?.detail).toBe(
      'text shrank 99.5% (1000 -> 5 chars), contract allows 30.0%',
    );
  });

  it('validateDocument combines detection and contract', () => {
    const html = fixture('soft-404.html');
    const md = extractPage(html).markdown;
    const check = validateDocument(
      html,
      { markdown: md },
      { contract: { requiredPhrases: ['worker'] } },
    );
    expect(check.reasons.map((r) => r.code)).toEqual(['CONTRACT_REQUIRED_PHRASE']);
    expect(check.unconfirmed?.map((r) => r.code)).toEqual(['SOFT_404']);
  });
});

/** A short API-docs page about one error code: a title naming the status, real explanation. */
const errorDoc = (title: string, h1: string, extraHead = '', extraBody = '') =>
  `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>${extraHead}</head><body>
<nav class="sidebar"><a href="/docs/errors">Errors</a> <a href="/docs/auth">Authentication</a></nav>
<main><article><h1>${h1}</h1>
<p>The API returns this status when the request cannot be served as sent. The response body is a JSON object with <code>code</code> and <code>message</code>; log the <code>request_id</code> header when you contact support.</p>
<p>Check the identifier in the path, the API version header and your credentials, then retry. Idempotent requests can be retried with exponential backoff starting at one second.</p>
</article></main>${extraBody}</body></html>`;

describe('status phrases need interstitial evidence', () => {
  const pages = [
    ['429 Too Many Requests | Acme API', '429 Too Many Requests', 'RATE_LIMITED'],
    ['Error 404: Not Found | Acme API', 'Error 404: Not Found', 'SOFT_404'],
    ['Error 500 | Acme API', 'Error 500', 'ERROR_PAGE'],
    ['Access denied', 'Access denied (403)', 'BOT_CHALLENGE'],
  ] as const;

  it('a short error-code documentation page is the document; the phrase is only reported', () => {
    for (const [title, h1, code] of pages) {
      const check = detectNotDocument(errorDoc(title, h1), { status: 200 });
      expect(check.ok, title).toBe(true);
      expect(
        check.unconfirmed?.map((r) => r.code),
        title,
      ).toEqual([code]);
    }
  });

  it('the same pages with interstitial evidence (a non-2xx status, a challenge script) are flagged', () => {
    const script = '<script>window._cf_chl_opt={cvId:"3",cType:"managed"};</script>';
    for (const [title, h1, code] of pages) {
      const withScript = detectNotDocument(errorDoc(title, h1, script));
      expect(
        withScript.reasons.map((r) => r.code),
        title,
      ).toContain(code);
      expect(withScript.reasons.find((r) => r.code === code)?.detail).toMatch(
        /challenge script inline window\._cf_chl_opt/,
      );
      expect(withScript.unconfirmed).toBeUndefined();
      const withStatus = detectNotDocument(errorDoc(title, h1), { status: 503 });
      expect(
        withStatus.reasons.map((r) => r.code),
        title,
      ).toEqual(['HTTP_STATUS', code]);
    }
  });

  it('a challenge widget is evidence too', () => {
    const widget = '<div class="cf-turnstile" data-sitekey="k"></div>';
    const check = detectNotDocument(errorDoc('Error 404: Not Found', 'Not found', '', widget));
    expect(check.reasons.map((r) => r.code)).toContain('SOFT_404');
  });
});

describe('challenge scripts (read before scripts are removed)', () => {
  const page = (head: string) =>
    `<html><head><title>Welcome</title>${head}</head><body><p>One moment while we check your connection.</p></body></html>`;

  it("a challenge page's own script flags a short page with a plain title", () => {
    for (const head of [
      '<script>window._cf_chl_opt={cvId:"3"};</script>',
      '<script src="/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1?ray=1"></script>',
    ]) {
      const check = detectNotDocument(page(head));
      expect(check.reasons.map((r) => r.code)).toEqual(['BOT_CHALLENGE']);
      expect(check.reasons[0]?.detail).toMatch(/^challenge script /);
    }
    expect(
      collectPageFacts(parseDocument(page('<script>_cf_chl_opt=1</script>'))).challengeScript,
    ).toBe('inline window._cf_chl_opt');
  });

  it('control: the bot-detection script Cloudflare adds to ordinary pages flags nothing', () => {
    const check = detectNotDocument(
      page('<script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script>'),
    );
    expect(check.ok).toBe(true);
    expect(check.reasons).toEqual([]);
  });
});

describe('collectPageFacts', () => {
  const page = (body: string) =>
    parseDocument(`<html><head><title>T</title></head><body>${body}</body></html>`);

  it('measures a long body without copying it, and keeps a short one for the phrase backstop', () => {
    const long = `<p>${'word '.repeat(600)}</p>`;
    const facts = collectPageFacts(page(long));
    expect(facts.textChars).toBe('word '.repeat(600).trim().length);
    expect(facts.textChars).toBeGreaterThanOrEqual(BACKSTOP_MAX_CHARS);
    expect(facts.text).toBe('');
    const short = collectPageFacts(page('<p>Please   enable JavaScript to run this app.</p>'));
    expect(short.text).toBe('Please enable JavaScript to run this app.');
    expect(short.textChars).toBe(short.text.length);
  });

  it('takes the first element of each kind in one pass', () => {
    const facts = collectPageFacts(
      page(
        '<h1>First</h1><h1>Second</h1><div id="root"></div><form action="/consent"><input type="password"></form>',
      ),
    );
    expect(facts.h1).toBe('First');
    expect(facts.emptyRoot).toBe('<div#root>');
    expect(facts.consentForm).toBeDefined();
    expect(facts.passwordField).toBe(true);
  });
});
