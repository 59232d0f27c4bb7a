import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMemoryConnector, type MemoryConnector } from '@ragfresh/connector-memory';
import { documentId, FIELDS, InMemoryStateStore, Publisher, type StateStore } from '@ragfresh/core';
import { MemoryRawSnapshotStore } from '@ragfresh/fetch';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countingEmbeddings } from './harness.js';
import {
  decideCheckpoint,
  EngineContext,
  type EngineSource,
  ExtractPipeline,
  IMPORT_REVIEW,
  type ImportReport,
  importRows,
  parseExport,
  reconcileInventory,
} from './internals.js';

const FIXTURES = join(import.meta.dirname, 'fixtures/import');
const read = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
const strict: EngineSource = {
  id: 'site',
  urls: ['https://x.org/'],
  everyMs: 3_600_000,
  identity: { mode: 'strict' },
};
const id = (path: string) => documentId('site', `https://x.org${path}`, strict.identity);

interface Setup {
  ctx: EngineContext;
  state: StateStore;
  connector: MemoryConnector;
  embeddings: ReturnType<typeof countingEmbeddings>;
  publisher: Publisher;
}

async function setup(): Promise<Setup> {
  const connector = createMemoryConnector();
  await connector.open({ dimensions: 64 });
  const state = new InMemoryStateStore();
  const publisher = await Publisher.open({ connector, state });
  const embeddings = countingEmbeddings();
  const ctx = new EngineContext({
    sources: [strict],
    connector,
    state,
    publisher,
    fetcher: undefined as never,
    pipeline: new ExtractPipeline({ maxTokens: 200 }),
    embeddings,
    snapshots: new MemoryRawSnapshotStore(),
    batchSize: 3,
  });
  return { ctx, state, connector, embeddings, publisher };
}

const importFile = (
  s: Setup,
  name: string,
  extra: Partial<Parameters<typeof importRows>[1]> = {},
) => {
  const parsed = parseExport(read(name), { format: 'crawler' });
  return importRows(s.ctx, {
    source: strict,
    rows: parsed.rows,
    label: name,
    coverage: parsed.coverage,
    ...extra,
  });
};

const eventsOf = (report: ImportReport, url: string) =>
  report.events.filter((e) => e.url === url).map((e) => e.event);

async function visible(s: Setup, docId: string) {
  const epoch = await s.connector.readEpoch();
  return (await s.connector.listChunks(docId)).filter(
    (c) => Number(c.metadata[FIELDS.from]) <= epoch && epoch < Number(c.metadata[FIELDS.to]),
  );
}

describe('import delta rules (section 2 of issue 14), one row of rules.jsonl each', () => {
  let s: Setup;
  let report: ImportReport;
  let untouchedBefore: string;

  beforeEach(async () => {
    s = await setup();
    const base = await importFile(s, 'baseline.jsonl');
    expect(base.counts.published).toBe(5);
    untouchedBefore = JSON.stringify(await s.state.getDocument(id('/untouched')));
    report = await importFile(s, 'rules.jsonl');
  });
  afterEach(async () => {
    await s.publisher.close();
  });

  it('canonical-is-provenance: the requested URL stays the identity; the new canonical strands nothing', async () => {
    const rec = await s.state.getDocument(id('/a'));
    expect(rec?.history?.at(-1)?.event).toBe('replaced');
    const chunks = await visible(s, id('/a'));
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.every((c) => c.metadata[FIELDS.canonicalUrl] === 'https://x.org/renamed-a')).toBe(
      true,
    );
    expect(chunks.every((c) => c.metadata[FIELDS.acquisition] === 'export')).toBe(true);
    // No second document under the canonical URL.
    expect(
      await s.state.getDocument(documentId('site', 'https://x.org/renamed-a', strict.identity)),
    ).toBeUndefined();
  });

  it.each([
    ['credentials', 'https://user:secret@x.org/private', /credentials/],
    ['strict-query', 'https://x.org/search?q=pricing', /query/],
    ['strict-fragment', 'https://x.org/guide#install', /fragment/],
    ['non-http-scheme', 'ftp://x.org/file.txt', /scheme/],
  ])('%s: the row goes to review as "source identity needs review"', async (_rule, url, why) => {
    const items = (await s.state.listReviewItems()).filter((i) => i.url === url);
    expect(items).toHaveLength(1);
    expect(items[0]!.reason).toBe(IMPORT_REVIEW.identity);
    expect(items[0]!.evidence.join(' ')).toMatch(why);
    expect(eventsOf(report, url)).toEqual(['review']);
  });

  it('no-timezone: a fetch time without a timezone goes to review, nothing is published', async () => {
    const items = (await s.state.listReviewItems()).filter((i) => i.url === 'https://x.org/tz');
    expect(items.map((i) => i.reason)).toEqual([IMPORT_REVIEW.fetchTime]);
    expect(await s.state.getDocument(id('/tz'))).toBeUndefined();
  });

  it('empty-content: goes to review, nothing is published', async () => {
    const items = (await s.state.listReviewItems()).filter((i) => i.url === 'https://x.org/empty');
    expect(items.map((i) => i.reason)).toEqual([IMPORT_REVIEW.empty]);
    expect(await s.state.getDocument(id('/empty'))).toBeUndefined();
  });

  it('older-than-stored: ignored, the stored version stays', async () => {
    const rec = await s.state.getDocument(id('/stale'));
    expect(eventsOf(report, 'https://x.org/stale')).toEqual(['stale']);
    expect(rec?.timestamps.retrievedAt).toBe('2026-10-01T00:00:00.000Z');
    expect((await visible(s, id('/stale'))).map((c) => c.text).join(' ')).toContain('current text');
  });

  it('conflict-at-one-time: the same fetch time with another version goes to review; the current version stays', async () => {
    const items = (await s.state.listReviewItems()).filter(
      (i) => i.url === 'https://x.org/conflict',
    );
    expect(items.map((i) => i.reason)).toEqual([IMPORT_REVIEW.conflict]);
    expect((await visible(s, id('/conflict'))).map((c) => c.text).join(' ')).toContain(
      'Conflict base',
    );
  });

  it('conflict-in-export: two versions of one URL at one time in the export both go to review', async () => {
    const items = (await s.state.listReviewItems()).filter((i) => i.url === 'https://x.org/twice');
    expect(items.map((i) => i.reason)).toEqual([IMPORT_REVIEW.conflict, IMPORT_REVIEW.conflict]);
    expect(await s.state.getDocument(id('/twice'))).toBeUndefined();
  });

  it('same-version-noop and absence: nothing written; an unmentioned document is byte-identical', async () => {
    expect(eventsOf(report, 'https://x.org/same')).toEqual([]);
    expect(report.counts.unchanged).toBe(1);
    expect(JSON.stringify(await s.state.getDocument(id('/untouched')))).toBe(untouchedBefore);
    expect((await s.state.listReviewItems()).some((i) => i.kind === 'deletion')).toBe(false);
  });

  it('duplicate-group: identical content on two URLs shares one group id; both stay, each citing its own URL', async () => {
    expect(report.duplicateGroups).toHaveLength(1);
    const group = report.duplicateGroups[0]!;
    expect(group.id).toMatch(/^dup-[0-9a-f]{16}$/);
    expect(group.documents.map((d) => d.url).sort()).toEqual([
      'https://x.org/dup-1',
      'https://x.org/dup-2',
    ]);
    for (const path of ['/dup-1', '/dup-2']) {
      const chunks = await visible(s, id(path));
      expect(chunks.length).toBeGreaterThan(0);
      expect(chunks.every((c) => c.metadata[FIELDS.url] === `https://x.org${path}`)).toBe(true);
      const rec = await s.state.getDocument(id(path));
      expect(
        rec?.history?.some((h) => h.event === 'duplicate-group' && h.reasons[0] === group.id),
      ).toBe(true);
    }
  });

  it("provided-chunks: the export's boundaries and heading paths are the version", async () => {
    const chunks = (await visible(s, id('/chunked'))).sort(
      (a, b) => Number(a.metadata[FIELDS.ordinal]) - Number(b.metadata[FIELDS.ordinal]),
    );
    expect(chunks.map((c) => c.text)).toEqual(['Part one.', 'Part two.']);
    expect(chunks.map((c) => c.metadata[FIELDS.headingPath])).toEqual([
      '["Guide","One"]',
      '["Guide","Two"]',
    ]);
  });

  it('a retried import queues nothing and creates no review item twice', async () => {
    const embedded = s.embeddings.texts;
    const epoch = await s.connector.readEpoch();
    const reviews = (await s.state.listReviewItems()).length;
    const again = await importFile(s, 'rules.jsonl');
    expect(again.counts.candidates).toBe(0);
    expect(again.counts.published).toBe(0);
    expect(s.embeddings.texts).toBe(embedded);
    expect(await s.connector.readEpoch()).toBe(epoch);
    expect((await s.state.listReviewItems()).length).toBe(reviews);
  });

  it('counts every row once', () => {
    const c = report.counts;
    expect(c.rows).toBe(15);
    // 4 identity + tz + empty + 1 conflict with state + 2 conflicting rows in the export
    expect(c.review).toBe(9);
    expect(c.stale).toBe(1);
    expect(c.unchanged).toBe(1);
    expect(c.published).toBe(4); // /a, /dup-1, /dup-2, /chunked
  });
});

describe('import chunking policy', () => {
  it("rechunk: the source says so, and the Markdown is cut by ragfresh's chunker instead (another version)", async () => {
    const a = await setup();
    const b = await setup();
    const row = parseExport(read('rules.jsonl'), { format: 'crawler' }).rows.filter(
      (r) => r.url === 'https://x.org/chunked',
    );
    await importRows(a.ctx, { source: strict, rows: row });
    await importRows(b.ctx, { source: strict, rows: row, chunking: 'rechunk' });
    const va = (await a.state.getDocument(id('/chunked')))!.currentVersionId;
    const vb = (await b.state.getDocument(id('/chunked')))!.currentVersionId;
    expect(va).not.toBe(vb);
    const texts = (await visible(b, id('/chunked'))).map((c) => c.text).join('\n');
    expect(texts).toContain('Part one.');
    expect(texts).toContain('Part two.');
    await a.publisher.close();
    await b.publisher.close();
  });
});

describe('vendor formats', () => {
  it('Apify Website Content Crawler: nested crawl.* / metadata.* fields; a crawler 404 deletes and publishes nothing', async () => {
    const s = await setup();
    const parsed = parseExport(read('apify-wcc.json'), { format: 'apify-wcc' });
    expect(parsed.rows[0]).toMatchObject({
      url: 'https://x.org/w1',
      loadedUrl: 'https://x.org/w1/',
      loadedTime: '2026-10-03T08:00:00.000Z',
      referrerUrl: 'https://x.org/',
      canonicalUrl: 'https://x.org/w1-canonical',
      title: 'W1 title',
      httpStatus: 200,
    });
    expect(parsed.coverage.complete).toBe(false);
    const r = await importRows(s.ctx, { source: strict, rows: parsed.rows });
    expect(r.counts.published).toBe(1);
    expect(r.counts.ignored).toBe(1);
    const chunks = await visible(s, id('/w1'));
    expect(chunks[0]!.metadata[FIELDS.title]).toBe('W1 title');
    expect(chunks[0]!.metadata[FIELDS.finalUrl]).toBe('https://x.org/w1/');
    await s.publisher.close();
  });

  it('Firecrawl: removed / hidden become deletion proposals with that evidence, never deletions; a scraping crawl is partial', async () => {
    const s = await setup();
    await importFile(s, 'baseline.jsonl');
    const parsed = parseExport(read('firecrawl-partial.json'), { format: 'firecrawl' });
    expect(parsed.coverage.complete).toBe(false);
    expect(parsed.coverage.reasons.join(' ')).toMatch(/"scraping"/);
    const r = await importRows(s.ctx, {
      source: strict,
      rows: parsed.rows,
      fetchedAt: '2026-10-05T00:00:00Z',
    });
    expect(r.counts.deletionProposed).toBe(2);
    const deletions = (await s.state.listReviewItems()).filter((i) => i.kind === 'deletion');
    expect(deletions.map((d) => d.url).sort()).toEqual(['https://x.org/a', 'https://x.org/same']);
    expect(deletions.find((d) => d.url === 'https://x.org/a')!.evidence.join(' ')).toMatch(
      /changeStatus "removed"/,
    );
    expect(deletions.find((d) => d.url === 'https://x.org/same')!.evidence.join(' ')).toMatch(
      /visibility "hidden"/,
    );
    // Still current, still visible.
    expect((await visible(s, id('/a'))).length).toBeGreaterThan(0);
    expect((await s.state.getDocument(id('/a')))?.currentVersionId).toBeDefined();
    expect(r.counts.published).toBe(1); // /new, identity from metadata.sourceURL
    expect(await s.state.getDocument(id('/new'))).toBeDefined();
    await s.publisher.close();
  });

  it("Web Scraper Cloud CSV: the sitemap's columns mapped by config; a stopped job is partial", async () => {
    const parsed = parseExport(read('webscraper.csv'), {
      format: 'webscraper',
      webscraper: { url: 'page-href', text: ['body'], title: 'title' },
      jobStatus: 'stopped',
    });
    expect(parsed.rows.map((r) => [r.url, r.title, r.text])).toEqual([
      ['https://x.org/ws1', 'WS one', 'First, with a comma\nand a newline.'],
      ['https://x.org/ws2', 'WS two', 'Second body.'],
    ]);
    expect(parsed.coverage).toEqual({
      complete: false,
      reasons: ['scraping job status is "stopped", not "finished"'],
    });
    expect(
      parseExport(read('webscraper.csv'), {
        format: 'webscraper',
        webscraper: { text: ['body'] },
        jobStatus: 'finished',
      }).coverage.complete,
    ).toBe(true);
    expect(() => parseExport(read('webscraper.csv'), { format: 'webscraper' })).toThrow(
      /--map text=/,
    );
  });
});

describe('coverage and checkpoints', () => {
  const complete = { complete: true, reasons: [] };
  const partial = { complete: false, reasons: ['crawl status is "scraping"'] };
  const previous = {
    sourceId: 'site',
    since: '2026-10-01T00:00:00.000Z',
    advancedAt: '',
    basis: '',
  };

  it.each([
    [
      'policy never',
      { policy: 'never' as const, coverage: complete, crawlStartedAt: '2026-10-16T00:00:00Z' },
      /policy is "never"/,
    ],
    [
      'partial export',
      {
        policy: 'complete-coverage' as const,
        coverage: partial,
        crawlStartedAt: '2026-10-16T00:00:00Z',
      },
      /partial export/,
    ],
    [
      'no crawl start (largest loadedTime is no proof)',
      { policy: 'complete-coverage' as const, coverage: complete },
      /largest loadedTime proves nothing/,
    ],
    [
      'crawl asked from after the checkpoint',
      {
        policy: 'complete-coverage' as const,
        coverage: complete,
        previous,
        crawledSince: '2026-10-05T00:00:00Z',
        crawlStartedAt: '2026-10-16T00:00:00Z',
      },
      /gap/,
    ],
  ])('does not advance: %s', (_name, input, why) => {
    const d = decideCheckpoint(input);
    expect(d.advance).toBe(false);
    expect(d.reasons.join(' ')).toMatch(why);
  });

  it('advances under the explicit policy after a complete export, to the crawl start minus the overlap', () => {
    const d = decideCheckpoint({
      policy: 'complete-coverage',
      coverage: complete,
      previous,
      crawledSince: previous.since,
      crawlStartedAt: '2026-10-16T12:00:00Z',
      overlapMs: 7_200_000,
    });
    expect(d).toEqual({ advance: true, since: '2026-10-16T10:00:00.000Z', reasons: [] });
  });

  it('a partial inventory nominates nothing; a complete one nominates the missing live documents into review, deleting nothing', async () => {
    const s = await setup();
    await importFile(s, 'baseline.jsonl');
    const urls = [
      'https://x.org/a',
      'https://x.org/same',
      'https://x.org/conflict',
      'https://x.org/stale',
    ];
    const refused = await reconcileInventory(s.ctx, {
      source: strict,
      urls,
      coverage: partial,
      label: 'inv.json',
    });
    expect(refused.nominated).toBe(0);
    expect(refused.missing.map((m) => m.url)).toEqual(['https://x.org/untouched']);
    expect(await s.state.listReviewItems()).toHaveLength(0);
    const done = await reconcileInventory(s.ctx, {
      source: strict,
      urls,
      coverage: complete,
      label: 'inv.json',
    });
    expect(done.nominated).toBe(1);
    const [item] = await s.state.listReviewItems();
    expect(item).toMatchObject({
      kind: 'deletion',
      url: 'https://x.org/untouched',
      status: 'pending',
    });
    expect(item!.evidence[0]).toMatch(/absent from inventory inv\.json/);
    expect((await visible(s, id('/untouched'))).length).toBeGreaterThan(0);
    await s.publisher.close();
  });
});
