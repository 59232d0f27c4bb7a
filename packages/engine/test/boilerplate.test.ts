import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryConnector, type MemoryConnector } from '@ragfresh/connector-memory';
import {
  documentId,
  FIELDS,
  InMemoryStateStore,
  openStateStore,
  Publisher,
  type StateStore,
} from '@ragfresh/core';
import { Fetcher, MemoryRawSnapshotStore } from '@ragfresh/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChromeSite,
  FIRST_FOOTER,
  INSTALL,
  NEWSLETTER,
  PROMO,
  startChromeSite,
} from '../bench/chrome-site.ts';
import { countingEmbeddings, source } from './harness.js';
import {
  BOILERPLATE_DOC_KIND,
  BOILERPLATE_HOST_KIND,
  BoilerplateLearner,
  type BoilerplateLearningOptions,
  type DocumentLearningFacts,
  type EngineSource,
  ExtractPipeline,
  extractSnapshot,
  type HostSampleJson,
  learnedModelOf,
  learningKey,
  RefreshEngine,
} from './internals.js';

/** One engine world: real HTTP on loopback, the memory connector, in-memory state, snapshots. */
async function world(state: StateStore = new InMemoryStateStore()) {
  const connector: MemoryConnector = createMemoryConnector();
  await connector.open({ dimensions: 64 });
  const publisher = await Publisher.open({ connector, state, maxRetireShare: 1 });
  const snapshots = new MemoryRawSnapshotStore();
  const fetcher = new Fetcher({
    userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
    robots: false,
    minIntervalMs: 0,
    retry: { maxAttempts: 1 },
    network: { allowPrivateNetworks: true },
    snapshots,
  });
  const embeddings = countingEmbeddings();
  const engine = (
    sources: readonly EngineSource[],
    boilerplate?: BoilerplateLearningOptions | false,
  ) =>
    new RefreshEngine({
      sources,
      connector,
      state,
      publisher,
      fetcher,
      snapshots,
      embeddings,
      pipeline: new ExtractPipeline({ maxTokens: 200 }),
      maxRetireShare: 1,
      ...(boilerplate === undefined ? {} : { boilerplate }),
    });
  /** The current version's chunks of a document. */
  const current = async (docId: string) => {
    const r = await state.getDocument(docId);
    if (r?.currentVersionId === undefined) return [];
    return connector.listChunks(docId, r.currentVersionId);
  };
  return {
    connector,
    state,
    snapshots,
    embeddings,
    engine,
    current,
    async stop() {
      await publisher.close();
      await fetcher.close();
      await connector.close();
      await state.close();
    },
  };
}

type World = Awaited<ReturnType<typeof world>>;

const WARM_UP = 8;

describe('per-host boilerplate learning in the engine (real HTTP, memory connector)', () => {
  let site: ChromeSite;
  let small: ChromeSite;
  let w: World;
  let sources: EngineSource[];
  const ids = () => site.urls.map((u) => documentId('docs', u));
  const versions = async () => {
    const out = new Map<string, string | undefined>();
    for (const id of ids()) out.set(id, (await w.state.getDocument(id))?.currentVersionId);
    return out;
  };

  beforeAll(async () => {
    site = await startChromeSite({ pages: 24 });
    small = await startChromeSite({ pages: 3 });
    w = await world();
    sources = [source('docs', [...site.urls, ...small.urls])];
  });
  afterAll(async () => {
    await w.stop();
    await site.stop();
    await small.stop();
  });

  it('cold start: the warm-up pages wait for each other and are cut under the model they support, the rest too; nothing is cut twice; chrome leaves every chunk, shared code and headings stay', async () => {
    const report = await w.engine(sources, { warmUpPages: WARM_UP }).refresh({ all: true });
    const counts = report.totals;
    expect(counts.extracted).toBe(27);
    expect(counts.reextracted).toBe(0);
    expect(counts.published).toBe(27);
    for (const id of ids()) {
      const chunks = await w.current(id);
      const text = chunks.map((c) => c.text).join('\n');
      expect(text).not.toContain(PROMO);
      expect(text).not.toContain(NEWSLETTER);
      expect(text).not.toContain(FIRST_FOOTER);
      // Every page shares the install snippet and a "Next steps" heading: content, kept.
      expect(text).toContain(INSTALL);
      expect(text).toContain('## Next steps');
    }
    // A 3-page host learns nothing: its pages keep the very same promo line.
    for (const u of small.urls) {
      const text = (await w.current(documentId('docs', u))).map((c) => c.text).join('\n');
      expect(text).toContain(PROMO);
    }
    const big = (await w.state.getLearned!(
      BOILERPLATE_HOST_KIND,
      learningKey('docs', site.origin),
    )) as HostSampleJson;
    const tiny = (await w.state.getLearned!(
      BOILERPLATE_HOST_KIND,
      learningKey('docs', small.origin),
    )) as HostSampleJson;
    expect(big.pages.length).toBe(24);
    // promo, newsletter, footer (the "Next steps" heading too: the guard keeps it on the page).
    expect(big.model.blocks.length).toBe(4);
    expect(tiny.model.blocks).toEqual([]);
    for (const id of ids()) {
      const facts = (await w.state.getLearned!(BOILERPLATE_DOC_KIND, id)) as DocumentLearningFacts;
      expect(facts.model).toBe(big.model.digest);
      expect(facts.versionId).toBe((await w.state.getDocument(id))?.currentVersionId);
      expect(facts.matched.length).toBe(4);
    }
  });

  it('snapshotPipeline re-derives each published version from its raw snapshot without learning anything; the plain pipeline does not (the control)', async () => {
    const engine = w.engine(sources, { warmUpPages: WARM_UP });
    const key = learningKey('docs', site.origin);
    const before = JSON.stringify(await w.state.getLearned!(BOILERPLATE_HOST_KIND, key));
    const plain = new ExtractPipeline({ maxTokens: 200 });
    let differs = 0;
    for (const u of site.urls) {
      const record = (await w.state.getDocument(documentId('docs', u)))!;
      const raw = (await w.snapshots.get(record.rawDigest!))!;
      const subject = { documentId: record.documentId, sourceId: 'docs', url: u };
      const viewed = await extractSnapshot(engine.snapshotPipeline, raw, subject);
      expect(viewed.outcome.kind === 'document' && viewed.outcome.versionId).toBe(
        record.currentVersionId,
      );
      const bare = await extractSnapshot(plain, raw, subject);
      if (bare.outcome.kind === 'document' && bare.outcome.versionId !== record.currentVersionId)
        differs++;
    }
    expect(differs).toBe(site.urls.length);
    expect(JSON.stringify(await w.state.getLearned!(BOILERPLATE_HOST_KIND, key))).toBe(before);
  });

  it('the same pages without learning keep the chrome in their chunks (the control)', async () => {
    const off = await world();
    try {
      const report = await off.engine(sources, false).refresh({ all: true });
      expect(report.totals.published).toBe(27);
      expect(report.totals.reextracted).toBe(0);
      let withChrome = 0;
      for (const id of ids()) {
        const text = (await off.current(id)).map((c) => c.text).join('\n');
        if (text.includes(PROMO) && text.includes(FIRST_FOOTER)) withChrome++;
      }
      expect(withChrome).toBe(24);
      expect(
        await off.state.getLearned!(BOILERPLATE_HOST_KIND, learningKey('docs', site.origin)),
      ).toBe(undefined);
    } finally {
      await off.stop();
    }
  });

  it('unchanged: every page answers 304; nothing extracted, re-extracted or embedded', async () => {
    const before = await versions();
    const embedded = w.embeddings.texts;
    const report = await w.engine(sources, { warmUpPages: WARM_UP }).refresh({ all: true });
    expect(report.totals.notModified).toBe(27);
    expect(report.totals.extracted).toBe(0);
    expect(report.totals.reextracted).toBe(0);
    expect(w.embeddings.texts).toBe(embedded);
    expect(await versions()).toEqual(before);
  });

  it('a content edit on one page: that page alone gets a new version; the model and the others stay', async () => {
    const before = await versions();
    const model = (
      (await w.state.getLearned!(
        BOILERPLATE_HOST_KIND,
        learningKey('docs', site.origin),
      )) as HostSampleJson
    ).model.digest;
    site.editPage(5, 'A sentence the editors added today.');
    const report = await w.engine(sources, { warmUpPages: WARM_UP }).refresh({ all: true });
    expect(report.totals.published).toBe(1);
    expect(report.totals.reextracted).toBe(0);
    const after = await versions();
    const changed = ids().filter((id) => after.get(id) !== before.get(id));
    expect(changed).toEqual([documentId('docs', site.urls[5]!)]);
    const text = (await w.current(changed[0]!)).map((c) => c.text).join('\n');
    expect(text).toContain('A sentence the editors added today.');
    expect(text).not.toContain(PROMO);
    const now = (await w.state.getLearned!(
      BOILERPLATE_HOST_KIND,
      learningKey('docs', site.origin),
    )) as HostSampleJson;
    expect(now.model.digest).toBe(model);
  });

  it('a footer change (chrome): every page answers 200, the warm-up sees the new footer on all its pages, the model follows before any page is cut: no new version, nothing re-extracted or embedded', async () => {
    const before = await versions();
    site.setFooter('Copyright 2027 Acme Cloud Inc. All rights reserved. Made in Porto.');
    const embedded = w.embeddings.texts;
    // A new engine: the model and the per-document facts come back from the state.
    const report = await w.engine(sources, { warmUpPages: WARM_UP }).refresh({ all: true });
    const counts = report.totals;
    expect(counts.fetched200).toBe(24);
    expect(counts.notModified).toBe(3);
    expect(counts.reextracted).toBe(0);
    expect(counts.published).toBe(0);
    expect(counts.unchangedContent).toBe(24);
    expect(w.embeddings.texts - embedded).toBe(0);
    expect(await versions()).toEqual(before);
    for (const id of ids()) {
      const text = (await w.current(id)).map((c) => c.text).join('\n');
      expect(text).not.toContain('Made in Porto');
    }
    const now = (await w.state.getLearned!(
      BOILERPLATE_HOST_KIND,
      learningKey('docs', site.origin),
    )) as HostSampleJson;
    expect(now.model.blocks.length).toBe(4);
  });

  it('a notice on 5 of 24 pages is content, not chrome: those 5 get a new version with it, nothing is re-extracted, the model stays', async () => {
    const model = (
      (await w.state.getLearned!(
        BOILERPLATE_HOST_KIND,
        learningKey('docs', site.origin),
      )) as HostSampleJson
    ).model.digest;
    const before = await versions();
    const notice = 'This part of the API is in preview; its request format may still change.';
    site.setBanner(notice, (i) => i < 5);
    const report = await w.engine(sources, { warmUpPages: WARM_UP }).refresh({ all: true });
    expect(report.totals.fetched200).toBe(5);
    expect(report.totals.reextracted).toBe(0);
    expect(report.totals.published).toBe(5);
    const after = await versions();
    for (const [i, id] of ids().entries()) {
      expect(after.get(id) !== before.get(id)).toBe(i < 5);
      const text = (await w.current(id)).map((c) => c.text).join('\n');
      expect(text.includes(notice)).toBe(i < 5);
    }
    const now = (await w.state.getLearned!(
      BOILERPLATE_HOST_KIND,
      learningKey('docs', site.origin),
    )) as HostSampleJson;
    expect(now.model.digest).toBe(model);
  });
});

describe('boilerplate learning: selective re-extraction, title affixes, bounds, guards', () => {
  it('a banner added to 18 of 24 pages, learned only at the settle: exactly those 18 are re-extracted, the 6 others keep version and are not touched', async () => {
    const site = await startChromeSite({ pages: 24 });
    const w = await world();
    try {
      const sources = [source('docs', site.urls)];
      // 4 warm-up pages are fewer than minPages (5): the model moves only at the settle.
      const options = { warmUpPages: 4 };
      await w.engine(sources, options).refresh({ all: true });
      const ids = site.urls.map((u) => documentId('docs', u));
      const before = new Map<string, string | undefined>();
      for (const id of ids) before.set(id, (await w.state.getDocument(id))?.currentVersionId);
      const banner =
        'Planned maintenance: the console is read-only on Saturday morning while we upgrade the storage layer.';
      const on = (i: number) => i % 4 !== 0;
      site.setBanner(banner, on);
      const report = await w.engine(sources, options).refresh({ all: true });
      expect(report.totals.fetched200).toBe(18);
      expect(report.totals.notModified).toBe(6);
      expect(report.totals.reextracted).toBe(18);
      const model = (
        (await w.state.getLearned!(
          BOILERPLATE_HOST_KIND,
          learningKey('docs', site.origin),
        )) as HostSampleJson
      ).model;
      expect(model.blocks.length).toBe(5);
      for (const [i, id] of ids.entries()) {
        // Every document ends on the version it had before the banner: the banner is chrome.
        expect((await w.state.getDocument(id))?.currentVersionId).toBe(before.get(id));
        const text = (await w.current(id)).map((c) => c.text).join('\n');
        expect(text).not.toContain(banner);
        const facts = (await w.state.getLearned!(
          BOILERPLATE_DOC_KIND,
          id,
        )) as DocumentLearningFacts;
        expect(facts.model).toBe(model.digest);
        expect(facts.matched.length).toBe(on(i) ? 5 : 4);
      }
    } finally {
      await w.stop();
      await site.stop();
    }
  });

  it('on the SQLite state store, each refresh a new engine: the model and facts come back from the file, and a footer change gives no new version', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-boilerplate-'));
    const site = await startChromeSite({ pages: 24 });
    const w = await world(await openStateStore(`sqlite:${join(dir, 'state.sqlite')}`));
    try {
      const sources = [source('docs', site.urls)];
      const cold = await w.engine(sources, { warmUpPages: WARM_UP }).refresh({ all: true });
      expect(cold.totals.reextracted).toBe(0);
      expect(cold.totals.published).toBe(24);
      const ids = site.urls.map((u) => documentId('docs', u));
      const before = new Map<string, string | undefined>();
      for (const id of ids) before.set(id, (await w.state.getDocument(id))?.currentVersionId);
      site.setFooter('Copyright 2027 Acme Cloud Inc. All rights reserved. Made in Porto.');
      const report = await w.engine(sources, { warmUpPages: WARM_UP }).refresh({ all: true });
      expect(report.totals.fetched200).toBe(24);
      expect(report.totals.reextracted).toBe(0);
      expect(report.totals.published).toBe(0);
      for (const id of ids) {
        expect((await w.state.getDocument(id))?.currentVersionId).toBe(before.get(id));
        const facts = (await w.state.getLearned!(
          BOILERPLATE_DOC_KIND,
          id,
        )) as DocumentLearningFacts;
        expect(facts.versionId).toBe(before.get(id));
      }
    } finally {
      await w.stop();
      await site.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('warm-up pages that never reach a cut (404s) do not hold their host back', async () => {
    const site = await startChromeSite({ pages: 24 });
    const w = await world();
    try {
      const urls = [...site.urls, `${site.origin}/p/998`, `${site.origin}/p/999`];
      // Every page of the host is a warm-up page, the two 404s too.
      const report = await w
        .engine([source('docs', urls)], { warmUpPages: 26 })
        .refresh({ all: true });
      expect(report.totals.gone).toBe(2);
      expect(report.totals.published).toBe(24);
      expect(report.totals.reextracted).toBe(0);
      const text = (await w.current(documentId('docs', site.urls[3]!))).map((c) => c.text);
      expect(text.join('\n')).not.toContain(PROMO);
    } finally {
      await w.stop();
      await site.stop();
    }
  });

  it('learned title affixes leave heading-path roots; without learning the site name stays', async () => {
    const site = await startChromeSite({ pages: 12, noH1: true });
    const on = await world();
    const off = await world();
    try {
      const sources = [source('docs', site.urls)];
      await on.engine(sources, { warmUpPages: 6 }).refresh({ all: true });
      await off.engine(sources, false).refresh({ all: true });
      // Page 0's title ("Overview | Guides | Acme Cloud") keeps a suffix no other page shares.
      for (const u of site.urls.slice(1)) {
        const id = documentId('docs', u);
        const roots = async (x: World) =>
          (await x.current(id)).map((c) => String(c.metadata[FIELDS.headingPath]));
        for (const p of await roots(on)) expect(p).not.toContain('| Guides');
        expect((await roots(off)).every((p) => p.includes('| Guides'))).toBe(true);
      }
      const host = (await on.state.getLearned!(
        BOILERPLATE_HOST_KIND,
        learningKey('docs', site.origin),
      )) as HostSampleJson;
      expect(host.model.titleAffixes?.suffixes).toContain(' | Guides');
    } finally {
      await on.stop();
      await off.stop();
      await site.stop();
    }
  });

  it('the sample is bounded: at most samplePages pages of at most blocksPerPage digests; a page seen again replaces its entry', async () => {
    const learner = new BoilerplateLearner(new InMemoryStateStore(), {
      samplePages: 10,
      warmUpPages: 4,
      blocksPerPage: 8,
      minPages: 5,
    });
    const host = await learner.host('s example.org', 's');
    const shared = ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb'];
    const learning = (i: number) => ({
      digests: [
        shared[0]!,
        ...Array.from({ length: 20 }, (_, j) => `${i}`.padStart(8, '0') + `${j}`.padStart(8, '0')),
        shared[1]!,
      ],
      matched: [],
      rootTitle: `Page ${i}`,
      root: `Page ${i}`,
    });
    for (let i = 0; i < 200; i++) host.observe(`s:${i}`, learning(i), learner.settings);
    const json = host.toJSON();
    expect(json.pages.length).toBe(10);
    for (const p of json.pages) {
      expect(p.blocks.length).toBe(8);
      // First and last halves: the shared head and tail blocks are kept.
      expect(p.blocks[0]).toBe(shared[0]);
      expect(p.blocks.at(-1)).toBe(shared[1]);
    }
    const again = json.pages[0]!.id;
    host.observe(again, learning(Number(again.slice(2))), learner.settings);
    expect(host.size).toBe(10);
    expect([...host.compute(learner.settings).blocks].sort()).toEqual(shared);
  });

  it('a page the model would leave without text keeps it, and so its version', async () => {
    const pipeline = new ExtractPipeline({ maxTokens: 200 });
    const html =
      '<!DOCTYPE html><html><head><title>Lonely</title></head><body><main><article><h1>Lonely</h1><p>This page holds a single paragraph of text that the host also prints elsewhere, long enough to be read as the article by the extractor.</p></article></main></body></html>';
    const input = {
      text: html,
      contentType: 'text/html',
      url: 'http://example.org/a',
      finalUrl: 'http://example.org/a',
      acquisition: 'raw' as const,
    };
    const ctx = { documentId: 'docs:a', sourceId: 'docs', retrievedAt: '2026-12-01T00:00:00Z' };
    const plain = await pipeline.processLearned(input, ctx, undefined);
    if (plain.kind !== 'document' || plain.learning === undefined) throw new Error('no document');
    const everything = learnedModelOf({
      format: 'ragfresh-host-sample/1',
      key: 'docs example.org',
      model: { digest: '', blocks: plain.learning.digests },
      pages: [],
    });
    const cut = await pipeline.processLearned(input, ctx, everything);
    if (cut.kind !== 'document') throw new Error('no document');
    expect(cut.learning?.matched).toEqual(plain.learning.digests);
    expect(cut.versionId).toBe(plain.versionId);
    expect(cut.text).toContain('single paragraph');
  });

  it('bad options are refused with INVALID_ARGUMENT and one line', () => {
    for (const bad of [{ minShare: 0 }, { minPages: 1 }, { samplePages: 3 }, { warmUpPages: 100 }])
      expect(() => new BoilerplateLearner(new InMemoryStateStore(), bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
  });
});
