import { createMemoryConnector } from '@ragfresh/connector-memory';
import { documentId, InMemoryStateStore, Publisher, type Reason, reasonLine } from '@ragfresh/core';
import { MemoryRawSnapshotStore, type Resolver } from '@ragfresh/fetch';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countingEmbeddings } from './harness.js';
import {
  decideCheckpoint,
  EngineContext,
  type EngineSource,
  EXPORT_FORMATS,
  type ExportFormat,
  type ExportItem,
  ExportReader,
  ExtractPipeline,
  type ImportOptions,
  importRows,
  MAX_FUTURE_SKEW_MS,
  type PageLimits,
  type PagePipeline,
  type ParseExportOptions,
  parseExport,
  readExport,
} from './internals.js';

const site: EngineSource = {
  id: 'site',
  urls: ['https://x.org/'],
  everyMs: 3_600_000,
  identity: { mode: 'normalize' },
};
const docId = (path: string) => documentId('site', `https://x.org${path}`, site.identity);
const HOUR = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();
const row = (path: string, extra: Record<string, unknown> = {}) => ({
  url: `https://x.org${path}`,
  loadedTime: ago(HOUR),
  markdown: `# Page ${path}\n\nThe text of ${path}, long enough to be a page of its own.`,
  ...extra,
});
const jsonl = (rows: readonly object[]) => rows.map((r) => JSON.stringify(r)).join('\n');

async function setup(
  pageLimits: Partial<PageLimits> = {},
  sources = [site],
  pipeline: PagePipeline = new ExtractPipeline({ maxTokens: 64 }),
) {
  const connector = createMemoryConnector();
  await connector.open({ dimensions: 64 });
  const state = new InMemoryStateStore();
  const publisher = await Publisher.open({ connector, state });
  const ctx = new EngineContext({
    sources,
    connector,
    state,
    publisher,
    fetcher: undefined as never,
    pipeline,
    embeddings: countingEmbeddings(),
    snapshots: new MemoryRawSnapshotStore(),
    batchSize: 3,
    pageLimits,
  });
  return { ctx, state, publisher };
}

// No DNS in unit tests: names resolve from this table (unknown ones answer no address).
const resolver =
  (table: Record<string, string>): Resolver =>
  async (host) => {
    const address = table[host];
    if (address === undefined)
      throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
const publicDns = resolver({ 'x.org': '93.184.216.34' });

type Setup = Awaited<ReturnType<typeof setup>>;
const importText = (
  s: Setup,
  text: string,
  extra: Partial<ImportOptions> = {},
  format: ExportFormat = 'crawler',
) => {
  const stream = readExport([text], { format });
  return importRows(s.ctx, {
    source: site,
    rows: stream.items,
    network: { resolver: publicDns },
    ...extra,
  });
};

const refusedCodes = (r: Awaited<ReturnType<typeof importRows>>) =>
  r.events.filter((e) => e.event === 'refused').map((e) => e.reasons[0]!.code);

function readAll(
  chunks: readonly string[],
  csv = false,
  limits = { maxRecordChars: 1_000_000, maxDepth: 64 },
) {
  const reader = new ExportReader({ csv, limits });
  const out: ExportItem[] = [];
  for (const c of chunks) out.push(...reader.write(c));
  out.push(...reader.end());
  return { items: out, envelope: reader.envelope };
}
const oneCharChunks = (text: string) => [...text];

describe('the streaming export reader', () => {
  it('JSON lines: the same records and lines whether the text comes whole or one character at a time', () => {
    const text = `${jsonl([row('/a'), row('/b', { markdown: 'a "quoted" \\ back\nslash' })])}\n\n${JSON.stringify(row('/c'))}\n`;
    const whole = readAll([text]).items;
    expect(whole.map((i) => [i.kind, i.line])).toEqual([
      ['record', 1],
      ['record', 2],
      ['record', 4],
    ]);
    expect((whole[1] as { value: { markdown: string } }).value.markdown).toBe(
      'a "quoted" \\ back\nslash',
    );
    expect(readAll(oneCharChunks(text)).items).toEqual(whole);
    // Blank lines before the first record count, whole or in blank chunks.
    const later = readAll(['\n', ' \n', `\n${text}`]).items;
    expect(later.map((i) => i.line)).toEqual([4, 5, 7]);
    expect(readAll([`\n \n\n${text}`]).items).toEqual(later);
  });

  it('a JSON array and an envelope stream element by element; the envelope keeps its own fields wherever data sits', () => {
    const array = JSON.stringify([row('/a'), row('/b')], null, 2);
    expect(readAll(oneCharChunks(array)).items.map((i) => [i.kind, i.line])).toEqual([
      ['record', 1],
      ['record', 2],
    ]);
    for (const envelope of [
      { data: [row('/a'), row('/b')], status: 'completed', total: 2, completed: 2 },
      { status: 'completed', total: 2, completed: 2, data: [row('/a'), row('/b')] },
    ]) {
      const r = readAll(oneCharChunks(JSON.stringify(envelope, null, 1)));
      expect(r.items.map((i) => i.kind)).toEqual(['record', 'record']);
      expect(r.envelope).toMatchObject({ status: 'completed', total: 2, data: [] });
      // The envelope's fields decide coverage even when they come after the data.
      const parsed = parseExport(JSON.stringify(envelope), { format: 'firecrawl' });
      expect(parsed.coverage).toEqual({ complete: true, reasons: [] });
      expect(parsed.rows.map((r) => r.url)).toEqual(['https://x.org/a', 'https://x.org/b']);
      const scraping = parseExport(JSON.stringify({ ...envelope, status: 'scraping' }), {
        format: 'firecrawl',
      });
      expect(scraping.coverage.complete).toBe(false);
    }
    // A record of its own (a `url` first) is never taken for an envelope.
    const single = readAll([JSON.stringify({ url: 'https://x.org/d', data: [1, 2] })]);
    expect(single.items.map((i) => i.kind)).toEqual(['record']);
  });

  it('a record over the cap is refused as it streams, never held: 600 M chars pass (more than a string can hold), the next record is read', async () => {
    const head = '{"url":"https://x.org/huge","markdown":"';
    const piece = 'x'.repeat(1 << 20);
    function* chunks() {
      yield head;
      // 600 × 2^20 chars: joined, it would exceed V8's largest string (about 2^29 chars).
      for (let i = 0; i < 600; i++) yield piece;
      yield `"}\n${JSON.stringify(row('/after'))}\n`;
    }
    const items: ExportItem[] = [];
    const reader = new ExportReader({
      csv: false,
      limits: { maxRecordChars: 8_000_000, maxDepth: 64 },
    });
    for (const c of chunks()) items.push(...reader.write(c));
    items.push(...reader.end());
    expect(items.map((i) => i.kind)).toEqual(['refused', 'record']);
    expect(items[0]).toMatchObject({ line: 1, url: 'https://x.org/huge' });
    expect((items[0] as { reason: Reason }).reason).toMatchObject({
      code: 'record-too-large',
      detail: expect.stringMatching(/^more than 8000000/),
    });
  });

  it('truncated, broken and deeply nested records are unreadable or refused, and the records around them are read', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const text = [
      JSON.stringify(row('/a')),
      '{"url":"https://x.org/broken","markdown":"cut here',
      '{"url":"https://x.org/cut-after-a-string","markdown":"whole"',
      deep,
      JSON.stringify(row('/b')),
      '{"url":"https://x.org/last","markdown":"the file ends insi',
    ].join('\n');
    const { items } = readAll([text]);
    expect(items.map((i) => [i.kind, i.line])).toEqual([
      ['record', 1],
      ['unreadable', 2],
      ['unreadable', 3],
      ['refused', 4],
      ['record', 5],
      ['unreadable', 6],
    ]);
    expect((items[3] as { reason: Reason }).reason.code).toBe('record-too-deep');
    expect((items[5] as { reason: string }).reason).toMatch(/^truncated/);
    // Control: the same lines without the broken ones are all records.
    expect(
      readAll([[JSON.stringify(row('/a')), JSON.stringify(row('/b'))].join('\n')]).items.map(
        (i) => i.kind,
      ),
    ).toEqual(['record', 'record']);
  });

  it('CSV streams record by record: quoted newlines, doubled quotes and CRLF split across chunks', () => {
    const csv = 'url,body\r\nhttps://x.org/1,"one, ""quoted""\r\nline"\r\nhttps://x.org/2,two\r\n';
    const whole = readAll([csv], true).items;
    expect(whole).toEqual([
      { kind: 'record', line: 2, value: { url: 'https://x.org/1', body: 'one, "quoted"\r\nline' } },
      { kind: 'record', line: 4, value: { url: 'https://x.org/2', body: 'two' } },
    ]);
    expect(readAll(oneCharChunks(csv), true).items).toEqual(whole);
    const cut = readAll(['url,body\nhttps://x.org/1,"never closed'], true).items;
    expect(cut).toEqual([
      { kind: 'unreadable', line: 2, reason: 'truncated: the input ends inside a quoted field' },
    ]);
    const big = readAll(
      [`url,body\nhttps://x.org/1,${'y'.repeat(5000)}\nhttps://x.org/2,ok\n`],
      true,
      {
        maxRecordChars: 1000,
        maxDepth: 64,
      },
    ).items;
    expect(big.map((i) => i.kind)).toEqual(['refused', 'record']);
  });

  it('invalid UTF-8 is decoded with replacement characters, never a crash', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"url":"https://x.org/u","markdown":"caf'),
      Buffer.from([0xc3, 0x28, 0xff, 0xfe]),
      Buffer.from('"}\n'),
    ]);
    const items: unknown[] = [];
    for await (const i of readExport([bytes.subarray(0, 40), bytes.subarray(40)], {
      format: 'crawler',
    }).items)
      items.push(i);
    expect(items).toEqual([
      { kind: 'row', row: { line: 1, url: 'https://x.org/u', markdown: 'caf\uFFFD(\uFFFD\uFFFD' } },
    ]);
  });
});

describe('row guards: the limits, host policy and clock skew of fetched pages', () => {
  it('the page limits: too large, a long run, too many provided chunks, too many cut chunks are refused by reason; a normal row publishes', async () => {
    const s = await setup({ maxChars: 20_000, maxChunks: 3 });
    const manyChunks = Array.from({ length: 4 }, (_, i) => ({
      text: `Part ${i}.`,
      headingPath: [],
    }));
    const sections = Array.from(
      { length: 12 },
      (_, i) => `## Section ${i}\n\n${'Words of the section. '.repeat(30)}`,
    ).join('\n\n');
    const r = await importText(
      s,
      jsonl([
        row('/big', { markdown: 'word '.repeat(5_000) }),
        row('/run', { markdown: `# Run\n\n${'y'.repeat(1_500)}` }),
        row('/provided', { chunks: manyChunks }),
        row('/cut', { markdown: `# Cut\n\n${sections}` }),
        row('/fine'),
      ]),
    );
    expect(refusedCodes(r).sort()).toEqual([
      'page-too-large',
      'text-run-too-long',
      'too-many-chunks',
      'too-many-chunks',
    ]);
    expect(r.refusedBy).toEqual({
      'page-too-large': 1,
      'text-run-too-long': 1,
      'too-many-chunks': 2,
    });
    expect(r.counts).toMatchObject({ rows: 5, refused: 4, published: 1, review: 0 });
    expect(await s.state.getDocument(docId('/fine'))).toBeDefined();
    expect(await s.state.getDocument(docId('/big'))).toBeUndefined();
    await s.publisher.close();
  });

  it('a row the pipeline throws on is refused (extract-failed), the import goes on', async () => {
    const inner = new ExtractPipeline({ maxTokens: 64 });
    const s = await setup({}, [site], {
      pipelineKey: inner.pipelineKey,
      process: (input, context) => {
        if (input.url.endsWith('/boom')) throw new RangeError('Maximum call stack size exceeded');
        return inner.process(input, context);
      },
    });
    const r = await importText(s, jsonl([row('/boom'), row('/fine')]));
    expect(r.refusedBy).toEqual({ 'extract-failed': 1 });
    expect(r.counts).toMatchObject({ refused: 1, review: 0, published: 1 });
    await s.publisher.close();
  });

  it('hosts: metadata addresses, private addresses, other domains and an off-site loadedUrl are refused; the source host publishes', async () => {
    const s = await setup();
    const r = await importText(
      s,
      jsonl([
        { ...row('/m'), url: 'http://169.254.169.254/latest/meta-data/' },
        { ...row('/m6'), url: 'http://[fd00:ec2::254]/latest' },
        { ...row('/mg'), url: 'http://metadata.google.internal/computeMetadata/v1/' },
        { ...row('/mapped'), url: 'http://[::ffff:169.254.169.254]/' },
        { ...row('/p'), url: 'http://10.0.0.1/admin' },
        { ...row('/o'), url: 'https://docs.other.example/pricing' },
        row('/redirected', { loadedUrl: 'https://evil.example/landing' }),
        row('/ok', { loadedUrl: 'https://www.x.org/ok/' }),
      ]),
    );
    expect(refusedCodes(r)).toEqual([
      'metadata-address',
      'metadata-address',
      'metadata-address',
      'metadata-address',
      'ssrf-refused',
      'off-source-host',
      'off-source-host',
    ]);
    const p = r.events.find((e) => e.url === 'http://10.0.0.1/admin')!;
    expect(p.reasons.map(reasonLine)[0]).toMatch(/fetch\.allow/);
    expect(r.counts.published).toBe(1);
    expect(await s.state.getDocument(docId('/ok'))).toBeDefined();
    await s.publisher.close();
  });

  it("the network policy is the fetcher's: an allow-list opens a private host, never a metadata address, and a source name resolving to a private address is refused", async () => {
    const intranet: EngineSource = {
      ...site,
      urls: ['http://10.0.0.1/', 'http://169.254.169.254/', 'https://x.org/'],
    };
    const s = await setup({}, [intranet]);
    const rows = jsonl([
      { ...row('/a'), url: 'http://10.0.0.1/docs' },
      { ...row('/b'), url: 'http://169.254.169.254/latest' },
      row('/c'),
    ]);
    const run = (network: ImportOptions['network']) =>
      importRows(s.ctx, {
        source: intranet,
        rows: readExport([rows], { format: 'crawler' }).items,
        network,
      });
    // The allow-list lists both addresses exactly (the only way the fetcher opens a metadata one).
    const allowed = await run({
      policy: { allow: ['10.0.0.1', '169.254.169.254'] },
      resolver: resolver({ 'x.org': '10.9.9.9' }),
    });
    expect(refusedCodes(allowed)).toEqual(['metadata-address', 'ssrf-refused']);
    expect(
      allowed.events.find((e) => e.url === 'https://x.org/c')!.reasons.map(reasonLine)[0],
    ).toMatch(/x\.org.*10\.9\.9\.9.*private/);
    expect(allowed.counts.published).toBe(1); // 10.0.0.1, opened by fetch.allow
    // Control: without the allow-list the private address is refused too; with public DNS x.org publishes.
    const closed = await run({ resolver: publicDns });
    expect(refusedCodes(closed)).toEqual(['ssrf-refused', 'metadata-address']);
    expect(closed.counts.published).toBe(1);
    // A name that resolves to a metadata address is refused even when that address is listed.
    const sneaky = await run({
      policy: { allow: ['169.254.169.254', '10.0.0.1'] },
      resolver: resolver({ 'x.org': '169.254.169.254' }),
    });
    expect(sneaky.refusedBy['metadata-address']).toBe(2);
    await s.publisher.close();
  });

  it(`fetch times more than ${MAX_FUTURE_SKEW_MS / 60_000} minutes ahead are refused and never make later correct rows stale`, async () => {
    const s = await setup();
    const first = await importText(
      s,
      jsonl([
        row('/a', { loadedTime: '2030-01-01T00:00:00Z', markdown: '# A\n\nFrom the future.' }),
        row('/a', { loadedTime: ago(2 * HOUR), markdown: '# A\n\nThe real text.' }),
        row('/skew', { loadedTime: ahead(2 * 60_000) }),
      ]),
    );
    expect(refusedCodes(first)).toEqual(['future-fetch-time']);
    expect(first.counts).toMatchObject({ stale: 0, published: 2 });
    const rec = await s.state.getDocument(docId('/a'));
    expect(Date.parse(rec!.timestamps.retrievedAt!)).toBeLessThan(Date.now());
    // A later import of a newer, correct row replaces it (no 2030 mark to be stale against).
    const second = await importText(
      s,
      jsonl([row('/a', { loadedTime: ago(HOUR), markdown: '# A\n\nNewer text.' })]),
    );
    expect(second.counts).toMatchObject({ stale: 0, published: 1 });
    // Control: an older correct row is still stale against the correct mark.
    const third = await importText(
      s,
      jsonl([row('/a', { loadedTime: ago(3 * HOUR), markdown: '# A\n\nOld.' })]),
    );
    expect(third.counts.stale).toBe(1);
    await s.publisher.close();
  });

  it('a stored mark already in the future (written before this guard) is no mark: the correct row publishes', async () => {
    const s = await setup();
    await importText(s, jsonl([row('/a', { loadedTime: ago(HOUR) })]));
    const rec = (await s.state.getDocument(docId('/a')))!;
    await s.state.putDocument({
      ...rec,
      timestamps: { ...rec.timestamps, retrievedAt: '2030-01-01T00:00:00.000Z' },
    });
    const r = await importText(
      s,
      jsonl([row('/a', { loadedTime: ago(HOUR / 2), markdown: '# A\n\nFixed.' })]),
    );
    expect(r.counts).toMatchObject({ stale: 0, published: 1 });
    await s.publisher.close();
  });

  it('rows flow in batches: an older row of a document in a later batch is stale, a newer one replaces it', async () => {
    const s = await setup();
    const newest = ago(HOUR);
    const r = await importText(
      s,
      jsonl([
        row('/a', { loadedTime: ago(2 * HOUR), markdown: '# A\n\nSecond oldest.' }),
        row('/b'),
        row('/a', { loadedTime: ago(3 * HOUR), markdown: '# A\n\nOldest.' }),
        row('/c'),
        row('/a', { loadedTime: newest, markdown: '# A\n\nNewest.' }),
      ]),
      { rowBatch: 2 },
    );
    expect(r.counts).toMatchObject({ rows: 5, stale: 1, published: 4 });
    expect((await s.state.getDocument(docId('/a')))!.timestamps.retrievedAt).toBe(newest);
    await s.publisher.close();
  });
});

describe('the checkpoint after refused rows', () => {
  it('does not advance when rows were refused or unreadable; advances otherwise (control)', () => {
    const input = {
      policy: 'complete-coverage' as const,
      coverage: { complete: true, reasons: [] },
      crawlStartedAt: '2026-11-01T00:00:00Z',
    };
    expect(decideCheckpoint(input).advance).toBe(true);
    const kept = decideCheckpoint({ ...input, notImported: 3 });
    expect(kept.advance).toBe(false);
    expect(kept.reasons).toEqual([
      '3 rows were refused or unreadable; the next crawl must ask for them again',
    ]);
  });
});

/** Hostile variations of valid records, as bytes: truncated, huge, deeply nested, wrong types, invalid UTF-8. */
function hostile(format: ExportFormat) {
  const valid = (path: string): Record<string, unknown> =>
    format === 'apify-wcc'
      ? {
          url: `https://x.org${path}`,
          crawl: { loadedTime: ago(HOUR), httpStatusCode: 200 },
          markdown: `# ${path}\n\nText.`,
        }
      : format === 'firecrawl'
        ? {
            markdown: `# ${path}\n\nText.`,
            metadata: { sourceURL: `https://x.org${path}`, statusCode: 200, cachedAt: ago(HOUR) },
          }
        : format === 'webscraper'
          ? { url: `https://x.org${path}`, body: `Text of ${path}.`, time: ago(HOUR) }
          : row(path);
  const wrong = fc.constantFrom<unknown>(null, 42, true, [], {}, 'x', [1, [2]], { text: 3 });
  const value = fc.oneof(
    fc.constantFrom(
      'a',
      '',
      'https://10.0.0.1/',
      'http://169.254.169.254/',
      '2030-01-01T00:00:00Z',
    ),
    fc.string({ maxLength: 40 }),
    fc.integer({ min: 1, max: 20_000 }).map((n) => 'z'.repeat(n)),
    fc.integer({ min: 1, max: 400 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
    wrong,
  );
  const record = fc
    .tuple(
      fc.integer({ min: 0, max: 3 }),
      fc.dictionary(
        fc.constantFrom(
          'url',
          'markdown',
          'text',
          'chunks',
          'loadedTime',
          'metadata',
          'crawl',
          'body',
          'data',
        ),
        value,
        { maxKeys: 3 },
      ),
    )
    .map(([i, extra]) => ({ ...valid(`/p${i}`), ...extra }));
  const serialise = (records: readonly Record<string, unknown>[], layout: number): string => {
    if (format === 'webscraper' && layout % 2 === 0) {
      const cols = ['url', 'body', 'time'];
      const cell = (v: unknown) =>
        `"${String(typeof v === 'string' ? v : JSON.stringify(v)).replace(/"/g, '""')}"`;
      return [cols.join(','), ...records.map((r) => cols.map((c) => cell(r[c])).join(','))].join(
        '\n',
      );
    }
    if (format === 'firecrawl' && layout % 2 === 0)
      return JSON.stringify({
        status: 'completed',
        total: records.length,
        completed: records.length,
        data: records,
      });
    return layout % 3 === 0 ? JSON.stringify(records) : jsonl(records);
  };
  return fc
    .tuple(
      fc.array(record, { minLength: 1, maxLength: 6 }),
      fc.nat(5),
      fc.option(fc.nat(), { nil: undefined }),
      fc.uint8Array({ maxLength: 16 }),
      fc.nat(),
    )
    .map(([records, layout, cut, junk, at]) => {
      const text = Buffer.from(serialise(records, layout));
      const truncated = cut === undefined ? text : text.subarray(0, cut % (text.length + 1));
      const pos = at % (truncated.length + 1);
      // Raw bytes spliced in anywhere: invalid UTF-8, stray quotes, brackets, NULs.
      return Buffer.concat([
        truncated.subarray(0, pos),
        Buffer.from(junk),
        truncated.subarray(pos),
      ]);
    });
}

describe('fuzzed exports: no input crashes the import or keeps the publisher from the next one', () => {
  it.each(EXPORT_FORMATS)(
    '%s',
    async (format) => {
      const s = await setup({ maxChars: 10_000, maxDepth: 64 });
      const options: ParseExportOptions = {
        format,
        ...(format === 'webscraper'
          ? { webscraper: { url: 'url', text: ['body'], loadedTime: 'time' } }
          : {}),
      };
      await fc.assert(
        fc.asyncProperty(hostile(format), async (bytes) => {
          const half = Math.floor(bytes.length / 2);
          const stream = readExport([bytes.subarray(0, half), bytes.subarray(half)], options);
          const r = await importRows(s.ctx, {
            source: site,
            rows: stream.items,
            network: { resolver: publicDns },
          });
          // Streamed in two halves or read whole, the same records come out.
          const whole = parseExport(new TextDecoder().decode(bytes), options);
          expect(r.counts.rows).toBe(
            whole.rows.length + whole.unreadable.length + whole.refused.length,
          );
          expect(r.unreadable).toEqual(whole.unreadable);
          expect(stream.coverage()).toEqual(whole.coverage);
        }),
        { numRuns: 25, seed: 33 },
      );
      // The publisher is free and working: a good export right after publishes.
      const good = await importText(
        s,
        jsonl([row(`/after-${format}`, { loadedTime: ago(60_000) })]),
      );
      expect(good.counts.published).toBe(1);
      await s.publisher.close();
    },
    120_000,
  );
});
