import { Readable } from 'node:stream';
import { brotliCompressSync, createGzip, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { sha256Hex } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fetcher, readBody } from '../src/index.js';
import { html, startServer, type TestServer, testFetcher } from './helpers.js';

const PAGE = `<!doctype html><html><body>${'<p>hello ragfresh</p>'.repeat(200)}</body></html>`;
let s: TestServer;
let f: Fetcher;
let pdfBytesSent = 0;
let bombMiBWritten = 0;

beforeAll(async () => {
  s = await startServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const p = url.pathname;
    const send = (status: number, headers: Record<string, string> = {}, body = ''): void => {
      res.writeHead(status, headers);
      res.end(body);
    };
    switch (p) {
      case '/gzip':
        return send(
          200,
          { 'content-type': 'text/html', 'content-encoding': 'gzip' },
          gzipSync(PAGE) as unknown as string,
        );
      case '/br':
        return send(
          200,
          { 'content-type': 'text/html', 'content-encoding': 'br' },
          brotliCompressSync(PAGE) as unknown as string,
        );
      case '/deflate':
        return send(
          200,
          { 'content-type': 'text/html', 'content-encoding': 'deflate' },
          deflateSync(PAGE) as unknown as string,
        );
      case '/deflate-raw':
        return send(
          200,
          { 'content-type': 'text/html', 'content-encoding': 'deflate' },
          deflateRawSync(PAGE) as unknown as string,
        );
      case '/bomb': {
        // Up to 256 MiB of zeros, gzip-compressed as it streams; stops when the client goes away.
        res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
        const gz = createGzip();
        gz.pipe(res);
        const zeros = Buffer.alloc(1024 * 1024);
        for (bombMiBWritten = 0; bombMiBWritten < 256 && !res.destroyed; bombMiBWritten++) {
          if (!gz.write(zeros)) await new Promise((r) => gz.once('drain', r));
          await new Promise((r) => setTimeout(r, 2));
        }
        gz.end();
        return;
      }
      case '/big-declared':
        res.writeHead(200, {
          'content-type': 'text/html',
          'content-length': String(5 * 1024 * 1024),
        });
        res.write('<p>');
        return;
      case '/big-chunked': {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = 'x'.repeat(64 * 1024);
        for (let i = 0; i < 64 && !res.destroyed; i++) {
          res.write(chunk);
          await new Promise((r) => setTimeout(r, 1));
        }
        res.end();
        return;
      }
      case '/pdf': {
        res.writeHead(200, { 'content-type': 'application/pdf' });
        const chunk = Buffer.alloc(64 * 1024, 0x25);
        for (let i = 0; i < 200 && !res.destroyed; i++) {
          res.write(chunk);
          pdfBytesSent += chunk.length;
          await new Promise((r) => setTimeout(r, 2));
        }
        res.end();
        return;
      }
      case '/no-type':
        res.writeHead(200);
        res.end('???');
        return;
      case '/markdown':
        return send(200, { 'content-type': 'text/markdown; charset=utf-8' }, '# Title\n');
      case '/sitemap':
        return send(200, { 'content-type': 'application/xml' }, '<urlset/>');
      case '/xhtml':
        return send(200, { 'content-type': 'application/xhtml+xml' }, '<html/>');
      case '/status': {
        const code = Number(url.searchParams.get('code'));
        return send(code, { 'content-type': 'text/html' }, `status ${code}`);
      }
      case '/hang-headers':
        return; // never answers
      case '/hang-body':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write('<p>partial');
        return;
      case '/reset':
        req.socket.destroy();
        return;
      default:
        return html(res, PAGE);
    }
  });
  f = testFetcher({
    maxBytes: 1024 * 1024,
    headersTimeoutMs: 300,
    bodyTimeoutMs: 300,
    retry: { maxAttempts: 1 },
  });
});
afterAll(async () => {
  await f.close();
  await s.close();
});

describe('content codings and the decoded-size cap', () => {
  it.each(['/gzip', '/br', '/deflate', '/deflate-raw'])('decodes %s', async (path) => {
    const r = await f.fetch(`${s.origin}${path}`);
    expect(r.outcome).toBe('ok');
    if (r.outcome !== 'ok') return;
    expect(r.text).toBe(PAGE);
    expect(r.rawDigest).toBe(sha256Hex(PAGE));
    expect(r.body.byteLength).toBe(PAGE.length);
  });

  it('stops a gzip bomb at the DECODED cap without reading it all', async () => {
    const r = await f.fetch(`${s.origin}/bomb`);
    expect(r.outcome).toBe('too-large');
    if (r.outcome === 'too-large') {
      expect(r.limitBytes).toBe(1024 * 1024);
      expect(r.seenBytes).toBeGreaterThan(1024 * 1024);
      expect(r.seenBytes).toBeLessThan(4 * 1024 * 1024);
    }
    // The client hung up: the server stopped long before inflating all 256 MiB.
    await new Promise((res) => setTimeout(res, 200));
    expect(bombMiBWritten).toBeLessThan(64);
  });

  it('refuses a declared Content-Length over the cap without reading the body', async () => {
    const r = await f.fetch(`${s.origin}/big-declared`);
    expect(r.outcome).toBe('too-large');
    if (r.outcome === 'too-large') expect(r.seenBytes).toBe(5 * 1024 * 1024);
  });

  it('stops an undeclared body at the cap', async () => {
    const r = await f.fetch(`${s.origin}/big-chunked`);
    expect(r.outcome).toBe('too-large');
  });

  it('readBody counts decoded bytes across chunks', async () => {
    const packed = gzipSync(Buffer.alloc(10_000, 1));
    const ok = await readBody(
      Readable.from([packed.subarray(0, 10), packed.subarray(10)]),
      ['gzip'],
      10_000,
    );
    expect(ok.kind).toBe('complete');
    const big = await readBody(Readable.from([packed]), ['gzip'], 9_999);
    expect(big.kind).toBe('too-large');
    const cut = await readBody(Readable.from([Buffer.alloc(100)]), [], 60, 'truncate');
    expect(cut.kind === 'complete' && cut.bytes.length).toBe(60);
  });
});

describe('content types', () => {
  it('reports a PDF as unsupported-type with its content type, without reading it', async () => {
    const r = await f.fetch(`${s.origin}/pdf`);
    expect(r.outcome).toBe('unsupported-type');
    if (r.outcome === 'unsupported-type') expect(r.contentType).toBe('application/pdf');
    await new Promise((res) => setTimeout(res, 100));
    expect(pdfBytesSent).toBeLessThan(200 * 64 * 1024);
  });

  it('treats a missing Content-Type as unsupported', async () => {
    const r = await f.fetch(`${s.origin}/no-type`);
    expect(r.outcome).toBe('unsupported-type');
    if (r.outcome === 'unsupported-type') expect(r.contentType).toBe('');
  });

  it.each(['/markdown', '/sitemap', '/xhtml', '/'])('accepts %s', async (path) => {
    expect((await f.fetch(`${s.origin}${path}`)).outcome).toBe('ok');
  });

  it('a per-request allow-list overrides the default', async () => {
    const r = await f.fetch(`${s.origin}/markdown`, { allowedContentTypes: ['text/html'] });
    expect(r.outcome).toBe('unsupported-type');
  });
});

describe('classification', () => {
  it.each([
    [200, 'ok'],
    [404, 'gone'],
    [410, 'gone'],
    [401, 'forbidden'],
    [403, 'forbidden'],
    [407, 'proxy-auth'],
    [429, 'rate-limited'],
    [500, 'server-error'],
    [502, 'server-error'],
    [503, 'server-error'],
    [504, 'server-error'],
    [400, 'client-error'],
    [418, 'client-error'],
  ])('status %i -> %s, with headers, timings and no throw', async (code, outcome) => {
    const g = testFetcher({ retry: { maxAttempts: 1 } });
    const r = await g.fetch(`${s.origin}/status?code=${code}`);
    await g.close();
    expect(r.outcome).toBe(outcome);
    expect(r.status).toBe(code);
    expect(r.headers['content-type']).toBe('text/html');
    expect(r.timings.totalMs).toBeGreaterThanOrEqual(0);
    expect(r.timings.headersMs).toBeGreaterThanOrEqual(0);
    expect(r.attempts).toBe(1);
    expect(Number.isNaN(Date.parse(r.fetchedAt))).toBe(false);
  });

  it('a header timeout is outcome timeout (phase headers)', async () => {
    const r = await f.fetch(`${s.origin}/hang-headers`);
    expect(r.outcome).toBe('timeout');
    if (r.outcome === 'timeout') expect(r.phase).toBe('headers');
  });

  it('a stalled body is outcome timeout (phase body)', async () => {
    const r = await f.fetch(`${s.origin}/hang-body`);
    expect(r.outcome).toBe('timeout');
    if (r.outcome === 'timeout') expect(r.phase).toBe('body');
    expect(r.status).toBe(200);
  });

  it('a total timeout caps the whole attempt', async () => {
    const g = testFetcher({
      totalTimeoutMs: 200,
      headersTimeoutMs: 5000,
      retry: { maxAttempts: 1 },
    });
    const r = await g.fetch(`${s.origin}/hang-headers`);
    await g.close();
    expect(r.outcome).toBe('timeout');
    if (r.outcome === 'timeout') expect(r.phase).toBe('total');
  });

  it('a reset connection is network-error; a refused port too', async () => {
    const r = await f.fetch(`${s.origin}/reset`);
    expect(r.outcome).toBe('network-error');
    if (r.outcome === 'network-error')
      expect(r.error.code).toMatch(/^(UND_ERR_SOCKET|ECONNRESET)$/);
    const closed = await f.fetch('http://127.0.0.1:1/');
    expect(closed.outcome).toBe('network-error');
    if (closed.outcome === 'network-error') expect(closed.error.code).toBe('ECONNREFUSED');
  });

  it('an AbortSignal aborts a request in flight, rejecting with its reason', async () => {
    const ac = new AbortController();
    const g = testFetcher({ headersTimeoutMs: 10_000 });
    const p = g.fetch(`${s.origin}/hang-headers`, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('user cancelled')), 50);
    await expect(p).rejects.toThrow('user cancelled');
    await expect(
      g.fetch(`${s.origin}/`, { signal: AbortSignal.abort(new Error('already')) }),
    ).rejects.toThrow('already');
    await g.close();
  });

  it('an AbortSignal aborts a request waiting for its host interval', async () => {
    const g = testFetcher({ minIntervalMs: 10_000 });
    expect((await g.fetch(`${s.origin}/`)).outcome).toBe('ok');
    const ac = new AbortController();
    const p = g.fetch(`${s.origin}/again`, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('queued cancel')), 50);
    // Not aborted, it would resolve 'ok' after the 10 s interval: the rejection is the proof.
    await expect(p).rejects.toThrow('queued cancel');
    await g.close();
  });
});
