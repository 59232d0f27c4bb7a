import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type DocumentRecord, documentId, openStateStore } from '@ragfresh/core';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, openRuntime, sourceStatuses } from '../src/index.js';

// `ragfresh mcp` runs from the built CLI (build first: `npx -y pnpm@10 run build`) and is driven by
// the MCP SDK's own Client, over stdio (the process an agent host spawns) and Streamable HTTP.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(dir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args, '--quiet'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** The result citing `url` (retrieval on hashing embeddings ranks it near, not always first). */
function hitFor<T extends { url: string }>(r: CallToolResult, url: string): T {
  const hit = (r.structuredContent as { results: T[] }).results.find((h) => h.url === url);
  expect(hit, `no result cites ${url}`).toBeDefined();
  return hit!;
}

const text = (r: CallToolResult) =>
  r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

async function stdioClient(dir: string): Promise<Client> {
  const client = new Client({ name: 'ragfresh-test', version: '0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--quiet'],
      cwd: dir,
      stderr: 'pipe',
    }),
  );
  return client;
}

/** `ragfresh mcp --http 0`; resolves with its URL and token once it prints them. */
async function startHttp(
  dir: string,
): Promise<{ child: ChildProcess; url: string; token: string }> {
  const child = spawn(process.execPath, [BIN, 'mcp', '--http', '0', '--quiet'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((res, rej) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const url = /ragfresh mcp: (http:\/\/127\.0\.0\.1:\d+\/mcp) /.exec(out)?.[1];
      const token = /ragfresh mcp: token (\S+) /.exec(out)?.[1];
      if (url !== undefined && token !== undefined) res({ child, url, token });
    });
    child.on('exit', (code) => rej(new Error(`ragfresh mcp exited ${code}: ${out}`)));
  });
}

/** A raw POST with chosen headers (Host included, which fetch cannot set). */
function post(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/list',
    params: {},
  });
  return new Promise((res, rej) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (r) => {
        let b = '';
        r.on('data', (d: Buffer) => {
          b += d.toString();
        });
        r.on('end', () => res({ status: r.statusCode ?? 0, body: b }));
      },
    );
    req.on('error', rej);
    req.end(body);
  });
}

describe('ragfresh mcp: the SDK client over stdio and Streamable HTTP (LanceDB, SQLite state)', () => {
  let sim: SimWeb;
  let dir: string;
  let pages: string[];
  let down: string;
  let shrunk: string;
  let gone: string;
  let records: Map<string, DocumentRecord>;
  let stdio: Client;

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first (pnpm run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-mcp-'));
    sim = await startSimWeb({ seed: 36, hosts: 1, pagesPerHost: 7 });
    // Article pages only: the home page lists every page and would compete for each phrase.
    pages = sim.urls(sim.hosts()[0]!).filter((u) => new URL(u).pathname !== '/');
    writeFileSync(
      join(dir, 'ragfresh.config.json'),
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        sources: [
          { id: 'docs', urls: pages, freshnessObjective: '30d', contract: { maxShrink: 0.2 } },
        ],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true, robots: false },
        deletion: { goneChecks: 1, minGoneAge: 0, autoApprove: false },
      }),
    );
    // Two runs: everything published; then one page answers 503 (its last good copy stays
    // current, labelled STALE), one shrinks past the contract (quarantined, the candidate held
    // for review) and one answers 410 (a deletion proposal waits for review).
    down = pages[1]!;
    shrunk = pages[4]!;
    gone = pages[5]!;
    const config = await loadConfig(join(dir, 'ragfresh.config.json'));
    const rt = await openRuntime(config);
    try {
      await rt.engine.refresh({ all: true });
      sim.mutate(down, 'outage', { retryAfter: null });
      sim.mutate(shrunk, 'shrink', { keepSections: 1 });
      sim.mutate(gone, 'delete410');
      await rt.engine.refresh({ all: true });
      records = new Map();
      for await (const r of rt.state.listDocuments()) records.set(r.url, r);
    } finally {
      await rt.close();
    }
    expect(records.get(down)?.status).toBe('degraded');
    expect(records.get(shrunk)?.status).toBe('quarantined');
    stdio = await stdioClient(dir);
  });
  afterAll(async () => {
    await stdio?.close();
    await sim?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('stdio: lists four read-only tools whose arguments hold no access groups', async () => {
    const { tools } = await stdio.listTools();
    expect(tools.map((t) => t.name)).toEqual(['search', 'get_document', 'freshness', 'explain']);
    for (const t of tools) {
      expect(t.annotations?.readOnlyHint).toBe(true);
      expect(t.annotations?.destructiveHint).toBe(false);
      expect(t.description).toMatch(/Read-only: it never approves, rejects, removes or refreshes/);
      expect(Object.keys(t.inputSchema.properties ?? {})).not.toContain('access');
      expect(t.outputSchema?.type).toBe('object');
    }
  });

  it('stdio: search answers from the current view with the fetched URL, retrieval time and quoted page text', async () => {
    const target = pages[2]!;
    const facts = sim.pageFacts(target);
    const r = (await stdio.callTool({
      name: 'search',
      arguments: { query: facts.phrase, k: 3 },
    })) as CallToolResult;
    expect(r.isError, text(r)).toBeFalsy();
    const out = r.structuredContent as { storeEpoch: number; results: unknown[] };
    expect(out.results.length).toBeLessThanOrEqual(3);
    const top = hitFor<{
      url: string;
      rank: number;
      retrievedAt: string;
      label: string;
      text: string;
      trust: string;
    }>(r, target);
    expect(top.retrievedAt).toBe(records.get(target)!.timestamps.retrievedAt);
    expect(top.label).toBe('current');
    expect(top.trust).toBe('untrusted-page-text');
    expect(top.text).toContain(facts.phrase);
    expect(out.storeEpoch).toBeGreaterThan(0);
    // The text an agent reads: citation and fetch time first, every page line quoted.
    const body = text(r);
    expect(body).toContain(`[${top.rank}] ${target}`);
    expect(body).toContain(`Fetched: ${top.retrievedAt}`);
    const block = /<untrusted-page-text source="[^"]+">\n([\s\S]*?)\n<\/untrusted-page-text>/.exec(
      body,
    )?.[1];
    expect(block).toBeDefined();
    for (const line of block!.split('\n')) expect(line).toMatch(/^>( |$)/);
  });

  it('stdio: the degraded page is labelled STALE, and explain gives the engine its reasons', async () => {
    const facts = sim.pageFacts(down);
    const r = (await stdio.callTool({
      name: 'search',
      arguments: { query: facts.phrase, k: 3, source: 'docs' },
    })) as CallToolResult;
    const hit = hitFor<{ url: string; staleSince: string }>(r, down);
    expect(hit).toMatchObject({ url: down, label: 'stale', status: 'degraded' });
    expect(hit.staleSince).toBe(records.get(down)!.lastGoodAt);
    expect(text(r)).toMatch(/STALE since \S+ \(degraded: last good copy\)/);

    const e = (await stdio.callTool({
      name: 'explain',
      arguments: { url: down },
    })) as CallToolResult;
    const ex = e.structuredContent as {
      verdict: string;
      documents: { verdict: string; reasons: { kind: string; detail: string }[] }[];
    };
    expect(ex.verdict).toBe('stale');
    const statusReasons = ex.documents[0]!.reasons.filter((x) => x.kind === 'status');
    expect(statusReasons.map((x) => x.detail)).toEqual(
      records.get(down)!.statusReasons.map((s) => `degraded: ${s}`),
    );
    expect(statusReasons.length).toBeGreaterThan(0);

    const healthy = (await stdio.callTool({
      name: 'explain',
      arguments: { url: pages[2]! },
    })) as CallToolResult;
    expect((healthy.structuredContent as { verdict: string }).verdict).toBe('current');
    const unknown = (await stdio.callTool({
      name: 'explain',
      arguments: { url: `${sim.origin(sim.hosts()[0]!)}/never-listed` },
    })) as CallToolResult;
    expect(unknown.structuredContent).toMatchObject({
      verdict: 'not-indexed',
      documents: [{ sourceId: 'docs', verdict: 'not-indexed', reasons: [{ kind: 'not-seen' }] }],
    });
  });

  it('stdio: explain says quarantined and held from the review items the engine wrote', async () => {
    const state = await openStateStore((await loadConfig(join(dir, 'ragfresh.config.json'))).state);
    const pending = await state.listReviewItems({ status: 'pending' });
    await state.close();
    const item = (url: string) => pending.find((i) => i.url === url)!;
    expect(item(shrunk).kind).toBe('ingestion');
    expect(item(gone).kind).toBe('deletion');

    const q = (await stdio.callTool({
      name: 'explain',
      arguments: { url: shrunk },
    })) as CallToolResult;
    const [qd] = (
      q.structuredContent as {
        documents: { verdict: string; reasons: { kind: string; detail: string }[] }[];
      }
    ).documents;
    expect((q.structuredContent as { verdict: string }).verdict).toBe('quarantined');
    expect(qd!.reasons.filter((r) => r.kind === 'status').map((r) => r.detail)).toEqual(
      records.get(shrunk)!.statusReasons.map((s) => `quarantined: ${s}`),
    );
    expect(qd!.reasons.find((r) => r.kind === 'review')?.detail).toContain(
      `ingestion/${item(shrunk).reason} pending review (${item(shrunk).id})`,
    );

    const g = (await stdio.callTool({
      name: 'explain',
      arguments: { url: gone },
    })) as CallToolResult;
    const [gd] = (
      g.structuredContent as {
        documents: { verdict: string; reasons: { kind: string; detail: string }[] }[];
      }
    ).documents;
    expect(gd!.verdict).toBe('held');
    expect(gd!.reasons.find((r) => r.kind === 'review')?.detail).toContain(
      `deletion/${item(gone).reason} pending review`,
    );
    expect(text(g)).toMatch(new RegExp(`^${gone.replace(/[.?]/g, '\\$&')}: held\n`));
  });

  it('stdio: get_document returns the current chunks, the four timestamps and the history', async () => {
    const url = pages[0]!;
    const record = records.get(url)!;
    const r = (await stdio.callTool({
      name: 'get_document',
      arguments: { url },
    })) as CallToolResult;
    expect(r.isError, text(r)).toBeFalsy();
    const doc = r.structuredContent as {
      documentId: string;
      currentVersionId: string;
      timestamps: Record<string, string>;
      chunkCount: number;
      chunks: { ordinal: number; text: string }[];
      history: { event: string }[];
    };
    expect(doc.documentId).toBe(documentId('docs', url));
    expect(doc.currentVersionId).toBe(record.currentVersionId);
    expect(doc.timestamps).toEqual(record.timestamps);
    expect(doc.chunkCount).toBe(record.currentChunkIds.length);
    expect(doc.chunks.map((c) => c.ordinal)).toEqual(doc.chunks.map((_, i) => i));
    expect(doc.history.map((h) => h.event)).toEqual((record.history ?? []).map((h) => h.event));
  });

  it('stdio: freshness is what `ragfresh status` computes per source', async () => {
    const r = (await stdio.callTool({ name: 'freshness', arguments: {} })) as CallToolResult;
    const [fresh] = (r.structuredContent as { sources: Record<string, unknown>[] }).sources;
    const config = await loadConfig(join(dir, 'ragfresh.config.json'));
    const state = await openStateStore(config.state);
    const [status] = await sourceStatuses(config, state);
    await state.close();
    expect(fresh).toMatchObject({
      sourceId: 'docs',
      state: status!.state,
      documents: status!.documents,
      counts: status!.counts,
      objectiveMs: status!.objectiveMs,
      objectiveMet: status!.objectiveMet,
      retrievedAt: status!.retrievedAt,
      propagationLagMs: status!.propagationLagMs,
      alerts: status!.alerts,
      reviewPending: status!.review,
    });
    // The worst document decides the state; both held review items are counted by kind/reason.
    expect(fresh!.state).toBe('quarantined');
    const kinds = Object.keys(fresh!.reviewPending as Record<string, number>).map(
      (k) => k.split('/')[0],
    );
    expect(kinds.sort()).toEqual(['deletion', 'ingestion']);
  });

  it('stdio: bad calls are tool errors of one line, and the next good call still works', async () => {
    const bad = [
      [
        { query: 'pricing', k: 'five' },
        /^search: k: invalid input: expected number, received string/,
      ],
      [{ query: 'pricing', k: 100_000 }, /^search: k: too big: expected number to be <=50/],
      [
        { query: 'pricing', source: 'doc' },
        /^search: unknown source "doc" \(did you mean "docs"\?\); known sources: docs\.$/,
      ],
      [
        { query: 'pricing', access: ['staff'] },
        /^search: unrecognized key: "access".*set by the server/,
      ],
      [{}, /^search: query: invalid input: expected string, received undefined/],
    ] as const;
    for (const [args, line] of bad) {
      const r = (await stdio.callTool({ name: 'search', arguments: args })) as CallToolResult;
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(line);
      expect(text(r)).not.toContain('\n');
    }
    const missing = (await stdio.callTool({
      name: 'get_document',
      arguments: { url: 'https://nowhere.example/' },
    })) as CallToolResult;
    expect(missing.isError).toBe(true);
    expect(text(missing)).toMatch(/^get_document: .*is not a known document.*\(code NOT_FOUND\)$/);
    const good = (await stdio.callTool({
      name: 'search',
      arguments: { query: sim.pageFacts(pages[3]!).phrase },
    })) as CallToolResult;
    expect(good.isError).toBeFalsy();
    hitFor(good, pages[3]!);
  });

  it('HTTP: the token is required, a foreign Origin or Host is refused, and the SDK client gets cited answers', async () => {
    const { child, url, token } = await startHttp(dir);
    try {
      const origin = new URL(url).origin;
      const ok = { authorization: `Bearer ${token}` };
      expect((await post(url, {})).status).toBe(401);
      expect((await post(url, { authorization: 'Bearer wrong' })).status).toBe(401);
      expect((await post(url, { ...ok, origin: 'http://evil.example' })).status).toBe(403);
      const rebound = await post(url, { ...ok, host: `evil.example:${new URL(url).port}` });
      expect(rebound.status).toBe(403);
      expect(rebound.body).toMatch(/unexpected Host header/);
      // Control: the same raw request with the token and the server's own Origin is answered.
      const own = await post(url, { ...ok, origin });
      expect(own.status, own.body).toBe(200);
      expect(JSON.parse(own.body).result.tools).toHaveLength(4);

      const client = new Client({ name: 'ragfresh-test', version: '0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      try {
        expect((await client.listTools()).tools).toHaveLength(4);
        const malformed = (await client.callTool({
          name: 'search',
          arguments: { query: 42 },
        })) as CallToolResult;
        expect(malformed.isError).toBe(true);
        expect(text(malformed)).toMatch(/^search: query: invalid input: expected string/);
        const target = pages[3]!;
        const r = (await client.callTool({
          name: 'search',
          arguments: { query: sim.pageFacts(target).phrase, k: 3 },
        })) as CallToolResult;
        const top = hitFor<{ url: string; retrievedAt: string }>(r, target);
        expect(top.retrievedAt).toBe(records.get(target)!.timestamps.retrievedAt);
      } finally {
        await client.close();
      }
      const unauth = new Client({ name: 'ragfresh-test', version: '0' });
      await expect(
        unauth.connect(new StreamableHTTPClientTransport(new URL(url))),
      ).rejects.toThrow();
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('a running server answers from the epoch a refresh in another process just published', async () => {
    const url = pages[0]!;
    const sentence = 'The quokka ledger reconciles every offset nightly.';
    sim.mutate(url, 'edit', { text: sentence });
    const rt = await openRuntime(await loadConfig(join(dir, 'ragfresh.config.json')));
    let after: DocumentRecord;
    try {
      await rt.engine.refresh({ all: true });
      after = (await rt.state.getDocument(documentId('docs', url)))!;
    } finally {
      await rt.close();
    }
    expect(after.currentVersionId).not.toBe(records.get(url)!.currentVersionId);
    const r = (await stdio.callTool({
      name: 'search',
      arguments: { query: sentence, k: 3 },
    })) as CallToolResult;
    const hit = hitFor<{ url: string; versionId: string; retrievedAt: string; text: string }>(
      r,
      url,
    );
    expect(hit.versionId).toBe(after.currentVersionId);
    expect(hit.retrievedAt).toBe(after.timestamps.retrievedAt);
    expect(hit.text).toContain(sentence);
  });

  it('a lost store: the tools say STORE_LOST in the same line as `ragfresh query`', async () => {
    await stdio.close();
    rmSync(join(dir, '.ragfresh/lancedb'), { recursive: true, force: true });
    const query = cli(dir, 'query', 'pricing');
    expect(query.code).toBe(1);
    const line = query.err.trim();
    expect(line).toMatch(/\(code STORE_LOST\)$/);
    stdio = await stdioClient(dir);
    const r = (await stdio.callTool({
      name: 'search',
      arguments: { query: 'pricing' },
    })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(text(r)).toBe(`search: ${line}`);
    const f = (await stdio.callTool({ name: 'freshness', arguments: {} })) as CallToolResult;
    expect(text(f)).toBe(`freshness: ${line}`);
  });
});
