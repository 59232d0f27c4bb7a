import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBody, detectCharset, type Fetcher } from '../src/index.js';
import { startServer, type TestServer, testFetcher } from './helpers.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const latin1 = (s: string): Uint8Array => Uint8Array.from([...s].map((c) => c.charCodeAt(0)));

describe('detectCharset', () => {
  it('uses the Content-Type charset first (after a BOM)', () => {
    expect(detectCharset(latin1('caf\xe9'), 'text/html; charset=ISO-8859-1')).toEqual({
      charset: 'windows-1252',
      charsetSource: 'header',
    });
    expect(detectCharset(enc('x'), 'text/html; charset="utf-8"')).toEqual({
      charset: 'utf-8',
      charsetSource: 'header',
    });
  });

  it('a BOM wins over the header, as in browsers', () => {
    const bytes = Uint8Array.from([0xef, 0xbb, 0xbf, ...enc('café')]);
    expect(detectCharset(bytes, 'text/html; charset=iso-8859-1').charsetSource).toBe('bom');
    expect(decodeBody(bytes, 'text/html; charset=iso-8859-1').text).toBe('café');
    const le = Uint8Array.from([0xff, 0xfe, 0x68, 0x00, 0x69, 0x00]);
    expect(decodeBody(le, 'text/plain').text).toBe('hi');
  });

  it('reads <meta charset> and http-equiv in the first 4 KB', () => {
    const meta = enc('<!doctype html><html><head><meta charset="utf-8"><title>café</title>');
    expect(detectCharset(meta, 'text/html')).toEqual({ charset: 'utf-8', charsetSource: 'meta' });
    const equiv = latin1(
      '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-15"><p>\xa4</p>',
    );
    expect(detectCharset(equiv, 'text/html')).toEqual({
      charset: 'iso-8859-15',
      charsetSource: 'meta',
    });
    expect(decodeBody(equiv, 'text/html').text).toContain('€');
    const late = enc(`<html><head>${' '.repeat(5000)}<meta charset="windows-1251"></head>`);
    expect(detectCharset(late, 'text/html').charsetSource).toBe('utf8-valid');
    const commented = enc('<!-- <meta charset="koi8-r"> --><meta charset="utf-8">');
    expect(detectCharset(commented, 'text/html').charset).toBe('utf-8');
  });

  it('uses the XML declaration for XML', () => {
    expect(
      detectCharset(latin1('<?xml version="1.0" encoding="ISO-8859-1"?><a/>'), 'application/xml'),
    ).toEqual({
      charset: 'windows-1252',
      charsetSource: 'xml-declaration',
    });
  });

  it('falls back to utf-8 when the bytes are valid UTF-8, else windows-1252', () => {
    expect(detectCharset(enc('<p>naïve</p>'), 'text/html')).toEqual({
      charset: 'utf-8',
      charsetSource: 'utf8-valid',
    });
    expect(detectCharset(latin1('<p>na\xefve</p>'), 'text/html')).toEqual({
      charset: 'windows-1252',
      charsetSource: 'fallback',
    });
    expect(decodeBody(latin1('<p>\x93quoted\x94</p>'), 'text/html').text).toBe('<p>“quoted”</p>');
  });

  it('skips unknown labels and never throws on bad bytes', () => {
    expect(detectCharset(enc('x'), 'text/html; charset=no-such-charset').charsetSource).toBe(
      'utf8-valid',
    );
    const bad = Uint8Array.from([0x61, 0xff, 0x62]);
    expect(decodeBody(bad, 'text/plain; charset=utf-8').text).toBe('a\ufffdb');
  });
});

describe('decoding fetched pages', () => {
  let s: TestServer;
  let f: Fetcher;
  const page =
    '<!doctype html><html><head><meta charset="utf-8"><title>Crème brûlée</title></head><body>日本語</body></html>';
  beforeAll(async () => {
    s = await startServer((req, res) => {
      if (req.url === '/meta-only') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(Buffer.from(page, 'utf8'));
      } else if (req.url === '/latin1') {
        res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' });
        res.end(Buffer.from('<p>Gr\xfc\xdfe</p>', 'latin1'));
      } else {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(Buffer.from('<p>Gr\xfc\xdfe \x80</p>', 'latin1'));
      }
    });
    f = testFetcher();
  });
  afterAll(async () => {
    await f.close();
    await s.close();
  });

  it('a page declaring UTF-8 only in <meta> decodes as UTF-8', async () => {
    const r = await f.fetch(`${s.origin}/meta-only`);
    expect(r.outcome).toBe('ok');
    if (r.outcome !== 'ok') return;
    expect(r.charset).toBe('utf-8');
    expect(r.charsetSource).toBe('meta');
    expect(r.text).toBe(page);
  });

  it('decodes a header-declared legacy charset and a header-less legacy page', async () => {
    const a = await f.fetch(`${s.origin}/latin1`);
    const b = await f.fetch(`${s.origin}/guess`);
    if (a.outcome !== 'ok' || b.outcome !== 'ok') throw new Error('expected ok');
    expect(a.text).toBe('<p>Grüße</p>');
    expect(b.text).toBe('<p>Grüße €</p>');
    expect(b.charsetSource).toBe('fallback');
  });
});
