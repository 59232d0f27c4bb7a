import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { documentId, FIELDS } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';
import { DEFAULT_PAGE_LIMITS, type PageOutcome, processBounded, screenPage } from './internals.js';

const article = (title: string, words: number) =>
  `<!doctype html><html><head><title>${title}</title></head><body><main><article><h1>${title}</h1>${Array.from(
    { length: Math.ceil(words / 40) },
    (_, i) =>
      `<p>${title} paragraph ${i} explains the plan, the price and the limits of the service in plain words for readers ${Array.from({ length: 25 }, (_, j) => `w${(i * 31 + j) % 500}`).join(' ')}.</p>`,
  ).join('')}</article></main></body></html>`;

/** The hostile bodies of issue 12, each served beside healthy pages. */
const BAD: Record<string, { body: Buffer; headers?: Record<string, string> }> = {
  '/empty': { body: Buffer.alloc(0) },
  '/blank': { body: Buffer.from(` \n\t${'\0'.repeat(4096)}\n`) },
  '/zeros.gz': {
    body: gzipSync(Buffer.alloc(10 * 1024 * 1024)),
    headers: { 'content-encoding': 'gzip' },
  },
  '/nest10k': {
    body: Buffer.from(
      `<html><body>${'<div>'.repeat(10_000)}x${'</div>'.repeat(10_000)}</body></html>`,
    ),
  },
  '/nest100k': {
    body: Buffer.from(
      `<html><body>${'<div>'.repeat(100_000)}x${'</div>'.repeat(100_000)}</body></html>`,
    ),
  },
  '/oneline5mb': {
    body: Buffer.from(
      `<html><body><article><p>${'lorem ipsum dolor '.repeat(290_000)}</p></article></body></html>`,
    ),
  },
  '/longword': {
    body: Buffer.from(`<html><body><article><p>${'a'.repeat(25_000)}</p></article></body></html>`),
  },
};

describe('per-page fault isolation and bounded work', () => {
  let h: Harness;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 1 });
    server = createServer((req, res) => {
      const path = req.url ?? '/';
      const bad = BAD[path];
      const headers = { 'content-type': 'text/html; charset=utf-8', ...bad?.headers };
      if (bad !== undefined) {
        res.writeHead(200, headers).end(bad.body);
        return;
      }
      if (path === '/same') {
        const body = `<html><head><title>Same</title></head><body><main><article><h1>Same</h1><p>${'same '.repeat(50_000)}</p></article></main></body></html>`;
        res.writeHead(200, headers).end(body);
        return;
      }
      if (path.startsWith('/good')) {
        res.writeHead(200, headers).end(article(`Good ${path.slice(5)}`, 400));
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await h.stop();
    await new Promise((r) => server.close(r));
  });

  it('screens bodies in one pass: empty, too deep, too long a run; an ordinary page passes', () => {
    const input = (text: string) => ({
      text,
      contentType: 'text/html',
      url: 'http://x/',
      finalUrl: 'http://x/',
      acquisition: 'raw' as const,
    });
    expect(screenPage(input(''))[0]?.code).toBe('empty-body');
    expect(screenPage(input('\0\0 \n'))[0]?.code).toBe('empty-body');
    expect(screenPage(input(`${'<div>'.repeat(300)}${'</div>'.repeat(300)}`))[0]).toMatchObject({
      code: 'page-too-deep',
      detail: expect.stringMatching(/^elements nest 300 levels/),
    });
    // Unclosed paragraphs and list items, void elements and self-closing tags do not nest.
    expect(screenPage(input(`<ul>${'<li><p>item<br><img src=x>'.repeat(5000)}</ul>`))).toEqual([]);
    expect(screenPage(input(`<p>${'b'.repeat(1500)}</p>`))[0]).toMatchObject({
      code: 'text-run-too-long',
      detail: expect.stringMatching(/^1500 chars/),
    });
    // Long runs inside attributes and scripts are not page text.
    expect(
      screenPage(
        input(
          `<img src="data:${'A'.repeat(50_000)}"><script>${'x'.repeat(9000)}</script><p>ok</p>`,
        ),
      ),
    ).toEqual([]);
    expect(screenPage(input(article('Fine', 2000)))).toEqual([]);
    expect(DEFAULT_PAGE_LIMITS.maxDepth).toBe(256);
  });

  it('each hostile page is degraded with its own reason; the healthy pages and a 50,000-identical-words page publish', async () => {
    const good = [1, 2, 3].map((i) => `${base}/good${i}`);
    const urls = [...good, `${base}/same`, ...Object.keys(BAD).map((p) => `${base}${p}`)];
    const report = await h.engine([source('hostile', urls)]).refresh({ all: true });
    const s = report.sources[0]!;
    expect(s.counts.published).toBe(4);
    expect(s.counts.rejected).toBe(0);
    const reasonOf = async (path: string) =>
      (await h.state.getDocument(documentId('hostile', `${base}${path}`)))?.statusReasons[0] ?? '';
    expect(await reasonOf('/empty')).toMatch(/^empty-body/);
    expect(await reasonOf('/blank')).toMatch(/^empty-body/);
    expect(await reasonOf('/zeros.gz')).toMatch(/^(empty-body|too-large)/);
    expect(await reasonOf('/nest10k')).toMatch(/^page-too-deep: elements nest 10000 levels/);
    expect(await reasonOf('/nest100k')).toMatch(/^page-too-deep: elements nest 100000 levels/);
    expect(await reasonOf('/oneline5mb')).toMatch(/^page-too-large/);
    expect(await reasonOf('/longword')).toMatch(/^text-run-too-long: 25000/);
    for (const path of Object.keys(BAD)) {
      const r = await h.state.getDocument(documentId('hostile', `${base}${path}`));
      expect(r?.status, path).toBe('degraded');
      expect(r?.currentVersionId, path).toBeUndefined();
    }
    // The repeated-text page: identical chunks have identical vectors, and it still verifies.
    const same = await h.state.getDocument(documentId('hostile', `${base}/same`));
    expect(same?.status).toBe('healthy');
    expect(same?.currentChunkIds.length).toBeGreaterThan(10);
    const epoch = await h.connector.readEpoch();
    const chunks = await h.connector.listChunks(same!.documentId, same!.currentVersionId!);
    expect(
      chunks.filter(
        (c) => Number(c.metadata[FIELDS.from]) <= epoch && epoch < Number(c.metadata[FIELDS.to]),
      ),
    ).toHaveLength(same!.currentChunkIds.length);
  }, 300_000);

  it('a page cut into more chunks than maxChunks is not the document (too-many-chunks); at the limit it is', async () => {
    const cutInto = (n: number) => ({
      pipelineKey: 'fixed',
      async process(): Promise<PageOutcome> {
        return {
          kind: 'document',
          title: 't',
          text: 't',
          contentHash: 'h',
          versionId: 'v',
          chunks: Array.from({ length: n }, () => ({}) as never),
        };
      },
    });
    const page = {
      text: '<p>x</p>',
      contentType: 'text/html',
      url: base,
      finalUrl: base,
      acquisition: 'raw' as const,
    };
    const ctx = { documentId: 'd', sourceId: 's', retrievedAt: '2026-11-01T00:00:00Z' };
    const limits = { ...DEFAULT_PAGE_LIMITS, maxChunks: 3 };
    expect((await processBounded(cutInto(3), page, ctx, limits)).kind).toBe('document');
    expect(await processBounded(cutInto(4), page, ctx, limits)).toEqual({
      kind: 'not-the-document',
      reasons: [
        {
          code: 'too-many-chunks',
          detail: 'the page cuts into 4 chunks, over the 3-chunk limit',
        },
      ],
    });
    expect(DEFAULT_PAGE_LIMITS.maxChunks).toBe(2_000);
  });

  it('a pipeline that throws degrades that page only (extract-failed: <error>)', async () => {
    const pipeline = {
      pipelineKey: 'throwing',
      async process(input: { url: string }) {
        if (input.url.endsWith('/good2')) throw new RangeError('Maximum call stack size exceeded');
        return {
          kind: 'not-the-document' as const,
          reasons: [{ code: 'soft_404', detail: 'test' }],
        };
      },
    };
    const urls = [`${base}/good1`, `${base}/good2`];
    const report = await h.engine([source('throwing', urls)], { pipeline }).refresh({ all: true });
    expect(report.sources[0]!.counts.notTheDocument).toBe(2);
    const r = await h.state.getDocument(documentId('throwing', `${base}/good2`));
    expect(r?.statusReasons).toEqual(['extract-failed: Maximum call stack size exceeded']);
  });
});
