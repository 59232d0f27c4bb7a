import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fetcher, normalizeEtag, usableValidators } from '../src/index.js';
import { startServer, type TestServer, testFetcher } from './helpers.js';

const LM = 'Wed, 21 Oct 2026 07:28:00 GMT';
let s: TestServer;
let f: Fetcher;
let bodyStreamed = false;

beforeAll(async () => {
  s = await startServer((req, res) => {
    const inm = req.headers['if-none-match'];
    const ims = req.headers['if-modified-since'];
    if (req.url === '/strong') {
      if (inm === '"v1"') {
        res.writeHead(304, { etag: '"v1"' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html', etag: '"v1"', 'last-modified': LM });
      res.end('<p>strong</p>');
      return;
    }
    if (req.url === '/weak') {
      if (inm === 'W/"w1"') {
        res.writeHead(304, { etag: 'W/"w1"' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html', etag: 'W/"w1"' });
      res.end('<p>weak</p>');
      return;
    }
    if (req.url === '/dated') {
      if (ims !== undefined && Date.parse(ims) >= Date.parse(LM)) {
        res.writeHead(304);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html', 'last-modified': LM });
      res.end('<p>dated</p>');
      return;
    }
    if (req.url === '/304-with-body-would-hang') {
      // A 304 must be classified from its headers alone; the server never ends this response.
      res.writeHead(304, { etag: '"z"' });
      res.flushHeaders();
      bodyStreamed = true;
      return;
    }
    res.writeHead(404);
    res.end();
  });
  f = testFetcher({ bodyTimeoutMs: 5000 });
});
afterAll(async () => {
  await f.close();
  await s.close();
});

describe('conditional requests', () => {
  it('a 200 yields validators tagged with the pipeline key; sending them back yields not-modified', async () => {
    const first = await f.fetch(`${s.origin}/strong`, { pipelineKey: 'ex1|ch1' });
    expect(first.outcome).toBe('ok');
    if (first.outcome !== 'ok') return;
    expect(first.validators).toEqual({ etag: '"v1"', lastModified: LM, pipelineKey: 'ex1|ch1' });
    expect(first.lastModifiedAt).toBe(new Date(LM).toISOString());
    const second = await f.fetch(`${s.origin}/strong`, {
      validators: first.validators,
      pipelineKey: 'ex1|ch1',
    });
    expect(second.outcome).toBe('not-modified');
    expect(second.status).toBe(304);
    if (second.outcome === 'not-modified') expect(second.validators).toEqual(first.validators);
    const sent = s.log.at(-1)!.headers;
    expect(sent['if-none-match']).toBe('"v1"');
    expect(sent['if-modified-since']).toBe(LM);
  });

  it('sends a weak ETag back unchanged (W/ prefix kept) and gets not-modified', async () => {
    const first = await f.fetch(`${s.origin}/weak`);
    expect(first.outcome).toBe('ok');
    if (first.outcome !== 'ok') return;
    expect(first.validators.etag).toBe('W/"w1"');
    const second = await f.fetch(`${s.origin}/weak`, { validators: first.validators });
    expect(second.outcome).toBe('not-modified');
    expect(s.log.at(-1)!.headers['if-none-match']).toBe('W/"w1"');
  });

  it('uses If-Modified-Since when only Last-Modified is known', async () => {
    const r = await f.fetch(`${s.origin}/dated`, { validators: { lastModified: LM } });
    expect(r.outcome).toBe('not-modified');
    expect(s.log.at(-1)!.headers['if-modified-since']).toBe(LM);
    expect(s.log.at(-1)!.headers['if-none-match']).toBeUndefined();
  });

  it('drops validators recorded under another pipeline key: the server sees an unconditional request', async () => {
    const r = await f.fetch(`${s.origin}/strong`, {
      validators: { etag: '"v1"', lastModified: LM, pipelineKey: 'ex1|ch1' },
      pipelineKey: 'ex2|ch1',
    });
    expect(r.outcome).toBe('ok');
    expect(r.validatorsDropped).toBe(true);
    const sent = s.log.at(-1)!.headers;
    expect(sent['if-none-match']).toBeUndefined();
    expect(sent['if-modified-since']).toBeUndefined();
    if (r.outcome === 'ok') expect(r.validators.pipelineKey).toBe('ex2|ch1');
  });

  it('classifies a 304 from its headers without reading a body', async () => {
    // A body read would hang until the test's own timeout: the outcome arriving at all is the proof.
    const r = await f.fetch(`${s.origin}/304-with-body-would-hang`, {
      validators: { etag: '"z"' },
    });
    expect(r.outcome).toBe('not-modified');
    expect(bodyStreamed).toBe(true);
  });

  it('normalises entity tags and pipeline keys', () => {
    expect(normalizeEtag('abc')).toBe('"abc"');
    expect(normalizeEtag('w/"abc"')).toBe('W/"abc"');
    expect(normalizeEtag(' "abc" ')).toBe('"abc"');
    expect(normalizeEtag('')).toBeUndefined();
    expect(usableValidators({ etag: '"a"', pipelineKey: 'k1' }, 'k1')).toEqual({
      validators: { etag: '"a"', pipelineKey: 'k1' },
      dropped: false,
    });
    expect(usableValidators({ etag: '"a"' }, 'k1')).toEqual({
      validators: undefined,
      dropped: true,
    });
    expect(usableValidators({ etag: '"a"' }, undefined).dropped).toBe(false);
  });
});
