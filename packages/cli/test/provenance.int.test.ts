import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Runs the built CLI (build first: `npx -y pnpm@10 run build`) against hostile pages on loopback.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(
  dir: string,
  ...args: string[]
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: dir });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.stderr.on('data', (d) => {
      err += String(d);
    });
    child.on('close', (code) => done({ code, out, err }));
  });
}

const FILLER =
  'Budgets are counted per tenant and per minute. A tenant over its budget is slowed down, never refused, and the slow-down shows in the response headers so that clients can back off on their own.';

function page(title: string, head: string, body: string): string {
  return `<!doctype html><html lang="en"><head><title>${title}</title>${head}</head><body><main><article>
<h1>${title}</h1><p>${body}</p><p>${FILLER}</p><p>${FILLER}</p></article></main></body></html>`;
}

const PAGES: Record<string, string> = {
  '/pricing': page(
    'Zephyr pricing',
    '<link rel="canonical" href="https://docs.other-company.example/official/pricing">',
    'The zephyr plan costs forty two credits per seat.',
  ),
  '/script': page(
    'Quokka limits',
    '<link rel="canonical" href="javascript:alert(2)">',
    'The quokka limit is nine requests per second.',
  ),
  '/moved': page(
    'Marmot retention',
    '<link rel="canonical" href="/retention">',
    'Marmot logs are kept for thirty days.',
  ),
  '/links': page(
    'Ocelot links',
    '',
    'Ocelot: open <a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">the ocelot console</a>, <a href="vbscript:msgbox(1)">the ocelot wizard</a> or <a href="https://status.example.com/ocelot">the ocelot status</a>.',
  ),
};

describe('ragfresh CLI: citations a page cannot forge (refresh then query, loopback)', () => {
  let server: Server;
  let dir: string;
  let origin: string;
  let refresh: { code: number | null; out: string; err: string };

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first (tsc -b).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-provenance-'));
    server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0]!;
      if (path === '/old-pricing') {
        res.writeHead(301, { location: '/pricing' }).end();
        return;
      }
      const html = PAGES[path];
      if (html === undefined) {
        res.writeHead(404).end('not here');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    origin = `http://127.0.0.1:${port}`;
    writeFileSync(
      join(dir, 'ragfresh.config.json'),
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, 'data'),
        sources: [
          {
            id: 'docs',
            urls: [
              `${origin}/old-pricing`,
              `${origin}/script`,
              `${origin}/moved`,
              `${origin}/links`,
            ],
            // Another loopback address, not in fetch.allow: refused by the network policy.
            sitemaps: [`http://127.0.0.2:${port}/sitemap.xml`],
          },
        ],
        connector: { store: 'lancedb' },
        embeddings: { kind: 'hashing', dimensions: 64 },
        fetch: { minIntervalMs: 0, allow: [`127.0.0.1:${port}`], robots: false },
      }),
    );
    refresh = await cli(dir, 'refresh', '--all', '--quiet');
  }, 180_000);
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const sources = (out: string) =>
    out
      .split('\n')
      .filter((l) => l.startsWith('Source: '))
      .map((l) => l.replace(/ \(.*$/, ''));

  it('query cites the fetched URL (after the redirect), never an off-site or javascript: canonical', async () => {
    const q = await cli(dir, 'query', 'zephyr quokka marmot ocelot plan credits limit', '-k', '8');
    expect(q.code).toBe(0);
    const cited = sources(q.out);
    expect(cited).toHaveLength(4);
    expect(cited).toContain(`Source: ${origin}/pricing`);
    expect(cited).toContain(`Source: ${origin}/script`);
    expect(q.out).not.toContain('other-company');
    expect(q.out).not.toContain('javascript:');
    // The control: a same-site canonical is accepted and cited, so the check can see a canonical.
    expect(cited).toContain(`Source: ${origin}/retention`);
    expect(cited.every((s) => s.startsWith(`Source: ${origin}/`))).toBe(true);
  });

  it('the JSON hit cites the fetched URL in its header and its citations', async () => {
    const q = await cli(dir, 'query', 'zephyr plan costs credits per seat', '-k', '1', '--json');
    const hits = JSON.parse(q.out) as { header: string; citations: { url: string }[] }[];
    expect(hits[0]!.header).toMatch(new RegExp(`^Source: ${origin}/pricing `));
    expect(hits[0]!.citations[0]!.url).toBe(`${origin}/pricing`);
  });

  it('links other than http(s) keep their text only; the https link stays a link', async () => {
    const q = await cli(dir, 'query', 'ocelot console wizard status', '-k', '1');
    expect(q.out).toContain('the ocelot console');
    expect(q.out).toContain('the ocelot wizard');
    expect(q.out).not.toMatch(/data:|vbscript:/);
    expect(q.out).toContain('[the ocelot status](https://status.example.com/ocelot)');
  });

  it('a sitemap the network policy refuses names fetch.allow, as a page refusal does', () => {
    const all = refresh.out + refresh.err;
    expect(all).toMatch(
      /sitemap-unreadable: http:\/\/127\.0\.0\.2:\d+\/sitemap\.xml \(ssrf-refused: refusing to connect to 127\.0\.0\.2:\d+ .*to fetch\.allow/,
    );
  });

  it('status and refresh refuse a bad fetch.allow entry with the same line', async () => {
    const bad = join(dir, 'bad.config.json');
    writeFileSync(
      bad,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, 'data-bad'),
        sources: [{ id: 'docs', urls: [`${origin}/links`] }],
        fetch: { allow: ['127.0.0.1', '10.0.0.0/33'] },
      }),
    );
    const status = await cli(dir, 'status', '--config', bad);
    const run = await cli(dir, 'refresh', '--all', '--config', bad);
    const line =
      'ragfresh: config fetch.allow[1]: "10.0.0.0/33" has a bad prefix length; use a CIDR like 10.0.0.0/8.';
    expect([status.code, status.err.trim()]).toEqual([2, line]);
    expect([run.code, run.err.trim()]).toEqual([2, line]);
  });
});
