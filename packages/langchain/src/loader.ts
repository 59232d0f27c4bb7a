import { BaseDocumentLoader } from '@langchain/core/document_loaders/base';
import { Document } from '@langchain/core/documents';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  assertSourceId,
  DEFAULT_IDENTITY_POLICY,
  type EmbeddedChunk,
  type FetchValidators,
  FIELDS,
  HEADING_SEPARATOR,
  documentId as makeDocumentId,
  type PublishCandidate,
  RagfreshError,
  type UrlIdentityPolicy,
} from '@ragfresh/core';
import { acquirePage, type Chunking, chunkingFor } from '@ragfresh/engine';
import { type PreparedDocument, preparePage, type TiktokenEncodingName } from '@ragfresh/extract';
import { discoverSitemap, type Fetcher } from '@ragfresh/fetch';
import { mapOrdered } from './concurrency.js';

/**
 * Where volatile values (retrieval time, content-changed time, Last-Modified, ETag, HTTP status)
 * go in a loaded Document's metadata:
 * - `false` (default): left out. Two runs over unchanged pages give byte-identical Documents, so
 *   LangChain's `index()` (which hashes pageContent + metadata) skips them. You lose the fetch
 *   time on the indexed chunk; get it at read time from ragfresh's state (`RagfreshRetriever`
 *   with a `StateStore`) or keep a loader `state` of your own.
 * - `'nested'`: under one object key `rf_volatile`. `index()` serialises metadata with
 *   `JSON.stringify(metadata, sortedTopLevelKeys)`, and that key allow-list applies at every
 *   depth, so the nested values (whose names are not top-level keys) are not hashed. Needs a
 *   vector store that accepts nested metadata (not Chroma, Pinecone or LanceDB columns).
 * - `true`: flat top-level keys (`retrieved_at`, ...). Every run changes the hash of every
 *   Document, so `index()` re-embeds and rewrites everything each time.
 */
export type VolatileMetadata = boolean | 'nested';

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
  /** `chunks` (default): one Document per chunk. `pages`: one Document per page (whole Markdown). */
  readonly mode?: 'chunks' | 'pages';
  /** Pages fetched and extracted at once. Default 4 (the fetcher's per-host limits still apply). */
  readonly concurrency?: number;
  /** Token budget per chunk. Default 512. */
  readonly maxTokens?: number;
  /** Tokenizer the budget is counted in. Default cl100k_base. */
  readonly encoding?: TiktokenEncodingName;
  /** See {@link VolatileMetadata}. Default false. */
  readonly volatileMetadata?: VolatileMetadata;
  /** Authority label carried into metadata (e.g. `official`). */
  readonly authority?: string;
  /** Try the page's Markdown twin first (`page.md`). Default false. */
  readonly markdownTwin?: boolean;
  /** Most URLs read from all sitemaps. Default 50,000. */
  readonly maxSitemapUrls?: number;
  /** Called for every URL that yields nothing (fetch failure, not the document). */
  readonly onSkip?: (skip: SkippedPage) => void;
  readonly signal?: AbortSignal;
}

/** A URL that produced no Document, and why. Nothing is deleted because of it. */
export interface SkippedPage {
  readonly url: string;
  readonly documentId?: string;
  readonly reasons: readonly string[];
}

/** One page as the loader saw it: the prepared version plus the facts of its fetch. */
export interface LoadedPage {
  readonly url: string;
  readonly documentId: string;
  readonly sourceId: string;
  readonly title: string;
  readonly canonicalUrl?: string;
  readonly prepared: PreparedDocument;
  readonly fetch: {
    readonly retrievedAt: string;
    readonly finalUrl: string;
    readonly status: number;
    /** Validators for the next conditional request (tagged with the loader's pipeline key). */
    readonly validators: FetchValidators;
    readonly etag?: string;
    readonly lastModified?: string;
    readonly sourceModifiedAt?: string;
  };
}

/** Keys under which ragfresh puts volatile values when `volatileMetadata` is not false. */
export const VOLATILE_KEY = 'rf_volatile';

/**
 * LangChain's `index()` refuses metadata keys `hash_`, `content_hash` and `metadata_hash`, so
 * the loader names the hashes `chunk_hash` (sha256 of the chunk text) and `page_hash` (hash of
 * the page's normalised text). Stored chunks written by ragfresh keep `content_hash`.
 */
export const LOADER_FIELDS = Object.freeze({ chunkHash: 'chunk_hash', pageHash: 'page_hash' });

/**
 * A LangChain document loader over ragfresh's fetcher and extractor: every Document carries a
 * stable identity (`source` = documentId) and provenance (url, title, heading path, version and
 * chunk ids, hashes). `lazyLoad()` streams; `load()` collects.
 *
 * ```ts
 * const loader = new RagfreshLoader({ fetcher, sourceId: 'docs', sitemaps: ['https://example.org/sitemap.xml'] });
 * await index({ docsSource: loader, recordManager, vectorStore, options: { cleanup: 'incremental', sourceIdKey: 'source' } });
 * ```
 */
export class RagfreshLoader extends BaseDocumentLoader {
  readonly options: RagfreshLoaderOptions;
  /** URLs of the last run that yielded nothing, with reasons. */
  skipped: SkippedPage[] = [];
  readonly #chunking: Chunking;

  constructor(options: RagfreshLoaderOptions) {
    super();
    assertSourceId(options.sourceId);
    if (
      options.concurrency !== undefined &&
      (!Number.isSafeInteger(options.concurrency) || options.concurrency < 1)
    ) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `concurrency must be a positive integer, got ${options.concurrency}.`,
        { scope: 'langchain' },
      );
    }
    if ((options.urls?.length ?? 0) === 0 && (options.sitemaps?.length ?? 0) === 0) {
      throw new RagfreshError('INVALID_ARGUMENT', 'give the loader some urls or sitemaps.', {
        scope: 'langchain',
      });
    }
    this.options = options;
    this.#chunking = chunkingFor({
      ...(options.encoding === undefined ? {} : { encoding: options.encoding }),
      ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
    });
  }

  /** Extractor/chunker/schema versions and token budget; validators are recorded under it. */
  get pipelineKey(): string {
    return this.#chunking.pipelineKey;
  }

  async load(): Promise<Document[]> {
    const docs: Document[] = [];
    for await (const doc of this.lazyLoad()) docs.push(doc);
    return docs;
  }

  /**
   * `index()` from `@langchain/core/indexing` recognises a loader by `load` *and* `loadAndSplit`
   * (which `BaseDocumentLoader` no longer declares in @langchain/core 1.x); without it, `index()`
   * treats the loader as an array and fails. Chunks are already cut by ragfresh's heading-aware
   * chunker, so without a splitter this is `load()`.
   */
  async loadAndSplit(splitter?: {
    splitDocuments(documents: Document[]): Promise<Document[]>;
  }): Promise<Document[]> {
    const docs = await this.load();
    return splitter === undefined ? docs : splitter.splitDocuments(docs);
  }

  /** Streams Documents page by page, in source order, with bounded concurrency. */
  async *lazyLoad(): AsyncGenerator<Document> {
    for await (const page of this.pages()) {
      if (this.options.mode === 'pages') yield this.pageDocument(page);
      else yield* this.chunkDocuments(page);
    }
  }

  /** Streams the prepared pages (for publishing through ragfresh's Publisher, say). */
  async *pages(): AsyncGenerator<LoadedPage> {
    this.skipped = [];
    const limit = this.options.concurrency ?? 4;
    for await (const result of mapOrdered(this.#urls(), limit, (url) => this.#loadOne(url))) {
      if ('prepared' in result) yield result;
      else {
        this.skipped.push(result);
        this.options.onSkip?.(result);
      }
    }
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
      for (const f of found.failures) {
        const skip = { url: f.url, reasons: [`sitemap-unreadable: ${f.outcome}`] };
        this.skipped.push(skip);
        this.options.onSkip?.(skip);
      }
      for (const entry of found.entries) if (fresh(entry.url)) yield entry.url;
    }
  }

  async #loadOne(url: string): Promise<LoadedPage | SkippedPage> {
    const identity = this.options.identity ?? DEFAULT_IDENTITY_POLICY;
    let docId: string;
    try {
      docId = makeDocumentId(this.options.sourceId, url, identity);
    } catch (err) {
      return { url, reasons: [`invalid-url: ${(err as Error).message}`] };
    }
    const { counter, maxTokens, pipelineKey } = this.#chunking;
    // The engine's acquire step: one conditional fetch, one parse (classification first).
    const acquired = await acquirePage(
      { fetcher: this.options.fetcher },
      {
        url,
        pipelineKey,
        sourceId: this.options.sourceId,
        ...(this.options.markdownTwin === true ? { markdownTwin: true } : {}),
        ...(this.options.signal === undefined ? {} : { signal: this.options.signal }),
      },
      (input, fetched) =>
        preparePage(
          input,
          {
            documentId: docId,
            sourceId: this.options.sourceId,
            retrievedAt: fetched.fetchedAt,
            ...(fetched.region === undefined ? {} : { region: fetched.region }),
            ...(this.options.authority === undefined ? {} : { authority: this.options.authority }),
            ...(fetched.lastModifiedAt === undefined
              ? {}
              : { sourceModifiedAt: fetched.lastModifiedAt }),
          },
          { counter, ...(maxTokens === undefined ? {} : { maxTokens }) },
        ),
    );
    if (acquired.kind === 'unreadable')
      return { url, documentId: docId, reasons: acquired.reasons };
    if (acquired.kind !== 'page') {
      const { result } = acquired;
      return { url, documentId: docId, reasons: [`${result.outcome}: HTTP ${result.status}`] };
    }
    const { result, outcome: page } = acquired;
    if (page.kind === 'not-the-document') return { url, documentId: docId, reasons: page.reasons };
    return {
      url,
      documentId: docId,
      sourceId: this.options.sourceId,
      title: page.title,
      ...(page.canonicalUrl === undefined ? {} : { canonicalUrl: page.canonicalUrl }),
      prepared: page.prepared,
      fetch: {
        retrievedAt: result.fetchedAt,
        finalUrl: result.finalUrl,
        status: result.status,
        validators: result.validators,
        ...(result.validators.etag === undefined ? {} : { etag: result.validators.etag }),
        ...(result.validators.lastModified === undefined
          ? {}
          : { lastModified: result.validators.lastModified }),
        ...(result.lastModifiedAt === undefined ? {} : { sourceModifiedAt: result.lastModifiedAt }),
      },
    };
  }

  /** One Document per chunk of a loaded page. */
  chunkDocuments(page: LoadedPage): Document[] {
    return page.prepared.chunks.map(
      (chunk) =>
        new Document({
          id: chunk.chunkId,
          pageContent: chunk.text,
          metadata: this.#withVolatile(
            {
              ...stablePageMetadata(page),
              [FIELDS.chunkId]: chunk.chunkId,
              [FIELDS.ordinal]: chunk.ordinal,
              [FIELDS.heading]: chunk.headingPath.join(HEADING_SEPARATOR),
              [FIELDS.headingPath]: JSON.stringify(chunk.headingPath),
              [LOADER_FIELDS.chunkHash]: chunk.contentHash,
              [FIELDS.tokenCount]: chunk.tokenCount,
            },
            page,
          ),
        }),
    );
  }

  /** One Document for a whole page. */
  pageDocument(page: LoadedPage): Document {
    return new Document({
      id: page.documentId,
      pageContent: page.prepared.text,
      metadata: this.#withVolatile(
        { ...stablePageMetadata(page), rf_chunks: page.prepared.chunks.length },
        page,
      ),
    });
  }

  #withVolatile(
    stable: Record<string, string | number | boolean>,
    page: LoadedPage,
  ): Record<string, unknown> {
    const mode = this.options.volatileMetadata ?? false;
    if (mode === false) return stable;
    const volatile = volatileMetadata(page);
    return mode === 'nested' ? { ...stable, [VOLATILE_KEY]: volatile } : { ...stable, ...volatile };
  }
}

function stablePageMetadata(page: LoadedPage): Record<string, string | number | boolean> {
  const authority = page.prepared.chunks[0]?.provenance.authority;
  return {
    [FIELDS.source]: page.documentId,
    [FIELDS.documentId]: page.documentId,
    [FIELDS.sourceId]: page.sourceId,
    [FIELDS.versionId]: page.prepared.versionId,
    [FIELDS.url]: page.url,
    [FIELDS.finalUrl]: page.fetch.finalUrl,
    ...(page.canonicalUrl === undefined ? {} : { [FIELDS.canonicalUrl]: page.canonicalUrl }),
    [FIELDS.title]: page.title,
    [LOADER_FIELDS.pageHash]: page.prepared.contentHash,
    [FIELDS.acquisition]: page.prepared.chunks[0]?.provenance.acquisition ?? 'raw',
    ...(authority === undefined ? {} : { [FIELDS.authority]: authority }),
  };
}

/** The values that change between two fetches of an unchanged page. */
export function volatileMetadata(page: LoadedPage): Record<string, string | number> {
  return {
    [FIELDS.retrievedAt]: page.fetch.retrievedAt,
    // Without history the loader only knows this observation; ragfresh's state knows better.
    [FIELDS.contentChangedAt]: page.fetch.retrievedAt,
    ...(page.fetch.sourceModifiedAt === undefined
      ? {}
      : { [FIELDS.sourceModifiedAt]: page.fetch.sourceModifiedAt }),
    ...(page.fetch.etag === undefined ? {} : { etag: page.fetch.etag }),
    ...(page.fetch.lastModified === undefined ? {} : { last_modified: page.fetch.lastModified }),
    http_status: page.fetch.status,
  };
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
