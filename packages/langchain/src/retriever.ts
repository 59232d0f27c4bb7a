import type { CallbackManagerForRetrieverRun } from '@langchain/core/callbacks/manager';
import { Document, type DocumentInterface } from '@langchain/core/documents';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import { BaseRetriever, type BaseRetrieverInput } from '@langchain/core/retrievers';
import type { VectorStoreInterface } from '@langchain/core/vectorstores';
import {
  type Connector,
  type DocumentRecord,
  describeEmbeddingSpace,
  type EmbeddingSpace,
  FIELDS,
  MIGRATE_COMMAND,
  normalizeAccess,
  type QueryFilter,
  RagfreshError,
  type StateStore,
  spaceLabel,
} from '@ragfresh/core';
import { collapseDuplicateHits } from '@ragfresh/engine';
import { type LiveFetchOptions, READER_FIELDS } from './fields.js';
import { type CurrentView, combineFilters, type FilterDialect } from './filters.js';
import { liveRefresh } from './live.js';
import { LOADER_FIELDS } from './pages.js';

export { type LiveFetchOptions, READER_FIELDS };

/** LangChain's usual search options (as on `VectorStoreRetriever`). */
export interface SearchOptions {
  /** Results per query. Default 4. */
  readonly k?: number;
  /** `similarity` (default) or `mmr` (needs a store with `maxMarginalRelevanceSearch`). */
  readonly searchType?: 'similarity' | 'mmr';
  /** MMR: candidates fetched (default 20) and diversity (0 = most diverse, 1 = most relevant; default 0.5). */
  readonly searchKwargs?: { readonly fetchK?: number; readonly lambda?: number };
  /**
   * Keep only results whose score passes: `score >= scoreThreshold` for similarity scores (as
   * LangChain's `ScoreThresholdRetriever`), `score <= scoreThreshold` with `scoreKind: 'distance'`
   * (Chroma's LangChain class returns distances). Similarity search only.
   */
  readonly scoreThreshold?: number;
  readonly scoreKind?: 'similarity' | 'distance';
}

interface CommonOptions extends BaseRetrieverInput, SearchOptions {
  /** Reads the published epoch; ragfresh's connector for the same index. */
  readonly connector?: Pick<Connector, 'readEpoch'>;
  /** Alternative to `connector`: any function returning the published epoch (e.g. `readChromaEpoch`). */
  readonly readEpoch?: () => Promise<number>;
  /**
   * Which chunks are current:
   * - `epoch` (default): ragfresh's snapshot view, needs `connector` or `readEpoch`;
   * - `flag`: `rf_current = true` (ragfresh's weaker flag view);
   * - `index`: a store LangChain's `index()` filled from `RagfreshLoader` (no validity fields):
   *   no view filter; with `state`, an answer keeps one version per document (the state's
   *   current one) — the store itself briefly holds both during `index()`'s write-then-delete.
   */
  readonly view?: 'epoch' | 'flag' | 'index';
  /** Document status, last good observation and fetch validators (labels come from here at query time). */
  readonly state?: Pick<StateStore, 'getDocument'>;
  /** Chunks of degraded/quarantined documents: `label` (default, `rf_stale`) or `exclude`. */
  readonly staleReaders?: 'label' | 'exclude';
  /**
   * Opt-in: refetch top results older than the freshness objective, through an engine composed
   * for the `live` role (its state holds the validators).
   */
  readonly liveFetch?: LiveFetchOptions;
  /**
   * Copies of one passage under several URLs (the same chunk text, `content_hash`, or the same
   * position in near-duplicate pages, `rf_dup` + `rf_ordinal`) become one result: the
   * best-ranked copy, citing every URL in `rf_citations`. Default true; `false` returns each copy.
   */
  readonly collapseDuplicates?: boolean;
  /**
   * The reader's groups: public chunks plus those whose `rf_access` lists one of them, applied
   * in the store's filter (so `k` counts only what the reader may see). Default none: public
   * chunks only. Not applied with `view: 'index'` (documents a store `index()` built carry no
   * scope).
   */
  readonly access?: readonly string[];
  /**
   * Your version of the embedding space (the config's `embeddingsVersion`), so the space this
   * retriever embeds queries in is named as the index names it.
   */
  readonly embeddingsVersion?: string;
}

export interface VectorStoreRetrieverOptions extends CommonOptions {
  readonly vectorStore: VectorStoreInterface;
  /**
   * How the store writes filters, so the current view can be ANDed with `filter`: a dialect, or
   * your own `(view, filter) => storeFilter`. Not needed with `view: 'index'`.
   */
  readonly dialect?:
    | FilterDialect
    | ((view: CurrentView, filter: object | string | undefined) => object | string | undefined);
  /** Your filter in the store's syntax (LangChain's `filter`), combined with the current view. */
  readonly filter?: object | string;
}

export interface ConnectorRetrieverOptions extends CommonOptions {
  /** Queried directly with `searchCurrent` / `query`. */
  readonly connector: Connector;
  readonly embeddings: EmbeddingsInterface;
  /** Narrow to one source. */
  readonly sourceId?: string;
}

export type RagfreshRetrieverOptions = VectorStoreRetrieverOptions | ConnectorRetrieverOptions;

/**
 * A LangChain retriever that only ever returns the current view of a ragfresh index: it reads
 * the published epoch once per query and filters on it (or on `rf_current`), so an answer never
 * mixes two versions of a page. Chunks of degraded or quarantined documents are labelled
 * (`rf_stale`, `rf_stale_since`) or dropped, and with `liveFetch` the top results older than a
 * freshness objective are revalidated against the live page.
 *
 * Two modes: wrap a LangChain vector store (`vectorStore` + `filter` dialect), or query a
 * ragfresh `Connector` directly (`RagfreshRetriever.fromConnector`) for stores without a
 * LangChain class, or whose class has no filter parameter (LanceDB.js).
 */
export class RagfreshRetriever extends BaseRetriever {
  static override lc_name(): string {
    return 'RagfreshRetriever';
  }
  override lc_namespace = ['ragfresh', 'retrievers'];

  readonly options: RagfreshRetrieverOptions;
  readonly k: number;
  #space: Promise<EmbeddingSpace> | undefined;

  constructor(options: RagfreshRetrieverOptions) {
    super(options);
    const k = options.k ?? 4;
    const invalid = (message: string) =>
      new RagfreshError('INVALID_ARGUMENT', message, { scope: 'langchain' });
    if (!Number.isSafeInteger(k) || k < 1) throw invalid(`k must be a positive integer, got ${k}.`);
    const view = options.view ?? 'epoch';
    if (view === 'epoch' && options.connector === undefined && options.readEpoch === undefined) {
      throw invalid(
        "the epoch view needs connector (for readEpoch) or readEpoch; or use view: 'flag' (ragfresh's flag) or view: 'index' (a store index() built).",
      );
    }
    if (options.liveFetch !== undefined && !(options.liveFetch.objectiveMs >= 0))
      throw invalid('liveFetch.objectiveMs must be a non-negative number of milliseconds.');
    if (options.liveFetch !== undefined && options.liveFetch.engine.role !== 'live')
      throw invalid(
        `liveFetch takes an engine composed for the live role, got the ${options.liveFetch.engine.role} role; compose it with composeEngine(settings, { state, embeddings }, 'live').`,
      );
    if (options.staleReaders !== undefined && options.state === undefined)
      throw invalid(
        'staleReaders needs state (the StateStore that knows which documents are degraded).',
      );
    if ('vectorStore' in options) {
      if (view !== 'index' && options.dialect === undefined)
        throw invalid(
          `view '${view}' needs dialect (how the store writes the current-view filter), e.g. dialect: 'chroma'.`,
        );
      if (
        options.searchType === 'mmr' &&
        options.vectorStore.maxMarginalRelevanceSearch === undefined
      ) {
        throw new RagfreshError(
          'NOT_SUPPORTED',
          `searchType 'mmr': ${options.vectorStore._vectorstoreType()} has no maxMarginalRelevanceSearch; use similarity.`,
          { scope: 'langchain' },
        );
      }
      if (options.searchType === 'mmr' && options.scoreThreshold !== undefined)
        throw invalid('scoreThreshold applies to similarity search only, not mmr.');
    } else if (options.searchType === 'mmr') {
      throw new RagfreshError(
        'NOT_SUPPORTED',
        "searchType 'mmr' needs a vectorStore; the connector path is similarity only.",
        { scope: 'langchain' },
      );
    }
    this.options = options;
    this.k = k;
    this.#access = normalizeAccess(options.access, 'access');
  }

  readonly #access: readonly string[];

  /** Queries a ragfresh connector directly (no LangChain vector store class needed). */
  static fromConnector(options: ConnectorRetrieverOptions): RagfreshRetriever {
    return new RagfreshRetriever(options);
  }

  /** The view this query reads: the published epoch (read now), the flag, or none (`index`). */
  async currentView(): Promise<CurrentView | undefined> {
    const view = this.options.view ?? 'epoch';
    if (view === 'index') return undefined;
    if (view === 'flag') return 'flag';
    const read = this.options.readEpoch ?? (() => this.options.connector!.readEpoch());
    return { epoch: await read() };
  }

  override async _getRelevantDocuments(
    query: string,
    runManager?: CallbackManagerForRetrieverRun,
  ): Promise<Document[]> {
    const view = await this.currentView();
    const exclude = this.options.staleReaders === 'exclude';
    const oneVersion = view === undefined && this.options.state !== undefined;
    const collapse = this.options.collapseDuplicates !== false;
    // Dropping stale chunks, other versions or copies after the search would leave fewer than
    // k: over-fetch (four hits per result leaves room for three URL variants of a page).
    const fetchK = this.k * Math.max(exclude ? 3 : oneVersion ? 2 : 1, collapse ? 4 : 1);
    const raw = await this.#search(query, fetchK, view, runManager);
    await this.#assertOneSpace(raw);
    let docs = await this.#annotate(raw, view);
    if (exclude) docs = docs.filter((d) => d.metadata[READER_FIELDS.stale] !== true);
    if (collapse) docs = collapseCopies(docs);
    docs = docs.slice(0, this.k);
    if (this.options.liveFetch !== undefined) {
      docs = await liveRefresh(docs, this.options.liveFetch);
    }
    return docs;
  }

  async #search(
    query: string,
    k: number,
    view: CurrentView | undefined,
    runManager: CallbackManagerForRetrieverRun | undefined,
  ): Promise<Document[]> {
    const o = this.options;
    const callbacks = runManager?.getChild('vectorstore');
    if ('vectorStore' in o) {
      const filter =
        typeof o.dialect === 'function'
          ? o.dialect(view ?? 'flag', o.filter)
          : o.dialect === undefined
            ? o.filter
            : combineFilters(
                o.dialect,
                view,
                o.filter,
                view === undefined ? undefined : this.#access,
              );
      const store = o.vectorStore;
      let found: Array<[DocumentInterface, number | undefined]>;
      if (o.searchType === 'mmr') {
        const mmr = await store.maxMarginalRelevanceSearch!(
          query,
          {
            k,
            fetchK: o.searchKwargs?.fetchK ?? Math.max(20, k),
            lambda: o.searchKwargs?.lambda ?? 0.5,
            ...(filter === undefined ? {} : { filter }),
          },
          callbacks,
        );
        found = mmr.map((d) => [d, undefined]);
      } else if (o.scoreThreshold !== undefined) {
        const t = o.scoreThreshold;
        const distance = o.scoreKind === 'distance';
        found = (await store.similaritySearchWithScore(query, k, filter, callbacks)).filter(
          ([, score]) => (distance ? score <= t : score >= t),
        );
      } else {
        found = (await store.similaritySearch(query, k, filter, callbacks)).map((d) => [
          d,
          undefined,
        ]);
      }
      return found.map(
        ([d, score]) =>
          new Document({
            pageContent: d.pageContent,
            metadata: { ...d.metadata, ...(score === undefined ? {} : { rf_score: score }) },
            ...(d.id === undefined ? {} : { id: d.id }),
          }),
      );
    }
    const vector = await o.embeddings.embedQuery(query);
    const filter: QueryFilter = {
      view:
        view === undefined
          ? { kind: 'all' }
          : view === 'flag'
            ? { kind: 'flag' }
            : { kind: 'epoch', epoch: view.epoch },
      ...(o.sourceId === undefined ? {} : { sourceId: o.sourceId }),
      access: this.#access,
    };
    const hits = await o.connector.query(vector, k, filter);
    return hits
      .filter((h) => o.scoreThreshold === undefined || h.score >= o.scoreThreshold)
      .map(
        (h) =>
          new Document({
            id: h.id,
            pageContent: h.text,
            metadata: { ...h.metadata, rf_score: h.score },
          }),
      );
  }

  /** The space queries are embedded in: the connector mode's embeddings, or the store's. */
  #querySpace(): Promise<EmbeddingSpace> {
    const o = this.options;
    const embeddings = 'vectorStore' in o ? o.vectorStore.embeddings : o.embeddings;
    this.#space ??= describeEmbeddingSpace(embeddings, {
      ...(o.embeddingsVersion === undefined ? {} : { version: o.embeddingsVersion }),
    });
    return this.#space;
  }

  /**
   * A hit whose chunk names another embedding space (`rf_space`) was ranked by comparing
   * vectors of two spaces: the answer is refused, never served (a chunk written before spaces
   * were recorded names none and is not judged).
   */
  async #assertOneSpace(docs: readonly Document[]): Promise<void> {
    const spaces = new Set(
      docs.map((d) => d.metadata[FIELDS.space]).filter((s): s is string => typeof s === 'string'),
    );
    if (spaces.size === 0) return;
    const mine = await this.#querySpace();
    const other = [...spaces].find((s) => s !== mine.id);
    if (other === undefined) return;
    throw new RagfreshError(
      'SPACE_MISMATCH',
      `the retriever embeds queries in space ${spaceLabel(mine)} but the index holds chunks of space ${other}: vectors of two spaces cannot be compared, so no answer was returned. Configure the embeddings the index is in, or run \`${MIGRATE_COMMAND}\` to move the index to these.`,
      { scope: 'langchain', details: { configured: mine.id, active: other } },
    );
  }

  async #annotate(docs: Document[], view: CurrentView | undefined): Promise<Document[]> {
    const state = this.options.state;
    const records = new Map<string, DocumentRecord | undefined>();
    if (state !== undefined) {
      const ids = [...new Set(docs.map((d) => d.metadata[FIELDS.documentId]))].filter(
        (id): id is string => typeof id === 'string',
      );
      await Promise.all(ids.map(async (id) => records.set(id, await state.getDocument(id))));
    }
    const annotated = docs.map((d) => {
      const m = d.metadata as Record<string, unknown>;
      if (view !== undefined && view !== 'flag') m[READER_FIELDS.epoch] = view.epoch;
      const record = records.get(String(m[FIELDS.documentId]));
      if (record !== undefined) annotateWithRecord(m, record);
      return d;
    });
    return view === undefined && state !== undefined
      ? oneVersionPerDocument(annotated, records)
      : annotated;
  }
}

/**
 * A store `index()` fills holds a page's old and new chunks side by side until its cleanup
 * runs. An answer keeps one version per document: the state's current one when it is among the
 * hits, else the best-ranked hit's.
 */
function oneVersionPerDocument(
  docs: Document[],
  records: ReadonlyMap<string, DocumentRecord | undefined>,
): Document[] {
  const chosen = new Map<string, unknown>();
  for (const d of docs) {
    const doc = d.metadata[FIELDS.documentId];
    if (typeof doc !== 'string' || chosen.has(doc)) continue;
    const current = records.get(doc)?.currentVersionId;
    const versions = docs
      .filter((x) => x.metadata[FIELDS.documentId] === doc)
      .map((x) => x.metadata[FIELDS.versionId]);
    chosen.set(
      doc,
      current !== undefined && versions.includes(current) ? current : d.metadata[FIELDS.versionId],
    );
  }
  return docs.filter((d) => {
    const doc = d.metadata[FIELDS.documentId];
    return typeof doc !== 'string' || chosen.get(doc) === d.metadata[FIELDS.versionId];
  });
}

/**
 * One Document per group of copies: the best-ranked one, citing every copy's URL. Chunks an
 * `index()` wrote from `RagfreshLoader` carry their text hash as `chunk_hash` instead.
 */
function collapseCopies(docs: Document[]): Document[] {
  const metadataOf = (d: Document) => {
    const m = d.metadata;
    const loaderHash = m[LOADER_FIELDS.chunkHash];
    return m[FIELDS.contentHash] === undefined && typeof loaderHash === 'string'
      ? { ...m, [FIELDS.contentHash]: loaderHash }
      : m;
  };
  return collapseDuplicateHits(docs, metadataOf, (d) => d.pageContent).map((g) => {
    const m = g.hit.metadata as Record<string, unknown>;
    m[READER_FIELDS.citations] = g.citations;
    m[READER_FIELDS.duplicates] = g.members.length;
    return g.hit;
  });
}

/** Copies a document record's status and latest observation into a returned chunk's metadata. */
export function annotateWithRecord(m: Record<string, unknown>, record: DocumentRecord): void {
  m[READER_FIELDS.status] = record.status;
  const seen = record.timestamps.retrievedAt ?? record.lastGoodAt;
  if (seen !== undefined) m[READER_FIELDS.lastSeenAt] = seen;
  if (record.status === 'degraded' || record.status === 'quarantined') {
    m[READER_FIELDS.stale] = true;
    const since = record.lastGoodAt ?? seen ?? m[FIELDS.retrievedAt];
    if (typeof since === 'string') m[READER_FIELDS.staleSince] = since;
  }
}

/** `RagfreshRetriever.fromConnector`: queries a ragfresh connector directly (`searchCurrent` semantics). */
export function connectorRetriever(options: ConnectorRetrieverOptions): RagfreshRetriever {
  return RagfreshRetriever.fromConnector(options);
}
