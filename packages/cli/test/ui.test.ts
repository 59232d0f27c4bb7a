import type { AddressInfo } from 'node:net';
import type { DocumentRecord, ReviewItem, RunSummary } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { propagationLag } from '../src/status.js';
import { lineChart } from '../src/ui/chart.js';
import { diffRows, sideBySide } from '../src/ui/diff.js';
import { externalLink, html, lag } from '../src/ui/html.js';
import {
  changedInRun,
  groupReview,
  runSeries,
  sourceFreshness,
  versionRows,
} from '../src/ui/model.js';

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

  it('propagation lag is never negative: a normal lag is unchanged, a clock-skewed one is 0 and flagged with its raw value', () => {
    expect(propagationLag(at(1), at(1.25))).toEqual({ lagMs: 0.25 * H });
    expect(propagationLag(at(72), at(0))).toEqual({ lagMs: 0, skewMs: -72 * H });
    // Through the per-run series: a publication stamped before its content change was observed.
    const runs = [run(0, { fetched200: 2, published: 2 })];
    const ok = doc('ok', [{ at: at(0.2), event: 'published', versionId: 'v1', reasons: [] }], {
      currentVersionId: 'v1',
      timestamps: { contentChangedAt: at(0.1) },
    });
    const skewed = doc('sk', [{ at: at(0.1), event: 'published', versionId: 'w1', reasons: [] }], {
      currentVersionId: 'w1',
      timestamps: { contentChangedAt: at(0.4) },
    });
    const [clean] = runSeries(runs, [ok]);
    expect(clean!.propagationLagMs).toBeCloseTo(0.1 * H);
    expect(clean!.propagationSkewMs).toBeUndefined();
    const [both] = runSeries(runs, [ok, skewed]);
    expect(both!.propagationLagMs).toBeCloseTo(0.1 * H);
    expect(both!.propagationSkewMs).toBeCloseTo(-0.3 * H);
    // The cell: a skew marker with the raw value in its title; none for a normal lag.
    expect(String(lag(0, -259_202_000))).toMatch(
      /^0s <span class="skew" data-skew-ms="-259202000" title="clock skew: raw lag -3\.0d[^"]*">clock skew<\/span>$/,
    );
    expect(String(lag(360_000, undefined))).toBe('6m');
  });

  it('the summary is the freshness chart\'s last point: the same observation age, and "objective met" only under the objective line', () => {
    const runs = [run(0, { fetched200: 2, published: 2 }), run(24), run(48), run(72)];
    const a = doc('a', [{ at: at(0.1), event: 'published', versionId: 'v1', reasons: [] }]);
    const b = doc('b', [
      { at: at(0.1), event: 'published', versionId: 'w1', reasons: [] },
      { at: at(24.2), event: 'gone', reasons: ['gone: HTTP 410'] },
      { at: at(48.2), event: 'gone', reasons: ['gone: HTTP 410'] },
      { at: at(72.2), event: 'gone', reasons: ['gone: HTTP 410'] },
    ]);
    const objective = 36 * H;
    const violated = sourceFreshness(runs, [a, b], objective);
    const last = violated.points.at(-1)!;
    expect(last.observationAgeMs).toBe(72.5 * H);
    expect(violated.summary.observationAgeMs).toBe(last.observationAgeMs);
    expect(violated.summary.objectiveMet).toBe(false);
    expect(violated.summary.at).toBe(last.finishedAt);
    // The control: without the gone page the last point is under the line, and the summary says met.
    const met = sourceFreshness(runs, [a], objective);
    expect(met.points.at(-1)!.observationAgeMs).toBe(0.5 * H);
    expect(met.summary.observationAgeMs).toBe(0.5 * H);
    expect(met.summary.objectiveMet).toBe(true);
    // The summary's lag is the newest run that has one (run 1's publications).
    expect(met.summary.propagationLagMs).toBe(met.points[0]!.propagationLagMs);
    // No runs: nothing to judge on, never "met".
    expect(sourceFreshness([], [a], objective).summary).toEqual({ objectiveMet: false });
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
  const app = async (
    loopback: boolean,
    allowedHosts: () => readonly string[] = () => ['127.0.0.1:7420'],
  ) => {
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
        allowedHosts,
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

  it("bound to 0.0.0.0 it answers the machine's own addresses and --allowed-host names, and still refuses a foreign Host (real HTTP)", async () => {
    const { networkInterfaces } = await import('node:os');
    const { request } = await import('node:http');
    const { serve } = await import('@hono/node-server');
    const { dashboardHosts } = await import('../src/allowed-hosts.js');
    const own = Object.values(networkInterfaces())
      .flat()
      .find((i) => i !== undefined && !i.internal && i.family === 'IPv4')?.address;
    let hosts: readonly string[] = [];
    const { app: ui, state } = await app(false, () => hosts);
    const server = serve({ fetch: ui.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((r) => server.once('listening', () => r()));
    const port = (server.address() as AddressInfo).port;
    hosts = dashboardHosts('0.0.0.0', port, ['dash.internal']);
    const hit = (host: string) =>
      new Promise<{ status: number; body: string }>((res, rej) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/login?token=secret-token', headers: { host } },
          (r) => {
            let body = '';
            r.on('data', (d: Buffer) => {
              body += d.toString();
            });
            r.on('end', () => res({ status: r.statusCode ?? 0, body }));
          },
        );
        req.on('error', rej);
        req.end();
      });
    try {
      // The machine's own non-loopback address (from its interfaces), with the bound port.
      if (own !== undefined) expect((await hit(`${own}:${port}`)).status).toBe(303);
      const fake = dashboardHosts('0.0.0.0', port, [], {
        eth9: [
          {
            address: '203.0.113.7',
            netmask: '255.255.255.0',
            family: 'IPv4',
            mac: '00:00:00:00:00:00',
            internal: false,
            cidr: '203.0.113.7/24',
          },
        ],
      });
      expect(fake).toContain(`203.0.113.7:${port}`);
      for (const h of [
        `127.0.0.1:${port}`,
        `localhost:${port}`,
        `[::1]:${port}`,
        `dash.internal:${port}`,
        'dash.internal',
        `DASH.internal:${port}`,
      ])
        expect((await hit(h)).status, h).toBe(303);
      const evil = await hit('evil.example');
      expect(evil.status).toBe(403);
      expect(evil.body).toMatch(/unexpected Host header/);
      expect((await hit(`evil.example:${port}`)).status).toBe(403);
      expect((await hit(`${own ?? '192.0.2.250'}:${port + 1}`)).status).toBe(403);
      // Bound to one address: only that address (and, for 127.0.0.1, localhost).
      expect(dashboardHosts('127.0.0.1', 7420)).toEqual(['127.0.0.1:7420', 'localhost:7420']);
      expect(dashboardHosts('::', 7420, [], {})).toEqual([
        '[::]:7420',
        '127.0.0.1:7420',
        'localhost:7420',
        '[::1]:7420',
      ]);
      // Without --allowed-host the name is refused (the control for the admitted name).
      hosts = dashboardHosts('0.0.0.0', port);
      expect((await hit(`dash.internal:${port}`)).status).toBe(403);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
      await state.close();
    }
  });

  it('--allowed-host takes host names only', async () => {
    const { badAllowedHost } = await import('../src/allowed-hosts.js');
    expect(badAllowedHost('dash.internal')).toBeUndefined();
    expect(badAllowedHost('dash.internal:8443')).toBeUndefined();
    expect(badAllowedHost('http://dash.internal/')).toMatch(/is not a host name; give a name like/);
    expect(badAllowedHost('*')).toMatch(/is not a host name/);
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

describe('the document page shows which version was current at a chosen time', () => {
  it('as of a time between two publications: the earlier version; now: the later; past retention: one line', async () => {
    const { openStateStore } = await import('@ragfresh/core');
    const { documentPage } = await import('../src/ui/pages.js');
    const state = await openStateStore('sqlite::memory:');
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    const t1 = iso(now - 3 * 3_600_000);
    const t2 = iso(now - 3_600_000);
    await state.putDocument({
      ...doc('d1', [], { url: 'http://127.0.0.1:8080/b', currentVersionId: 'v2' }),
      history: [
        { at: t1, event: 'published', reasons: [], versionId: 'v1', epoch: 1 },
        { at: t2, event: 'replaced', reasons: ['replaces v1'], versionId: 'v2', epoch: 2 },
      ],
    });
    await state.putEpochRecord({ epoch: 1, at: t1 });
    await state.putEpochRecord({ epoch: 2, at: t2 });
    const at = async (time: string) => {
      const out = await documentPage(
        {
          config: {
            sources: [],
            settings: { sources: [], publish: { retireGraceMs: 0, retentionMs: 86_400_000 } },
          } as never,
          state,
          connector: { listChunks: async () => [] } as never,
          texts: { byVersion: async () => new Map() } as never,
          runs: 5,
        },
        'd1',
        { at: time },
      );
      return String(out!.body);
    };
    try {
      expect(await at(iso(now - 2 * 3_600_000))).toContain('data-asof="v1"');
      expect(await at(iso(now))).toContain('data-asof="v2"');
      expect(await at(iso(now - 4 * 3_600_000))).toContain('data-asof=""');
      expect(await at(iso(now - 2 * 86_400_000))).toMatch(/past the retention window \(1d\)/);
    } finally {
      await state.close();
    }
  });
});

describe('the source register on the dashboard', () => {
  it('each source card shows its register entry; a missing owner or permission is marked', async () => {
    const { openStateStore } = await import('@ragfresh/core');
    const { resolveConfig } = await import('../src/config.js');
    const { sourcesPage } = await import('../src/ui/pages.js');
    const config = resolveConfig({
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: '/tmp/ragfresh-ui-register-unused',
      sources: [
        {
          id: 'handbook',
          urls: ['https://intranet.example.org/handbook'],
          owner: 'people team',
          permission: { basis: 'internal', note: 'staff only' },
          licence: 'proprietary',
          intendedUse: 'HR answers',
          retention: '90d',
          access: ['hr', 'managers'],
        },
        { id: 'blog', urls: ['https://example.org/blog'] },
      ],
    });
    const state = await openStateStore('sqlite::memory:');
    try {
      const page = String(
        await sourcesPage({ config, state, connector: {} as never, texts: {} as never, runs: 5 }),
      );
      const card = (id: string) =>
        page.slice(page.indexOf(`data-source="${id}"`)).split('</section>')[0]!;
      const cell = (html: string, key: string) =>
        new RegExp(`data-register="${key}"[^>]*>([^<]*)<`).exec(html)?.[1];
      const handbook = card('handbook');
      expect(cell(handbook, 'owner')).toBe('people team');
      expect(cell(handbook, 'permission')).toBe('internal (staff only)');
      expect(cell(handbook, 'access')).toBe('hr, managers');
      expect(cell(handbook, 'retention')).toBe('90.0d');
      expect(handbook).not.toContain('register incomplete');
      const blog = card('blog');
      expect(cell(blog, 'owner')).toBe('missing');
      expect(cell(blog, 'access')).toBe('public');
      expect(cell(blog, 'retention')).toBe('forever');
      expect(blog).toContain('register incomplete: no owner, no permission basis');
    } finally {
      await state.close();
    }
  });
});
