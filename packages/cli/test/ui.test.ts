import type { DocumentRecord, ReviewItem, RunSummary } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { lineChart } from '../src/ui/chart.js';
import { diffRows, sideBySide } from '../src/ui/diff.js';
import { externalLink, html } from '../src/ui/html.js';
import { changedInRun, groupReview, runSeries, versionRows } from '../src/ui/model.js';

const H = 3_600_000;
const at = (h: number) => new Date(Date.UTC(2026, 0, 1) + h * H).toISOString();
const run = (h: number, counts: Record<string, number> = {}): RunSummary => ({
  runId: `s@${at(h)}`,
  sourceId: 's',
  startedAt: at(h),
  finishedAt: at(h + 0.5),
  complete: true,
  counts,
  alerts: [],
});
const doc = (
  id: string,
  history: DocumentRecord['history'],
  extra: Partial<DocumentRecord> = {},
): DocumentRecord => ({
  documentId: id,
  sourceId: 's',
  url: `https://example.org/${id}`,
  status: 'healthy',
  statusReasons: [],
  currentChunkIds: [],
  timestamps: {},
  history,
  ...extra,
});

describe('per-run freshness rebuilt from histories', () => {
  it('a document degraded in later runs keeps the age of its last good run; a control without the degradation stays fresh', () => {
    const runs = [
      run(0, { fetched200: 2, published: 2 }),
      run(24, { notModified: 2 }),
      run(48, { notModified: 1, gone: 1 }),
    ];
    const a = doc('a', [{ at: at(0.1), event: 'published', versionId: 'v1', reasons: [] }]);
    const b = doc('b', [
      { at: at(0.1), event: 'published', versionId: 'w1', reasons: [] },
      { at: at(48.2), event: 'gone', reasons: ['gone: HTTP 410'] },
    ]);
    const points = runSeries(runs, [a, b]);
    expect(points.map((p) => p.observationAgeMs)).toEqual([0.5 * H, 0.5 * H, 24.5 * H]);
    expect(runSeries(runs, [a]).map((p) => p.observationAgeMs)).toEqual([
      0.5 * H,
      0.5 * H,
      0.5 * H,
    ]);
    expect(points.map((p) => p.notModifiedRatio)).toEqual([0, 1, 1]);
    expect(points.map((p) => p.published)).toEqual([2, 0, 0]);
    // Propagation lag: publish event minus the run start (no exact observation kept for it).
    expect(points[0]!.propagationLagMs).toBe(0.1 * H);
    expect(points[1]!.propagationLagMs).toBeUndefined();
    expect(changedInRun(runs[2]!, [a, b]).map((d) => [d.documentId, d.events])).toEqual([
      ['b', ['gone']],
    ]);
  });

  it('versions carry the epochs they were current in: from the history entries, else from the chunks', () => {
    const r = doc(
      'd',
      [
        { at: at(0), event: 'published', versionId: 'v1', reasons: [], epoch: 3 },
        { at: at(24), event: 'replaced', versionId: 'v2', reasons: [], epoch: 7 },
        { at: at(30), event: 'quarantined', versionId: 'v3', reasons: ['shrink'] },
      ],
      { currentVersionId: 'v2', publishedEpoch: 7 },
    );
    expect(versionRows(r)).toEqual([
      {
        versionId: 'v1',
        queryableAt: at(0),
        event: 'published',
        fromEpoch: 3,
        toEpoch: 7,
        current: false,
      },
      { versionId: 'v2', queryableAt: at(24), event: 'replaced', fromEpoch: 7, current: true },
    ]);
    const old = doc(
      'e',
      [
        { at: at(0), event: 'published', versionId: 'v1', reasons: [] },
        { at: at(24), event: 'replaced', versionId: 'v2', reasons: [] },
      ],
      { currentVersionId: 'v2', publishedEpoch: 9 },
    );
    expect(versionRows(old).map((v) => [v.fromEpoch, v.toEpoch])).toEqual([
      [undefined, 9],
      [9, undefined],
    ]);
    expect(versionRows(old, new Map([['v1', 4]])).map((v) => v.fromEpoch)).toEqual([4, 9]);
  });

  it('review items group by kind, then by reason, largest group first', () => {
    const item = (id: string, kind: 'deletion' | 'ingestion', reason: string): ReviewItem => ({
      id,
      kind,
      reason,
      documentId: id,
      sourceId: 's',
      url: `https://example.org/${id}`,
      evidence: [],
      createdAt: at(0),
      status: 'pending',
    });
    const groups = groupReview([
      item('1', 'deletion', 'inventory-diff'),
      item('2', 'deletion', 'confirmed-gone'),
      item('3', 'deletion', 'confirmed-gone'),
      item('4', 'ingestion', 'contract-quarantine'),
    ]);
    expect(groups.map((g) => [g.kind, g.reasons.map((r) => [r.reason, r.items.length])])).toEqual([
      [
        'deletion',
        [
          ['confirmed-gone', 2],
          ['inventory-diff', 1],
        ],
      ],
      ['ingestion', [['contract-quarantine', 1]]],
    ]);
  });
});

describe('escaping', () => {
  it('crawled text is escaped everywhere: templates, links, chart labels, diffs', () => {
    const evil = '<script>alert(1)</script>';
    expect(String(html`<p>${evil}</p>`)).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
    expect(String(externalLink('javascript:alert(1)'))).not.toMatch(/href/);
    expect(String(externalLink('https://example.org/?q="><script>'))).toBe(
      '<a class="ext" href="https://example.org/?q=&quot;&gt;&lt;script&gt;" rel="noopener noreferrer nofollow">https://example.org/?q=&quot;&gt;&lt;script&gt;</a>',
    );
    const chart = String(
      lineChart({
        name: 'x',
        title: evil,
        runs: [{ runId: evil, at: at(0) }],
        series: [{ key: 'k', label: evil, color: '#000', values: [1] }],
        format: String,
      }),
    );
    expect(chart).not.toContain('<script>');
    const diff = String(sideBySide('a\n<b>', `a\n${evil}`, { left: evil, right: 'r' }));
    expect(diff).not.toContain('<script>');
    expect(diff).toContain('&lt;script&gt;');
  });

  it('side-by-side rows pair removed and added lines and fold long unchanged runs', () => {
    const same = Array.from({ length: 20 }, (_, i) => `line ${i}`);
    const { rows, added, removed } = diffRows(
      [...same, 'old'].join('\n'),
      [...same, 'new', 'more'].join('\n'),
    );
    expect([added, removed]).toEqual([2, 1]);
    expect(rows[0]).toEqual({ kind: 'gap', skipped: 17 });
    expect(rows.filter((r) => r.kind === 'change')).toHaveLength(2);
  });
});

describe('the HTTP surface', () => {
  const app = async (loopback: boolean) => {
    const { openStateStore } = await import('@ragfresh/core');
    const { createUiApp } = await import('../src/ui/server.js');
    const state = await openStateStore('sqlite::memory:');
    const decided: string[][] = [];
    return {
      decided,
      state,
      app: createUiApp({
        pages: {
          config: { sources: [] } as never,
          state,
          connector: {} as never,
          texts: {} as never,
          runs: 5,
        },
        decide: async (action, ids) => {
          decided.push([action, ...ids]);
          return { ok: true, message: 'done' };
        },
        token: 'secret-token',
        loopback,
        allowedHosts: () => ['127.0.0.1:7420'],
      }),
    };
  };
  const get = (path: string, headers: Record<string, string> = {}) =>
    new Request(`http://127.0.0.1:7420${path}`, {
      headers: { host: '127.0.0.1:7420', ...headers },
    });

  it('bound beyond loopback every page needs the login; a foreign Host is refused; the login sets a strict cookie', async () => {
    const { app: ui, state } = await app(false);
    try {
      expect((await ui.fetch(get('/'))).status).toBe(401);
      expect((await ui.fetch(get('/', { host: 'evil.example:7420' }))).status).toBe(403);
      expect((await ui.fetch(get('/login?token=wrong'))).status).toBe(401);
      const login = await ui.fetch(get('/login?token=secret-token'));
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie') ?? '';
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Strict/);
      const page = await ui.fetch(get('/', { cookie: cookie.split(';')[0]! }));
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    } finally {
      await state.close();
    }
  });

  it('on loopback reading needs no login but a decision does, with the CSRF token and the Origin', async () => {
    const { app: ui, state, decided } = await app(true);
    try {
      expect((await ui.fetch(get('/'))).status).toBe(200);
      const form = (extra: Record<string, string>) =>
        new URLSearchParams({ action: 'reject', id: 'delete:x', ...extra }).toString();
      const post = (body: string, headers: Record<string, string>) =>
        ui.fetch(
          new Request('http://127.0.0.1:7420/review/decide', {
            method: 'POST',
            body,
            headers: {
              host: '127.0.0.1:7420',
              'content-type': 'application/x-www-form-urlencoded',
              ...headers,
            },
          }),
        );
      const origin = { origin: 'http://127.0.0.1:7420' };
      expect((await post(form({}), origin)).status).toBe(401);
      const login = await ui.fetch(get('/login?token=secret-token'));
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
      expect((await post(form({}), { ...origin, cookie })).status).toBe(403);
      expect((await post(form({ _csrf: 'forged' }), { ...origin, cookie })).status).toBe(403);
      expect(decided).toEqual([]);
      // The control: the same POST with the session's token from the page is carried out.
      await state.putReviewItem({
        id: 'delete:x',
        kind: 'deletion',
        documentId: 'x',
        sourceId: 's',
        url: 'https://example.org/x',
        reason: 'confirmed-gone',
        evidence: [],
        createdAt: at(0),
        status: 'pending',
      });
      const queue = await (await ui.fetch(get('/review', { cookie }))).text();
      const csrf = /name="_csrf" value="([^"]+)"/.exec(queue)?.[1];
      expect(csrf).toBeDefined();
      const ok = await post(form({ _csrf: csrf! }), { ...origin, cookie });
      expect(ok.status).toBe(303);
      expect(decided).toEqual([['reject', 'delete:x']]);
      expect(
        (await post(form({ _csrf: csrf! }), { origin: 'http://evil.example', cookie })).status,
      ).toBe(403);
    } finally {
      await state.close();
    }
  });
});

describe('the document page cites what readers are shown', () => {
  const page = async (extra: Record<string, string>) => {
    const { FIELDS, openStateStore } = await import('@ragfresh/core');
    const { documentPage } = await import('../src/ui/pages.js');
    const state = await openStateStore('sqlite::memory:');
    const record = doc('d1', [], { url: 'http://127.0.0.1:8080/old', currentVersionId: 'v1' });
    await state.putDocument(record);
    const chunk = {
      id: 'c1',
      text: 'x',
      metadata: {
        [FIELDS.versionId]: 'v1',
        [FIELDS.url]: 'http://127.0.0.1:8080/old',
        [FIELDS.finalUrl]: 'http://127.0.0.1:8080/pricing',
        ...extra,
      },
    };
    const out = await documentPage(
      {
        config: { sources: [] } as never,
        state,
        connector: { listChunks: async () => [chunk] } as never,
        texts: { byVersion: async () => new Map() } as never,
        runs: 5,
      },
      'd1',
      {},
    );
    await state.close();
    return String(out!.body);
  };

  it('an off-site canonical is shown as the page claim, never as the citation', async () => {
    const body = await page({ canonical_claim: 'https://docs.other-company.example/p' });
    expect(body).toMatch(/cited as <a class="ext" href="http:\/\/127\.0\.0\.1:8080\/pricing"/);
    expect(body).toContain('the page claims the canonical');
    expect(body).not.toContain('href="https://docs.other-company.example/p"');
  });

  it('an accepted canonical is the citation (the control)', async () => {
    const body = await page({ canonical_url: 'http://127.0.0.1:8080/pricing-v2' });
    expect(body).toMatch(/cited as <a class="ext" href="http:\/\/127\.0\.0\.1:8080\/pricing-v2"/);
    expect(body).not.toContain('claims the canonical');
  });
});
