import { type DocumentRecord, errorMessage, documentId as makeDocumentId } from '@ragfresh/core';
import { discoverLlmsTxt, discoverSitemap } from '@ragfresh/fetch';
import type { EngineContext } from './context.js';
import { listingCacheFor } from './listings.js';
import type { EngineSource } from './types.js';

/** One URL to observe, with its identity computed once. */
export interface InventoryEntry {
  readonly url: string;
  readonly documentId: string;
  /** False for a known document that discovery no longer lists (re-checked for gone evidence). */
  readonly listed: boolean;
  /**
   * The document's record as the inventory read it (undefined: none existed), so the page
   * stage does not read it again. Each document is observed by exactly one page task per run,
   * and nothing else writes its record in between.
   */
  readonly record: DocumentRecord | undefined;
}

export interface Inventory {
  readonly entries: readonly InventoryEntry[];
  /** documentIds that discovery listed in this run. */
  readonly listed: ReadonlySet<string>;
  /** Every sitemap read untruncated and every llms.txt readable. */
  readonly complete: boolean;
  /** Why coverage is incomplete, as per-source alerts. */
  readonly problems: readonly string[];
  /** Sitemaps, sitemap indexes and llms.txt files answered 304 (read from the listing cache). */
  readonly listingsNotModified: number;
}

async function discover(
  ctx: EngineContext,
  source: EngineSource,
  signal: AbortSignal | undefined,
): Promise<{ urls: string[]; problems: string[]; notModified: number }> {
  const urls: string[] = [...(source.urls ?? [])];
  const problems: string[] = [];
  const opts = {
    cache: listingCacheFor(ctx.deps.state),
    ...(signal === undefined ? {} : { signal }),
  };
  let notModified = 0;
  for (const sitemap of source.sitemaps ?? []) {
    const found = await discoverSitemap(ctx.deps.fetcher, sitemap, opts);
    notModified += found.notModified;
    for (const e of found.entries) urls.push(e.url);
    if (found.truncated) problems.push(`sitemap-truncated: ${sitemap}`);
    for (const f of found.failures) problems.push(`sitemap-unreadable: ${f.url} (${f.reason})`);
  }
  for (const llms of source.llmsTxt ?? []) {
    const found = await discoverLlmsTxt(ctx.deps.fetcher, llms, opts);
    if (found.notModified) notModified += 1;
    if (found.outcome !== 'ok')
      problems.push(`llms-txt-unreadable: ${llms} (${found.reason ?? found.outcome})`);
    for (const l of found.links) urls.push(l.url);
  }
  return { urls, problems, notModified };
}

/**
 * The inventory stage: `urls` ∪ sitemap entries ∪ llms.txt links, collapsed by documentId
 * (tracking-parameter variants are one document), plus every known live document of the
 * source that discovery stopped listing — that is how a removed page accumulates gone
 * evidence instead of silently going stale.
 */
export async function takeInventory(
  ctx: EngineContext,
  source: EngineSource,
  signal?: AbortSignal,
): Promise<Inventory> {
  const { urls, problems, notModified } = await discover(ctx, source, signal);
  const entries: InventoryEntry[] = [];
  const listed = new Set<string>();
  for (const url of urls) {
    let documentId: string;
    try {
      documentId = makeDocumentId(source.id, url, source.identity);
    } catch (err) {
      problems.push(`bad-url: ${url} (${errorMessage(err)})`);
      continue;
    }
    if (listed.has(documentId)) continue;
    listed.add(documentId);
    entries.push({ url, documentId, listed: true, record: undefined });
  }
  // One listing of the source's records serves the whole run: the page stage reads each
  // document's record from here instead of once more per URL.
  const records = new Map<string, DocumentRecord>();
  for (const r of await ctx.records.ofSource(source.id)) {
    records.set(r.documentId, r);
    if (listed.has(r.documentId) || r.status === 'tombstoned' || r.currentVersionId === undefined)
      continue;
    entries.push({ url: r.url, documentId: r.documentId, listed: false, record: r });
  }
  return {
    entries: entries.map((e) => (e.listed ? { ...e, record: records.get(e.documentId) } : e)),
    listed,
    complete: problems.length === 0,
    problems,
    listingsNotModified: notModified,
  };
}
