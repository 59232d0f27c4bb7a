import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentId, FIELDS } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  readOnly,
  SHORT_LEASE,
  start,
  until,
  visible,
  writeConfig,
} from './import-harness.js';

const ORIGIN = 'https://docs.example.org';
const SECRET = 's3cret-for-tests';

/**
 * A loopback stand-in of Apify's dataset-items endpoint (GET /v2/datasets/:id/items) as Apify
 * documents it: a JSON array of items, pagination in X-Apify-Pagination-* headers (offset,
 * limit, count, total), and 404 `{ error: { type: 'record-not-found' } }` for an unknown dataset.
 * Plus Web Scraper Cloud's scraping-job and JSON-lines data endpoints. No vendor is reachable here.
 */
function standIn() {
  const datasets = new Map<string, object[]>();
  const requests: string[] = [];
  const gates = new Map<string, Promise<void>>();
  /** `dataset@offset` → how many 503 answers to give before the page. */
  const unavailable = new Map<string, number>();
  /** `dataset@offset` → how many answers to break off halfway through the body. */
  const cut = new Map<string, number>();
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(`${url.pathname}?${url.searchParams.get('offset') ?? ''}`);
    const items = /^\/v2\/datasets\/([^/]+)\/items$/.exec(url.pathname);
    if (items !== null) {
      const gate = gates.get(`${items[1]}@${url.searchParams.get('offset') ?? '0'}`);
      if (gate !== undefined) await gate;
      const at = `${items[1]}@${url.searchParams.get('offset') ?? '0'}`;
      const failures = unavailable.get(at) ?? 0;
      if (failures > 0) {
        unavailable.set(at, failures - 1);
        res.writeHead(503, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { type: 'server-error', message: 'try again' } }));
      }
      const all = datasets.get(items[1]!);
      if (all === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({ error: { type: 'record-not-found', message: 'Dataset was not found' } }),
        );
      }
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const limit = Number(url.searchParams.get('limit') ?? 999_999_999_999);
      const page = all.slice(offset, offset + limit);
      res.writeHead(200, {
        'content-type': 'application/json',
        'x-apify-pagination-offset': String(offset),
        'x-apify-pagination-limit': String(limit),
        'x-apify-pagination-count': String(page.length),
        'x-apify-pagination-total': String(all.length),
        'x-apify-pagination-desc': 'false',
      });
      // Written in 64 KiB pieces, as a large page arrives: the reader sees a stream.
      const body = JSON.stringify(page);
      const cuts = cut.get(at) ?? 0;
      if (cuts > 0) {
        // Half the body, then the connection drops (a reset proxy, a vendor restart).
        cut.set(at, cuts - 1);
        res.write(body.slice(0, Math.floor(body.length / 2)));
        return setTimeout(() => res.destroy(), 20);
      }
      for (let i = 0; i < body.length; i += 65_536) res.write(body.slice(i, i + 65_536));
      return res.end();
    }
    const job = /^\/api\/v1\/scraping-job\/([^/]+)(\/json)?$/.exec(url.pathname);
    if (job !== null) {
      if (job[2] === undefined) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({
            success: true,
            data: { id: Number(job[1]), status: 'finished', time_created: 1791849600 },
          }),
        );
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        `${JSON.stringify({ 'web-scraper-order': '1-1', 'web-scraper-start-url': `${ORIGIN}/`, 'page-href': `${ORIGIN}/ws/1`, body: 'Web Scraper page one.' })}\n`,
      );
    }
    res.writeHead(404).end();
  });
  return { server, datasets, requests, gates, unavailable, cut };
}

const item = (path: string, n: number) => ({
  url: `${ORIGIN}${path}`,
  crawl: {
    loadedUrl: `${ORIGIN}${path}`,
    loadedTime: '2026-10-03T00:00:00.000Z',
    referrerUrl: `${ORIGIN}/`,
    depth: 1,
    httpStatusCode: 200,
  },
  metadata: { canonicalUrl: `${ORIGIN}${path}`, title: `Page ${n}` },
  markdown: `# Page ${n}\n\nText of page ${n}.`,
});
const runSucceeded = (runId: string, datasetId: string) =>
  JSON.stringify({
    userId: 'u',
    createdAt: '2026-10-03T00:00:00.000Z',
    eventType: 'ACTOR.RUN.SUCCEEDED',
    eventData: { actorId: 'a', actorRunId: runId },
    resource: { id: runId, status: 'SUCCEEDED', defaultDatasetId: datasetId },
  });

describe('ragfresh serve: webhook receiver against loopback vendor stand-ins (LanceDB)', () => {
  let dir: string;
  let config: string;
  let vendor: ReturnType<typeof standIn>;
  let vendorUrl: string;
  let serve: ReturnType<typeof start>;
  let base: string;

  const launch = async () => {
    serve = start(
      [
        'serve',
        '--source',
        'docs',
        '--port',
        '0',
        '--page-size',
        '2',
        '--max-body',
        '4096',
        '--apify-base-url',
        vendorUrl,
        '--webscraper-base-url',
        `${vendorUrl}/api/v1`,
        '--map',
        'url=page-href',
        '--map',
        'text=body',
        '--config',
        config,
      ],
      dir,
      // The last test SIGKILLs this process: a short lease, so its successor waits seconds.
      { RAGFRESH_WEBHOOK_SECRET: SECRET, ...SHORT_LEASE },
    );
    for (;;) {
      await until(
        () => /listening on (\S+)/.test(serve.out.stdout) || serve.child.exitCode !== null,
        'serve to listen or exit',
      );
      if (serve.child.exitCode === null) break;
      // A SIGKILLed predecessor's publisher lease has not expired yet: start again.
      expect(serve.out.stderr).toMatch(/LEASE_HELD|holds the publish lease/);
      await new Promise((r) => setTimeout(r, 500));
      serve = start(serve.child.spawnargs.slice(2), dir, {
        RAGFRESH_WEBHOOK_SECRET: SECRET,
        ...SHORT_LEASE,
      });
    }
    base = /listening on (\S+)/.exec(serve.out.stdout)![1]!;
  };
  const post = (
    path: string,
    body: string,
    headers: Record<string, string> = {
      'x-ragfresh-secret': SECRET,
      'content-type': 'application/json',
    },
  ) => fetch(`${base}${path}`, { method: 'POST', body, headers });
  const health = async () =>
    (await (await fetch(`${base}/healthz`)).json()) as {
      pending: number;
      done: number;
      failed: number;
    };

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-serve-'));
    config = writeConfig(dir, { store: 'lancedb', path: join(dir, 'lance'), table: 'hooks' });
    vendor = standIn();
    await new Promise<void>((r) => vendor.server.listen(0, '127.0.0.1', r));
    const addr = vendor.server.address();
    vendorUrl = `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`;
    vendor.datasets.set(
      'ds1',
      [1, 2, 3, 4, 5].map((n) => item(`/a/${n}`, n)),
    );
    await launch();
  }, 180_000);
  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await new Promise<void>((r) => vendor.server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('an unsigned post is refused with 401; a wrong secret too', async () => {
    expect(
      (
        await post('/hooks/apify', runSucceeded('r0', 'ds1'), {
          'content-type': 'application/json',
        })
      ).status,
    ).toBe(401);
    expect(
      (await post('/hooks/apify', runSucceeded('r0', 'ds1'), { 'x-ragfresh-secret': 'nope' }))
        .status,
    ).toBe(401);
    expect(
      (
        await post('/hooks/webscraper', 'scrapingjob_id=1&status=finished', {
          'content-type': 'application/x-www-form-urlencoded',
        })
      ).status,
    ).toBe(401);
  });

  it('an oversized body is refused with 413 and records nothing', async () => {
    const r = await post('/hooks/apify', JSON.stringify({ pad: 'x'.repeat(10_000) }));
    expect(r.status).toBe(413);
    expect((await health()).pending + (await health()).done).toBe(0);
  });

  it('a signed, then a retried delivery of one run: acknowledged before the import runs, imported once', async () => {
    let release!: () => void;
    vendor.gates.set(
      'ds1@0',
      new Promise<void>((r) => {
        release = r;
      }),
    );
    // The stand-in holds the dataset until the ack arrived: an import that ran before the ack would deadlock here.
    const first = await post('/hooks/apify', runSucceeded('run-1', 'ds1'));
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ key: 'apify:run-1', duplicate: false });
    const retried = await post('/hooks/apify', runSucceeded('run-1', 'ds1'));
    expect(retried.status).toBe(202);
    expect(await retried.json()).toMatchObject({ duplicate: true });
    release();
    await until(async () => (await health()).done === 1, 'the import of run-1');
    expect(vendor.requests.filter((r) => r.startsWith('/v2/datasets/ds1/'))).toEqual([
      '/v2/datasets/ds1/items?0',
      '/v2/datasets/ds1/items?2',
      '/v2/datasets/ds1/items?4',
    ]);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(
      /ragfresh_webhook_requests_total\{hook="apify",outcome="duplicate"\} 1/,
    );
    expect(metrics).toMatch(/ragfresh_import_rows_total\{source="docs",outcome="published"\} 5/);
    expect(metrics).toMatch(/ragfresh_webhook_events_pending 0/);
  });

  it('an unknown dataset (404 from the items endpoint) fails the event once, without retrying', async () => {
    expect((await post('/hooks/apify', runSucceeded('run-404', 'missing'))).status).toBe(202);
    await until(async () => (await health()).failed === 1, 'the failed import');
    expect(vendor.requests.filter((r) => r.startsWith('/v2/datasets/missing/'))).toHaveLength(1);
  });

  it("a Web Scraper Cloud job-finished form post imports the job's JSON data with the mapped columns", async () => {
    const r = await fetch(`${base}/hooks/webscraper?secret=${SECRET}`, {
      method: 'POST',
      body: new URLSearchParams({
        scrapingjob_id: '77',
        status: 'finished',
        sitemap_id: '12',
        sitemap_name: 'docs',
        custom_id: 'c',
      }),
    });
    expect(r.status).toBe(202);
    await until(async () => (await health()).done === 2, 'the Web Scraper import');
  });

  it('a vendor page streams through the row guards: a 503 is retried, an oversized item is refused alone', async () => {
    // One item of 9 MB Markdown (over the 2M-character page limit) between two ordinary ones.
    const huge = { ...item('/big/2', 2), markdown: `# Huge\n\n${'word '.repeat(1_800_000)}` };
    vendor.datasets.set('big', [item('/big/1', 1), huge, item('/big/3', 3)]);
    vendor.unavailable.set('big@0', 1);
    const before = (await health()).done;
    expect((await post('/hooks/apify', runSucceeded('run-big', 'big'))).status).toBe(202);
    await until(async () => (await health()).done === before + 1, 'the import of run-big');
    // The 503 was asked again; each page once after it.
    expect(vendor.requests.filter((r) => r.startsWith('/v2/datasets/big/'))).toEqual([
      '/v2/datasets/big/items?0',
      '/v2/datasets/big/items?0',
      '/v2/datasets/big/items?2',
    ]);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/ragfresh_import_rows_total\{source="docs",outcome="refused"\} 1/);
    expect(serve.out.stdout + serve.out.stderr).toMatch(/hook-import-page.*refused.*1/);
    // The refused row is named by its URL and reason, not only counted.
    expect(serve.out.stdout + serve.out.stderr).toMatch(
      /hook-import-refused.*https:\/\/docs\.example\.org\/big\/2.*record-too-large/,
    );
  });

  it('a page whose body breaks off mid-stream is read again from its offset; every row lands once', async () => {
    vendor.datasets.set(
      'cut',
      [1, 2, 3].map((n) => item(`/cut/${n}`, n)),
    );
    vendor.cut.set('cut@0', 1);
    const before = await health();
    expect((await post('/hooks/apify', runSucceeded('run-cut', 'cut'))).status).toBe(202);
    await until(async () => (await health()).done === before.done + 1, 'the import of run-cut');
    expect((await health()).failed).toBe(before.failed);
    expect(vendor.requests.filter((r) => r.startsWith('/v2/datasets/cut/'))).toEqual([
      '/v2/datasets/cut/items?0',
      '/v2/datasets/cut/items?0',
      '/v2/datasets/cut/items?2',
    ]);
    expect(serve.out.stdout + serve.out.stderr).toMatch(/hook-import-body-cut.*broke off/);
  });

  it('a body that breaks off on every read fails the event with one line, after three reads', async () => {
    vendor.datasets.set('cutalways', [item('/never/1', 1), item('/never/2', 2)]);
    vendor.cut.set('cutalways@0', 3);
    const before = await health();
    expect((await post('/hooks/apify', runSucceeded('run-cutalways', 'cutalways'))).status).toBe(
      202,
    );
    await until(async () => (await health()).failed === before.failed + 1, 'the failed import');
    expect(vendor.requests.filter((r) => r.startsWith('/v2/datasets/cutalways/'))).toHaveLength(3);
    expect(serve.out.stdout + serve.out.stderr).toMatch(
      /hook-import-failed.*cutalways items from 0: the response body broke off.*3 reads/,
    );
  });

  it('the importer killed mid-dataset resumes from its persisted offset after a restart', async () => {
    vendor.datasets.set(
      'ds2',
      [1, 2, 3, 4, 5, 6].map((n) => item(`/b/${n}`, n)),
    );
    let release!: () => void;
    vendor.gates.set(
      'ds2@2',
      new Promise<void>((r) => {
        release = r;
      }),
    );
    expect((await post('/hooks/apify', runSucceeded('run-2', 'ds2'))).status).toBe(202);
    await until(
      () => vendor.requests.includes('/v2/datasets/ds2/items?2'),
      'the second page request',
    );
    const gone = new Promise((r) => serve.child.on('exit', r));
    serve.child.kill('SIGKILL');
    await gone;
    release();
    vendor.requests.length = 0;
    await launch();
    await until(async () => (await health()).pending === 0, 'the resumed import');
    expect((await health()).done).toBe(5);
    // Resumed at the persisted offset, not from the start of the dataset.
    expect(vendor.requests.filter((r) => r.startsWith('/v2/datasets/ds2/'))[0]).toBe(
      '/v2/datasets/ds2/items?2',
    );
    const stopped = new Promise((r) => serve.child.on('exit', r));
    serve.child.kill('SIGTERM');
    await stopped;
    const rt = await readOnly(config);
    const paths = [
      ...[1, 2, 3, 4, 5].map((n) => `/a/${n}`),
      ...[1, 2, 3, 4, 5, 6].map((n) => `/b/${n}`),
      '/ws/1',
      '/big/1',
      '/big/3',
      ...[1, 2, 3].map((n) => `/cut/${n}`),
    ];
    for (const p of paths) {
      const id = documentId('docs', `${ORIGIN}${p}`);
      const record = await rt.state.getDocument(id);
      expect(record?.currentVersionId, p).toBeDefined();
      const chunks = await visible(rt, id);
      expect(new Set(chunks.map((c) => c.metadata[FIELDS.versionId]))).toEqual(
        new Set([record!.currentVersionId]),
      );
    }
    await rt.close();
  }, 180_000);
});
