import type { FetchResult } from '@ragfresh/fetch';
import { describe, expect, it } from 'vitest';
import { type AcquireDeps, acquirePage, type PageRenderer } from './internals.js';

const SHELL = {
  kind: 'not-the-document',
  reasons: [{ code: 'empty_app_shell', detail: 'no text, one root div' }],
};
const DOC = { kind: 'document', reasons: [] };

function fetcherAnswering(result: Partial<FetchResult>) {
  const calls: { url: string; options: Record<string, unknown> }[] = [];
  const fetcher = {
    async fetch(url: string, options: Record<string, unknown> = {}) {
      calls.push({ url, options });
      return {
        url,
        finalUrl: url,
        status: 200,
        headers: {},
        fetchedAt: '2026-01-01T00:00:00.000Z',
        acquisition: 'raw',
        validators: { etag: '"a"' },
        ...result,
      } as FetchResult;
    },
  };
  return { fetcher: fetcher as unknown as AcquireDeps['fetcher'], calls };
}

const ok = { outcome: 'ok', text: '<div id=root></div>', contentType: 'text/html' } as const;

function renderer(): { launch: () => Promise<PageRenderer>; rendered: string[] } {
  const rendered: string[] = [];
  return {
    rendered,
    launch: async () => ({
      async render(url: string) {
        rendered.push(url);
        return { html: '<main><h1>Rendered</h1></main>', finalUrl: url };
      },
    }),
  };
}

describe('acquire: fetch or render, one decision', () => {
  it('a 304 stops everything downstream: nothing is parsed or rendered', async () => {
    const { fetcher, calls } = fetcherAnswering({ outcome: 'not-modified', status: 304 });
    const r = renderer();
    let parsed = 0;
    const got = await acquirePage(
      { fetcher, renderer: r.launch },
      {
        url: 'https://a.example/x',
        pipelineKey: 'k1',
        validators: { etag: '"a"' },
        acquisition: 'rendered',
      },
      () => {
        parsed++;
        return DOC;
      },
    );
    expect(got.kind).toBe('not-modified');
    expect(parsed).toBe(0);
    expect(r.rendered).toEqual([]);
    expect(calls[0]!.options).toMatchObject({ pipelineKey: 'k1', validators: { etag: '"a"' } });
  });

  it('auto renders only a page classified as an empty app shell, and parses the render', async () => {
    const { fetcher } = fetcherAnswering(ok);
    const r = renderer();
    const inputs: string[] = [];
    const got = await acquirePage(
      { fetcher, renderer: r.launch },
      { url: 'https://a.example/app', acquisition: 'auto' },
      (input) => {
        inputs.push(input.acquisition);
        return input.acquisition === 'rendered' ? DOC : SHELL;
      },
    );
    expect(got).toMatchObject({ kind: 'page', acquisition: 'rendered', outcome: DOC });
    expect(inputs).toEqual(['raw', 'rendered']);
    expect(r.rendered).toEqual(['https://a.example/app']);
  });

  it('auto keeps a document raw; raw never renders, even a shell', async () => {
    const { fetcher } = fetcherAnswering(ok);
    const r = renderer();
    const auto = await acquirePage(
      { fetcher, renderer: r.launch },
      { url: 'https://a.example/s', acquisition: 'auto' },
      () => DOC,
    );
    const raw = await acquirePage(
      { fetcher, renderer: r.launch },
      { url: 'https://a.example/s', acquisition: 'raw' },
      () => SHELL,
    );
    expect(auto).toMatchObject({ kind: 'page', acquisition: 'raw' });
    expect(raw).toMatchObject({ kind: 'page', acquisition: 'raw', outcome: SHELL });
    expect(r.rendered).toEqual([]);
  });

  it('rendered always renders, and parses only the render', async () => {
    const { fetcher } = fetcherAnswering(ok);
    const r = renderer();
    const inputs: string[] = [];
    const got = await acquirePage(
      { fetcher, renderer: r.launch },
      { url: 'https://a.example/s', acquisition: 'rendered' },
      (input) => {
        inputs.push(input.acquisition);
        return DOC;
      },
    );
    expect(got).toMatchObject({ kind: 'page', acquisition: 'rendered' });
    expect(inputs).toEqual(['rendered']);
  });

  it('without a renderer, or when rendering fails, the page is unreadable with the reason', async () => {
    const { fetcher } = fetcherAnswering(ok);
    const none = await acquirePage(
      { fetcher },
      { url: 'https://a.example/s', acquisition: 'rendered' },
      () => DOC,
    );
    expect(none).toMatchObject({
      kind: 'unreadable',
      reasons: [
        { code: 'render-unavailable', detail: expect.stringMatching(/needs @ragfresh\/render/) },
      ],
    });
    const failing = async (): Promise<PageRenderer> => ({
      render: async () => {
        throw new Error('browser crashed');
      },
    });
    const failed = await acquirePage(
      { fetcher, renderer: failing },
      { url: 'https://a.example/s', acquisition: 'auto' },
      () => SHELL,
    );
    expect(failed).toMatchObject({
      kind: 'unreadable',
      reasons: [{ code: 'render-failed', detail: 'browser crashed' }],
    });
  });

  it('gone and failures carry the fetch outcome as their reason code', async () => {
    const gone = await acquirePage(
      fetcherAnswering({ outcome: 'gone', status: 410 }),
      { url: 'https://a.example/g' },
      () => DOC,
    );
    expect(gone).toMatchObject({ kind: 'gone', reason: { code: 'gone', detail: 'HTTP 410' } });
    const down = await acquirePage(
      fetcherAnswering({ outcome: 'server-error', status: 503 }),
      { url: 'https://a.example/d' },
      () => DOC,
    );
    expect(down).toMatchObject({
      kind: 'failed',
      reason: { code: 'server-error', detail: 'HTTP 503' },
    });
  });
});
