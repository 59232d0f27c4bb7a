import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fetcher, Resolver } from '../src/index.js';
import { html, startServer, type TestServer, testFetcher } from './helpers.js';

let s: TestServer;
let f: Fetcher;
// Two host names for the same loopback server, so a redirect can leave the host.
const resolver: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];

beforeAll(async () => {
  s = await startServer((req, res) => {
    const url = req.url ?? '/';
    const redirect = (status: number, location: string): void => {
      res.writeHead(status, { location });
      res.end();
    };
    if (url === '/a') return redirect(301, '/b');
    if (url === '/b') return redirect(302, `http://${req.headers.host}/c`);
    if (url === '/c') return redirect(308, '/final');
    if (url === '/final') return html(res, '<p>final</p>');
    if (url === '/loop1') return redirect(302, '/loop2');
    if (url === '/loop2') return redirect(302, '/loop1');
    if (url.startsWith('/hop')) return redirect(302, `/hop${Number(url.slice(4)) + 1}`);
    if (url === '/away') return redirect(301, `http://other.test:${s.port}/landing`);
    if (url === '/www') return redirect(301, `http://www.site.test:${s.port}/final`);
    if (url === '/landing') return html(res, '<p>elsewhere</p>');
    if (url === '/creds') return redirect(302, `http://user:pw@site.test:${s.port}/final`);
    if (url === '/no-location') {
      res.writeHead(302);
      res.end();
      return;
    }
    res.writeHead(404);
    res.end();
  });
  f = testFetcher({ resolver });
});
afterAll(async () => {
  await f.close();
  await s.close();
});

describe('redirects', () => {
  it('follows a chain manually and records every hop and the final URL', async () => {
    const r = await f.fetch(`${s.origin}/a`);
    expect(r.outcome).toBe('ok');
    expect(r.finalUrl).toBe(`${s.origin}/final`);
    expect(r.redirects).toEqual([
      { url: `${s.origin}/a`, status: 301, location: `${s.origin}/b` },
      { url: `${s.origin}/b`, status: 302, location: `${s.origin}/c` },
      { url: `${s.origin}/c`, status: 308, location: `${s.origin}/final` },
    ]);
    expect(r.offHost).toBe(false);
    expect(r.url).toBe(`${s.origin}/a`);
  });

  it('detects loops', async () => {
    const r = await f.fetch(`${s.origin}/loop1`);
    expect(r.outcome).toBe('redirect-loop');
    if (r.outcome === 'redirect-loop') expect(r.reason).toBe('loop');
    expect(r.redirects.map((h) => h.status)).toEqual([302, 302]);
  });

  it('stops after maxHops', async () => {
    const r = await f.fetch(`${s.origin}/hop0`);
    expect(r.outcome).toBe('redirect-loop');
    if (r.outcome === 'redirect-loop') expect(r.reason).toBe('max-hops');
    expect(r.redirects).toHaveLength(6);
    expect(s.log.filter((l) => l.path.startsWith('/hop'))).toHaveLength(6);
  });

  it('refuses an off-host redirect by default and flags it', async () => {
    const before = s.log.length;
    const r = await f.fetch(`http://site.test:${s.port}/away`);
    expect(r.outcome).toBe('off-host-redirect');
    expect(r.offHost).toBe(true);
    if (r.outcome === 'off-host-redirect')
      expect(r.location).toBe(`http://other.test:${s.port}/landing`);
    expect(s.log.length - before).toBe(1);
  });

  it('follows an off-host redirect when configured, still flagging it', async () => {
    const r = await f.fetch(`http://site.test:${s.port}/away`, { offHostRedirects: 'follow' });
    expect(r.outcome).toBe('ok');
    expect(r.offHost).toBe(true);
    expect(r.finalUrl).toBe(`http://other.test:${s.port}/landing`);
  });

  it('treats a www. variant as the same host', async () => {
    const r = await f.fetch(`http://site.test:${s.port}/www`);
    expect(r.outcome).toBe('ok');
    expect(r.offHost).toBe(false);
  });

  it('refuses a redirect to a URL with credentials, and classifies a 3xx without Location', async () => {
    const r = await f.fetch(`http://site.test:${s.port}/creds`);
    expect(r.outcome).toBe('redirect-loop');
    if (r.outcome === 'redirect-loop') expect(r.reason).toBe('invalid-location');
    const n = await f.fetch(`${s.origin}/no-location`);
    expect(n.outcome).toBe('client-error');
    expect(n.status).toBe(302);
  });
});
