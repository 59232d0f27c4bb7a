import { RagfreshError, reasonLine } from '@ragfresh/core';
import { DEFAULT_PAGE_LIMITS, type PageLimits } from '../bounds.js';
import { type ExportItem, ExportReader, type ReaderLimits } from './reader.js';
import {
  type ExportCoverage,
  type ImportItem,
  type ImportRow,
  PARTIAL_UNPROVEN,
  type ParsedExport,
  type ProvidedChunk,
} from './row.js';

type ExportRecord = Extract<ExportItem, { kind: 'record' }>;

/**
 * The export formats ragfresh reads. Field names are the vendors' own (docs/import.md says
 * where each was read); nothing is guessed from a field that merely looks right.
 * - `crawler`: the flat changed-page export (`url`, `loadedUrl`, `canonicalUrl`, `referrerUrl`,
 *   `loadedTime`, `markdown`/`text`, `contentHash`, optional `chunks[{text, headingPath}]`).
 * - `apify-wcc`: Apify Website Content Crawler dataset items (`crawl.*`, `metadata.*`).
 * - `firecrawl`: Firecrawl crawl/scrape results (`metadata.sourceURL`, `changeTracking`).
 * - `webscraper`: Web Scraper Cloud JSON/CSV exports, columns mapped by `webscraper` options.
 */
export type ExportFormat = 'crawler' | 'apify-wcc' | 'firecrawl' | 'webscraper';
export const EXPORT_FORMATS: readonly ExportFormat[] = [
  'crawler',
  'apify-wcc',
  'firecrawl',
  'webscraper',
];

/**
 * Web Scraper Cloud exports carry the sitemap's own selector names as columns, so which
 * column is the page URL and which the text is the sitemap author's choice.
 */
export interface WebScraperMapping {
  /** Column holding the page URL (a Link selector's `<name>-href`). Default `web-scraper-start-url`. */
  readonly url?: string;
  /** Column(s) holding the page text, joined by blank lines. Required. */
  readonly text?: readonly string[];
  /** Column holding the page title. */
  readonly title?: string;
  /** Column holding the fetch time, if the sitemap records one. */
  readonly loadedTime?: string;
}

export interface ParseExportOptions {
  readonly format: ExportFormat;
  readonly webscraper?: WebScraperMapping;
  /** Web Scraper Cloud job status (`finished` proves the job scraped every page it found). */
  readonly jobStatus?: string;
  /** The page limits rows must pass; a record longer than 4 × `maxChars` is refused as it is read. */
  readonly limits?: Partial<PageLimits>;
}

type Obj = Readonly<Record<string, unknown>>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;
const at = (o: Obj, key: string): Obj => (isObj(o[key]) ? (o[key] as Obj) : {});

function chunksOf(v: unknown): ProvidedChunk[] | undefined {
  if (!Array.isArray(v)) return undefined;
  return v.flatMap((c) =>
    isObj(c) && typeof c.text === 'string'
      ? [
          {
            text: c.text,
            headingPath: Array.isArray(c.headingPath)
              ? c.headingPath.filter((h): h is string => typeof h === 'string')
              : [],
          },
        ]
      : [],
  );
}

/** Copies only defined values, so rows never hold `undefined` fields. */
function row(fields: Record<string, unknown> & { line: number; url: string }): ImportRow {
  return Object.fromEntries(
    Object.entries(fields).filter(([, v]) => v !== undefined),
  ) as unknown as ImportRow;
}

type Adapted = { row: ImportRow } | { unreadable: string };

function crawlerRow(r: ExportRecord): Adapted {
  if (!isObj(r.value)) return { unreadable: 'not an object' };
  const o = r.value;
  const url = str(o.url);
  if (url === undefined) return { unreadable: 'no url field' };
  return {
    row: row({
      line: r.line,
      url,
      loadedUrl: str(o.loadedUrl),
      canonicalUrl: str(o.canonicalUrl),
      referrerUrl: str(o.referrerUrl),
      loadedTime: str(o.loadedTime),
      title: str(o.title),
      markdown: typeof o.markdown === 'string' ? o.markdown : undefined,
      text: typeof o.text === 'string' ? o.text : undefined,
      contentHash: str(o.contentHash),
      chunks: chunksOf(o.chunks),
    }),
  };
}

function apifyRow(r: ExportRecord): Adapted {
  if (!isObj(r.value)) return { unreadable: 'not an object' };
  const o = r.value;
  const crawl = at(o, 'crawl');
  const meta = at(o, 'metadata');
  const url = str(o.url);
  if (url === undefined) return { unreadable: 'no url field' };
  return {
    row: row({
      line: r.line,
      url,
      loadedUrl: str(crawl.loadedUrl),
      canonicalUrl: str(meta.canonicalUrl),
      referrerUrl: str(crawl.referrerUrl),
      loadedTime: str(crawl.loadedTime),
      httpStatus: num(crawl.httpStatusCode),
      title: str(meta.title),
      markdown: typeof o.markdown === 'string' ? o.markdown : undefined,
      text: typeof o.text === 'string' ? o.text : undefined,
    }),
  };
}

function firecrawlRow(r: ExportRecord): Adapted {
  if (!isObj(r.value)) return { unreadable: 'not an object' };
  const o = r.value;
  const meta = at(o, 'metadata');
  const change = at(o, 'changeTracking');
  // sourceURL is what was asked for; metadata.url is where the answer came from.
  const url = str(meta.sourceURL) ?? str(o.url) ?? str(meta.url);
  if (url === undefined) return { unreadable: 'no metadata.sourceURL or url field' };
  const status = str(change.changeStatus);
  const visibility = str(change.visibility);
  const removal =
    status === 'removed'
      ? `Firecrawl changeTracking.changeStatus "removed" (previousScrapeAt ${String(change.previousScrapeAt ?? 'null')})`
      : visibility === 'hidden'
        ? `Firecrawl changeTracking.visibility "hidden": no longer linked or in the sitemap (previousScrapeAt ${String(change.previousScrapeAt ?? 'null')})`
        : undefined;
  return {
    row: row({
      line: r.line,
      url,
      loadedUrl: str(meta.url),
      canonicalUrl: undefined,
      // Firecrawl documents carry no scrape time of their own except a cache hit's `cachedAt`.
      loadedTime: str(meta.cachedAt),
      httpStatus: num(meta.statusCode),
      title: str(meta.title),
      markdown: typeof o.markdown === 'string' ? o.markdown : undefined,
      removal: removal === undefined ? undefined : { evidence: removal },
    }),
  };
}

function webscraperRow(r: ExportRecord, map: WebScraperMapping): Adapted {
  if (!isObj(r.value)) return { unreadable: 'not an object' };
  const o = r.value;
  const urlColumn = map.url ?? 'web-scraper-start-url';
  const url = str(o[urlColumn]);
  if (url === undefined) return { unreadable: `no ${urlColumn} column` };
  const text = (map.text ?? [])
    .map((c) => (typeof o[c] === 'string' ? (o[c] as string) : ''))
    .filter((t) => t.trim() !== '')
    .join('\n\n');
  return {
    row: row({
      line: r.line,
      url,
      title: map.title === undefined ? undefined : str(o[map.title]),
      loadedTime: map.loadedTime === undefined ? undefined : str(o[map.loadedTime]),
      text,
    }),
  };
}

function firecrawlCoverage(envelope: Obj | undefined): ExportCoverage {
  if (envelope === undefined || !Array.isArray(envelope.data)) return PARTIAL_UNPROVEN;
  const reasons: string[] = [];
  const status = str(envelope.status);
  if (status !== 'completed')
    reasons.push(`crawl status is ${JSON.stringify(status ?? null)}, not "completed"`);
  if (str(envelope.next) !== undefined)
    reasons.push('the crawl result has a next page (data not all here)');
  const total = num(envelope.total);
  const completed = num(envelope.completed);
  if (total !== undefined && completed !== undefined && completed < total)
    reasons.push(`completed ${completed} of ${total} pages`);
  if (total === undefined) reasons.push('no total page count');
  return { complete: reasons.length === 0, reasons };
}

function webscraperCoverage(jobStatus: string | undefined): ExportCoverage {
  // Web Scraper Cloud: `finished` = completed without failed or empty pages; every other
  // status (failed, stopped, shelved, ...) stopped early or lost pages.
  if (jobStatus === 'finished') return { complete: true, reasons: [] };
  return {
    complete: false,
    reasons: [
      jobStatus === undefined
        ? 'no scraping job status given'
        : `scraping job status is "${jobStatus}", not "finished"`,
    ],
  };
}

function checkOptions(options: ParseExportOptions): void {
  if (!EXPORT_FORMATS.includes(options.format)) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `import: unknown format ${JSON.stringify(options.format)}; use one of ${EXPORT_FORMATS.join(', ')}.`,
      { scope: 'import' },
    );
  }
  if (options.format === 'webscraper' && (options.webscraper?.text ?? []).length === 0) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      'import: a Web Scraper export needs the column(s) holding the page text; pass --map text=<column>.',
      { scope: 'import' },
    );
  }
}

function adapt(options: ParseExportOptions, r: ExportRecord): Adapted {
  switch (options.format) {
    case 'crawler':
      return crawlerRow(r);
    case 'apify-wcc':
      return apifyRow(r);
    case 'firecrawl':
      return firecrawlRow(r);
    case 'webscraper':
      return webscraperRow(r, options.webscraper ?? {});
  }
}

function coverageOf(options: ParseExportOptions, envelope: Obj | undefined): ExportCoverage {
  return options.format === 'firecrawl'
    ? firecrawlCoverage(envelope)
    : options.format === 'webscraper'
      ? webscraperCoverage(options.jobStatus)
      : PARTIAL_UNPROVEN;
}

/**
 * An export read as it streams: `items` yields rows, unreadable records and refused records in
 * input order, one record in memory at a time; `coverage()` is known once `items` has ended
 * (a vendor envelope may state it after its data).
 */
export interface ExportStream {
  readonly format: ExportFormat;
  readonly items: AsyncIterable<ImportItem>;
  coverage(): ExportCoverage;
}

/** Reader limits for rows that must then pass `limits` (a record may hold body, text and chunks). */
export function readerLimitsFor(limits: PageLimits): ReaderLimits {
  return { maxRecordChars: 4 * limits.maxChars + 65_536, maxDepth: limits.maxDepth };
}

class ExportAdapter {
  readonly reader: ExportReader;
  readonly #options: ParseExportOptions;

  constructor(options: ParseExportOptions) {
    checkOptions(options);
    this.#options = options;
    this.reader = new ExportReader({
      csv: options.format === 'webscraper',
      limits: readerLimitsFor({ ...DEFAULT_PAGE_LIMITS, ...options.limits }),
    });
  }

  *items(items: readonly ExportItem[]): Generator<ImportItem> {
    for (const item of items) {
      if (item.kind !== 'record') {
        yield item;
        continue;
      }
      const adapted = adapt(this.#options, item);
      yield 'row' in adapted
        ? { kind: 'row', row: adapted.row }
        : { kind: 'unreadable', line: item.line, reason: adapted.unreadable };
    }
  }

  coverage(): ExportCoverage {
    const envelope = this.reader.envelope;
    return coverageOf(this.#options, isObj(envelope) ? envelope : undefined);
  }
}

/**
 * Reads an export as it streams (bytes or text chunks, e.g. a file's read stream), decoding
 * UTF-8 as it goes (invalid bytes become U+FFFD). Throws INVALID_ARGUMENT at once for an
 * unknown format or a Web Scraper export without its text column.
 */
export function readExport(
  input: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>,
  options: ParseExportOptions,
): ExportStream {
  const adapter = new ExportAdapter(options);
  async function* items(): AsyncGenerator<ImportItem> {
    const decoder = new TextDecoder('utf-8');
    for await (const chunk of input) {
      const text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
      yield* adapter.items(adapter.reader.write(text));
    }
    yield* adapter.items(adapter.reader.write(decoder.decode()));
    yield* adapter.items(adapter.reader.end());
  }
  return { format: options.format, items: items(), coverage: () => adapter.coverage() };
}

/** Reads a whole export text into rows (the same reader as `readExport`, for small inputs). */
export function parseExport(text: string, options: ParseExportOptions): ParsedExport {
  const adapter = new ExportAdapter(options);
  const rows: ImportRow[] = [];
  const unreadable: { line: number; reason: string }[] = [];
  const refused: { line: number; reason: string; url?: string }[] = [];
  for (const item of adapter.items([...adapter.reader.write(text), ...adapter.reader.end()])) {
    if (item.kind === 'row') rows.push(item.row);
    else if (item.kind === 'unreadable') unreadable.push({ line: item.line, reason: item.reason });
    else
      refused.push({
        line: item.line,
        reason: reasonLine(item.reason),
        ...(item.url === undefined ? {} : { url: item.url }),
      });
  }
  return { format: options.format, rows, coverage: adapter.coverage(), unreadable, refused };
}
