import { BaseDocumentLoader } from '@langchain/core/document_loaders/base';
import type { Document } from '@langchain/core/documents';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import type { RecordManagerInterface } from '@langchain/core/indexing';
import {
  assertSourceId,
  CANONICAL_POLICIES,
  type CanonicalPolicy,
  canonicalKey,
  DEFAULT_IDENTITY_POLICY,
  DEFAULT_SQLITE_STATE_PATH,
  DocumentLedger,
  type EmbeddedChunk,
  documentId as makeDocumentId,
  openStateStore,
  type PublishCandidate,
  RagfreshError,
  type StateStore,
  type UrlIdentityPolicy,
} from '@ragfresh/core';
import {
  DEFAULT_DELETION_POLICY,
  type DeletionPolicy,
  type EngineLogger,
  silentLogger,
} from '@ragfresh/engine';
import type { ExtractedDocument, PageLimits } from '@ragfresh/engine/pipeline';
import { type PageSettings, resolvePageSettings } from '@ragfresh/engine/settings';
import {
  type Chunking,
  chunkingFor,
  composePageObserver,
  type EvidenceContext,
  observePage,
  type PageObserver,
  splitterPipelineKey,
} from '@ragfresh/engine/stages';
import {
  asSplitterPreparation,
  type SectionSplitter,
  type TiktokenEncodingName,
} from '@ragfresh/extract';
import { discoverSitemap, type Fetcher, type OkResult } from '@ragfresh/fetch';
import { mapOrdered } from './concurrency.js';
import { type PageCopyStore, pageCopiesFor } from './copies.js';
import { type DeferredHost, HostDeferrals, HostDeferred } from './deferral.js';
import {
  approveDeletion,
  type PageOutcome,
  type PageReport,
  type PageTask,
  type Settled,
  settle,
  settleDeferred,
} from './observe.js';
import {
  chunkDocuments,
  type LoadedPage,
  type LoaderSplitter,
  pageDocument,
  type VolatileMetadata,
} from './pages.js';

export interface RagfreshLoaderOptions {
  /** Fetches pages and sitemaps (robots, politeness, SSRF guard, conditional requests). */
  readonly fetcher: Fetcher;
  /** Stable source id chosen by you; the prefix of every documentId. */
  readonly sourceId: string;
  readonly urls?: readonly string[];
  /** Sitemaps (or sitemap indexes) whose URLs are loaded after `urls`. */
  readonly sitemaps?: readonly string[];
  /** How a URL becomes a document's identity. Default `{ mode: 'normalize' }`. */
  readonly identity?: UrlIdentityPolicy;
  /**
   * Where validators, statuses, gone evidence and last good copies are kept between runs: a
   * ragfresh `StateStore`, or a spec for `openStateStore` (`sqlite:<path>`, `redis://…`,
   * `postgres://…`). Default `sqlite:.ragfresh/state.sqlite` (relative to the working directory).
   */
  readonly state?: StateStore | string;
  /** Override where last good copies live (default: beside the state records). */
  readonly copies?: PageCopyStore;
  /** When 404/410 evidence confirms a page is gone. Default: the engine's (3 checks over 48 h, reviewed). */
  readonly deletion?: Partial<DeletionPolicy>;
  /**
   * Longest Retry-After (or host block) the loader lets the fetcher wait out. A host asking for
   * longer is deferred for this run: its URLs are not requested and keep their last good copy,
   * and the load reports it (`lastReport.deferredHosts`). Default 10 s.
   */
  readonly maxRetryWaitMs?: number;
  /** `chunks` (default): one Document per chunk. `pages`: one Document per page (whole Markdown). */
  readonly mode?: 'chunks' | 'pages';
  /**
   * A LangChain `TextSplitter` (or `{ splitter, name }`) used as the chunker by `load()` — so
   * `index({ docsSource: loader })` goes through it — and by `loadAndSplit()`. Each ragfresh
   * section is split on its own: heading paths are kept, `Document.id` is a deterministic chunk
   * id, and the splitter's name is part of every versionId. Implies `mode: 'chunks'`.
   */
  readonly splitter?: SectionSplitter | LoaderSplitter;
  /** Pages fetched and extracted at once. Default 4 (the fetcher's per-host limits still apply). */
  readonly concurrency?: number;
  /** Token budget per chunk (ragfresh's chunker). Default 512. */
  readonly maxTokens?: number;
  /** Tokenizer the budget is counted in. Default cl100k_base. */
  readonly encoding?: TiktokenEncodingName;
  /**
   * Limits a page must stay within to be parsed (size, nesting depth, text runs, chunk count);
   * a page over one is degraded with the limit's reason, as in a refresh. Default the engine's
   * (`DEFAULT_PAGE_LIMITS`).
   */
  readonly pageLimits?: Partial<PageLimits>;
  /** See {@link VolatileMetadata}. Default false. */
  readonly volatileMetadata?: VolatileMetadata;
  /** Authority label carried into metadata (e.g. `official`). */
  readonly authority?: string;
  /**
   * Whose word a page's `<link rel="canonical">` is: `same-site` (default) cites it only on the
   * fetched URL's own site and keeps another site's as `canonical_claim`; `trust` cites any http(s)
   * canonical; `ignore` keeps none. Documents are cited by the fetched URL otherwise.
   */
  readonly canonical?: CanonicalPolicy;
  /** Try the page's Markdown twin first (`page.md`). Default false. */
  readonly markdownTwin?: boolean;
  /** Most URLs read from all sitemaps. Default 50,000. */
  readonly maxSitemapUrls?: number;
  /** Called for every URL that yields nothing (never seen good, invalid, confirmed gone). */
  readonly onSkip?: (skip: SkippedPage) => void;
  readonly signal?: AbortSignal;
  /** Clock of the evidence rules (gone age). Default the system clock. */
  readonly now?: () => Date;
  readonly log?: EngineLogger;
}

/** A URL that produced no Document, and why. */
export interface SkippedPage {
  readonly url: string;
  readonly documentId?: string;
  readonly reasons: readonly string[];
}

/** What the last load did, page by page. */
export interface LoadReport {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly pages: readonly PageReport[];
  readonly counts: Readonly<Record<PageOutcome, number>>;
  /** Requests sent with validators. */
  readonly conditionalRequests: number;
  /** Hosts whose Retry-After exceeded `maxRetryWaitMs`: their URLs kept their last good copy. */
  readonly deferredHosts: readonly DeferredHost[];
  /** Pending deletion review items this load created (approve with `approveDeletion`). */
  readonly proposals: readonly string[];
}

const OUTCOMES: readonly PageOutcome[] = [
  'changed',
  'unchanged',
  'not-modified',
  'degraded',
  'gone-unconfirmed',
  'gone-confirmed',
  'tombstoned',
  'deferred',
  'invalid-url',
];

interface Run {
  readonly ctx: EvidenceContext;
  readonly copies: PageCopyStore;
  readonly hosts: HostDeferrals;
  /** The engine's page step: page limits, and the hosts' learned boilerplate as the state holds it. */
  readonly observer: PageObserver;
  readonly pipelineKey: string;
}

function asLoaderSplitter(
  s: SectionSplitter | LoaderSplitter | undefined,
): LoaderSplitter | undefined {
  return s === undefined ? undefined : asSplitterPreparation(s);
}

/**
 * A LangChain document loader over ragfresh's fetcher, extractor and evidence rules. It keeps
 * state, so every run sends conditional requests, and it emits the complete last-good corpus:
 * a 304 re-emits the stored chunks of the current version (no body, no parse), a failure, a
 * wall or a deferred host re-emits the last good copy, and a page is withheld only once its
 * deletion is confirmed (404/410 over `deletion.goneChecks` × `minGoneAgeMs`, approved). So
 * `index()` with `full` cleanup deletes only confirmed-gone pages, and what `index()` hashes is
 * identical between runs over unchanged pages.
 *
 * ```ts
 * const loader = new RagfreshLoader({ fetcher, sourceId: 'docs', sitemaps: ['https://example.org/sitemap.xml'], splitter });
 * await index({ docsSource: loader, recordManager, vectorStore, options: { cleanup: 'full' } });
 * ```
 */
export class RagfreshLoader extends BaseDocumentLoader {
  readonly options: RagfreshLoaderOptions;
  /** URLs of the last run that yielded nothing, with reasons. */
  skipped: SkippedPage[] = [];
  /** What the last run did (undefined before the first). */
  lastReport: LoadReport | undefined;
  readonly #chunking: Chunking;
  readonly #settings: PageSettings;
  readonly #splitter: LoaderSplitter | undefined;
  #state: Promise<StateStore> | undefined;
  #ownsState = false;

  constructor(options: RagfreshLoaderOptions) {
    super();
    assertSourceId(options.sourceId);
    for (const [name, value] of [
      ['concurrency', options.concurrency],
      ['maxRetryWaitMs', options.maxRetryWaitMs],
    ] as const) {
      if (
        value !== undefined &&
        (!Number.isSafeInteger(value) || value < (name === 'concurrency' ? 1 : 0))
      ) {
        throw new RagfreshError(
          'INVALID_ARGUMENT',
          `${name} must be a ${name === 'concurrency' ? 'positive' : 'non-negative'} integer, got ${value}.`,
          {
            scope: 'langchain',
          },
        );
      }
    }
    if (options.canonical !== undefined && !CANONICAL_POLICIES.includes(options.canonical)) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `canonical must be one of ${CANONICAL_POLICIES.join(', ')}, got ${JSON.stringify(options.canonical)}.`,
        { scope: 'langchain' },
      );
    }
    if ((options.urls?.length ?? 0) === 0 && (options.sitemaps?.length ?? 0) === 0) {
      throw new RagfreshError('INVALID_ARGUMENT', 'give the loader some urls or sitemaps.', {
        scope: 'langchain',
      });
    }
    this.options = options;
    this.#settings = resolvePageSettings({
      chunking: {
        ...(options.encoding === undefined ? {} : { encoding: options.encoding }),
        ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
      },
      ...(options.pageLimits === undefined ? {} : { pageLimits: options.pageLimits }),
    });
    this.#chunking = chunkingFor(this.#settings.chunking);
    this.#splitter = asLoaderSplitter(options.splitter);
  }

  /** Extractor/chunker/schema versions, token budget and splitter; validators are recorded under it. */
  get pipelineKey(): string {
    return this.#pipelineKey(this.#splitter);
  }

  #pipelineKey(splitter: LoaderSplitter | undefined): string {
    const key = this.#chunking.pipelineKey;
    return splitter === undefined ? key : splitterPipelineKey(key, splitter);
  }

  /** The state store (opened on first use when given as a spec). */
  state(): Promise<StateStore> {
    if (this.#state === undefined) {
      const s = this.options.state ?? `sqlite:${DEFAULT_SQLITE_STATE_PATH}`;
      if (typeof s === 'string') {
        this.#ownsState = true;
        this.#state = openStateStore(s);
      } else this.#state = Promise.resolve(s);
    }
    return this.#state;
  }

  /** Closes the state store if the loader opened it. */
  async close(): Promise<void> {
    if (this.#ownsState && this.#state !== undefined) await (await this.#state).close();
    this.#state = undefined;
  }

  async load(): Promise<Document[]> {
    const docs: Document[] = [];
    for await (const doc of this.lazyLoad()) docs.push(doc);
    return docs;
  }

  /**
   * With a splitter, each ragfresh section is cut by it (ids, heading paths and the evidence rules
   * kept; no nested `loc`). Without one, `load()` (which already honours the `splitter` option).
   * `index()` calls `load()`, never this: give it the splitter through the `splitter` option.
   */
  async loadAndSplit(splitter?: SectionSplitter): Promise<Document[]> {
    if (splitter === undefined) return this.load();
    const docs: Document[] = [];
    for await (const page of this.#pages(asLoaderSplitter(splitter)))
      docs.push(...chunkDocuments(page, this.options.volatileMetadata ?? false));
    return docs;
  }

  /** Streams Documents page by page, in source order, with bounded concurrency. */
  async *lazyLoad(): AsyncGenerator<Document> {
    const volatile = this.options.volatileMetadata ?? false;
    const pages = this.options.mode === 'pages' && this.#splitter === undefined;
    for await (const page of this.pages()) {
      if (pages) yield pageDocument(page, volatile);
      else yield* chunkDocuments(page, volatile);
    }
  }

  /** Streams the emitted pages (fresh or last good copies), e.g. for ragfresh's Publisher. */
  pages(): AsyncGenerator<LoadedPage> {
    return this.#pages(this.#splitter);
  }

  async *#pages(splitter: LoaderSplitter | undefined): AsyncGenerator<LoadedPage> {
    const startedAt = this.#now().toISOString();
    const state = await this.state();
    const hosts = new HostDeferrals(this.options.fetcher, this.options.maxRetryWaitMs ?? 10_000);
    // Pages are cut as a refresh's workers cut them: under the learned models a refresh wrote
    // to this state (the loader learns none), inside the same page limits.
    const observer = composePageObserver(
      {
        ...this.#settings,
        chunking: { ...this.#settings.chunking, ...(splitter === undefined ? {} : { splitter }) },
      },
      { fetcher: hosts, state },
    );
    const run: Run = {
      ctx: this.#evidenceContext(state),
      copies: this.options.copies ?? pageCopiesFor(state),
      hosts,
      observer,
      pipelineKey: this.#pipelineKey(splitter),
    };
    const reports: PageReport[] = [];
    this.skipped = [];
    this.lastReport = undefined;
    const limit = this.options.concurrency ?? 4;
    for await (const settled of mapOrdered(this.#urls(), limit, (url) => this.#loadOne(url, run))) {
      reports.push(settled.report);
      if (settled.page !== undefined) yield settled.page;
      else
        this.#skip({
          url: settled.report.url,
          ...(settled.report.documentId === undefined
            ? {}
            : { documentId: settled.report.documentId }),
          reasons:
            settled.report.reasons.length > 0 ? settled.report.reasons : [settled.report.outcome],
        });
    }
    const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<PageOutcome, number>;
    for (const r of reports) counts[r.outcome]++;
    this.lastReport = {
      startedAt,
      finishedAt: this.#now().toISOString(),
      pages: reports,
      counts,
      conditionalRequests: reports.filter((r) => r.conditional).length,
      deferredHosts: run.hosts.deferred,
      proposals: reports.flatMap((r) => (r.proposal === undefined ? [] : [r.proposal])),
    };
  }

  #skip(skip: SkippedPage): void {
    this.skipped.push(skip);
    this.options.onSkip?.(skip);
  }

  #now(): Date {
    return this.options.now?.() ?? new Date();
  }

  #evidenceContext(state: StateStore): EvidenceContext {
    return {
      deps: { state },
      ledger: new DocumentLedger(state, { now: () => this.#now() }),
      deletion: { ...DEFAULT_DELETION_POLICY, ...this.options.deletion },
      log: this.options.log ?? silentLogger,
      nowIso: () => this.#now().toISOString(),
    };
  }

  async *#urls(): AsyncGenerator<string> {
    // Two URLs with one identity (tracking parameters, case of the host, ...) are one document:
    // load it once, under the first URL listed.
    const identity = this.options.identity ?? DEFAULT_IDENTITY_POLICY;
    const seen = new Set<string>();
    const fresh = (url: string): boolean => {
      let key = `url:${url}`;
      try {
        key = makeDocumentId(this.options.sourceId, url, identity);
      } catch {
        // reported by #loadOne
      }
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    };
    for (const url of this.options.urls ?? []) if (fresh(url)) yield url;
    for (const sitemap of this.options.sitemaps ?? []) {
      const found = await discoverSitemap(this.options.fetcher, sitemap, {
        ...(this.options.maxSitemapUrls === undefined
          ? {}
          : { maxUrls: this.options.maxSitemapUrls }),
        ...(this.options.signal === undefined ? {} : { signal: this.options.signal }),
      });
      for (const f of found.failures)
        this.#skip({ url: f.url, reasons: [`sitemap-unreadable: ${f.reason}`] });
      for (const entry of found.entries) if (fresh(entry.url)) yield entry.url;
    }
  }

  async #loadOne(url: string, run: Run): Promise<Settled> {
    const identity = this.options.identity ?? DEFAULT_IDENTITY_POLICY;
    const { sourceId } = this.options;
    let docId: string;
    let identityUrl: string;
    try {
      docId = makeDocumentId(sourceId, url, identity);
      identityUrl = canonicalKey(url, identity);
    } catch (err) {
      const reasons = [`invalid-url: ${(err as Error).message}`];
      return {
        report: { url, outcome: 'invalid-url', emitted: 'none', conditional: false, reasons },
      };
    }
    const { state } = run.ctx.deps;
    const [record, tombstone] = await Promise.all([
      state.getDocument(docId),
      state.getTombstone(docId),
    ]);
    if (tombstone !== undefined) {
      const reasons = [`tombstoned: ${tombstone.reason}`];
      return {
        report: {
          url,
          documentId: docId,
          identityUrl,
          outcome: 'tombstoned',
          emitted: 'none',
          conditional: false,
          reasons,
        },
      };
    }
    const base = record ?? DocumentLedger.fresh(docId, sourceId, url);
    const stored = await run.copies.get(docId);
    // A copy of another version (a crash between its write and the record's) is not trusted.
    const copy =
      stored !== undefined && stored.prepared.versionId === base.currentVersionId
        ? stored
        : undefined;
    // Validators only beside a copy: a 304 must leave something to emit.
    const validators = copy === undefined ? undefined : base.validators;
    const conditional =
      validators?.pipelineKey === run.pipelineKey &&
      (validators.etag !== undefined || validators.lastModified !== undefined);
    const task: PageTask = {
      ctx: run.ctx,
      copies: run.copies,
      url,
      identityUrl,
      documentId: docId,
      sourceId,
      base,
      copy,
      conditional,
    };
    if (run.hosts.isDeferred(url)) return settleDeferred(task, new URL(url).host);
    try {
      const acquired = await observePage(run.observer, {
        url,
        documentId: docId,
        sourceId,
        pipelineKey: run.pipelineKey,
        provenance: {
          ...(this.options.authority === undefined ? {} : { authority: this.options.authority }),
          ...(this.options.canonical === undefined ? {} : { canonical: this.options.canonical }),
        },
        ...(validators === undefined ? {} : { validators }),
        ...(this.options.markdownTwin === true ? { markdownTwin: true } : {}),
        ...(this.options.signal === undefined ? {} : { signal: this.options.signal }),
      });
      const toPage = async (doc: ExtractedDocument, result: OkResult): Promise<LoadedPage> => {
        if (doc.prepared === undefined)
          throw new RagfreshError('INTERNAL', `no prepared document for ${url}.`, {
            scope: 'langchain',
          });
        const v = result.validators;
        return {
          url,
          identityUrl,
          documentId: docId,
          sourceId,
          title: doc.title,
          ...(doc.canonicalUrl === undefined ? {} : { canonicalUrl: doc.canonicalUrl }),
          ...(doc.canonicalClaim === undefined ? {} : { canonicalClaim: doc.canonicalClaim }),
          prepared: doc.prepared,
          origin: 'fetched',
          fetch: {
            retrievedAt: result.fetchedAt,
            finalUrl: result.finalUrl,
            status: result.status,
            validators: v,
            ...(v.etag === undefined ? {} : { etag: v.etag }),
            ...(v.lastModified === undefined ? {} : { lastModified: v.lastModified }),
            ...(result.lastModifiedAt === undefined
              ? {}
              : { sourceModifiedAt: result.lastModifiedAt }),
            ...(result.rawDigest === undefined ? {} : { rawDigest: result.rawDigest }),
          },
        };
      };
      const autoApprove = this.options.deletion?.autoApprove ?? DEFAULT_DELETION_POLICY.autoApprove;
      return await settle(task, acquired, toPage, autoApprove);
    } catch (err) {
      if (err instanceof HostDeferred) return settleDeferred(task, err.host);
      throw err;
    }
  }

  /** Approves a pending deletion proposal (`lastReport.proposals`): the page is withheld from then on. */
  async approveDeletion(reviewId: string, by: string): Promise<boolean> {
    const state = await this.state();
    return approveDeletion(this.#evidenceContext(state), reviewId, by);
  }

  /**
   * `index()` with `incremental` cleanup only cleans up sources it sees, so a withheld
   * (confirmed-gone) page is never deleted by it. This deletes, through the record manager, the
   * chunks of the pages the last load withheld as confirmed gone or tombstoned — the same
   * deletion `full` cleanup makes. Returns how many records were deleted.
   */
  async deleteConfirmedGone(args: {
    readonly recordManager: RecordManagerInterface;
    readonly vectorStore: { delete(params: { ids: string[] }): Promise<void> };
    /** The `sourceIdKey` given to `index()`: `source` (default, the page URL) or `rf_doc`. */
    readonly sourceIdKey?: 'source' | 'rf_doc';
  }): Promise<number> {
    const byDoc = args.sourceIdKey === 'rf_doc';
    const groups = (this.lastReport?.pages ?? [])
      .filter((p) => p.outcome === 'gone-confirmed' || p.outcome === 'tombstoned')
      .map((p) => (byDoc ? p.documentId : p.identityUrl))
      .filter((g): g is string => g !== undefined);
    if (groups.length === 0) return 0;
    const ids = await args.recordManager.listKeys({ groupIds: groups });
    if (ids.length === 0) return 0;
    await args.vectorStore.delete({ ids });
    await args.recordManager.deleteKeys(ids);
    return ids.length;
  }
}

/**
 * Embeds a loaded page's chunks into a candidate for ragfresh's `Publisher.publish` (the
 * snapshot-epoch publish protocol), for apps that index through ragfresh rather than `index()`.
 */
export async function toPublishCandidate(
  page: LoadedPage,
  embeddings: EmbeddingsInterface,
): Promise<PublishCandidate> {
  const vectors = await embeddings.embedDocuments(page.prepared.chunks.map((c) => c.text));
  const chunks: EmbeddedChunk[] = page.prepared.chunks.map((c, i) => ({
    ...c,
    embedding: vectors[i]!,
  }));
  return {
    documentId: page.documentId,
    versionId: page.prepared.versionId,
    sourceId: page.sourceId,
    url: page.url,
    contentHash: page.prepared.contentHash,
    textChars: page.prepared.textChars,
    text: page.prepared.text,
    chunks,
    retrievedAt: page.fetch.retrievedAt,
    ...(page.fetch.sourceModifiedAt === undefined
      ? {}
      : { sourceModifiedAt: page.fetch.sourceModifiedAt }),
  };
}
