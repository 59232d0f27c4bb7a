import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  type Connector,
  type DocumentRecord,
  type EmbeddedChunk,
  errorMessage,
  FIELDS,
  documentId as makeDocumentId,
  type PublishCandidate,
  type Publisher,
  type RemovalRequest,
  type ReviewItem,
  type RunSummary,
  type StateStore,
} from '@ragfresh/core';
import type { Fetcher, FetchResult, RawSnapshotStore } from '@ragfresh/fetch';
import { decodeBody, discoverLlmsTxt, discoverSitemap } from '@ragfresh/fetch';
import type { ResolvedConfig, ResolvedSource } from './config.js';
import { type Logger, silentLogger } from './log.js';
import type { Metrics } from './metrics.js';
import type { ExtractedDocument, PageOutcome, PagePipeline } from './pipeline.js';

/** Counts of one refresh, per source and in total. Every number is counted, never estimated. */
export interface RefreshCounts {
  urls: number;
  fetched200: number;
  notModified: number;
  gone: number;
  fetchErrors: number;
  extracted: number;
  notTheDocument: number;
  unchangedContent: number;
  validatorChurn: number;
  candidates: number;
  published: number;
  rejected: number;
  removed: number;
  chunksEmbedded: number;
  chunksReused: number;
  storeWrites: number;
  tombstonedSkipped: number;
  reviewCreated: number;
  /** Documents re-extracted from raw snapshots (pipeline change), without network. */
  reextracted: number;
}

export function emptyCounts(): RefreshCounts {
  return {
    urls: 0,
    fetched200: 0,
    notModified: 0,
    gone: 0,
    fetchErrors: 0,
    extracted: 0,
    notTheDocument: 0,
    unchangedContent: 0,
    validatorChurn: 0,
    candidates: 0,
    published: 0,
    rejected: 0,
    removed: 0,
    chunksEmbedded: 0,
    chunksReused: 0,
    storeWrites: 0,
    tombstonedSkipped: 0,
    reviewCreated: 0,
    reextracted: 0,
  };
}

export interface DocumentEvent {
  readonly url: string;
  readonly documentId: string;
  readonly event: string;
  readonly reasons: readonly string[];
}

export interface SourceReport {
  readonly sourceId: string;
  readonly complete: boolean;
  readonly counts: RefreshCounts;
  readonly alerts: readonly string[];
  readonly events: readonly DocumentEvent[];
}

export interface RefreshReport {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly sources: readonly SourceReport[];
  readonly totals: RefreshCounts;
}

export interface EngineDeps {
  readonly config: ResolvedConfig;
  readonly connector: Connector;
  readonly state: StateStore;
  readonly publisher: Publisher;
  readonly fetcher: Fetcher;
  readonly pipeline: PagePipeline;
  readonly embeddings: EmbeddingsInterface;
  readonly snapshots?: RawSnapshotStore;
  readonly log?: Logger;
  readonly metrics?: Metrics;
  readonly now?: () => Date;
  /** Documents per publish batch. Default 25. */
  readonly batchSize?: number;
  /** Pages processed at once (fetch + extract). Default the fetcher's global concurrency, 8. */
  readonly concurrency?: number;
  /** Headless rendering for sources with `acquisition: 'rendered' | 'auto'` (launched lazily). */
  readonly renderer?: () => Promise<PageRenderer>;
}

/** What the engine needs from `@ragfresh/render`. */
export interface PageRenderer {
  render(url: string): Promise<{ readonly html: string; readonly finalUrl: string }>;
}

interface Pending {
  readonly candidate: PublishCandidate;
  readonly url: string;
  readonly apply: (record: DocumentRecord) => DocumentRecord;
}

const HISTORY_LIMIT = 50;

function addHistory(
  record: DocumentRecord,
  at: string,
  event: string,
  reasons: readonly string[],
  versionId?: string,
): DocumentRecord {
  return {
    ...record,
    history: [
      ...(record.history ?? []),
      { at, event, reasons, ...(versionId === undefined ? {} : { versionId }) },
    ].slice(-HISTORY_LIMIT),
  };
}

async function mapLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  });
  await Promise.all(workers);
}

/** Serialises async sections (the publisher is one writer; batches flush one at a time). */
class Mutex {
  #tail: Promise<void> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(fn);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

/**
 * The refresh engine: fetch -> classify -> extract -> validate -> chunk -> embed -> publish,
 * for the sources that are due. Cheap when nothing changed (a 304 stops everything
 * downstream), safe when something broke (a bad page never replaces a good version), and
 * destructive only on evidence, through the review queue.
 */
export class RefreshEngine {
  readonly #d: EngineDeps;
  readonly #log: Logger;
  readonly #publishLock = new Mutex();
  #rendererPromise: Promise<PageRenderer> | undefined;

  constructor(deps: EngineDeps) {
    this.#d = deps;
    this.#log = deps.log ?? silentLogger;
  }

  #renderer(): Promise<PageRenderer> {
    this.#rendererPromise ??= this.#d.renderer!();
    return this.#rendererPromise;
  }

  #now(): Date {
    return this.#d.now?.() ?? new Date();
  }

  #metric(name: string, help: string, labels: Record<string, string> = {}, by = 1): void {
    this.#d.metrics?.inc(name, help, labels, by);
  }

  /** Sources whose interval has elapsed since their last run (all of them with `all`). */
  async dueSources(all = false): Promise<ResolvedSource[]> {
    if (all) return [...this.#d.config.sources];
    const now = this.#now().getTime();
    const due: ResolvedSource[] = [];
    for (const s of this.#d.config.sources) {
      const [last] = await this.#d.state.listRuns(s.id, 1);
      if (last === undefined || Date.parse(last.startedAt) + s.everyMs <= now) due.push(s);
    }
    return due;
  }

  /** Next time any source becomes due (for the scheduler). */
  async nextDueAt(): Promise<number> {
    let next = Number.POSITIVE_INFINITY;
    for (const s of this.#d.config.sources) {
      const [last] = await this.#d.state.listRuns(s.id, 1);
      next = Math.min(next, last === undefined ? 0 : Date.parse(last.startedAt) + s.everyMs);
    }
    return next;
  }

  async refresh(
    options: { all?: boolean; sourceIds?: readonly string[]; signal?: AbortSignal } = {},
  ): Promise<RefreshReport> {
    const startedAt = this.#now().toISOString();
    let sources = await this.dueSources(options.all === true || options.sourceIds !== undefined);
    if (options.sourceIds !== undefined)
      sources = sources.filter((s) => options.sourceIds!.includes(s.id));
    const reports: SourceReport[] = [];
    for (const source of sources) {
      if (options.signal?.aborted) break;
      reports.push(await this.refreshSource(source, options.signal));
    }
    const totals = emptyCounts();
    for (const r of reports)
      for (const [k, v] of Object.entries(r.counts)) totals[k as keyof RefreshCounts] += v;
    return { startedAt, finishedAt: this.#now().toISOString(), sources: reports, totals };
  }

  async #inventory(
    source: ResolvedSource,
    signal?: AbortSignal,
  ): Promise<{ urls: string[]; complete: boolean; problems: string[] }> {
    const urls: string[] = [...(source.urls ?? [])];
    const problems: string[] = [];
    for (const sitemap of source.sitemaps ?? []) {
      const found = await discoverSitemap(
        this.#d.fetcher,
        sitemap,
        signal === undefined ? {} : { signal },
      );
      for (const e of found.entries) urls.push(e.url);
      if (found.truncated) problems.push(`sitemap-truncated: ${sitemap}`);
      for (const f of found.failures) problems.push(`sitemap-unreadable: ${f.url} (${f.outcome})`);
    }
    for (const llms of source.llmsTxt ?? []) {
      const found = await discoverLlmsTxt(
        this.#d.fetcher,
        llms,
        signal === undefined ? {} : { signal },
      );
      if (found.outcome !== 'ok') problems.push(`llms-txt-unreadable: ${llms} (${found.outcome})`);
      for (const l of found.links) urls.push(l.url);
    }
    // One document per identity: tracking-parameter variants collapse here.
    const byId = new Map<string, string>();
    for (const u of urls) {
      try {
        const id = makeDocumentId(source.id, u, source.identity);
        if (!byId.has(id)) byId.set(id, u);
      } catch (err) {
        problems.push(`bad-url: ${u} (${errorMessage(err)})`);
      }
    }
    return { urls: [...byId.values()], complete: problems.length === 0, problems };
  }

  async refreshSource(source: ResolvedSource, signal?: AbortSignal): Promise<SourceReport> {
    const startedAt = this.#now().toISOString();
    const counts = emptyCounts();
    const alerts: string[] = [];
    const events: DocumentEvent[] = [];
    // A new extractor/chunker: re-extract from raw snapshots first, so the conditional fetches
    // below can still be answered 304 instead of downloading every page again.
    await this.#reextractSource(source, counts, events, alerts, true);
    const inv = await this.#inventory(source, signal);
    alerts.push(...inv.problems);
    let complete = inv.complete;
    const discovered = new Set(inv.urls.map((u) => makeDocumentId(source.id, u, source.identity)));
    // Known documents are re-checked even when discovery no longer lists them: that is how a
    // removed page accumulates gone evidence instead of silently going stale.
    const urls = [...inv.urls];
    for await (const r of this.#d.state.listDocuments({ sourceId: source.id })) {
      if (
        !discovered.has(r.documentId) &&
        r.status !== 'tombstoned' &&
        r.currentVersionId !== undefined
      )
        urls.push(r.url);
    }
    counts.urls = urls.length;
    const pending: Pending[] = [];
    const flush = async () => {
      const batch = pending.splice(0, pending.length);
      if (batch.length > 0) await this.#publishBatch(source, batch, counts, events, alerts);
    };
    let done = 0;
    await mapLimit(
      urls,
      this.#d.concurrency ?? this.#d.config.fetch?.globalConcurrency ?? 8,
      async (url) => {
        if (signal?.aborted) {
          complete = false;
          return;
        }
        const definitive = await this.#observe(source, url, counts, events, alerts, pending);
        if (!definitive) complete = false;
        if (pending.length >= (this.#d.batchSize ?? 25)) await this.#publishLock.run(flush);
        this.#log.progress(source.id, ++done, urls.length);
      },
    );
    await this.#publishLock.run(flush);
    this.#log.done();
    if (complete) await this.#inventoryDiff(source, discovered, counts, events);
    await this.#shapeChecks(source, counts, alerts);
    const run: RunSummary = {
      runId: `${source.id}@${startedAt}`,
      sourceId: source.id,
      startedAt,
      finishedAt: this.#now().toISOString(),
      complete,
      counts: { ...counts },
      alerts,
    };
    await this.#d.state.appendRun(run);
    for (const a of alerts) this.#log.warn('alert', { source: source.id, alert: a });
    this.#metric('ragfresh_runs_total', 'Refresh runs by source and completeness.', {
      source: source.id,
      complete: String(complete),
    });
    return { sourceId: source.id, complete, counts, alerts, events };
  }

  /** Fetches and classifies one URL. Returns whether the outcome was definitive (counts toward complete coverage). */
  async #observe(
    source: ResolvedSource,
    url: string,
    counts: RefreshCounts,
    events: DocumentEvent[],
    alerts: string[],
    pending: Pending[],
  ): Promise<boolean> {
    const docId = makeDocumentId(source.id, url, source.identity);
    const record = await this.#d.state.getDocument(docId);
    const tombstone = await this.#d.state.getTombstone(docId);
    const nowIso = this.#now().toISOString();
    const result = await this.#d.fetcher.fetch(url, {
      ...(record?.validators === undefined || tombstone !== undefined
        ? {}
        : { validators: record.validators }),
      pipelineKey: this.#d.pipeline.pipelineKey,
      ...(source.markdownTwin === true ? { markdownTwin: true } : {}),
      ...(source.proxy === undefined
        ? {}
        : {
            proxy: {
              url: source.proxy.url,
              ...(source.proxy.region === undefined ? {} : { label: source.proxy.region }),
            },
          }),
    });
    this.#metric('ragfresh_fetches_total', 'Fetches by outcome.', {
      source: source.id,
      outcome: result.outcome,
    });
    const base: DocumentRecord = record ?? {
      documentId: docId,
      sourceId: source.id,
      url,
      status: 'healthy',
      statusReasons: [],
      currentChunkIds: [],
      timestamps: {},
    };
    const event = (name: string, reasons: readonly string[] = []) =>
      events.push({ url, documentId: docId, event: name, reasons });

    if (tombstone !== undefined) {
      // A tombstone blocks casual resurrection: observe, never publish.
      counts.tombstonedSkipped++;
      if (result.outcome === 'ok')
        await this.#maybeResurrectionReview(source, url, docId, base, counts, nowIso);
      event('tombstoned-skip', [`tombstoned: ${tombstone.reason}`]);
      return (
        result.outcome === 'ok' || result.outcome === 'gone' || result.outcome === 'not-modified'
      );
    }

    switch (result.outcome) {
      case 'not-modified': {
        counts.notModified++;
        await this.#d.state.putDocument({
          ...base,
          ...(base.status === 'degraded' ? { status: 'healthy', statusReasons: [] } : {}),
          validators: result.validators,
          timestamps: { ...base.timestamps, retrievedAt: result.fetchedAt },
          lastAttemptAt: nowIso,
          lastGoodAt: result.fetchedAt,
          goneCount: 0,
        });
        event('not-modified');
        return true;
      }
      case 'ok':
        return this.#onOk(source, url, docId, base, result, counts, events, alerts, pending);
      case 'gone': {
        counts.gone++;
        await this.#onGone(source, url, docId, base, result, counts, events, nowIso);
        return true;
      }
      default: {
        counts.fetchErrors++;
        const reason = this.#describeFailure(result);
        if (result.outcome === 'off-host-redirect')
          alerts.push(`off-host-redirect: ${url} -> ${result.location}`);
        await this.#degrade(base, [reason], nowIso);
        event('degraded', [reason]);
        return false;
      }
    }
  }

  #describeFailure(r: FetchResult): string {
    switch (r.outcome) {
      case 'rate-limited':
        return `rate-limited: HTTP 429${r.retryAfterMs === undefined ? '' : `, retry after ${Math.round(r.retryAfterMs / 1000)}s`}`;
      case 'server-error':
        return `server-error: HTTP ${r.status}`;
      case 'off-host-redirect':
        return `off-host-redirect: to ${r.location}`;
      case 'timeout':
        return `timeout: ${r.phase}`;
      case 'network-error':
        return `network-error: ${r.error.code}`;
      case 'robots-disallowed':
        return `robots-disallowed: ${r.basis}`;
      case 'unsupported-type':
        return `unsupported-type: ${r.contentType || 'none'}`;
      case 'too-large':
        return `too-large: over ${r.limitBytes} bytes`;
      default:
        return `${r.outcome}: HTTP ${r.status}`;
    }
  }

  async #degrade(base: DocumentRecord, reasons: readonly string[], at: string): Promise<void> {
    // Never overwrite: the last good version stays current; readers are told it is stale.
    const status =
      base.status === 'quarantined' || base.status === 'tombstoned' ? base.status : 'degraded';
    await this.#d.state.putDocument(
      addHistory(
        { ...base, status, statusReasons: reasons, lastAttemptAt: at },
        at,
        'degraded',
        reasons,
      ),
    );
  }

  async #onOk(
    source: ResolvedSource,
    url: string,
    docId: string,
    base: DocumentRecord,
    result: Extract<FetchResult, { outcome: 'ok' }>,
    counts: RefreshCounts,
    events: DocumentEvent[],
    alerts: string[],
    pending: Pending[],
  ): Promise<boolean> {
    counts.fetched200++;
    const nowIso = this.#now().toISOString();
    const event = (name: string, reasons: readonly string[] = []) =>
      events.push({ url, documentId: docId, event: name, reasons });
    const context = {
      documentId: docId,
      sourceId: source.id,
      retrievedAt: result.fetchedAt,
      ...(result.region === undefined ? {} : { region: result.region }),
      ...(source.authority === undefined ? {} : { authority: source.authority }),
      ...(result.lastModifiedAt === undefined ? {} : { sourceModifiedAt: result.lastModifiedAt }),
    };
    const mode = source.acquisition ?? 'raw';
    let outcome: PageOutcome | undefined =
      mode === 'rendered'
        ? undefined
        : await this.#d.pipeline.process(
            {
              text: result.text,
              contentType: result.contentType,
              url,
              finalUrl: result.finalUrl,
              acquisition: result.acquisition,
            },
            context,
          );
    // The raw fetch (conditional, polite) decides whether anything changed; rendering only
    // replaces how the content is read: always (`rendered`) or for an empty app shell (`auto`).
    const shell =
      outcome?.kind === 'not-the-document' &&
      outcome.reasons.some((r) => /^empty_app_shell/i.test(r));
    if (this.#d.renderer !== undefined && (mode === 'rendered' || (mode === 'auto' && shell))) {
      try {
        const rendered = await (await this.#renderer()).render(url);
        outcome = await this.#d.pipeline.process(
          {
            text: rendered.html,
            contentType: 'text/html',
            url,
            finalUrl: rendered.finalUrl,
            acquisition: 'rendered',
          },
          context,
        );
        this.#metric('ragfresh_renders_total', 'Pages rendered in a headless browser.', {
          source: source.id,
        });
      } catch (err) {
        outcome = { kind: 'not-the-document', reasons: [`render-failed: ${errorMessage(err)}`] };
      }
    } else if (outcome === undefined) {
      outcome = {
        kind: 'not-the-document',
        reasons: ['render-unavailable: acquisition "rendered" needs @ragfresh/render'],
      };
    }
    counts.extracted++;
    if (outcome.kind === 'not-the-document') {
      counts.notTheDocument++;
      if (outcome.reasons.some((r) => /^empty/i.test(r))) alerts.push(`empty-extraction: ${url}`);
      await this.#degrade({ ...base, goneCount: 0 }, outcome.reasons, nowIso);
      event('not-the-document', outcome.reasons);
      return true;
    }
    const validatorsMoved =
      base.validators !== undefined &&
      (base.validators.etag !== result.validators.etag ||
        base.validators.lastModified !== result.validators.lastModified);
    if (base.currentVersionId === outcome.versionId) {
      counts.unchangedContent++;
      if (validatorsMoved) counts.validatorChurn++;
      await this.#d.state.putDocument({
        ...base,
        ...(base.status === 'degraded' ? { status: 'healthy', statusReasons: [] } : {}),
        validators: result.validators,
        rawDigest: result.rawDigest,
        timestamps: { ...base.timestamps, retrievedAt: result.fetchedAt },
        lastAttemptAt: nowIso,
        lastGoodAt: result.fetchedAt,
        goneCount: 0,
      });
      event(validatorsMoved ? 'validator-moved-content-did-not' : 'unchanged');
      return true;
    }
    if (
      base.validators?.etag !== undefined &&
      base.validators.etag === result.validators.etag &&
      base.contentHash !== undefined &&
      base.contentHash !== outcome.contentHash
    ) {
      // The reverse of churn: content changed under an unchanged validator, so 304s would hide edits.
      alerts.push(`validator-stale: ${url} changed content under the same ETag`);
    }
    const embedded = await this.#embed(outcome, base, counts);
    counts.candidates++;
    pending.push({
      url,
      candidate: {
        documentId: docId,
        versionId: outcome.versionId,
        sourceId: source.id,
        url,
        contentHash: outcome.contentHash,
        textChars: outcome.text.length,
        text: outcome.text,
        chunks: embedded,
        retrievedAt: result.fetchedAt,
        ...(result.lastModifiedAt === undefined ? {} : { sourceModifiedAt: result.lastModifiedAt }),
      },
      apply: (r) => ({
        ...r,
        validators: result.validators,
        rawDigest: result.rawDigest,
        timestamps: { ...r.timestamps, retrievedAt: result.fetchedAt },
        lastAttemptAt: nowIso,
        lastGoodAt: result.fetchedAt,
        goneCount: 0,
      }),
    });
    return true;
  }

  /** Embeds only chunk texts the current version does not already have a vector for. */
  async #embed(
    doc: ExtractedDocument,
    base: DocumentRecord,
    counts: RefreshCounts,
  ): Promise<EmbeddedChunk[]> {
    const known = new Map<string, readonly number[]>();
    if (base.currentVersionId !== undefined) {
      const current = await this.#d.connector.listChunks(base.documentId, base.currentVersionId, {
        withEmbeddings: true,
      });
      for (const c of current) {
        const hash = c.metadata[FIELDS.contentHash];
        if (typeof hash === 'string' && c.embedding !== undefined) known.set(hash, c.embedding);
      }
    }
    const missing = [
      ...new Set(doc.chunks.filter((c) => !known.has(c.contentHash)).map((c) => c.contentHash)),
    ];
    const textByHash = new Map(doc.chunks.map((c) => [c.contentHash, c.text]));
    if (missing.length > 0) {
      const vectors = await this.#d.embeddings.embedDocuments(
        missing.map((h) => textByHash.get(h)!),
      );
      for (const [i, h] of missing.entries()) known.set(h, vectors[i]!);
    }
    counts.chunksEmbedded += missing.length;
    counts.chunksReused += doc.chunks.length - missing.length;
    this.#metric(
      'ragfresh_chunks_embedded_total',
      'Chunk texts sent to the embedder.',
      {},
      missing.length,
    );
    return doc.chunks.map((c) => ({ ...c, embedding: known.get(c.contentHash)! }));
  }

  async #publishBatch(
    source: ResolvedSource,
    batch: readonly Pending[],
    counts: RefreshCounts,
    events: DocumentEvent[],
    alerts: string[],
  ): Promise<void> {
    const started = performance.now();
    const report = await this.#d.publisher.publish(batch.map((p) => p.candidate));
    this.#d.metrics?.set(
      'ragfresh_publish_latency_ms',
      'Latency of the last publish batch.',
      { source: source.id },
      performance.now() - started,
    );
    counts.storeWrites += report.stagedChunks;
    const byId = new Map(batch.map((p) => [p.candidate.documentId, p]));
    for (const r of report.documents) {
      const p = byId.get(r.documentId);
      if (p === undefined) continue;
      const record = await this.#d.state.getDocument(r.documentId);
      if (r.outcome === 'published') {
        counts.published++;
        if (record !== undefined) await this.#d.state.putDocument(p.apply(record));
        events.push({
          url: p.url,
          documentId: r.documentId,
          event: r.previousVersionId === undefined ? 'published' : 'updated',
          reasons: [],
        });
      } else if (r.outcome === 'unchanged') {
        counts.unchangedContent++;
        if (record !== undefined) await this.#d.state.putDocument(p.apply(record));
      } else {
        // Rejected: validators are NOT stored, so the next run fetches the page in full again.
        counts.rejected++;
        if (r.reasons.some((x) => x.startsWith('shrink')))
          alerts.push(`sharp-shrink: ${p.url} (${r.reasons.join('; ')})`);
        events.push({
          url: p.url,
          documentId: r.documentId,
          event: 'quarantined',
          reasons: r.reasons,
        });
      }
    }
  }

  async #onGone(
    source: ResolvedSource,
    url: string,
    docId: string,
    base: DocumentRecord,
    result: FetchResult,
    counts: RefreshCounts,
    events: DocumentEvent[],
    nowIso: string,
  ): Promise<void> {
    const goneCount = (base.goneCount ?? 0) + 1;
    const goneSince =
      base.goneCount !== undefined && base.goneCount > 0 && base.goneSince !== undefined
        ? base.goneSince
        : nowIso;
    const reason = `gone: HTTP ${result.status} (${goneCount} of ${this.#d.config.goneChecks} checks since ${goneSince})`;
    let record: DocumentRecord = addHistory(
      {
        ...base,
        goneCount,
        goneSince,
        lastAttemptAt: nowIso,
        status: base.currentVersionId === undefined ? base.status : 'degraded',
        statusReasons: [reason],
      },
      nowIso,
      'gone',
      [reason],
    );
    await this.#d.state.putDocument(record);
    events.push({ url, documentId: docId, event: 'gone', reasons: [reason] });
    const ageOk = Date.parse(nowIso) - Date.parse(goneSince) >= this.#d.config.minGoneAgeMs;
    if (base.currentVersionId === undefined || goneCount < this.#d.config.goneChecks || !ageOk)
      return;
    const item = await this.#proposeDeletion(source, url, docId, 'confirmed-gone', [
      `HTTP ${result.status} observed ${goneCount} times since ${goneSince}`,
    ]);
    if (item !== undefined) {
      counts.reviewCreated++;
      record = (await this.#d.state.getDocument(docId)) ?? record;
      if (this.#d.config.autoApproveDeletions) {
        const removed = await this.approve(item.id, 'auto-policy:deletion.autoApprove');
        if (removed) counts.removed++;
      }
    }
  }

  async #proposeDeletion(
    source: ResolvedSource,
    url: string,
    docId: string,
    reason: string,
    evidence: string[],
  ): Promise<ReviewItem | undefined> {
    const id = `delete:${docId}`;
    const existing = await this.#d.state.getReviewItem(id);
    if (existing?.status === 'pending') return undefined;
    const item: ReviewItem = {
      id,
      kind: 'deletion',
      documentId: docId,
      sourceId: source.id,
      url,
      reason,
      evidence,
      createdAt: this.#now().toISOString(),
      status: 'pending',
    };
    await this.#d.state.putReviewItem(item);
    this.#log.info('review-item', { id, reason, url });
    return item;
  }

  async #maybeResurrectionReview(
    source: ResolvedSource,
    url: string,
    docId: string,
    base: DocumentRecord,
    counts: RefreshCounts,
    nowIso: string,
  ): Promise<void> {
    const seen = (base.history ?? []).filter((h) => h.event === 'alive-after-tombstone').length + 1;
    await this.#d.state.putDocument(
      addHistory({ ...base, lastAttemptAt: nowIso }, nowIso, 'alive-after-tombstone', [
        'HTTP 200 while tombstoned',
      ]),
    );
    if (seen < this.#d.config.goneChecks) return;
    const id = `ingest:${docId}`;
    if ((await this.#d.state.getReviewItem(id))?.status === 'pending') return;
    await this.#d.state.putReviewItem({
      id,
      kind: 'ingestion',
      documentId: docId,
      sourceId: source.id,
      url,
      reason: 'tombstoned page answers 200 again',
      evidence: [`HTTP 200 observed ${seen} times after the tombstone`],
      createdAt: nowIso,
      status: 'pending',
    });
    counts.reviewCreated++;
  }

  async #inventoryDiff(
    source: ResolvedSource,
    present: Set<string>,
    counts: RefreshCounts,
    events: DocumentEvent[],
  ): Promise<void> {
    for await (const r of this.#d.state.listDocuments({ sourceId: source.id })) {
      if (
        present.has(r.documentId) ||
        r.currentVersionId === undefined ||
        r.status === 'tombstoned'
      )
        continue;
      const item = await this.#proposeDeletion(source, r.url, r.documentId, 'inventory-diff', [
        'absent from a run whose coverage was complete (every sitemap read, every page answered)',
        ...r.statusReasons.map((reason) => `last observation: ${reason}`),
      ]);
      if (item !== undefined) {
        counts.reviewCreated++;
        events.push({
          url: r.url,
          documentId: r.documentId,
          event: 'deletion-proposed',
          reasons: ['inventory-diff'],
        });
        if (
          this.#d.config.autoApproveDeletions &&
          (await this.approve(item.id, 'auto-policy:deletion.autoApprove'))
        )
          counts.removed++;
      }
    }
  }

  async #shapeChecks(
    source: ResolvedSource,
    counts: RefreshCounts,
    alerts: string[],
  ): Promise<void> {
    const [previous] = await this.#d.state.listRuns(source.id, 1);
    const good = (c: Readonly<Record<string, number>>) =>
      (c.fetched200 ?? 0) + (c.notModified ?? 0);
    if (
      previous !== undefined &&
      good(previous.counts) >= 5 &&
      good(counts as unknown as Record<string, number>) < good(previous.counts) / 2
    ) {
      alerts.push(
        `coverage-drop: ${good(counts as unknown as Record<string, number>)} good pages, last run had ${good(previous.counts)}`,
      );
    }
    if (source.expectedChangeMs !== undefined) {
      let latest = 0;
      for await (const r of this.#d.state.listDocuments({ sourceId: source.id })) {
        const t =
          r.timestamps.contentChangedAt === undefined
            ? 0
            : Date.parse(r.timestamps.contentChangedAt);
        latest = Math.max(latest, t);
      }
      if (latest > 0 && this.#now().getTime() - latest > source.expectedChangeMs) {
        alerts.push(
          `frozen: no content change since ${new Date(latest).toISOString()}, expected one every ${Math.round(source.expectedChangeMs / 3_600_000)}h`,
        );
      }
    }
  }

  /** Approves a review item: a deletion retires the chunks and writes a tombstone; an ingestion lifts one. */
  async approve(reviewId: string, by: string): Promise<boolean> {
    const item = await this.#d.state.getReviewItem(reviewId);
    if (item === undefined || item.status !== 'pending') return false;
    const at = this.#now().toISOString();
    if (item.kind === 'deletion') {
      const removal: RemovalRequest = {
        documentId: item.documentId,
        reason: `${item.reason}: ${item.evidence.join('; ')}`,
      };
      const report = await this.#publishLock.run(() =>
        this.#d.publisher.publish([], { removals: [removal] }),
      );
      const r = report.documents.find((d) => d.documentId === item.documentId);
      if (r?.outcome === 'rejected-by-gate') {
        this.#log.warn('approval-blocked', { id: reviewId, reasons: r.reasons });
        return false;
      }
      await this.#d.state.putTombstone({
        documentId: item.documentId,
        sourceId: item.sourceId,
        url: item.url,
        reason: item.reason,
        evidence: item.evidence,
        createdAt: at,
        approvedBy: by,
      });
    } else {
      await this.#d.state.deleteTombstone(item.documentId);
      const record = await this.#d.state.getDocument(item.documentId);
      if (record !== undefined) {
        const { validators: _v, ...rest } = record;
        await this.#d.state.putDocument(
          addHistory({ ...rest, status: 'healthy', statusReasons: [] }, at, 'tombstone-lifted', [
            by,
          ]),
        );
      }
    }
    await this.#d.state.putReviewItem({
      ...item,
      status: 'approved',
      decidedAt: at,
      decidedBy: by,
    });
    return true;
  }

  async reject(reviewId: string, by: string): Promise<boolean> {
    const item = await this.#d.state.getReviewItem(reviewId);
    if (item === undefined || item.status !== 'pending') return false;
    await this.#d.state.putReviewItem({
      ...item,
      status: 'rejected',
      decidedAt: this.#now().toISOString(),
      decidedBy: by,
    });
    if (item.kind === 'deletion') {
      const record = await this.#d.state.getDocument(item.documentId);
      if (record !== undefined) await this.#d.state.putDocument({ ...record, goneCount: 0 });
    }
    return true;
  }

  /**
   * Re-runs extraction and chunking from stored raw snapshots (no network) for every document
   * whose raw body is kept; publishes where the version changed (e.g. a new extractor).
   */
  async reextract(
    options: { sourceIds?: readonly string[] } = {},
  ): Promise<{ documents: number; republished: number; counts: RefreshCounts }> {
    const counts = emptyCounts();
    let documents = 0;
    for (const source of this.#d.config.sources) {
      if (options.sourceIds !== undefined && !options.sourceIds.includes(source.id)) continue;
      documents += await this.#reextractSource(source, counts, [], [], false);
    }
    return { documents, republished: counts.published, counts };
  }

  /**
   * Re-extracts documents of one source from their raw snapshots (no network). With
   * `onlyOtherPipeline`, only documents whose stored validators were recorded under another
   * pipeline key (a new extractor or chunker) — what every refresh does first. A document
   * re-extracted from the same bytes keeps its validators, re-tagged with the current pipeline
   * key, so the following conditional fetch can still answer 304.
   */
  async #reextractSource(
    source: ResolvedSource,
    counts: RefreshCounts,
    events: DocumentEvent[],
    alerts: string[],
    onlyOtherPipeline: boolean,
  ): Promise<number> {
    const snapshots = this.#d.snapshots;
    if (snapshots === undefined) return 0;
    const key = this.#d.pipeline.pipelineKey;
    const retag = (rec: DocumentRecord): DocumentRecord =>
      rec.validators === undefined
        ? rec
        : { ...rec, validators: { ...rec.validators, pipelineKey: key } };
    const records: DocumentRecord[] = [];
    for await (const r of this.#d.state.listDocuments({ sourceId: source.id })) {
      if (
        r.rawDigest === undefined ||
        r.status === 'tombstoned' ||
        r.currentVersionId === undefined
      )
        continue;
      if (onlyOtherPipeline && (r.validators === undefined || r.validators.pipelineKey === key))
        continue;
      records.push(r);
    }
    const pending: Pending[] = [];
    let documents = 0;
    for (const r of records) {
      const raw = await snapshots.get(r.rawDigest!);
      if (raw === undefined) continue;
      documents++;
      const contentType = raw.meta.contentType ?? raw.meta.headers['content-type'] ?? 'text/html';
      const decoded = decodeBody(raw.body, contentType);
      const retrievedAt = r.timestamps.retrievedAt ?? raw.meta.fetchedAt;
      const outcome = await this.#d.pipeline.process(
        {
          text: decoded.text,
          contentType,
          url: r.url,
          finalUrl: raw.meta.finalUrl,
          acquisition: /markdown/.test(contentType) ? 'markdown-twin' : 'raw',
        },
        {
          documentId: r.documentId,
          sourceId: source.id,
          retrievedAt,
          ...(raw.meta.region === undefined ? {} : { region: raw.meta.region }),
          ...(source.authority === undefined ? {} : { authority: source.authority }),
        },
      );
      counts.extracted++;
      counts.reextracted++;
      // Not extractable from raw (e.g. a page that needed rendering): the next fetch is a full one.
      if (outcome.kind !== 'document') continue;
      if (outcome.versionId === r.currentVersionId) {
        await this.#d.state.putDocument(retag(r));
        continue;
      }
      const embedded = await this.#embed(outcome, r, counts);
      pending.push({
        url: r.url,
        candidate: {
          documentId: r.documentId,
          versionId: outcome.versionId,
          sourceId: source.id,
          url: r.url,
          contentHash: outcome.contentHash,
          textChars: outcome.text.length,
          text: outcome.text,
          chunks: embedded,
          retrievedAt,
        },
        apply: retag,
      });
      if (pending.length >= (this.#d.batchSize ?? 25)) {
        await this.#publishLock.run(() =>
          this.#publishBatch(source, pending.splice(0), counts, events, alerts),
        );
      }
    }
    if (pending.length > 0) {
      await this.#publishLock.run(() =>
        this.#publishBatch(source, pending.splice(0), counts, events, alerts),
      );
    }
    return documents;
  }
}
