import { gunzipSync } from 'node:zlib';
import type { FetchValidators, IsoTime } from '@ragfresh/core';
import { decodeBody } from '@ragfresh/core';
import { describeFetchFailure } from './describe.js';
import type { Fetcher } from './fetcher.js';
import type { FetchOutcome, OkResult } from './result.js';

/** One `<url>` of a sitemap. */
export interface SitemapEntry {
  readonly url: string;
  /** `<lastmod>` as ISO time, when present and parseable: a publisher hint, it only schedules work. */
  readonly lastmod?: IsoTime;
  /** The sitemap that listed it. */
  readonly sitemap: string;
}

function decodeXmlText(raw: string): string {
  let s = raw.trim();
  const cdata = /^<!\[CDATA\[([\s\S]*)\]\]>$/.exec(s);
  if (cdata !== null) return (cdata[1] ?? '').trim();
  s = s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_m, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_m, n: string) => String.fromCodePoint(Number.parseInt(n, 16)))
    .replace(/&amp;/g, '&');
  return s;
}

function tagText(block: string, tag: string): string | undefined {
  const m = new RegExp(`<(?:[\\w-]+:)?${tag}\\b[^>]*>([\\s\\S]*?)</(?:[\\w-]+:)?${tag}>`, 'i').exec(
    block,
  );
  return m === null ? undefined : decodeXmlText(m[1] ?? '');
}

/**
 * Incremental sitemap parser: feed text in pieces with `write`, read `entries` and `sitemaps`
 * (child sitemaps of a sitemap index). Memory stays bounded: processed text is dropped, at most
 * `maxUrls` entries are kept (then `truncated` is set), and an element longer than `maxElementChars`
 * is skipped.
 */
export class SitemapParser {
  readonly entries: SitemapEntry[] = [];
  readonly sitemaps: Array<{ readonly url: string; readonly lastmod?: IsoTime }> = [];
  truncated = false;
  #buffer = '';

  constructor(
    readonly sitemapUrl: string,
    readonly maxUrls: number = 50_000,
    readonly maxElementChars: number = 16_384,
  ) {}

  write(text: string): void {
    this.#buffer += text;
    const re = /<(?:[\w-]+:)?(url|sitemap)\b[^>]*>([\s\S]*?)<\/(?:[\w-]+:)?\1\s*>/gi;
    let consumed = 0;
    for (let m = re.exec(this.#buffer); m !== null; m = re.exec(this.#buffer)) {
      consumed = re.lastIndex;
      this.#element((m[1] ?? '').toLowerCase(), m[2] ?? '');
    }
    this.#buffer = this.#buffer.slice(consumed);
    // Keep only a possible partial element; a runaway one is dropped.
    const open = this.#buffer.search(/<(?:[\w-]+:)?(url|sitemap)\b/i);
    this.#buffer = open < 0 ? this.#buffer.slice(-64) : this.#buffer.slice(open);
    if (this.#buffer.length > this.maxElementChars) this.#buffer = '';
  }

  #element(kind: string, inner: string): void {
    const loc = tagText(inner, 'loc');
    if (loc === undefined || loc === '') return;
    let url: string;
    try {
      url = new URL(loc, this.sitemapUrl).href;
    } catch {
      return;
    }
    const raw = tagText(inner, 'lastmod');
    const t = raw === undefined ? Number.NaN : Date.parse(raw);
    const lastmod = Number.isNaN(t) ? undefined : new Date(t).toISOString();
    if (kind === 'sitemap') {
      this.sitemaps.push({ url, ...(lastmod === undefined ? {} : { lastmod }) });
      return;
    }
    if (this.entries.length >= this.maxUrls) {
      this.truncated = true;
      return;
    }
    this.entries.push({
      url,
      sitemap: this.sitemapUrl,
      ...(lastmod === undefined ? {} : { lastmod }),
    });
  }
}

/**
 * What discovery remembers of a listing document (sitemap, sitemap index, llms.txt) between
 * runs, so the next run asks conditionally: a 304 reuses the remembered text and costs no
 * download or parse of a changed body. Keyed by the document's URL.
 */
export interface DiscoveryCacheEntry {
  readonly validators: FetchValidators;
  /** The decoded (un-gzipped) text of the document as last read. */
  readonly text: string;
  readonly finalUrl: string;
}

export interface DiscoveryCache {
  get(url: string): Promise<DiscoveryCacheEntry | undefined>;
  set(url: string, entry: DiscoveryCacheEntry): Promise<void>;
}

/** Texts above this are not remembered (the next run fetches them in full). */
const MAX_CACHED_CHARS = 8 * 1024 * 1024;

/** One conditional read of a listing document: the text (fresh or remembered) or the outcome. */
async function readListing(
  fetcher: Fetcher,
  url: string,
  options: {
    readonly cache?: DiscoveryCache | undefined;
    readonly allowedContentTypes: readonly string[];
    readonly maxBytes?: number;
    readonly signal?: AbortSignal | undefined;
    readonly decode: (r: OkResult) => string | undefined;
  },
): Promise<
  | { readonly text: string; readonly finalUrl: string; readonly notModified: boolean }
  | { readonly failure: FetchOutcome | 'invalid-gzip'; readonly reason: string }
> {
  const cached = await options.cache?.get(url);
  const r = await fetcher.fetch(url, {
    allowedContentTypes: [...options.allowedContentTypes],
    ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
    ...(cached === undefined ? {} : { validators: cached.validators }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  if (r.outcome === 'not-modified' && cached !== undefined)
    return { text: cached.text, finalUrl: cached.finalUrl, notModified: true };
  if (r.outcome !== 'ok') return { failure: r.outcome, reason: describeFetchFailure(r) };
  const text = options.decode(r);
  if (text === undefined)
    return {
      failure: 'invalid-gzip',
      reason: 'invalid-gzip: the body is not a readable gzip stream',
    };
  if (options.cache !== undefined && text.length <= MAX_CACHED_CHARS)
    await options.cache.set(url, { validators: r.validators, text, finalUrl: r.finalUrl });
  return { text, finalUrl: r.finalUrl, notModified: false };
}

export interface SitemapDiscoveryOptions {
  /** Remembered listings: sitemaps are then fetched conditionally (304 reuses the text). */
  readonly cache?: DiscoveryCache;
  /** Most URLs returned across all sitemaps. Default 50,000. */
  readonly maxUrls?: number;
  /** Most sitemap documents fetched (an index and its children). Default 50. */
  readonly maxSitemaps?: number;
  /** Nesting of sitemap indexes followed. Default 2. */
  readonly maxDepth?: number;
  /** Cap on a sitemap's decoded (and un-gzipped) size. Default 50 MiB (the sitemaps.org limit). */
  readonly maxBytes?: number;
  readonly signal?: AbortSignal;
}

export interface SitemapDiscovery {
  readonly entries: readonly SitemapEntry[];
  /** Every sitemap document read. */
  readonly sitemaps: readonly string[];
  /** True when a bound (URLs, sitemaps, depth) cut the listing short: coverage is NOT complete. */
  readonly truncated: boolean;
  /** Sitemap documents answered 304 and read from the cache. */
  readonly notModified: number;
  /** Sitemaps that could not be read, with the fetch outcome and one line saying why. */
  readonly failures: ReadonlyArray<{
    readonly url: string;
    readonly outcome: FetchOutcome | 'invalid-gzip';
    /** `describeFetchFailure` of the answer: an SSRF refusal names the allow-list setting. */
    readonly reason: string;
  }>;
}

const SITEMAP_TYPES = [
  'application/xml',
  'text/xml',
  'application/gzip',
  'application/x-gzip',
  'application/octet-stream',
  'text/plain',
];

/**
 * Reads a sitemap or sitemap index (gzip or plain) through the fetcher, so robots.txt,
 * politeness and the SSRF guard apply, following child sitemaps breadth-first within bounds.
 */
export async function discoverSitemap(
  fetcher: Fetcher,
  sitemapUrl: string,
  options: SitemapDiscoveryOptions = {},
): Promise<SitemapDiscovery> {
  const maxUrls = options.maxUrls ?? 50_000;
  const maxSitemaps = options.maxSitemaps ?? 50;
  const maxDepth = options.maxDepth ?? 2;
  const maxBytes = options.maxBytes ?? 50 * 1024 * 1024;
  const entries: SitemapEntry[] = [];
  const read: string[] = [];
  const failures: Array<{ url: string; outcome: FetchOutcome | 'invalid-gzip'; reason: string }> =
    [];
  const queue: Array<{ url: string; depth: number }> = [{ url: sitemapUrl, depth: 0 }];
  const seen = new Set<string>([sitemapUrl]);
  let truncated = false;
  let notModified = 0;
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (read.length >= maxSitemaps) {
      truncated = true;
      break;
    }
    read.push(next.url);
    const r = await readListing(fetcher, next.url, {
      cache: options.cache,
      allowedContentTypes: SITEMAP_TYPES,
      maxBytes,
      signal: options.signal,
      decode: (ok) => {
        let bytes: Uint8Array = ok.body;
        if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
          try {
            bytes = gunzipSync(bytes, { maxOutputLength: maxBytes });
          } catch {
            return undefined;
          }
        }
        return decodeBody(bytes, 'application/xml').text;
      },
    });
    if ('failure' in r) {
      failures.push({ url: next.url, outcome: r.failure, reason: r.reason });
      continue;
    }
    if (r.notModified) notModified += 1;
    const { text } = r;
    const parser = new SitemapParser(r.finalUrl, maxUrls - entries.length);
    for (let i = 0; i < text.length; i += 65_536) parser.write(text.slice(i, i + 65_536));
    entries.push(...parser.entries);
    if (parser.truncated) truncated = true;
    for (const child of parser.sitemaps) {
      if (seen.has(child.url)) continue;
      seen.add(child.url);
      if (next.depth + 1 > maxDepth) {
        truncated = true;
        continue;
      }
      queue.push({ url: child.url, depth: next.depth + 1 });
    }
    if (entries.length >= maxUrls && (queue.length > 0 || parser.truncated)) {
      truncated = true;
      break;
    }
  }
  return { entries, sitemaps: read, truncated, notModified, failures };
}

/** One link of an llms.txt file. */
export interface LlmsTxtLink {
  readonly url: string;
  readonly title: string;
  /** The `## Section` it is listed under, if any (`Optional` marks skippable links). */
  readonly section?: string;
  readonly description?: string;
}

/** Links of an llms.txt (Markdown): `- [title](url): description` lines, resolved against `baseUrl`. */
export function parseLlmsTxt(text: string, baseUrl: string): LlmsTxtLink[] {
  const links: LlmsTxtLink[] = [];
  let section: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const heading = /^##\s+(.+?)\s*#*\s*$/.exec(line);
    if (heading !== null) {
      section = heading[1];
      continue;
    }
    const re = /\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)(?:\s*:\s*(.*))?/g;
    for (let m = re.exec(line); m !== null; m = re.exec(line)) {
      let url: URL;
      try {
        url = new URL(m[2] ?? '', baseUrl);
      } catch {
        continue;
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
      const description = m[3]?.trim();
      links.push({
        url: url.href,
        title: (m[1] ?? '').trim(),
        ...(section === undefined ? {} : { section }),
        ...(description === undefined || description === '' ? {} : { description }),
      });
    }
  }
  return links;
}

/** Fetches an llms.txt through the fetcher and lists its links; an empty list when it is not `ok`. */
export async function discoverLlmsTxt(
  fetcher: Fetcher,
  llmsTxtUrl: string,
  options: { readonly signal?: AbortSignal; readonly cache?: DiscoveryCache } = {},
): Promise<{
  readonly links: readonly LlmsTxtLink[];
  /** `ok` also when a 304 was answered from the cache (then `notModified` is true). */
  readonly outcome: FetchOutcome;
  /** Why it could not be read (absent when `ok`): an SSRF refusal names the allow-list setting. */
  readonly reason?: string;
  readonly notModified: boolean;
}> {
  const r = await readListing(fetcher, llmsTxtUrl, {
    cache: options.cache,
    allowedContentTypes: ['text/plain', 'text/markdown', 'text/x-markdown'],
    signal: options.signal,
    decode: (ok) => ok.text,
  });
  if ('failure' in r)
    return { links: [], outcome: r.failure as FetchOutcome, reason: r.reason, notModified: false };
  return { links: parseLlmsTxt(r.text, r.finalUrl), outcome: 'ok', notModified: r.notModified };
}
