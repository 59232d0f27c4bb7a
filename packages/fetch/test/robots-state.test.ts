import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStateStore } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { html, startServer, type TestServer, testFetcher } from './helpers.js';

let dir: string;
let s: TestServer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ragfresh-fetch-state-'));
  s = await startServer((req, res) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('User-agent: *\nDisallow: /secret\n');
      return;
    }
    html(res, 'ok');
  });
});
afterAll(async () => {
  await s.close();
  await rm(dir, { recursive: true, force: true });
});

describe('robots verdicts in the durable StateStore', () => {
  it('a verdict written through the SQLite StateStore survives a restart: no second robots.txt fetch', async () => {
    const path = `sqlite:${join(dir, 'state.sqlite')}`;
    const store1 = await openStateStore(path);
    const f1 = testFetcher({ robots: { store: store1 } });
    expect((await f1.fetch(`${s.origin}/secret/x`)).outcome).toBe('robots-disallowed');
    await f1.close();
    await store1.close();

    const store2 = await openStateStore(path);
    const verdict = await store2.getRobots(s.origin);
    expect(verdict).toMatchObject({ host: s.origin, status: 200 });
    const f2 = testFetcher({ robots: { store: store2 } });
    expect((await f2.fetch(`${s.origin}/secret/y`)).outcome).toBe('robots-disallowed');
    expect((await f2.fetch(`${s.origin}/public`)).outcome).toBe('ok');
    await f2.close();
    await store2.close();
    expect(s.log.filter((r) => r.path === '/robots.txt')).toHaveLength(1);
  });
});
