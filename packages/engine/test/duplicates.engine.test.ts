import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMemoryConnector, type MemoryConnector } from '@ragfresh/connector-memory';
import {
  documentId,
  FIELDS,
  HashingEmbeddings,
  InMemoryStateStore,
  Publisher,
} from '@ragfresh/core';
import { Fetcher } from '@ragfresh/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExtractPipeline, RefreshEngine } from './internals.js';

// Group ids through real refreshes: a late copy joins without rewriting anything else; a page
// that stops being a copy leaves on its next version; the founder deleted leaves the label.
const facts = (topic: string, n: number) =>
  Array.from(
    { length: n },
    (_, i) =>
      `<p>${topic} fact ${i + 1}: the ${topic} service keeps ${i + 2} copies of every record in zone ${i % 3}, checks them on read number ${i * 7 + 1}, and repairs a copy from its peers when the check fails.</p>`,
  ).join('\n');
const html = (body: string) =>
  `<!doctype html><html><head><title>Docs</title></head><body><nav><a href="/">Home</a></nav><main><article><h1>Guide</h1>${body}</article></main><footer>© Example</footer></body></html>`;

const routes = new Map<string, string>();
let server: Server;
let origin: string;
let connector: MemoryConnector;
let state: InMemoryStateStore;
let publisher: Publisher;
let fetcher: Fetcher;
const embeddings = new HashingEmbeddings({ dimensions: 64 });

function engine(paths: readonly string[]): RefreshEngine {
  return new RefreshEngine({
    sources: [
      {
        id: 'docs',
        urls: paths.map((p) => `${origin}${p}`),
        everyMs: 3_600_000,
        identity: { mode: 'normalize' },
      },
    ],
    connector,
    state,
    publisher,
    fetcher,
    embeddings,
    pipeline: new ExtractPipeline(),
    maxRetireShare: 1,
    deletion: { goneChecks: 1, minGoneAgeMs: 0, autoApprove: true },
  });
}

const idOf = (path: string) => documentId('docs', `${origin}${path}`);
async function groupOf(path: string): Promise<string | undefined> {
  const record = await state.getDocument(idOf(path));
  const chunks = await connector.listChunks(idOf(path), record?.currentVersionId);
  const groups = new Set(chunks.map((c) => c.metadata[FIELDS.duplicateGroup]));
  expect(groups.size).toBe(1);
  // The record and every chunk agree.
  expect([...groups][0]).toBe(record?.duplicateGroup);
  return record?.duplicateGroup;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const body = routes.get(req.url ?? '');
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(body ?? 'not found');
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  connector = createMemoryConnector();
  await connector.open({ dimensions: 64 });
  state = new InMemoryStateStore();
  publisher = await Publisher.open({ connector, state, maxRetireShare: 1 });
  fetcher = new Fetcher({
    userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
    robots: false,
    minIntervalMs: 0,
    retry: { maxAttempts: 1 },
    network: { allowPrivateNetworks: true },
  });
});

afterAll(async () => {
  await publisher?.close();
  await fetcher?.close();
  await connector?.close();
  await new Promise((ok) => server?.close(ok));
});

describe('near-duplicate groups through real refreshes', () => {
  const page = html(facts('ledger', 12));
  const other = html(facts('billing', 12));

  it('copies share a group on the record and on every chunk; another page has its own', async () => {
    routes.set('/a', page);
    routes.set('/a/', page);
    routes.set('/b', other);
    const r = await engine(['/a', '/a/', '/b']).refresh({ all: true });
    expect(r.sources[0]!.counts.published).toBe(3);
    const g = await groupOf('/a');
    expect(g).toMatch(/^rf-dup:[0-9a-f]{16}$/);
    expect(await groupOf('/a/')).toBe(g);
    expect(await groupOf('/b')).not.toBe(g);
    expect((await state.getDocument(idOf('/a')))?.fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });

  it('a copy listed later joins the group; only its own chunks are written', async () => {
    const g = await groupOf('/a');
    routes.set('/print/a', page);
    const r = await engine(['/a', '/a/', '/b', '/print/a']).refresh({ all: true });
    const c = r.sources[0]!.counts;
    expect(c.published).toBe(1);
    const printed = await connector.listChunks(idOf('/print/a'));
    expect(c.storeWrites).toBe(printed.length);
    expect(await groupOf('/print/a')).toBe(g);
  });

  it('a copy rewritten into another page leaves the group on its next version', async () => {
    const g = await groupOf('/a');
    routes.set('/a/', html(facts('payroll', 12)));
    const r = await engine(['/a', '/a/', '/b', '/print/a']).refresh({ all: true });
    expect(r.sources[0]!.counts.published).toBe(1);
    const moved = await groupOf('/a/');
    expect(moved).not.toBe(g);
    expect(moved).not.toBe(await groupOf('/b'));
    expect(await groupOf('/a')).toBe(g);
    expect(await groupOf('/print/a')).toBe(g);
  });

  it('the founder gone, its copies keep the label and a new copy still finds them', async () => {
    const g = await groupOf('/a');
    routes.delete('/a');
    const gone = await engine(['/a', '/a/', '/b', '/print/a']).refresh({ all: true });
    expect(gone.sources[0]!.counts.gone).toBe(1);
    // Removed from the view (auto-approved confirmed-gone deletion).
    expect(
      (await connector.listChunks(idOf('/a'))).filter(
        (c) => c.metadata[FIELDS.to] === 2_147_483_647,
      ),
    ).toEqual([]);
    expect(await state.getTombstone(idOf('/a'))).toBeDefined();
    routes.set('/copy', page);
    await engine(['/a/', '/b', '/print/a', '/copy']).refresh({ all: true });
    expect(await groupOf('/copy')).toBe(g);
    expect(await groupOf('/print/a')).toBe(g);
  });
});
