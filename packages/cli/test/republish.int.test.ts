import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Connector, FIELDS } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueryHitView } from '../src/commands.js';
import { loadConfig } from '../src/config.js';
import { openConnector } from '../src/runtime.js';

// `ragfresh reextract --republish` through the built CLI on embedded LanceDB. A store written
// before `rf_access` and `rf_space` is simulated by writing its rows again without them (the
// LanceDB access column then holds null, which no reader's filter matches): `query` answers
// nothing. The republish writes every such document again from its raw snapshot in one epoch
// move, with no request to the site, and `query` answers again with the fetched URLs as
// citations; a second run finds nothing left to do.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      done({ code, stdout, stderr });
    });
  });
}

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} | Example Shop</title></head>
<body><main><article><h1>${title}</h1>${body}</article></main></body></html>`;

const PAGES: Record<string, string> = {
  '/policies/returns': page(
    'Returns policy',
    '<p>You can return any item within 30 days of delivery for a full refund.</p><p>Items must be unused and in their original packaging, with the receipt or order number.</p>',
  ),
  '/shipping': page(
    'Shipping',
    '<p>Standard shipping takes three to five business days across the country.</p><p>Express shipping arrives the next business day when ordered before noon.</p>',
  ),
};

describe('reextract --republish: a store written before rf_access answers again, in one epoch move, without a refetch', () => {
  let dir: string;
  let server: Server;
  let origin: string;
  let configFile: string;
  const requests: string[] = [];
  const query = async () => {
    const r = await cli([
      'query',
      'return an item refund shipping days',
      '-k',
      '5',
      '--json',
      '--config',
      configFile,
    ]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as QueryHitView[];
  };
  const withStore = async <T>(use: (c: Connector) => Promise<T>): Promise<T> => {
    const connector = await openConnector(await loadConfig(configFile));
    try {
      return await use(connector);
    } finally {
      await connector.close();
    }
  };

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    server = createServer((req, res) => {
      requests.push(req.url ?? '/');
      const body = PAGES[req.url ?? ''];
      if (body === undefined) res.writeHead(404).end('not found');
      else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-republish-'));
    configFile = join(dir, 'ragfresh.config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, 'data'),
        sources: [{ id: 'shop', urls: Object.keys(PAGES).map((p) => `${origin}${p}`) }],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true, robots: false },
      }),
    );
    const cold = await cli(['refresh', '--all', '--config', configFile]);
    expect(cold.code, cold.stderr).toBe(0);
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('query answers nothing on the old rows; the republish brings every document back, cited by its URL', async () => {
    const before = await query();
    expect(before.length).toBeGreaterThan(0);
    const documents = [...new Set(before.map((h) => h.documentId))];
    expect(documents).toHaveLength(2);

    // An old store: the same rows, written again without the keys they predate.
    const stripped = await withStore(async (c) => {
      const listed = await c.listChunksMany(documents, { withEmbeddings: true });
      const rows = [...listed.values()].flat();
      await c.upsert(
        rows.map((r) => {
          const { [FIELDS.access]: _a, [FIELDS.space]: _s, ...metadata } = r.metadata;
          return { id: r.id, text: r.text, embedding: r.embedding!, metadata };
        }),
      );
      return rows.length;
    });
    expect(stripped).toBeGreaterThan(1);
    expect(await query()).toEqual([]);

    const fetched = requests.length;
    const run = await cli(['reextract', '--republish', '--config', configFile]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /^republished 2 of the 2 current documents whose chunks lacked rf_access or rf_space \(0 already complete\), from raw snapshots, no network; one epoch move, to epoch 2; 0 chunks embedded, \d+ vectors reused\.$/m,
    );
    // No refetch: the site saw no request.
    expect(requests.length).toBe(fetched);

    const after = await query();
    expect(new Set(after.map((h) => h.documentId))).toEqual(new Set(documents));
    const cited = new Set(after.map((h) => h.provenance.source));
    expect(cited).toEqual(new Set(Object.keys(PAGES).map((p) => `${origin}${p}`)));
    for (const h of after) expect(h.citations[0]?.url).toBe(h.provenance.source);
    expect(after.every((h) => /~r1$/.test(h.versionId))).toBe(true);
    expect(after.some((h) => h.text.includes('30 days'))).toBe(true);
    // Every current row carries the reserved keys again (public scope, the index's space).
    await withStore(async (c) => {
      const listed = await c.listChunksMany(documents);
      const current = [...listed.values()]
        .flat()
        .filter((r) => Number(r.metadata[FIELDS.from]) <= 2 && Number(r.metadata[FIELDS.to]) > 2);
      expect(current.length).toBeGreaterThan(1);
      for (const r of current) {
        expect(r.metadata[FIELDS.access]).toEqual(['*']);
        expect(String(r.metadata[FIELDS.space])).toMatch(/^es_/);
      }
      // The store's epoch record names the same space (LanceDB keeps it beside the epoch).
      expect(await c.readEpochSpace()).toBe(current[0]?.metadata[FIELDS.space]);
    });

    // Again: nothing lacks a key, nothing is written, no epoch move.
    const again = await cli(['reextract', '--republish', '--config', configFile]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(
      /^republished 0 of the 0 current documents .*\(2 already complete\).*; no epoch move;/m,
    );
    expect(requests.length).toBe(fetched);
  });

  it('an unknown --source is one usage line, exit 2', async () => {
    const r = await cli(['reextract', '--republish', '--source', 'blog', '--config', configFile]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(
      'reextract --source blog: no such source in the config (sources: shop).',
    );
  });
});
