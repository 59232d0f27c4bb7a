import { type DocumentRecord, type Reason, reasonLine, sameContentVersion } from '@ragfresh/core';
import type { NetworkPolicy, Resolver } from '@ragfresh/fetch';
import { PAGE_LIMIT_CODES } from '../bounds.js';
import { type EngineContext, SourceRun } from '../context.js';
import type { DocumentEvent } from '../counts.js';
import { embedNewChunks } from '../embed.js';
import { recordGood } from '../evidence.js';
import { PublishQueue } from '../publish.js';
import { proposeDeletion } from '../review.js';
import { sourceProvenance } from '../snapshot.js';
import type { EngineSource } from '../types.js';
import { futureRefusal, isFutureMark, RowHostPolicy, rowLimitRefusals } from './guards.js';
import type { ExportCoverage, ImportItem, ImportRow } from './row.js';
import { fetchTimeOf, IMPORT_REVIEW, identityOf, reviewRow } from './rules.js';
import { type ImportChunking, type RowVersion, rowBody, rowUrls, versionOfRow } from './version.js';

/** Rows to import: a list, or a stream of `readExport` items (rows, unreadable and refused records). */
export type ImportInput = Iterable<ImportRow | ImportItem> | AsyncIterable<ImportRow | ImportItem>;

export interface ImportOptions {
  readonly source: EngineSource;
  readonly rows: ImportInput;
  /** `provided` (default): a row's own chunks are the cut; `rechunk`: ragfresh's chunker cuts the Markdown. */
  readonly chunking?: ImportChunking;
  /** Fetch time of rows that carry none (the crawl's time); must state its timezone. */
  readonly fetchedAt?: string;
  /** Where the rows came from (a file, a dataset id), quoted in review evidence. */
  readonly label?: string;
  /** What the export proves; a function is asked once the rows have streamed (an envelope may say it last). */
  readonly coverage?: ExportCoverage | (() => ExportCoverage);
  /**
   * The network policy rows are judged by (`RowHostPolicy`). Default: the fetcher's own
   * (`fetch.allow`, `allowPrivateNetworks`) and its resolver.
   */
  readonly network?: { readonly policy?: NetworkPolicy; readonly resolver?: Resolver };
  /** Rows screened before their documents are decided and published. Default 200. */
  readonly rowBatch?: number;
}

const REFUSED_OUTCOMES: ReadonlySet<string> = new Set([...PAGE_LIMIT_CODES, 'extract-failed']);

/** Rows listed in a report (events, unreadable records); the counts stay exact beyond it. */
export const MAX_REPORTED_ROWS = 10_000;

/** Counts of one import. Every row lands in exactly one of the row outcomes. */
export interface ImportCounts {
  /** Records read: rows, unreadable and refused ones. */
  rows: number;
  /** Records that are not a row (not JSON, no URL field, truncated). */
  unreadable: number;
  /** Rows refused by a guard: page limits, host policy, a fetch time in the future (see `refusedBy`). */
  refused: number;
  /** New versions handed to the publisher. */
  candidates: number;
  published: number;
  /** Same version as the current one at the same (or no newer) fetch time: nothing to do. */
  unchanged: number;
  /** Same version seen at a newer fetch time: the observation is recorded, nothing published. */
  observed: number;
  /** Older than the stored observation, or than another row of the same document. */
  stale: number;
  /** Rows sent to review (identity, fetch time, empty content, conflicting versions). */
  review: number;
  /** Firecrawl removed/hidden rows that became deletion proposals. */
  deletionProposed: number;
  /** Rows whose crawler saw a non-2xx answer, or removals of documents not live here. */
  ignored: number;
  tombstoned: number;
  /** Quarantined by the publisher's contract or verification. */
  rejected: number;
  held: number;
  chunksEmbedded: number;
  chunksReused: number;
  storeWrites: number;
}

export interface DuplicateGroup {
  /** `dup-<16 hex of the normalised text hash>`: the same for identical content on any machine. */
  readonly id: string;
  readonly documents: readonly { readonly documentId: string; readonly url: string }[];
}

export interface ImportReport {
  readonly sourceId: string;
  readonly label?: string;
  readonly coverage: ExportCoverage;
  readonly counts: ImportCounts;
  /** Refused rows by reason code (`page-too-large`, `off-source-host`, `future-fetch-time`, ...). */
  readonly refusedBy: Readonly<Record<string, number>>;
  /** The first `MAX_REPORTED_ROWS` unreadable records. */
  readonly unreadable: readonly { readonly line: number; readonly reason: string }[];
  /** The first `MAX_REPORTED_ROWS` row events (`eventsOmitted` says how many more). */
  readonly events: readonly DocumentEvent[];
  readonly eventsOmitted: number;
  readonly duplicateGroups: readonly DuplicateGroup[];
}

function emptyImportCounts(): ImportCounts {
  return {
    rows: 0,
    unreadable: 0,
    refused: 0,
    candidates: 0,
    published: 0,
    unchanged: 0,
    observed: 0,
    stale: 0,
    review: 0,
    deletionProposed: 0,
    ignored: 0,
    tombstoned: 0,
    rejected: 0,
    held: 0,
    chunksEmbedded: 0,
    chunksReused: 0,
    storeWrites: 0,
  };
}

interface Accepted {
  readonly row: ImportRow;
  readonly documentId: string;
  readonly at: string;
}

/** One import: its context, counts and the run its publications count toward. */
class ImportRun {
  readonly counts: ImportCounts;
  readonly run: SourceRun;
  readonly queue: PublishQueue;
  readonly ctx: EngineContext;
  readonly options: ImportOptions;
  readonly hosts: RowHostPolicy;
  readonly refusedBy: Record<string, number> = {};
  readonly unreadable: { line: number; reason: string }[] = [];
  eventsOmitted = 0;

  constructor(ctx: EngineContext, options: ImportOptions) {
    this.ctx = ctx;
    this.options = options;
    this.counts = emptyImportCounts();
    this.run = new SourceRun(options.source, ctx.nowIso());
    this.queue = new PublishQueue(ctx);
    // A context without a fetcher (tests, offline tools) has no DNS: names are judged by name.
    const fetcher = ctx.deps.fetcher as EngineContext['deps']['fetcher'] | undefined;
    this.hosts = new RowHostPolicy(
      options.source,
      options.network?.policy ?? fetcher?.options.network,
      options.network?.resolver ??
        (fetcher === undefined ? async () => [] : fetcher.options.resolver),
    );
  }

  get sourceId(): string {
    return this.options.source.id;
  }

  evidence(row: { readonly line: number }, ...lines: string[]): string[] {
    return [...lines, this.at(row).detail];
  }

  /** Where a row came from, as the last reason of its event (`at: row 3 of export.jsonl`). */
  at(row: { readonly line: number }): Reason {
    return { code: 'at', detail: `row ${row.line} of ${this.options.label ?? 'the export'}` };
  }

  /** A row a guard refused: counted by its (first) reason's code, reported with its line. */
  refuse(
    row: { readonly line: number; readonly url?: string },
    reasons: Reason | readonly [Reason, ...Reason[]],
    documentId = '',
  ): void {
    const all: readonly Reason[] = 'code' in reasons ? [reasons] : reasons;
    this.counts.refused++;
    const code = all[0]!.code;
    this.refusedBy[code] = (this.refusedBy[code] ?? 0) + 1;
    this.run.event(row.url ?? '', documentId, 'refused', [...all, this.at(row)]);
  }

  unreadableRecord(line: number, reason: string): void {
    this.counts.unreadable++;
    if (this.unreadable.length < MAX_REPORTED_ROWS) this.unreadable.push({ line, reason });
  }

  /** Keeps the report's event list bounded for exports of millions of rows. */
  trimEvents(): void {
    const extra = this.run.events.length - MAX_REPORTED_ROWS;
    if (extra <= 0) return;
    this.run.events.splice(MAX_REPORTED_ROWS, extra);
    this.eventsOmitted += extra;
  }

  async review(
    row: ImportRow,
    reason: string,
    key: string,
    why: string[],
    documentId?: string,
  ): Promise<void> {
    this.counts.review++;
    const item = await reviewRow(
      this.ctx,
      {
        sourceId: this.sourceId,
        url: row.url,
        ...(documentId === undefined ? {} : { documentId }),
      },
      reason,
      key,
      this.evidence(row, ...why),
    );
    // The review reason keys the item; its evidence is the detail.
    this.run.event(row.url, documentId ?? '', item === undefined ? 'review-known' : 'review', [
      { code: reason, detail: why.join('; ') },
    ]);
  }
}

/** Rules that need only the row: identity, fetch time, answer, removal evidence, empty content. */
async function screen(ir: ImportRun, row: ImportRow): Promise<Accepted | undefined> {
  const offHost = await ir.hosts.refusal(row);
  if (offHost !== undefined) {
    ir.refuse(row, offHost);
    return undefined;
  }
  const identity = identityOf(ir.options.source, row);
  if (!identity.ok) {
    await ir.review(row, IMPORT_REVIEW.identity, row.url, [identity.why]);
    return undefined;
  }
  const id = identity.documentId;
  if (row.removal !== undefined) {
    const record = await ir.ctx.deps.state.getDocument(id);
    if (record?.currentVersionId === undefined || record.status === 'tombstoned') {
      ir.counts.ignored++;
      ir.run.event(row.url, id, 'removal-of-unknown', [
        { code: 'export-removal', detail: row.removal.evidence },
      ]);
      return undefined;
    }
    // Evidence for a person (or the explicit auto-approve policy of the review stage), never a deletion here.
    const item = await proposeDeletion(
      ir.ctx,
      { sourceId: ir.sourceId, documentId: id, url: row.url },
      'export-removal',
      ir.evidence(row, row.removal.evidence),
    );
    ir.counts.deletionProposed++;
    ir.run.event(
      row.url,
      id,
      item === undefined ? 'deletion-already-proposed' : 'deletion-proposed',
      [{ code: 'export-removal', detail: row.removal.evidence }],
    );
    return undefined;
  }
  if (row.httpStatus !== undefined && (row.httpStatus < 200 || row.httpStatus > 299)) {
    // A crawler's 404 is one observation by someone else: never deletion evidence on its own.
    ir.counts.ignored++;
    ir.run.event(row.url, id, 'not-ok', [
      { code: 'crawler-status', detail: `crawler saw HTTP ${row.httpStatus}` },
    ]);
    return undefined;
  }
  const time = fetchTimeOf(row, ir.options.fetchedAt);
  if (!time.ok) {
    await ir.review(row, IMPORT_REVIEW.fetchTime, row.loadedTime ?? '', [time.why], id);
    return undefined;
  }
  const future = futureRefusal(time.at, ir.ctx.now());
  if (future !== undefined) {
    ir.refuse(row, future, id);
    return undefined;
  }
  if (rowBody(row).trim() === '') {
    await ir.review(
      row,
      IMPORT_REVIEW.empty,
      time.at,
      ['the row has no markdown, text or chunk text'],
      id,
    );
    return undefined;
  }
  const [limit, ...limits] = rowLimitRefusals(row, ir.ctx.pageLimits);
  if (limit !== undefined) {
    ir.refuse(row, [limit, ...limits], id);
    return undefined;
  }
  return { row, documentId: id, at: time.at };
}

interface Decided {
  readonly accepted: Accepted;
  readonly version: Extract<RowVersion, { kind: 'document' }>;
}

/** Rows of one document: the newest wins; two versions at the newest time go to review. */
async function newestOf(ir: ImportRun, rows: Accepted[]): Promise<Decided | undefined> {
  // ISO-8601 UTC times: the lexically greatest is the newest.
  const newest =
    rows
      .map((r) => r.at)
      .sort()
      .at(-1) ?? '';
  ir.counts.stale += rows.filter((r) => r.at < newest).length;
  const top = rows.filter((r) => r.at === newest);
  const versions: Decided[] = [];
  for (const accepted of top) {
    const version = await versionOfRow(
      ir.ctx,
      accepted.row,
      {
        documentId: accepted.documentId,
        sourceId: ir.sourceId,
        retrievedAt: accepted.at,
        ...sourceProvenance(ir.options.source),
      },
      ir.options.chunking ?? 'provided',
    );
    if (version.kind === 'not-the-document') {
      // Over a limit, or the pipeline threw on it: refused with that reason, not "empty content".
      const [first, ...rest] = version.reasons;
      if (first !== undefined && version.reasons.some((r) => REFUSED_OUTCOMES.has(r.code))) {
        ir.refuse(accepted.row, [first, ...rest], accepted.documentId);
        continue;
      }
      await ir.review(
        accepted.row,
        IMPORT_REVIEW.empty,
        accepted.at,
        version.reasons.map(reasonLine),
        accepted.documentId,
      );
      continue;
    }
    versions.push({ accepted, version });
  }
  const distinct = [...new Set(versions.map((v) => v.version.doc.versionId))].sort();
  if (distinct.length > 1) {
    for (const v of versions)
      await ir.review(
        v.accepted.row,
        IMPORT_REVIEW.conflict,
        `${newest}\n${v.version.doc.versionId}`,
        [
          `${distinct.length} different versions of this URL in the export at ${newest}: ${distinct.join(', ')}`,
        ],
        v.accepted.documentId,
      );
    return undefined;
  }
  // Identical rows (same URL, time and version) are one observation.
  ir.counts.unchanged += Math.max(0, versions.length - 1);
  return versions[0];
}

/** Against the stored observation: older is ignored, same version is a no-op, one time with two versions is reviewed. */
async function settle(
  ir: ImportRun,
  d: Decided,
  record: DocumentRecord | undefined,
): Promise<boolean> {
  const { ctx, counts } = ir;
  const { row, documentId, at } = d.accepted;
  const doc = d.version.doc;
  if ((await ctx.deps.state.getTombstone(documentId)) !== undefined) {
    counts.tombstoned++;
    ir.run.event(row.url, documentId, 'tombstoned-skip');
    return false;
  }
  // A stored time beyond the clock skew (written before future times were refused) is no mark.
  const mark = record?.timestamps.retrievedAt;
  const stored = isFutureMark(mark, ctx.now()) ? undefined : mark;
  if (stored !== undefined && at < stored) {
    counts.stale++;
    ir.run.event(row.url, documentId, 'stale', [
      { code: 'older-than-stored', detail: `fetched ${at}, stored observation ${stored}` },
    ]);
    return false;
  }
  if (record !== undefined && sameContentVersion(record.currentVersionId, doc.versionId)) {
    if (stored === undefined || at > stored) {
      counts.observed++;
      await recordGood(ctx, record, {
        validators: record.validators ?? { pipelineKey: ctx.deps.pipeline.pipelineKey },
        retrievedAt: at,
      });
      ir.run.event(row.url, documentId, 'observed-unchanged');
    } else {
      counts.unchanged++;
    }
    return true;
  }
  if (stored !== undefined && at === stored && record?.currentVersionId !== undefined) {
    await ir.review(
      row,
      IMPORT_REVIEW.conflict,
      `${at}\n${doc.versionId}`,
      [
        `stored version ${record.currentVersionId} and exported version ${doc.versionId} were both fetched at ${at}`,
      ],
      documentId,
    );
    return false;
  }
  const rc = ir.run.counts;
  const chunks = await embedNewChunks(
    ctx,
    doc,
    record?.currentVersionId === undefined ? undefined : record,
    rc,
  );
  const rawDigest = await ctx.deps.snapshots?.put(new TextEncoder().encode(d.version.body), {
    url: row.url,
    finalUrl: rowUrls(row).finalUrl,
    status: 200,
    fetchedAt: at,
    headers: {},
    contentType: 'text/markdown; charset=utf-8',
  });
  counts.candidates++;
  const before = rc.published;
  await ir.queue.add({
    run: ir.run,
    candidate: {
      documentId,
      versionId: doc.versionId,
      sourceId: ir.sourceId,
      url: row.url,
      contentHash: doc.contentHash,
      textChars: doc.text.length,
      text: doc.text,
      chunks,
      retrievedAt: at,
      // No HTTP validators came with the export: the next fetch of this page is unconditional.
      validators: { pipelineKey: ctx.deps.pipeline.pipelineKey },
      ...(rawDigest === undefined ? {} : { rawDigest }),
    },
  });
  if (rc.published > before)
    ctx.log.info('import-batch', { source: ir.sourceId, published: rc.published });
  return true;
}

/** Documents by content hash, slim (id and URL), for the duplicate groups of one import. */
type ContentMembers = Map<string, Map<string, string>>;

// Distinct contents tracked for duplicate groups; past it, new contents are not grouped.
const MAX_TRACKED_CONTENTS = 200_000;

function trackContent(members: ContentMembers, d: Decided): void {
  const hash = d.version.doc.contentHash;
  let docs = members.get(hash);
  if (docs === undefined) {
    if (members.size >= MAX_TRACKED_CONTENTS) return;
    docs = new Map();
    members.set(hash, docs);
  }
  docs.set(d.accepted.documentId, d.accepted.row.url);
}

async function recordDuplicateGroups(
  ir: ImportRun,
  members: ContentMembers,
): Promise<DuplicateGroup[]> {
  const groups: DuplicateGroup[] = [];
  for (const [hash, docs] of members) {
    if (docs.size < 2) continue;
    const id = `dup-${hash.slice(0, 16)}`;
    const documents = [...docs].map(([documentId, url]) => ({ documentId, url }));
    groups.push({ id, documents });
    for (const d of documents) {
      const record = await ir.ctx.deps.state.getDocument(d.documentId);
      if (record === undefined) continue;
      const last = (record.history ?? []).findLast((h) => h.event === 'duplicate-group');
      if (last?.reasons[0] === id) continue;
      // Both documents stay, each citing its own URL; the group says they say the same thing.
      const others = documents.filter((o) => o.documentId !== d.documentId).map((o) => o.url);
      await ir.ctx.ledger.grouped(record, id, others);
    }
  }
  return groups;
}

/** Decides and publishes one batch of screened rows; the queue is drained, so the next batch sees its records. */
async function settleBatch(
  ir: ImportRun,
  byDoc: Map<string, Accepted[]>,
  byContent: ContentMembers,
): Promise<void> {
  for (const rows of byDoc.values()) {
    const decided = await newestOf(ir, rows);
    if (decided === undefined) continue;
    const record = await ir.ctx.deps.state.getDocument(decided.accepted.documentId);
    if (await settle(ir, decided, record)) trackContent(byContent, decided);
  }
  await ir.queue.drain();
  ir.trimEvents();
}

const isItem = (x: ImportRow | ImportItem): x is ImportItem => 'kind' in x;

/**
 * Imports an export's rows at the point fetched pages enter: after acquisition, through the
 * engine's classify/extract/chunk/embed stages and core's Publisher in shared batches. It is a
 * delta: documents the export does not mention are untouched, since absence is never evidence.
 * Rows stream in batches (`rowBatch`), each decided and published before the next is read, and
 * pass the guards a fetched page passes: the page limits, the host and network policy, and a
 * fetch time no later than the clock skew allows (`guards.ts`).
 * A retry is safe: a version already current is a no-op, and nothing is marked imported outside
 * the publisher's journalled record write, so a crash can never skip a row on the next run.
 */
export async function importRows(
  ctx: EngineContext,
  options: ImportOptions,
): Promise<ImportReport> {
  const ir = new ImportRun(ctx, options);
  const rowBatch = options.rowBatch ?? 200;
  // A batch also ends at 16 pages of the largest size, so memory stays bounded by the limits.
  const batchChars = 16 * ctx.pageLimits.maxChars;
  let byDoc = new Map<string, Accepted[]>();
  let screened = 0;
  let chars = 0;
  const byContent: ContentMembers = new Map();
  for await (const entry of options.rows) {
    ir.counts.rows++;
    // Refused rows fill no batch: the event list is bounded here, not only per batch.
    ir.trimEvents();
    const item: ImportItem = isItem(entry) ? entry : { kind: 'row', row: entry };
    if (item.kind === 'unreadable') {
      ir.unreadableRecord(item.line, item.reason);
      continue;
    }
    if (item.kind === 'refused') {
      ir.refuse(item, item.reason);
      continue;
    }
    const accepted = await screen(ir, item.row);
    if (accepted === undefined) continue;
    byDoc.set(accepted.documentId, [...(byDoc.get(accepted.documentId) ?? []), accepted]);
    screened++;
    chars += rowBody(accepted.row).length;
    if (screened >= rowBatch || chars >= batchChars) {
      await settleBatch(ir, byDoc, byContent);
      byDoc = new Map();
      screened = 0;
      chars = 0;
    }
  }
  await settleBatch(ir, byDoc, byContent);
  const rc = ir.run.counts;
  Object.assign(ir.counts, {
    published: rc.published,
    rejected: rc.rejected,
    held: rc.held,
    chunksEmbedded: rc.chunksEmbedded,
    chunksReused: rc.chunksReused,
    storeWrites: rc.storeWrites,
  });
  // Candidates that became current meanwhile count as unchanged (the publisher wrote nothing).
  ir.counts.unchanged += rc.unchangedContent;
  ir.counts.tombstoned += rc.tombstonedSkipped;
  const duplicateGroups = await recordDuplicateGroups(ir, byContent);
  for (const [outcome, n] of Object.entries(ir.counts))
    if (outcome !== 'rows' && n > 0)
      ctx.count(
        'ragfresh_import_rows_total',
        'Imported export rows by outcome.',
        { source: ir.sourceId, outcome },
        n,
      );
  const coverage = typeof options.coverage === 'function' ? options.coverage() : options.coverage;
  return {
    sourceId: ir.sourceId,
    ...(options.label === undefined ? {} : { label: options.label }),
    coverage: coverage ?? { complete: false, reasons: ['coverage not stated'] },
    counts: ir.counts,
    refusedBy: ir.refusedBy,
    unreadable: ir.unreadable,
    events: ir.run.events,
    eventsOmitted: ir.eventsOmitted,
    duplicateGroups,
  };
}
