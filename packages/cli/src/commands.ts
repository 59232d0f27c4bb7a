import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  canonicalKey,
  type DocumentRecord,
  documentId,
  type EvidenceProvenance,
  FIELDS,
  provenanceHeader,
  provenanceOf,
  reasonLine,
  type Tombstone,
} from '@ragfresh/core';
import { type Citation, collapseDuplicateHits, type RefreshReport } from '@ragfresh/engine';
import type { ResolvedConfig } from './config.js';
import { coverageShortfall } from './coverage-gate.js';
import { versionAsOf, viewAsOf } from './governance.js';
import type { Runtime } from './runtime.js';
import { EXIT, renderStatus, sourceStatuses, statusExitCode, table } from './status.js';

export { statusCommand } from './status.js';

import { highestRecordedEpoch, storeLostError } from './store-health.js';

export type Print = (text: string) => void;

export const STARTER_CONFIG = `// ragfresh/config loads only the config helpers, so \`ragfresh status\` starts fast.
import { defineConfig } from 'ragfresh/config';

export default defineConfig({
  // Sent on every request; robots.txt rules are matched against its first token.
  userAgent: 'my-docs-bot/1.0 (+https://example.org/bot)',
  sources: [
    {
      id: 'docs',
      sitemaps: ['https://docs.example.org/sitemap.xml'],
      every: '6h',
      freshnessObjective: '24h',
      expectedChangeEvery: '30d',
      authority: 'official',
      // Publish contract: thresholds come from your own history, not from memory. After a few
      // runs, \`ragfresh contracts\` suggests minChars from the smallest good page of each source.
      // A candidate that breaks the contract is quarantined and waits in \`ragfresh review list\`.
      // contract: { minChars: <from ragfresh contracts>, maxShrink: <from ragfresh contracts> },
    },
  ],
  // Embedded defaults: LanceDB index, SQLite state, offline hashing embeddings.
  // connector: { store: 'chroma', url: 'http://localhost:8000', collection: 'docs' },
  // embeddings: new OpenAIEmbeddings({ model: 'text-embedding-3-small' }),
  deletion: { goneChecks: 3, minGoneAge: '48h', autoApprove: false },
});
`;

export function initCommand(cwd: string, print: Print): number {
  const file = resolve(cwd, 'ragfresh.config.ts');
  if (existsSync(file)) {
    print(`ragfresh: ${file} already exists; edit it, or remove it to start over.`);
    return EXIT.usage;
  }
  writeFileSync(file, STARTER_CONFIG);
  print(`wrote ${file}; edit the sources, then run \`ragfresh refresh\`.`);
  return EXIT.ok;
}

export function renderRefresh(report: RefreshReport): string {
  const rows = report.sources.map((s) => [
    s.sourceId,
    s.complete ? 'complete' : `partial ${Math.floor(s.coverage * 100)}%`,
    String(s.counts.urls),
    String(s.counts.fetched200),
    // Pages answered 304, then listings (sitemaps, llms.txt) answered 304.
    s.counts.listingsNotModified > 0
      ? `${s.counts.notModified}+${s.counts.listingsNotModified}`
      : String(s.counts.notModified),
    String(s.counts.published),
    String(s.counts.unchangedContent),
    String(s.counts.notTheDocument + s.counts.fetchErrors + s.counts.gone),
    String(s.counts.rejected),
    `${s.counts.chunksEmbedded}/${s.counts.chunksEmbedded + s.counts.chunksReused}`,
    String(s.counts.storeWrites),
    String(s.counts.reviewCreated),
  ]);
  const body = table(
    [
      'source',
      'coverage',
      'urls',
      '200',
      '304',
      'published',
      'unchanged',
      'not-ok',
      'quarantined',
      'embedded',
      'writes',
      'review',
    ],
    rows,
  );
  const notes: string[] = [];
  for (const s of report.sources) {
    for (const e of s.events) {
      if (['not-modified', 'unchanged'].includes(e.event)) continue;
      notes.push(
        `  ${s.sourceId}  ${e.event.padEnd(16)} ${e.url}${e.reasons.length > 0 ? `  (${e.reasons.map(reasonLine).join('; ')})` : ''}`,
      );
    }
    for (const a of s.alerts) notes.push(`  ${s.sourceId}  alert            ${a}`);
  }
  return notes.length === 0 ? body : `${body}\n\n${notes.join('\n')}`;
}

export async function refreshCommand(
  rt: Runtime,
  opts: { all: boolean; sources?: string[]; json: boolean },
  print: Print,
): Promise<number> {
  const report = await rt.engine.refresh({
    all: opts.all,
    ...(opts.sources === undefined ? {} : { sourceIds: opts.sources }),
  });
  const statuses = await sourceStatuses(rt.config, rt.state);
  if (opts.json) print(JSON.stringify({ report, status: statuses }, null, 2));
  else {
    print(
      report.sources.length === 0
        ? 'nothing due; use --all to refresh every source now.'
        : renderRefresh(report),
    );
    print('');
    print(renderStatus(statuses));
  }
  // Below the gate, the status above rests on old observations: the run's own verdict wins.
  const short = coverageShortfall(report, rt.config.settings.minCoverage);
  if (short === undefined) return statusExitCode(statuses);
  process.stderr.write(`${short}\n`);
  return EXIT.coverageBelowGate;
}

export interface QueryHitView {
  readonly rank: number;
  readonly score: number;
  readonly header: string;
  readonly text: string;
  readonly documentId: string;
  readonly versionId: string;
  readonly stale: boolean;
  /** What `header` says, as fields: cited URL, fetched time, section, stale status. */
  readonly provenance: EvidenceProvenance;
  /**
   * Every URL this passage is found at, the hit's own first: copies collapsed into this result
   * (the same chunk text, or near-duplicate pages; see docs/duplicates.md). One entry when
   * nothing collapsed or collapsing is off.
   */
  readonly citations: readonly Citation[];
}

/** Hits fetched per result wanted when copies are collapsed (three URL variants of a page fit). */
const COLLAPSE_OVERFETCH = 4;

/**
 * Current-view retrieval with provenance; degraded/quarantined documents labelled or excluded
 * per config; copies of one passage under several URLs collapsed to one hit citing each URL
 * unless `collapse: false`.
 */
export async function queryCurrentView(
  rt: Runtime,
  question: string,
  k: number,
  scope: {
    readonly documentId?: string;
    readonly sourceId?: string;
    readonly collapse?: boolean;
    /** Read the view of this (past) epoch instead of the published one (`--as-of`). */
    readonly epoch?: number;
    /** The reader's groups; default none: public chunks only (enforced by the store's filter). */
    readonly access?: readonly string[];
  } = {},
): Promise<QueryHitView[]> {
  const { collapse = true, epoch, ...where } = scope;
  const vector = await rt.embeddings.embedQuery(question);
  const n = k * (collapse ? COLLAPSE_OVERFETCH : 3);
  const hits =
    epoch === undefined
      ? await rt.connector.searchCurrent(vector, n, where)
      : // A raw query has no access default: a reader without groups reads public chunks
        // only, as searchCurrent does.
        await rt.connector.query(vector, n, {
          ...where,
          access: where.access ?? [],
          view: { kind: 'epoch', epoch },
        });
  const kept: { hit: (typeof hits)[number]; view: Omit<QueryHitView, 'rank' | 'citations'> }[] = [];
  for (const h of hits) {
    const docId = String(h.metadata[FIELDS.documentId]);
    const record = await rt.state.getDocument(docId);
    const p = provenanceOf(
      h.metadata,
      record === undefined
        ? undefined
        : {
            status: record.status,
            ...(record.lastGoodAt === undefined ? {} : { lastGoodAt: record.lastGoodAt }),
            ...(record.timestamps.retrievedAt === undefined
              ? {}
              : { retrievedAt: record.timestamps.retrievedAt }),
          },
    );
    const stale = p.staleSince !== undefined;
    if (stale && rt.config.staleReaders === 'exclude') continue;
    kept.push({
      hit: h,
      view: {
        score: h.score,
        header: provenanceHeader(p),
        text: h.text,
        documentId: docId,
        versionId: p.versionId ?? '',
        stale,
        provenance: p,
      },
    });
  }
  const groups = collapse
    ? collapseDuplicateHits(
        kept,
        (x) => x.hit.metadata,
        (x) => x.hit.text,
      )
    : collapseDuplicateHits(kept, () => ({}));
  return groups.slice(0, k).map((g, i) => ({ rank: i + 1, ...g.hit.view, citations: g.citations }));
}

export function renderHits(hits: readonly QueryHitView[], maxChars = 400): string {
  if (hits.length === 0) return 'no results in the current view.';
  return hits
    .map((h) => {
      const text = h.text.length > maxChars ? `${h.text.slice(0, maxChars)}…` : h.text;
      const also = h.citations
        .slice(1)
        .map((c) => `\nAlso at: ${c.url}${c.heading === '' ? '' : ` (${c.heading})`}`)
        .join('');
      return `[${h.rank}] score ${h.score.toFixed(3)}\n${h.header}${also}\n\n${text.replace(/^/gm, '    ')}`;
    })
    .join('\n\n');
}

/**
 * `queryCurrentView` as every reader surface runs it (`ragfresh query`, the MCP `search` tool):
 * the store's epoch read first, and a store behind the state is STORE_LOST, not "no results".
 */
export async function searchCurrentView(
  rt: Runtime,
  question: string,
  k: number,
  scope: Parameters<typeof queryCurrentView>[3] = {},
): Promise<{ readonly hits: QueryHitView[]; readonly storeEpoch: number }> {
  const storeEpoch = await rt.connector.readEpoch();
  const hits = await queryCurrentView(rt, question, k, scope);
  // A store behind the state (deleted, reset, restored from an old copy) is STORE_LOST, not
  // "no results": the hits' own records say so for free, an empty answer costs one state read.
  let stateEpoch = 0;
  for (const h of hits)
    stateEpoch = Math.max(
      stateEpoch,
      (await rt.state.getDocument(h.documentId))?.publishedEpoch ?? 0,
    );
  if (hits.length === 0) stateEpoch = await highestRecordedEpoch(rt.state);
  if (stateEpoch > storeEpoch) throw storeLostError(rt.connector.store, storeEpoch, stateEpoch);
  return { hits, storeEpoch };
}

export async function queryCommand(
  rt: Runtime,
  question: string,
  opts: {
    k: number;
    json: boolean;
    collapse?: boolean;
    asOf?: Date;
    access?: readonly string[];
  },
  print: Print,
): Promise<number> {
  const asOf = opts.asOf === undefined ? undefined : await viewAsOf(rt, opts.asOf);
  if (typeof asOf === 'string') {
    process.stderr.write(`${asOf}\n`);
    return EXIT.failure;
  }
  const { hits } = await searchCurrentView(rt, question, opts.k, {
    ...(opts.collapse === false ? { collapse: false } : {}),
    ...(asOf === undefined ? {} : { epoch: asOf.epoch }),
    ...(opts.access === undefined ? {} : { access: opts.access }),
  });
  if (asOf !== undefined && !opts.json)
    print(
      `as of ${opts.asOf!.toISOString()}: epoch ${asOf.epoch} (in force since ${asOf.since})\n`,
    );
  print(opts.json ? JSON.stringify(hits, null, 2) : renderHits(hits));
  return EXIT.ok;
}

export function findDocument(config: ResolvedConfig, url: string, sourceId?: string): string[] {
  const ids: string[] = [];
  for (const s of config.sources) {
    if (sourceId !== undefined && s.id !== sourceId) continue;
    try {
      canonicalKey(url, s.identity);
      ids.push(documentId(s.id, url, s.identity));
    } catch {
      // Not addressable under this source's policy.
    }
  }
  return ids;
}

/** The documents (one per source that knows it) a URL names, with their tombstones. */
export async function knownDocuments(
  rt: Pick<Runtime, 'config' | 'state'>,
  url: string,
  sourceId?: string,
): Promise<{ record: DocumentRecord; tombstone: Tombstone | undefined }[]> {
  const found = [];
  for (const id of findDocument(rt.config, url, sourceId)) {
    const record = await rt.state.getDocument(id);
    if (record !== undefined) found.push({ record, tombstone: await rt.state.getTombstone(id) });
  }
  return found;
}

/** What to say of a URL no source has a record of. */
export const unknownDocument = (url: string): string =>
  `${url} is not a known document; check the URL or run \`ragfresh refresh\` first.`;

export async function inspectCommand(
  rt: Runtime,
  url: string,
  opts: { json: boolean; asOf?: Date },
  print: Print,
): Promise<number> {
  if (opts.asOf !== undefined) return inspectAsOf(rt, url, opts.asOf, opts.json, print);
  const found = await knownDocuments(rt, url);
  if (found.length === 0) {
    print(`ragfresh: ${unknownDocument(url)}`);
    return EXIT.usage;
  }
  if (opts.json) {
    print(JSON.stringify(found, null, 2));
    return EXIT.ok;
  }
  for (const { record, tombstone } of found) {
    print(`${record.url}  (${record.documentId}, source ${record.sourceId})`);
    print(
      `  status: ${record.status}${record.statusReasons.length > 0 ? ` — ${record.statusReasons.join('; ')}` : ''}`,
    );
    print(
      `  current version: ${record.currentVersionId ?? '-'} (${record.currentChunkIds.length} chunks, epoch ${record.publishedEpoch ?? '-'})`,
    );
    const t = record.timestamps;
    print(
      `  source-modified ${t.sourceModifiedAt ?? '-'} | retrieved ${t.retrievedAt ?? '-'} | content-changed ${t.contentChangedAt ?? '-'} | queryable ${t.queryableAt ?? '-'}`,
    );
    if (record.validators !== undefined)
      print(
        `  validators: etag ${record.validators.etag ?? '-'}, last-modified ${record.validators.lastModified ?? '-'}`,
      );
    if (tombstone !== undefined)
      print(
        `  tombstone: ${tombstone.reason} (approved by ${tombstone.approvedBy} at ${tombstone.createdAt})`,
      );
    print('  history:');
    print(
      table(
        ['at', 'event', 'version', 'reasons'],
        (record.history ?? []).map((h) => [h.at, h.event, h.versionId ?? '', h.reasons.join('; ')]),
      ).replace(/^/gm, '    '),
    );
  }
  return EXIT.ok;
}

/** `inspect <url> --as-of <time>`: which version of the document was current then. */
async function inspectAsOf(
  rt: Runtime,
  url: string,
  at: Date,
  json: boolean,
  print: Print,
): Promise<number> {
  const view = await viewAsOf(rt, at);
  if (typeof view === 'string') {
    process.stderr.write(`${view}\n`);
    return EXIT.failure;
  }
  const found = [];
  for (const id of findDocument(rt.config, url)) {
    const record = await rt.state.getDocument(id);
    if (record !== undefined) found.push({ record, current: versionAsOf(record, view.epoch) });
  }
  if (found.length === 0) {
    print(
      `ragfresh: ${url} is not a known document; check the URL or run \`ragfresh refresh\` first.`,
    );
    return EXIT.usage;
  }
  if (json) {
    print(
      JSON.stringify(
        found.map((f) => ({
          documentId: f.record.documentId,
          asOf: at.toISOString(),
          epoch: view.epoch,
          versionId: f.current?.versionId ?? null,
          since: f.current?.at ?? null,
        })),
        null,
        2,
      ),
    );
    return EXIT.ok;
  }
  for (const { record, current } of found)
    print(
      `${record.url}  (${record.documentId}) as of ${at.toISOString()} (epoch ${view.epoch}): ${current === undefined ? 'no version was current' : `version ${current.versionId}, current since ${current.at} (epoch ${current.epoch})`}`,
    );
  return EXIT.ok;
}
