import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { documentId, type RunSummary } from '@ragfresh/core';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRuntime, resolveConfig } from '../src/index.js';

// The dashboard runs from the built CLI (build first: `npx -y pnpm@10 exec tsc -b packages/cli`)
// and is driven by playwright-core in Debian's Chromium (never a downloaded browser).
const BIN = resolve(import.meta.dirname, '../dist/bin.js');
const CHROMIUM = '/usr/bin/chromium';
// Screenshots go to docs/ui only when asked (RAGFRESH_UPDATE_SCREENSHOTS=1), so a test run leaves
// the checkout clean; otherwise they land in a temporary folder and are still taken (and so checked
// to render).
const SHOTS =
  process.env.RAGFRESH_UPDATE_SCREENSHOTS === '1'
    ? resolve(import.meta.dirname, '../../../docs/ui')
    : mkdtempSync(join(tmpdir(), 'ragfresh-ui-shots-'));
const DAY = 86_400_000;

function cli(dir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args, '--quiet'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// A page whose title, heading and links are hostile: the dashboard must show them as text.
const EVIL_TITLE = '<script>window.__xss=1;alert(1)</script> Pricing';
const EVIL_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>&lt;script&gt;window.__xss=1;alert(1)&lt;/script&gt; Pricing</title>
<link rel="canonical" href="javascript:alert(2)"></head>
<body><main><article>
<h1>&lt;img src=x onerror=alert(3)&gt; Plans and prices</h1>
<p>${'Our team plan costs twelve euros per seat and month, billed yearly; the starter plan is free for up to three people. '.repeat(6)}</p>
<h2>Support &lt;script&gt;alert(4)&lt;/script&gt;</h2>
<p>${'Support answers within one working day. Enterprise customers get a named contact and a quarterly review of their usage. '.repeat(5)}</p>
<p><a href="javascript:alert(5)">compare plans</a></p>
<script>window.__xss=2;alert(6)</script>
</article></main></body></html>`;

const FLAGS = [
  '--headless',
  // Names that resolve to this machine, as a DNS-rebinding page or a reverse proxy's name would.
  '--host-resolver-rules=MAP evil.example 127.0.0.1, MAP dash.internal 127.0.0.1',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Starts `ragfresh ui` from the built CLI in `dir`; resolves with its login URL once it prints it. */
async function startUi(
  dir: string,
  args: readonly string[],
): Promise<{ child: ChildProcess; loginUrl: string; base: string }> {
  const child = spawn(process.execPath, [BIN, 'ui', '--port', '0', ...args], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const loginUrl = await new Promise<string>((res, rej) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /login for actions .*: (http:\/\/\S+\/login\?token=\S+)/.exec(out);
      if (m !== null) res(m[1]!);
    });
    child.on('exit', (code) => rej(new Error(`ragfresh ui exited ${code}: ${out}`)));
  });
  return { child, loginUrl, base: new URL(loginUrl).origin };
}

describe('ragfresh ui in Chromium over a state the simulated web produced', () => {
  let dir: string;
  let sim: SimWeb;
  let evil: Server;
  let evilUrl: string;
  let urls: string[];
  let ui: ChildProcess;
  let base: string;
  let loginUrl: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let runs: RunSummary[];
  const dialogs: string[] = [];
  const id = (url: string) => documentId('docs', url);

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first (tsc -b packages/cli).`);
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium.`);
    mkdirSync(SHOTS, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-ui-'));
    sim = await startSimWeb({ seed: 21, hosts: 1, pagesPerHost: 6 });
    urls = sim.urls();
    evil = createServer((req, res) => {
      if (req.url === '/pricing')
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(EVIL_PAGE);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/pricing`;
    const config = {
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: join(dir, 'data'),
      sources: [
        {
          id: 'docs',
          urls,
          every: '1d',
          freshnessObjective: '36h',
          contract: { maxShrink: 0.5 },
        },
        { id: 'odd', urls: [evilUrl], every: '1d', freshnessObjective: '36h' },
      ],
      connector: { store: 'lancedb' },
      embeddings: { kind: 'hashing', dimensions: 64 },
      fetch: { minIntervalMs: 0, allow: ['127.0.0.1'], robots: false },
      deletion: { goneChecks: 2, minGoneAge: '24h', autoApprove: false },
    };
    writeFileSync(join(dir, 'ragfresh.config.json'), JSON.stringify(config));

    // Five daily runs on a clock that starts five days ago: edits, a 410 confirmed over two
    // checks a day apart (a deletion proposal), two sharp shrinks (quarantined), a quiet day.
    let now = Date.now() - 5 * DAY;
    const rt = await openRuntime(resolveConfig(config, dir), { now: () => new Date(now) });
    try {
      await rt.engine.refresh({ all: true });
      now += DAY;
      sim.mutate(urls[0]!, 'edit');
      await rt.engine.refresh({ all: true });
      now += DAY;
      sim.mutate(urls[1]!, 'edit');
      sim.mutate(urls[4]!, 'delete410');
      await rt.engine.refresh({ all: true });
      now += DAY;
      sim.mutate(urls[2]!, 'shrink', { keepSections: 1 });
      sim.mutate(urls[3]!, 'shrink', { keepSections: 1 });
      await rt.engine.refresh({ all: true });
      now += DAY;
      await rt.engine.refresh({ all: true });
      runs = (await rt.state.listRuns('docs', 10)).reverse();
      const pending = await rt.state.listReviewItems({ status: 'pending' });
      expect(pending.map((i) => i.id).sort()).toEqual(
        [
          `delete:${id(urls[4]!)}`,
          `quarantine:${id(urls[2]!)}`,
          `quarantine:${id(urls[3]!)}`,
        ].sort(),
      );
    } finally {
      await rt.close();
    }

    ({ child: ui, loginUrl, base } = await startUi(dir, ['--by', 'ui-tester']));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    // Hang guards, not performance bounds (a decision opens the store and publishes).
    page.setDefaultTimeout(600_000);
    ui.stderr!.on('data', (d: Buffer) => process.stderr.write(`[ui] ${d}`));
    ui.stdout!.on('data', (d: Buffer) => process.stderr.write(`[ui] ${d}`));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  });

  afterAll(async () => {
    await browser?.close();
    ui?.kill('SIGTERM');
    await sim?.stop();
    await new Promise((r) => evil?.close(r));
    if (process.env.RAGFRESH_UI_KEEP === undefined) rmSync(dir, { recursive: true, force: true });
    else process.stderr.write(`kept ${dir}\n`);
  });

  it('the sources page draws the freshness of the last runs: obs-age rises over the objective while a 410 page keeps its last good copy', async () => {
    await page.goto(`${base}/`);
    const chart = page.locator('section[data-source="docs"] svg[data-chart="freshness"]');
    await expect(chart.count()).resolves.toBe(1);
    const obs = await chart
      .locator('circle[data-series="obs-age"]')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))));
    // Runs 1-2 observe everything; from run 3 on the 410 page's last good observation is run 2.
    expect(obs).toEqual([0, 0, DAY, 2 * DAY, 3 * DAY]);
    const objective = Number(
      await chart.locator('line[data-reference]').getAttribute('data-reference'),
    );
    expect(objective).toBe(36 * 3_600_000);
    expect(obs.filter((v) => v > objective)).toHaveLength(2);
    const published = await page
      .locator('section[data-source="docs"] svg[data-chart="work"] circle[data-series="published"]')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))));
    expect(published).toEqual(runs.map((r) => r.counts.published));
    expect(published[0]).toBe(6);
    const ratio = await page
      .locator('section[data-source="docs"] svg[data-chart="not-modified"] circle')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))));
    expect(ratio[0]).toBe(0);
    expect(ratio.at(-1)).toBeGreaterThan(0.5); // the quiet day is answered by 304s
    // The summary is the chart's last point: the same age, and VIOLATED beside a last point above
    // the objective line.
    const summary = page.locator('section[data-source="docs"] [data-metric="obs-age"]');
    await expect(summary.getAttribute('data-value')).resolves.toBe(String(obs.at(-1)));
    await expect(summary.textContent()).resolves.toBe('3.0d');
    await expect(
      page.locator('section[data-source="docs"] [data-metric="objective"]').textContent(),
    ).resolves.toBe('VIOLATED (36.0h)');
    // The fetcher stamps real times, the publisher the shifted run clock: `ragfresh status`'s lag
    // (content change to queryable) is clock skew here. It is 0 and flagged with the raw value,
    // never a negative duration.
    const status = JSON.parse(cli(dir, 'status', '--json').out) as {
      sourceId: string;
      propagationLagMs?: number;
      propagationSkewMs?: number;
    }[];
    const docsStatus = status.find((x) => x.sourceId === 'docs')!;
    expect(docsStatus.propagationLagMs).toBe(0);
    expect(docsStatus.propagationSkewMs).toBeLessThan(0);
    expect(cli(dir, 'status').out).toMatch(/docs: prop-lag clock skew: queryable \S+ before/);
    // The dashboard's lags (summary and table) are the chart's: none negative.
    const lag = page.locator('section[data-source="docs"] [data-metric="prop-lag"]');
    expect(Number(await lag.getAttribute('data-value'))).toBeGreaterThanOrEqual(0);
    const lagCells = await page
      .locator('section[data-source="docs"] table.run-series td:nth-child(4)')
      .allTextContents();
    expect(lagCells.length).toBe(runs.length);
    for (const cell of lagCells) expect(cell).not.toMatch(/^-\d/);
    const lags = await chart
      .locator('circle[data-series="prop-lag"]')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))));
    expect(lags.length).toBeGreaterThan(0);
    for (const v of lags) expect(v).toBeGreaterThanOrEqual(0);
    // Not logged in: read-only, no action buttons.
    expect(await page.locator('button[data-action]').count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, 'sources.png'), fullPage: true });
  });

  it("bound to 0.0.0.0 the dashboard answers the machine's own address and an --allowed-host name; a rebinding name is refused", async () => {
    const own = Object.values(networkInterfaces())
      .flat()
      .find((i) => i !== undefined && !i.internal && i.family === 'IPv4')?.address;
    const wide = await startUi(dir, ['--host', '0.0.0.0', '--allowed-host', 'dash.internal']);
    const port = new URL(wide.base).port;
    const guest = await browser.newContext();
    try {
      const tab = await guest.newPage();
      const token = new URL(wide.loginUrl).search;
      for (const host of [own, '127.0.0.1', 'dash.internal']) {
        if (host === undefined) continue;
        const res = await tab.goto(`http://${host}:${port}/login${token}`);
        expect(res?.status(), host).toBe(200);
        expect(new URL(tab.url()).pathname).toBe('/');
        expect(await tab.locator('section[data-source="docs"]').count()).toBe(1);
      }
      const evilRes = await tab.goto(`http://evil.example:${port}/`);
      expect(evilRes?.status()).toBe(403);
      await expect(tab.locator('[data-refused]').textContent()).resolves.toMatch(
        /^unexpected Host header; open the dashboard at the address ragfresh ui printed\.$/,
      );
    } finally {
      await guest.close();
      wide.child.kill('SIGTERM');
    }
    const bad = cli(dir, 'ui', '--host', '0.0.0.0', '--allowed-host', 'http://dash.internal/');
    expect(bad.code).toBe(2);
    expect(bad.err.trim().split('\n')).toEqual([
      'ragfresh: ui --allowed-host "http://dash.internal/" is not a host name; give a name like dash.internal (optionally with :port).',
    ]);
  });

  it('the review queue groups items by kind and cause; the quarantined item shows a side-by-side diff', async () => {
    await page.goto(loginUrl);
    expect(new URL(page.url()).pathname).toBe('/');
    await expect(page.locator('header .mode').textContent()).resolves.toMatch(/actions enabled/);
    await page.goto(`${base}/review`);
    const quarantines = page.locator(
      'section[data-kind="ingestion"] .group[data-reason="contract-quarantine"] tr[data-item]',
    );
    expect(await quarantines.count()).toBe(2);
    expect(
      await page
        .locator('section[data-kind="deletion"] .group[data-reason="confirmed-gone"] tr[data-item]')
        .count(),
    ).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'review.png'), fullPage: true });

    await page.goto(`${base}/review/item?id=${encodeURIComponent(`quarantine:${id(urls[2]!)}`)}`);
    const diff = page.locator('table[data-diff="side-by-side"]');
    expect(await diff.count()).toBe(1);
    const removed = Number(await page.locator('.diff-summary').getAttribute('data-removed'));
    expect(removed).toBeGreaterThan(3); // the sections the shrink dropped
    expect(await diff.locator('td.del').count()).toBeGreaterThan(0);
    await expect(page.locator('ol.evidence').textContent()).resolves.toMatch(/shrink/);
    await page.screenshot({ path: join(SHOTS, 'review-item.png'), fullPage: true });
  });

  it('approving it in the browser publishes it, audited with the reviewer name, as the CLI sees it', async () => {
    const itemId = `quarantine:${id(urls[2]!)}`;
    await page.goto(`${base}/review/item?id=${encodeURIComponent(itemId)}`);
    await page.locator('button[data-action="approve"]').click();
    await page.locator('.flash, [data-refused]').first().waitFor();
    await expect(page.locator('.flash').textContent()).resolves.toMatch(
      /approved 1 of 1 review items\. \(reviewer ui-tester\)/,
    );
    await expect(page.locator('[data-status]').textContent()).resolves.toBe('approved');

    const listed = JSON.parse(cli(dir, 'review', 'list', '--all', '--json').out) as {
      id: string;
      status: string;
      decidedBy?: string;
      versionId?: string;
    }[];
    const item = listed.find((i) => i.id === itemId)!;
    expect(item.status).toBe('approved');
    expect(item.decidedBy).toBe('ui-tester');
    const [inspected] = JSON.parse(cli(dir, 'inspect', urls[2]!, '--json').out) as {
      record: { status: string; currentVersionId: string };
    }[];
    expect(inspected!.record.status).toBe('healthy');
    expect(inspected!.record.currentVersionId).toBe(item.versionId);
    const status = JSON.parse(cli(dir, 'status', '--json').out) as {
      sourceId: string;
      counts: Record<string, number>;
    }[];
    expect(status.find((s) => s.sourceId === 'docs')!.counts.quarantined).toBe(1);
  });

  it('rejecting the deletion proposal keeps the page and resets its gone evidence', async () => {
    const itemId = `delete:${id(urls[4]!)}`;
    await page.goto(`${base}/review/item?id=${encodeURIComponent(itemId)}`);
    await expect(page.locator('[data-coverage]').getAttribute('data-coverage')).resolves.toBe(
      'complete',
    );
    await page.locator('button[data-action="reject"]').click();
    await page.locator('.flash, [data-refused]').first().waitFor();
    await expect(page.locator('.flash').textContent()).resolves.toMatch(/rejected 1 of 1/);
    const listed = JSON.parse(cli(dir, 'review', 'list', '--all', '--json').out) as {
      id: string;
      status: string;
      decidedBy?: string;
    }[];
    expect(listed.find((i) => i.id === itemId)).toMatchObject({
      status: 'rejected',
      decidedBy: 'ui-tester',
    });
    const [inspected] = JSON.parse(cli(dir, 'inspect', urls[4]!, '--json').out) as {
      record: { goneCount: number; currentVersionId?: string };
      tombstone?: unknown;
    }[];
    expect(inspected!.record.goneCount).toBe(0);
    expect(inspected!.record.currentVersionId).toBeDefined();
    expect(inspected!.tombstone).toBeUndefined();
  });

  it('the document page lists versions with timestamps and epochs, diffs two versions and shows chunks', async () => {
    await page.goto(`${base}/doc?id=${encodeURIComponent(id(urls[0]!))}`);
    const versions = page.locator('table.versions tr[data-version]');
    expect(await versions.count()).toBe(2);
    const epochs = await versions
      .locator('td[data-epochs]')
      .evaluateAll((els) => els.map((e) => e.textContent));
    expect(epochs[0]).toMatch(/^\d+ – \d+$/);
    expect(epochs[1]).toMatch(/^\d+ – now$/);
    expect(epochs[0]!.split(' – ')[1]).toBe(epochs[1]!.split(' – ')[0]);
    expect(await page.locator('table[data-diff="side-by-side"] td.add').count()).toBeGreaterThan(0);
    const tokens = await page
      .locator('table.chunks td[data-tokens]')
      .evaluateAll((els) => els.map((e) => Number(e.textContent)));
    expect(tokens.length).toBeGreaterThan(0);
    expect(tokens.every((t) => t > 0)).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'document.png'), fullPage: true });
  });

  it('a page whose title holds a script tag renders as text: no dialog, no script, no javascript: link', async () => {
    await page.goto(`${base}/doc?id=${encodeURIComponent(documentId('odd', evilUrl))}`);
    await expect(page.locator('h1').textContent()).resolves.toContain(EVIL_TITLE);
    const body = (await page.locator('main').textContent()) ?? '';
    expect(body).toContain('<img src=x onerror=alert(3)>');
    expect(await page.locator('main script, main img').count()).toBe(0);
    expect(await page.locator('a[href^="javascript:"]').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
    await page.locator('table.chunks details').first().click();
    expect(dialogs).toEqual([]);
    await page.screenshot({ path: join(SHOTS, 'document-hostile.png'), fullPage: true });
  });

  it('a POST without the CSRF token, from another origin, or without a login is refused', async () => {
    const itemId = `quarantine:${id(urls[3]!)}`;
    await page.goto(`${base}/review/item?id=${encodeURIComponent(itemId)}`);
    const csrf = await page.locator('input[name="_csrf"]').first().getAttribute('value');
    expect(csrf).toBeTruthy();
    const post = (form: Record<string, string>, origin: string | undefined, ctx = context) =>
      ctx.request.post(`${base}/review/decide`, {
        form,
        headers: origin === undefined ? {} : { origin },
        maxRedirects: 0,
      });
    const noToken = await post({ action: 'approve', id: itemId }, base);
    expect(noToken.status()).toBe(403);
    expect(await noToken.text()).toMatch(/CSRF token/);
    const foreign = await post(
      { action: 'approve', id: itemId, _csrf: csrf! },
      'http://evil.example',
    );
    expect(foreign.status()).toBe(403);
    expect(await foreign.text()).toMatch(/Origin/);
    const noOrigin = await post({ action: 'approve', id: itemId, _csrf: csrf! }, undefined);
    expect(noOrigin.status()).toBe(403);
    const stranger = await browser.newContext();
    const anonymous = await post({ action: 'approve', id: itemId, _csrf: csrf! }, base, stranger);
    expect(anonymous.status()).toBe(401);
    await stranger.close();
    const listed = JSON.parse(cli(dir, 'review', 'list', '--json').out) as { id: string }[];
    expect(listed.map((i) => i.id)).toContain(itemId); // still pending
  });

  it('bulk approval of a selection goes through the same path; the runs page links the documents each run changed', async () => {
    const itemId = `quarantine:${id(urls[3]!)}`;
    await page.goto(`${base}/review`);
    await page.locator(`input[type="checkbox"][value="${itemId}"]`).check();
    await page.locator('button[data-action="bulk-approve"]').first().click();
    await page.locator('.flash, [data-refused]').first().waitFor();
    await expect(page.locator('.flash').textContent()).resolves.toMatch(/approved 1 of 1/);
    expect(cli(dir, 'status').code).toBe(0); // nothing quarantined (4), nothing pending review (5)

    await page.goto(`${base}/runs?source=docs`);
    const second = page.locator(`.run[data-run="${runs[1]!.runId}"] ul.changed a`);
    expect(await second.count()).toBe(1);
    await expect(second.getAttribute('href')).resolves.toBe(
      `/doc?id=${encodeURIComponent(id(urls[0]!))}`,
    );
    await page.screenshot({ path: join(SHOTS, 'runs.png'), fullPage: true });
  });

  it('the UI libraries load only for ui: status and review list do not import hono or diff', () => {
    const hook = join(dir, 'trace-loads.mjs');
    const log = join(dir, 'loaded.txt');
    writeFileSync(
      hook,
      `import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
registerHooks({ resolve(s, c, next) { const r = next(s, c); if (/\\/(hono|@hono|diff)\\//.test(r.url)) appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; } });
`,
    );
    writeFileSync(log, '');
    for (const args of [['status'], ['review', 'list'], ['--help']]) {
      spawnSync(process.execPath, ['--import', hook, BIN, ...args], { cwd: dir, encoding: 'utf8' });
    }
    expect(readFileSync(log, 'utf8')).toBe('');
    // The control: the hook does see them when ui loads.
    spawnSync(process.execPath, ['--import', hook, BIN, 'ui', '--port', 'x'], { cwd: dir });
    spawnSync(
      process.execPath,
      [
        '--import',
        hook,
        '-e',
        `import(${JSON.stringify(resolve(import.meta.dirname, '../dist/ui/server.js'))})`,
      ],
      { cwd: dir },
    );
    expect(readFileSync(log, 'utf8')).toMatch(/hono/);
  });
});
