import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { index } from '@langchain/core/indexing';
import { createMemoryConnector } from '@ragfresh/connector-memory';
import {
  DocumentLedger,
  documentId,
  FIELDS,
  HashingEmbeddings,
  InMemoryStateStore,
  RagfreshError,
  readSpaceRecord,
  type StateStore,
} from '@ragfresh/core';
import {
  type ClassifySettings,
  composeEngine,
  type EngineSettings,
  resolveEngineSettings,
} from '@ragfresh/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RagfreshLoader, RagfreshRetriever } from '../src/index.js';
import { IdVectorStore, MemoryRecordManager, NOT_FOUND_PAGE, simFetcher } from './helpers.js';

// The loader composed through `composeEngine(…, 'loader')`: the source, fetcher, page step,
// classify stage, ledger and embedding space a refresh (what `ragfresh refresh` composes) uses.
// Real HTTP on loopback, `index()` into an in-process vector store, in-memory state.

const GUIDE = `<!DOCTYPE html><html><head><title>Install | Acme Docs</title></head><body>
<main><article><h1>Install</h1>
<p>Install the Acme command line tool with the package manager of your system, then run acme login
with the key from your dashboard. The tool keeps its settings in your home directory.</p>
<p>Upgrades keep your settings; remove the directory to start over from a clean configuration.</p>
</article></main></body></html>`;

interface Site {
  readonly server: Server;
  readonly guide: string;
  /** Listed by the source; answers the not-found page with 200. */
  readonly soft: string;
  readonly requests: string[];
}

async function startSite(): Promise<Site> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '/');
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(req.url === '/docs/install' ? GUIDE : NOT_FOUND_PAGE);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, guide: `${origin}/docs/install`, soft: `${origin}/docs/errors`, requests };
}

let site: Site;
beforeAll(async () => {
  site = await startSite();
});
afterAll(async () => {
  await new Promise((r) => site.server.close(r));
});

function settingsOf(classify?: ClassifySettings): EngineSettings {
  return resolveEngineSettings({
    sources: [
      {
        id: 'docs',
        urls: [site.guide, site.soft],
        everyMs: 60_000,
        identity: { mode: 'normalize' },
        ...(classify === undefined ? {} : { classify }),
      },
    ],
    fetch: {
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      robots: false,
      minIntervalMs: 0,
      allowPrivateNetworks: true,
    },
    publish: { maxRetireShare: 1 },
    chunking: { maxTokens: 200 },
  });
}

const embeddings = (seed = 0) => new HashingEmbeddings({ dimensions: 16, seed });

/** What the CLI's refresh (the `refresh` role) makes current for each URL of the source. */
async function refreshed(
  settings: EngineSettings,
  state: StateStore,
): Promise<Map<string, string>> {
  const engine = await composeEngine(
    settings,
    { connector: createMemoryConnector(), state, embeddings: embeddings() },
    'refresh',
  );
  try {
    await engine.engine.refresh({ all: true });
  } finally {
    await engine.close();
  }
  const current = new Map<string, string>();
  for (const url of [site.guide, site.soft]) {
    const v = (await state.getDocument(documentId('docs', url, { mode: 'normalize' })))
      ?.currentVersionId;
    if (v !== undefined) current.set(url, v);
  }
  return current;
}

/** `index()` of one loader run into `store`; the loader's report. */
async function indexed(loader: RagfreshLoader, store: IdVectorStore, records: MemoryRecordManager) {
  await index({
    docsSource: loader,
    recordManager: records,
    vectorStore: store,
    options: { cleanup: 'full', sourceIdKey: 'source' },
  });
  const rows = [...store.rows.values()].map((r) => r.doc.metadata);
  return { rows, report: loader.lastReport! };
}

describe('RagfreshLoader composed for the loader role', () => {
  it("a source's classify.ignore: the loader indexes the version the CLI's refresh indexes; without it neither does", async () => {
    const ignoring = settingsOf({ ignore: ['soft_404'] });
    const cli = await refreshed(ignoring, new InMemoryStateStore());
    expect(cli.has(site.soft)).toBe(true);

    const loader = await RagfreshLoader.compose(
      ignoring,
      { state: new InMemoryStateStore(), embeddings: embeddings() },
      { sourceId: 'docs' },
    );
    try {
      const store = new IdVectorStore(embeddings(), {});
      const { rows, report } = await indexed(loader, store, new MemoryRecordManager());
      const soft = rows.filter((m) => m[FIELDS.url] === site.soft);
      expect(soft.length).toBeGreaterThan(0);
      for (const m of soft) expect(m[FIELDS.versionId]).toBe(cli.get(site.soft));
      for (const m of rows.filter((r) => r[FIELDS.url] === site.guide))
        expect(m[FIELDS.versionId]).toBe(cli.get(site.guide));
      const page = report.pages.find((p) => p.url === site.soft)!;
      expect(page.outcome).toBe('changed');
      expect(page.reasons.join('\n')).toMatch(/^ignored: by classify\.ignore: soft_404: /);
    } finally {
      await loader.close();
    }

    // Control: the same source without the override. The refresh holds the page back, and so
    // does the loader (degraded with the refresh's reason, nothing emitted).
    const strict = settingsOf();
    const cliStrict = await refreshed(strict, new InMemoryStateStore());
    expect(cliStrict.has(site.soft)).toBe(false);
    const control = await RagfreshLoader.compose(
      strict,
      { state: new InMemoryStateStore(), embeddings: embeddings() },
      { sourceId: 'docs' },
    );
    try {
      const { rows, report } = await indexed(
        control,
        new IdVectorStore(embeddings(), {}),
        new MemoryRecordManager(),
      );
      expect(rows.filter((m) => m[FIELDS.url] === site.soft)).toHaveLength(0);
      const page = report.pages.find((p) => p.url === site.soft)!;
      expect(page.outcome).toBe('degraded');
      expect(page.reasons.join('\n')).toMatch(/^soft_404: /);
    } finally {
      await control.close();
    }
  });

  it('the standalone form takes classify too: the same version as the refresh with the override', async () => {
    const cli = await refreshed(settingsOf({ ignore: ['soft_404'] }), new InMemoryStateStore());
    const fetcher = simFetcher();
    const loader = new RagfreshLoader({
      fetcher,
      sourceId: 'docs',
      urls: [site.soft],
      state: new InMemoryStateStore(),
      maxTokens: 200,
      classify: { ignore: ['soft_404'] },
    });
    try {
      const docs = await loader.load();
      expect(docs.length).toBeGreaterThan(0);
      for (const d of docs) expect(d.metadata[FIELDS.versionId]).toBe(cli.get(site.soft));
      // No embeddings, so no space: the standalone form writes no rf_space.
      for (const d of docs) expect(d.metadata[FIELDS.space]).toBeUndefined();
    } finally {
      await loader.close();
      await fetcher.close();
    }
    expect(
      () =>
        new RagfreshLoader({
          fetcher,
          sourceId: 'docs',
          urls: [site.soft],
          classify: { ignore: ['soft-404'] },
        }),
    ).toThrow(/classify\.ignore: "soft-404" is not a classification code; use one of .*soft_404/);
  });

  it('an accepted persistent-not-the-document item: the loader indexes exactly the accepted version', async () => {
    const strict = settingsOf();
    const version = (
      await refreshed(settingsOf({ ignore: ['soft_404'] }), new InMemoryStateStore())
    ).get(site.soft)!;
    const state = new InMemoryStateStore();
    const loader = await RagfreshLoader.compose(
      strict,
      { state, embeddings: embeddings() },
      { sourceId: 'docs' },
    );
    try {
      const store = new IdVectorStore(embeddings(), {});
      const records = new MemoryRecordManager();
      const first = await indexed(loader, store, records);
      expect(first.report.pages.find((p) => p.url === site.soft)?.outcome).toBe('degraded');
      const id = documentId('docs', site.soft, { mode: 'normalize' });
      // The loader records the version the page would have been, as a refresh does.
      expect((await state.getDocument(id))?.history?.at(-1)?.versionId).toBe(version);
      // A reviewer accepts that version as the document (what `ragfresh review approve` records).
      const ledger = new DocumentLedger(state);
      const item = await ledger.proposed({
        id: `persistent:${id}`,
        kind: 'ingestion',
        documentId: id,
        sourceId: 'docs',
        url: site.soft,
        reason: 'persistent-not-the-document',
        evidence: ['judged not the document on 3 runs in a row, content unchanged'],
        versionId: version,
      });
      await ledger.decided(item!, 'approved', 'alice');
      const second = await indexed(loader, store, records);
      const page = second.report.pages.find((p) => p.url === site.soft)!;
      expect(page.outcome).toBe('changed');
      expect(page.reasons.join('\n')).toMatch(/^accepted: by alice: soft_404: /);
      const soft = second.rows.filter((m) => m[FIELDS.url] === site.soft);
      expect(soft.length).toBeGreaterThan(0);
      for (const m of soft) expect(m[FIELDS.versionId]).toBe(version);
    } finally {
      await loader.close();
    }
  });

  it('every chunk it writes carries rf_space, the space it recorded; the retriever reads them in that space', async () => {
    const state = new InMemoryStateStore();
    const settings = settingsOf({ ignore: ['soft_404'] });
    const loader = await RagfreshLoader.compose(
      settings,
      { state, embeddings: embeddings() },
      { sourceId: 'docs' },
    );
    const store = new IdVectorStore(embeddings(), {});
    try {
      const { rows } = await indexed(loader, store, new MemoryRecordManager());
      const space = (await readSpaceRecord(state))?.active;
      expect(space?.id).toMatch(/^es_/);
      expect(rows.length).toBeGreaterThan(1);
      for (const m of rows) expect(m[FIELDS.space]).toBe(space?.id);
    } finally {
      await loader.close();
    }
    const hits = await new RagfreshRetriever({ vectorStore: store, view: 'index', k: 2 }).invoke(
      'install the command line tool',
    );
    expect(hits.length).toBeGreaterThan(0);
    // Control: a retriever embedding queries in another space refuses the same rows.
    const other = new IdVectorStore(embeddings(7), {});
    for (const [k, v] of store.rows) other.rows.set(k, v);
    await expect(
      new RagfreshRetriever({ vectorStore: other, view: 'index', k: 2 }).invoke('install'),
    ).rejects.toMatchObject({ code: 'SPACE_MISMATCH' });
  });

  it('a state whose space differs: refused before anything is fetched or written, with the one line the CLI prints', async () => {
    const state = new InMemoryStateStore();
    const settings = settingsOf();
    await refreshed(settings, state); // the index is in HashingEmbeddings(seed=0)
    const before = site.requests.length;
    const records = async () => {
      const all: string[] = [];
      for await (const r of state.listDocuments()) all.push(JSON.stringify(r));
      return all;
    };
    const written = await records();
    let refused: unknown;
    try {
      await RagfreshLoader.compose(
        settings,
        { state, embeddings: embeddings(7) },
        { sourceId: 'docs' },
      );
    } catch (err) {
      refused = err;
    }
    // The refresh role (what `ragfresh refresh` composes) on the same state and embeddings.
    let cli: unknown;
    try {
      await composeEngine(
        settings,
        { connector: createMemoryConnector(), state, embeddings: embeddings(7) },
        'refresh',
      );
    } catch (err) {
      cli = err;
    }
    expect(refused).toBeInstanceOf(RagfreshError);
    expect(refused).toMatchObject({ code: 'SPACE_MISMATCH' });
    const line = (refused as Error).message;
    expect(line).not.toContain('\n');
    expect(line).toMatch(
      /HashingEmbeddings\(seed=7\).*HashingEmbeddings\(seed=0\).*ragfresh migrate embeddings/,
    );
    expect(line).toBe((cli as Error).message);
    expect(site.requests.length).toBe(before);
    expect(await records()).toEqual(written);
  });

  it('refuses an engine of another role and a source the settings do not list, in one line each', async () => {
    const settings = settingsOf();
    const ports = { state: new InMemoryStateStore(), embeddings: embeddings() };
    await expect(RagfreshLoader.compose(settings, ports, { sourceId: 'blog' })).rejects.toThrow(
      /no source "blog" in the engine's settings \(sources: docs\); add it to sources or pass one of those ids\.$/,
    );
    const read = await composeEngine(
      settings,
      { ...ports, state: new InMemoryStateStore(), connector: createMemoryConnector() },
      'read',
    );
    try {
      expect(() => new RagfreshLoader({ engine: read, sourceId: 'docs' })).toThrow(
        /takes an engine composed for the loader role, got the read role/,
      );
    } finally {
      await read.close();
    }
  });
});
