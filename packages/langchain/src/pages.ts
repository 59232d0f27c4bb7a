import { Document } from '@langchain/core/documents';
import { FIELDS, HEADING_SEPARATOR } from '@ragfresh/core';
import {
  splitterName as extractSplitterName,
  type PreparedDocument,
  type SplitterPreparation,
} from '@ragfresh/extract';

/** Where a loaded page's text came from in this run. */
export type PageOrigin =
  /** Fetched (200) and extracted now. */
  | 'fetched'
  /** The server answered 304: the stored copy, re-emitted with no body and no parse. */
  | 'not-modified'
  /** The page failed, was not the document, was gone-but-unconfirmed or deferred: the last good copy. */
  | 'last-good';

/** One page as the loader saw it: the prepared version plus the facts of the fetch that made it. */
export interface LoadedPage {
  /** The URL as listed (first of its identity). */
  readonly url: string;
  /** The identity-policy URL: `metadata.source`, `index()`'s group id. */
  readonly identityUrl: string;
  readonly documentId: string;
  readonly sourceId: string;
  readonly title: string;
  /** The page's canonical, accepted by the loader's `canonical` policy (cited instead of the fetched URL). */
  readonly canonicalUrl?: string;
  /** A canonical the page claimed that the policy refused: kept as `canonical_claim`, never cited. */
  readonly canonicalClaim?: string;
  readonly prepared: PreparedDocument;
  readonly fetch: {
    /** When the version was fetched (a copy keeps the time of the fetch that produced it). */
    readonly retrievedAt: string;
    readonly finalUrl: string;
    readonly status: number;
    /** Validators for the next conditional request (tagged with the loader's pipeline key). */
    readonly validators: {
      readonly etag?: string;
      readonly lastModified?: string;
      readonly pipelineKey?: string;
    };
    readonly etag?: string;
    readonly lastModified?: string;
    readonly sourceModifiedAt?: string;
    readonly rawDigest?: string;
  };
  /** Absent on stored copies; set on every page a load yields. */
  readonly origin?: PageOrigin;
}

/**
 * Keys of loader Documents besides core's `FIELDS`. LangChain's `index()` refuses `hash_`,
 * `content_hash` and `metadata_hash`, so the hashes are `chunk_hash` (sha256 of the chunk text)
 * and `page_hash` (hash of the page's normalised text).
 */
export const LOADER_FIELDS = Object.freeze({ chunkHash: 'chunk_hash', pageHash: 'page_hash' });

/** Key under which volatile values go with `volatileMetadata: 'nested'`. */
export const VOLATILE_KEY = 'rf_volatile';

/**
 * Where volatile values (retrieval time, Last-Modified, ETag, HTTP status) go:
 * `false` (default) nowhere — what `index()` hashes stays identical between runs, and the
 * retriever looks fetch times and stale state up in ragfresh's state at query time; `'nested'`
 * under `rf_volatile` (not hashed by `index()`, values of the first run stick); `true` flat keys
 * (every run re-embeds everything under `index()`).
 */
export type VolatileMetadata = boolean | 'nested';

/** A user's splitter (a LangChain `TextSplitter`) and the stable name of its settings. */
export type LoaderSplitter = SplitterPreparation;

/** A stable name for a LangChain TextSplitter: class plus a hash of its serialisable settings. */
export const splitterName = extractSplitterName;

type Flat = Record<string, string | number | boolean>;

/** How a loaded page becomes Documents. */
export interface EmitOptions {
  /** Where volatile values go. Default false. */
  readonly volatile?: VolatileMetadata;
  /** The embedding space id the vectors will be in (`rf_space`), when the loader checked one. */
  readonly space?: string;
}

/** What `index()` hashes of every Document of a page: nothing that changes between two fetches. */
export function stablePageMetadata(page: LoadedPage, space?: string): Flat {
  const first = page.prepared.chunks[0]?.provenance;
  return {
    [FIELDS.source]: page.identityUrl,
    [FIELDS.documentId]: page.documentId,
    [FIELDS.sourceId]: page.sourceId,
    [FIELDS.versionId]: page.prepared.versionId,
    [FIELDS.url]: page.url,
    [FIELDS.finalUrl]: page.fetch.finalUrl,
    ...(page.canonicalUrl === undefined ? {} : { [FIELDS.canonicalUrl]: page.canonicalUrl }),
    ...(page.canonicalClaim === undefined ? {} : { [FIELDS.canonicalClaim]: page.canonicalClaim }),
    [FIELDS.title]: page.title,
    [LOADER_FIELDS.pageHash]: page.prepared.contentHash,
    [FIELDS.acquisition]: first?.acquisition ?? 'raw',
    ...(first?.authority === undefined ? {} : { [FIELDS.authority]: first.authority }),
    ...(space === undefined ? {} : { [FIELDS.space]: space }),
  };
}

/** The values that change between two fetches of an unchanged page. */
export function volatileMetadata(page: LoadedPage): Record<string, string | number> {
  return {
    [FIELDS.retrievedAt]: page.fetch.retrievedAt,
    ...(page.fetch.sourceModifiedAt === undefined
      ? {}
      : { [FIELDS.sourceModifiedAt]: page.fetch.sourceModifiedAt }),
    ...(page.fetch.etag === undefined ? {} : { etag: page.fetch.etag }),
    ...(page.fetch.lastModified === undefined ? {} : { last_modified: page.fetch.lastModified }),
    http_status: page.fetch.status,
  };
}

function withVolatile(
  stable: Flat,
  page: LoadedPage,
  mode: VolatileMetadata,
): Record<string, unknown> {
  if (mode === false) return stable;
  const volatile = volatileMetadata(page);
  return mode === 'nested' ? { ...stable, [VOLATILE_KEY]: volatile } : { ...stable, ...volatile };
}

/** `VolatileMetadata` alone is the volatile mode (no space). */
function emitOf(emit: EmitOptions | VolatileMetadata): EmitOptions {
  return typeof emit === 'object' ? emit : { volatile: emit };
}

/** One Document per chunk: `id` = chunk id (also `rf_chunk`), `source` = the page URL. */
export function chunkDocuments(
  page: LoadedPage,
  emit: EmitOptions | VolatileMetadata = false,
): Document[] {
  const { volatile: mode = false, space } = emitOf(emit);
  const stable = stablePageMetadata(page, space);
  return page.prepared.chunks.map(
    (chunk) =>
      new Document({
        id: chunk.chunkId,
        pageContent: chunk.text,
        metadata: withVolatile(
          {
            ...stable,
            [FIELDS.chunkId]: chunk.chunkId,
            [FIELDS.ordinal]: chunk.ordinal,
            [FIELDS.heading]: chunk.headingPath.join(HEADING_SEPARATOR),
            [FIELDS.headingPath]: JSON.stringify(chunk.headingPath),
            [LOADER_FIELDS.chunkHash]: chunk.contentHash,
            [FIELDS.tokenCount]: chunk.tokenCount,
          },
          page,
          mode,
        ),
      }),
  );
}

/** One Document for a whole page: `id` = documentId. */
export function pageDocument(
  page: LoadedPage,
  emit: EmitOptions | VolatileMetadata = false,
): Document {
  const { volatile: mode = false, space } = emitOf(emit);
  return new Document({
    id: page.documentId,
    pageContent: page.prepared.text,
    metadata: withVolatile(
      { ...stablePageMetadata(page, space), rf_chunks: page.prepared.chunks.length },
      page,
      mode,
    ),
  });
}
