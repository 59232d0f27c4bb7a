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
  type ClassifySettings,
  type ComposedEngine,
  composeEngine,
  DEFAULT_DELETION_POLICY,
  type DeletionPolicy,
  type EngineLogger,
  type EnginePorts,
  type EngineSettings,
  type EngineSource,
  type PageRenderer,
  silentLogger,
} from '@ragfresh/engine';
import type { ExtractedDocument, PageLimits } from '@ragfresh/engine/pipeline';
import { type PageSettings, resolvePageSettings } from '@ragfresh/engine/settings';
import {
  type Chunking,
  chunkingFor,
  composePageObserver,
  type EvidenceContext,
  type JudgeContext,
  judgeContextOf,
  observePage,
  type PageObserver,
  splitterPipelineKey,
} from '@ragfresh/engine/stages';
import {
  asSplitterPreparation,
  type SectionSplitter,
  type TiktokenEncodingName,
} from '@ragfresh/extract';
import { NOT_DOCUMENT_CODES } from '@ragfresh/extract/codes';
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
  type EmitOptions,
  type LoadedPage,
  type LoaderSplitter,
  pageDocument,
  type VolatileMetadata,
} from './pages.js';

/** What both forms of the loader take: what it emits, how long it waits, where copies live. */
export interface LoaderCommonOptions {
  /** Stable source id chosen by you; the prefix of every documentId. */
  readonly sourceId: string;
  /** Override where last good copies live (default: beside the state records). */
  readonly copies?: PageCopyStore;
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
  /**
   * Pages fetched and extracted at once. Default 4 standalone, the settings' `concurrency`
   * composed (the fetcher's per-host limits still apply).
   */
  readonly concurrency?: number;
  /** See {@link VolatileMetadata}. Default false. */
  readonly volatileMetadata?: VolatileMetadata;
  /** Most URLs read from all sitemaps. Default 50,000. */
  readonly maxSitemapUrls?: number;
  /** Called for every URL that yields nothing (never seen good, invalid, confirmed gone). */
  readonly onSkip?: (skip: SkippedPage) => void;
  readonly signal?: AbortSignal;
}

/**
 * The composed form: the loader reads everything a refresh of the source reads from the
 * composition root (`composeEngine(settings, { state, embeddings }, 'loader')`).
 */
export interface ComposedLoaderOptions extends LoaderCommonOptions {
  /**
   * An engine composed for the `loader` role. From it the loader takes its fetcher (`fetch.*`),
   * page step (chunking, learned boilerplate as stored, page limits), the source `sourceId` of
   * its settings (urls, sitemaps, identity, classify, authority, canonical, markdownTwin,
   * acquisition, proxy), the deletion policy, the state and its ledger, and the embedding space
   * composing checked against the index's (a mismatch refused it) and every chunk carries as
   * `rf_space`. Closed by whoever composed it (`RagfreshLoader.compose` closes its own).
   */
  readonly engine: ComposedEngine;
}

/** The standalone form: a fetcher and the source's pages; no embeddings, so no space. */
export interface StandaloneLoaderOptions extends LoaderCommonOptions {
  /** Fetches pages and sitemaps (robots, politeness, SSRF guard, conditional requests). */
  readonly fetcher: Fetcher;
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
  /** When 404/410 evidence confirms a page is gone. Default: the engine's (3 checks over 48 h, reviewed). */
  readonly deletion?: Partial<DeletionPolicy>;
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
  /** Verdict codes that do not block a page (a source's `classify`; docs/extract.md § 4). */
  readonly classify?: ClassifySettings;
  /** Clock of the evidence rules (gone age). Default the system clock. */
  readonly now?: () => Date;
  readonly log?: EngineLogger;
}

export type RagfreshLoaderOptions = ComposedLoaderOptions | StandaloneLoaderOptions;

/** The source as the loader reads it (a source of the settings, or the standalone options). */
type LoaderSource = Pick<
  EngineSource,
  | 'id'
  | 'urls'
  | 'sitemaps'
  | 'identity'
  | 'classify'
  | 'authority'
  | 'canonical'
  | 'markdownTwin'
  | 'acquisition'
  | 'proxy'
>;

/** What a load runs with, resolved once from either form. */
interface LoaderSetup {
  readonly source: LoaderSource;
  readonly fetcher: Fetcher;
  readonly settings: PageSettings;
  readonly deletion: DeletionPolicy;
  readonly concurrency: number;
  /** The checked embedding space (`rf_space` of every chunk); absent standalone. */
  readonly space?: string;
  readonly renderer?: () => Promise<PageRenderer>;
  state(): Promise<StateStore>;
  /** The evidence context (the ledger, the deletion policy, the clock) over `state`. */
  context(state: StateStore): EvidenceContext;
  /** The classify stage's context for one run, host evidence asked through `fetcher`. */
  judge(state: StateStore, fetcher: JudgeContext['fetcher']): JudgeContext;
  close(): Promise<void>;
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
  /** The classify stage: the source's `classify`, host evidence, reviewers' acceptances. */
  readonly judge: JudgeContext;
  readonly pipelineKey: string;
}

function asLoaderSplitter(
  s: SectionSplitter | LoaderSplitter | undefined,
): LoaderSplitter | undefined {
  return s === undefined ? undefined : asSplitterPreparation(s);
}

function invalid(message: string): RagfreshError {
  return new RagfreshError('INVALID_ARGUMENT', message, { scope: 'langchain' });
}

/** The composed form's setup: every part from the engine composed for the `loader` role. */
function composedSetup(engine: ComposedEngine, sourceId: string): LoaderSetup {
  if (engine.role !== 'loader')
    throw invalid(
      `the loader takes an engine composed for the loader role, got the ${engine.role} role; compose it with composeEngine(settings, { state, embeddings }, 'loader').`,
    );
  const source = engine.settings.sources.find((s) => s.id === sourceId);
  if (source === undefined)
    throw invalid(
      `no source ${JSON.stringify(sourceId)} in the engine's settings (sources: ${engine.settings.sources.map((s) => s.id).join(', ') || 'none'}); add it to sources or pass one of those ids.`,
    );
  const renderer = engine.deps.renderer;
  let ctx: EvidenceContext | undefined;
  return {
    source,
    fetcher: engine.fetcher,
    settings: engine.settings,
    deletion: engine.settings.deletion,
    concurrency: engine.settings.concurrency,
    space: engine.space.id,
    ...(renderer === undefined ? {} : { renderer }),
    state: async () => engine.state,
    context: () => {
      ctx ??= engine.context();
      return ctx;
    },
    judge: (_state, fetcher) => engine.judge(sourceId, fetcher),
    close: async () => {},
  };
}

/** The standalone form's setup: the same page step and stages, from the loader's own options. */
function standaloneSetup(options: StandaloneLoaderOptions): LoaderSetup {
  if (options.canonical !== undefined && !CANONICAL_POLICIES.includes(options.canonical))
    throw invalid(
      `canonical must be one of ${CANONICAL_POLICIES.join(', ')}, got ${JSON.stringify(options.canonical)}.`,
    );
  const unknown = options.classify?.ignore?.find(
    (c) => !(NOT_DOCUMENT_CODES as readonly string[]).includes(c),
  );
  if (unknown !== undefined)
    throw invalid(
      `classify.ignore: ${JSON.stringify(unknown)} is not a classification code; use one of ${NOT_DOCUMENT_CODES.join(', ')}.`,
    );
  let opened: Promise<StateStore> | undefined;
  const state = (): Promise<StateStore> => {
    if (opened === undefined) {
      const s = options.state ?? `sqlite:${DEFAULT_SQLITE_STATE_PATH}`;
      opened = typeof s === 'string' ? openStateStore(s) : Promise.resolve(s);
    }
    return opened;
  };
  const deletion = { ...DEFAULT_DELETION_POLICY, ...options.deletion };
  const now = (): Date => options.now?.() ?? new Date();
  return {
    source: {
      id: options.sourceId,
      identity: options.identity ?? DEFAULT_IDENTITY_POLICY,
      ...(options.urls === undefined ? {} : { urls: options.urls }),
      ...(options.sitemaps === undefined ? {} : { sitemaps: options.sitemaps }),
      ...(options.classify === undefined ? {} : { classify: options.classify }),
      ...(options.authority === undefined ? {} : { authority: options.authority }),
      ...(options.canonical === undefined ? {} : { canonical: options.canonical }),
      ...(options.markdownTwin === true ? { markdownTwin: true } : {}),
    },
    fetcher: options.fetcher,
    settings: resolvePageSettings({
      chunking: {
        ...(options.encoding === undefined ? {} : { encoding: options.encoding }),
        ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
      },
      ...(options.pageLimits === undefined ? {} : { pageLimits: options.pageLimits }),
    }),
    deletion,
    concurrency: 4,
    state,
    context: (store) => ({
      deps: { state: store },
      ledger: new DocumentLedger(store, { now }),
      deletion,
      log: options.log ?? silentLogger,
      nowIso: () => now().toISOString(),
    }),
    judge: (store, fetcher) =>
      judgeContextOf(
        { deps: { state: store, fetcher } },
        {
          id: options.sourceId,
          ...(options.classify === undefined ? {} : { classify: options.classify }),
        },
      ),
    close: async () => {
      // Only a state the loader opened from a spec is its to close.
      if (opened !== undefined && typeof options.state !== 'object') await (await opened).close();
      opened = undefined;
    },
  };
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
 * Composed (recommended): the source, fetcher, page step, classification, deletion policy,
 * ledger and embedding space come from the composition root, as for a refresh:
 * ```ts
 * const loader = await RagfreshLoader.compose(settings, { state, embeddings }, { sourceId: 'docs', splitter });
 * await index({ docsSource: loader, recordManager, vectorStore, options: { cleanup: 'full' } });
 * ```
 * Standalone: `new RagfreshLoader({ fetcher, sourceId, sitemaps, splitter })` (no space check).
 */
export class RagfreshLoader extends BaseDocumentLoader {
  readonly options: RagfreshLoaderOptions;
  /** URLs of the last run that yielded nothing, with reasons. */
  skipped: SkippedPage[] = [];
  /** What the last run did (undefined before the first). */
  lastReport: LoadReport | undefined;
  readonly #setup: LoaderSetup;
  readonly #chunking: Chunking;
  readonly #splitter: LoaderSplitter | undefined;
  /** The engine `RagfreshLoader.compose` composed, closed with the loader. */
  #owned: ComposedEngine | undefined;

  /**
   * Composes an engine for the `loader` role (`composeEngine`: the space is checked before
   * anything is read or written; SPACE_MISMATCH is one line naming both spaces and
   * `ragfresh migrate embeddings`) and a loader over it; `close()` closes both.
   */
  static async compose(
    settings: EngineSettings,
    ports: Omit<EnginePorts, 'connector'>,
    options: LoaderCommonOptions,
  ): Promise<RagfreshLoader> {
    const engine = await composeEngine(settings, ports, 'loader');
    try {
      const loader = new RagfreshLoader({ ...options, engine });
      loader.#owned = engine;
      return loader;
    } catch (err) {
      await engine.close();
      throw err;
    }
  }

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
      )
        throw invalid(
          `${name} must be a ${name === 'concurrency' ? 'positive' : 'non-negative'} integer, got ${value}.`,
        );
    }
    this.#setup =
      'engine' in options
        ? composedSetup(options.engine, options.sourceId)
        : standaloneSetup(options);
    const { source } = this.#setup;
    if ((source.urls?.length ?? 0) === 0 && (source.sitemaps?.length ?? 0) === 0)
      throw invalid(
        'engine' in options
          ? `source ${source.id} lists no urls or sitemaps; give it some in the settings.`
          : 'give the loader some urls or sitemaps.',
      );
    this.options = options;
    this.#chunking = chunkingFor(this.#setup.settings.chunking);
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

  /** The state store (the engine's composed; standalone, opened on first use when given as a spec). */
  state(): Promise<StateStore> {
    return this.#setup.state();
  }

  /**
   * Closes a state store the standalone loader opened from a spec, or the engine
   * `RagfreshLoader.compose` composed; an engine you composed is yours to close.
   */
  async close(): Promise<void> {
    await this.#setup.close();
    const owned = this.#owned;
    this.#owned = undefined;
    await owned?.close();
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
      docs.push(...chunkDocuments(page, this.#emit()));
    return docs;
  }

  /** Streams Documents page by page, in source order, with bounded concurrency. */
  async *lazyLoad(): AsyncGenerator<Document> {
    const emit = this.#emit();
    const pages = this.options.mode === 'pages' && this.#splitter === undefined;
    for await (const page of this.pages()) {
      if (pages) yield pageDocument(page, emit);
      else yield* chunkDocuments(page, emit);
    }
  }

  #emit(): EmitOptions {
    return {
      volatile: this.options.volatileMetadata ?? false,
      ...(this.#setup.space === undefined ? {} : { space: this.#setup.space }),
    };
  }

  /** Streams the emitted pages (fresh or last good copies), e.g. for ragfresh's Publisher. */
  pages(): AsyncGenerator<LoadedPage> {
    return this.#pages(this.#splitter);
  }

  async *#pages(splitter: LoaderSplitter | undefined): AsyncGenerator<LoadedPage> {
    const setup = this.#setup;
    const state = await setup.state();
    const ctx = setup.context(state);
    const startedAt = ctx.nowIso();
    const hosts = new HostDeferrals(setup.fetcher, this.options.maxRetryWaitMs ?? 10_000);
    // Pages are cut as a refresh's workers cut them: under the learned models a refresh wrote
    // to this state (the loader learns none), inside the same page limits.
    const observer = composePageObserver(
      {
        ...setup.settings,
        chunking: { ...setup.settings.chunking, ...(splitter === undefined ? {} : { splitter }) },
      },
      {
        fetcher: hosts,
        state,
        ...(setup.renderer === undefined ? {} : { renderer: setup.renderer }),
      },
    );
    const run: Run = {
      ctx,
      copies: this.options.copies ?? pageCopiesFor(state),
      hosts,
      observer,
      judge: setup.judge(state, hosts),
      pipelineKey: this.#pipelineKey(splitter),
    };
    const reports: PageReport[] = [];
    this.skipped = [];
    this.lastReport = undefined;
    const limit = this.options.concurrency ?? setup.concurrency;
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
      finishedAt: ctx.nowIso(),
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

  async *#urls(): AsyncGenerator<string> {
    // Two URLs with one identity (tracking parameters, case of the host, ...) are one document:
    // load it once, under the first URL listed.
    const { source } = this.#setup;
    const seen = new Set<string>();
    const fresh = (url: string): boolean => {
      let key = `url:${url}`;
      try {
        key = makeDocumentId(source.id, url, source.identity);
      } catch {
        // reported by #loadOne
      }
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    };
    for (const url of source.urls ?? []) if (fresh(url)) yield url;
    for (const sitemap of source.sitemaps ?? []) {
      const found = await discoverSitemap(this.#setup.fetcher, sitemap, {
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
    const { source } = this.#setup;
    const { identity, id: sourceId } = source;
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
      known: record !== undefined,
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
          ...(source.authority === undefined ? {} : { authority: source.authority }),
          ...(source.canonical === undefined ? {} : { canonical: source.canonical }),
        },
        ...(validators === undefined ? {} : { validators }),
        ...(source.acquisition === undefined ? {} : { acquisition: source.acquisition }),
        ...(source.markdownTwin === true ? { markdownTwin: true } : {}),
        ...(source.proxy === undefined ? {} : { proxy: source.proxy }),
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
      return await settle(task, acquired, toPage, run.judge);
    } catch (err) {
      if (err instanceof HostDeferred) return settleDeferred(task, err.host);
      throw err;
    }
  }

  /** Approves a pending deletion proposal (`lastReport.proposals`): the page is withheld from then on. */
  async approveDeletion(reviewId: string, by: string): Promise<boolean> {
    const state = await this.state();
    return approveDeletion(this.#setup.context(state), reviewId, by);
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
