import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { documentId } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Error-code documentation through the built CLI (build first): a "429 Too Many Requests" page
// is indexed and answers queries; a page the host's own error page looks like is held, indexed
// by `classify.ignore`, or, after three runs, accepted from the review queue.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(dir: string, ...args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [BIN, ...args, '--quiet'],
      { cwd: dir, timeout: 120_000 },
      (err, stdout, stderr) =>
        done({
          code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
          stdout,
          stderr,
        }),
    );
  });
}

const RATE_LIMIT_DOC = `<!DOCTYPE html><html lang="en"><head><title>429 Too Many Requests | Acme API</title></head><body>
<nav><a href="/errors/">Errors</a></nav><main><article><h1>429 Too Many Requests</h1>
<p>The API answers 429 when a key sends more than 100 requests a minute. Wait for the number of seconds in the Retry-After header, then send the request again.</p>
<p>Batch writes count as one request each; ask support for a higher quota.</p></article></main></body></html>`;

/** What this host answers under /kb/ for any path: its not-found page, with status 200. */
const kbNotFound = (
  path: string,
) => `<!DOCTYPE html><html><head><title>Page not found | Acme</title></head><body>
<main><h1>Page not found</h1><p>We could not find ${path} in the knowledge base. It may have moved; try the search.</p></main></body></html>`;

interface Hit {
  readonly documentId: string;
  readonly text: string;
}

describe('error-code docs pages through the CLI', () => {
  let server: Server;
  let origin = '';
  let dir: string;
  const url = (path: string) => `${origin}${path}`;
  const write = (sources: unknown[]) =>
    writeFileSync(
      join(dir, 'ragfresh.config.json'),
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        sources,
        embeddings: { kind: 'hashing', dimensions: 64 },
        fetch: { minIntervalMs: 0, allow: ['127.0.0.1'], robots: false },
      }),
    );
  const query = async (q: string) => {
    const r = await cli(dir, 'query', q, '-k', '5', '--json');
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Hit[];
  };

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first (tsc -b).`);
    server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const [status, body] =
        path === '/errors/429'
          ? [200, RATE_LIMIT_DOC]
          : path.startsWith('/kb/')
            ? [200, kbNotFound(path)]
            : [404, '<html><head><title>Not found</title></head><body><h1>404</h1></body></html>'];
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
      res.end(body);
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-classify-'));
  });
  afterAll(async () => {
    await new Promise<void>((ok) => server.close(() => ok()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('a "429 Too Many Requests" docs page is indexed and queryable; a page like the host\'s error page is not, unless classify.ignore says so', async () => {
    write([
      { id: 'api', urls: [url('/errors/429')] },
      { id: 'kb', urls: [url('/kb/billing')] },
      { id: 'kbok', urls: [url('/kb/invoices')], classify: { ignore: ['soft_404'] } },
    ]);
    const r = await cli(dir, 'refresh', '--all', '--json');
    const { report } = JSON.parse(r.stdout) as {
      report: { sources: { sourceId: string; counts: { published: number } }[] };
    };
    const published = Object.fromEntries(
      report.sources.map((s) => [s.sourceId, s.counts.published]),
    );
    expect(published).toEqual({ api: 1, kb: 0, kbok: 1 });
    expect(r.code).toBe(3); // source kb was never indexed
    const hits = await query('how many requests a minute before 429');
    expect(hits[0]?.documentId).toBe(documentId('api', url('/errors/429')));
    expect(hits[0]?.text).toContain('100 requests a minute');
    const kb = await query('could not find /kb/invoices in the knowledge base');
    expect(kb.map((h) => h.documentId)).toContain(documentId('kbok', url('/kb/invoices')));
    expect(kb.map((h) => h.documentId)).not.toContain(documentId('kb', url('/kb/billing')));
  });

  it('after three runs the held page is a persistent-not-the-document review item; accepting it indexes it', async () => {
    const id = `persistent:${documentId('kb', url('/kb/billing'))}`;
    for (let run = 2; run <= 3; run++) await cli(dir, 'refresh', '--all');
    const list = await cli(dir, 'review', 'list', '--json');
    const items = JSON.parse(list.stdout) as { id: string; reason: string }[];
    expect(items).toContainEqual(
      expect.objectContaining({ id, reason: 'persistent-not-the-document' }),
    );
    const accepted = await cli(dir, 'review', 'accept', id, '--by', 'tester');
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stdout).toMatch(/approved 1 of 1 review items/);
    const hits = await query('could not find /kb/billing in the knowledge base');
    expect(hits.map((h) => h.documentId)).toContain(documentId('kb', url('/kb/billing')));
    // The next run keeps it (unchanged content) and asks nothing new.
    const again = await cli(dir, 'refresh', '--all', '--json');
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse((await cli(dir, 'review', 'list', '--json')).stdout)).toEqual([]);
  });
});
