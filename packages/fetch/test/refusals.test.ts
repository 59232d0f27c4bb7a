import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  describeFetchFailure,
  discoverLlmsTxt,
  discoverSitemap,
  type Fetcher,
} from '../src/index.js';
import { html, startServer, type TestServer, testFetcher } from './helpers.js';

// A newcomer's first wall: every refusal by the network policy names the setting that opens it.
let s: TestServer;
let fetcher: Fetcher;
beforeAll(async () => {
  s = await startServer((req, res) => {
    if (req.url === '/robots.txt') {
      // robots.txt sent to a private address the policy refuses.
      res.writeHead(301, { location: 'http://10.0.0.1/robots.txt' }).end();
      return;
    }
    html(res, '<p>hi</p>');
  });
  fetcher = testFetcher({
    network: { allow: [s.host], settingName: 'fetch.allow' },
    robots: {},
  });
});
afterAll(async () => {
  await fetcher.close();
  await s.close();
});

describe('refusals by the network policy name fetch.allow', () => {
  it('a sitemap on a refused address', async () => {
    const d = await discoverSitemap(fetcher, `http://127.0.0.2:${s.port}/sitemap.xml`);
    expect(d.failures).toHaveLength(1);
    expect(d.failures[0]!.outcome).toBe('ssrf-refused');
    expect(d.failures[0]!.reason).toMatch(
      /^ssrf-refused: refusing to connect to 127\.0\.0\.2:\d+ \(127\.0\.0\.2: loopback\); .*to fetch\.allow\.$/,
    );
  });

  it('an llms.txt on a refused address', async () => {
    const d = await discoverLlmsTxt(fetcher, `http://127.0.0.2:${s.port}/llms.txt`);
    expect(d.outcome).toBe('ssrf-refused');
    expect(d.reason).toMatch(/to fetch\.allow\.$/);
  });

  it('a robots.txt redirected to a refused address: the page refusal says why', async () => {
    const r = await fetcher.fetch(`${s.origin}/page`);
    expect(r.outcome).toBe('robots-disallowed');
    expect(describeFetchFailure(r)).toMatch(
      /^robots-disallowed: unreachable \(robots\.txt refusing to connect to 10\.0\.0\.1:80 .*fetch\.allow\.\)$/,
    );
  });

  it('the control: an allowed robots.txt that is missing lets the page through, with no refusal', async () => {
    const ok = await startServer((req, res) => {
      if (req.url === '/robots.txt') res.writeHead(404).end();
      else html(res, '<p>hi</p>');
    });
    const f = testFetcher({
      network: { allow: [ok.host], settingName: 'fetch.allow' },
      robots: {},
    });
    try {
      expect((await f.fetch(`${ok.origin}/page`)).outcome).toBe('ok');
    } finally {
      await f.close();
      await ok.close();
    }
  });
});
