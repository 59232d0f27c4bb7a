import type { CallbackManagerForRetrieverRun } from '@langchain/core/callbacks/manager';
import { Document } from '@langchain/core/documents';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import { BaseRetriever, type BaseRetrieverInput } from '@langchain/core/retrievers';
import type { VectorStoreInterface } from '@langchain/core/vectorstores';
import {
  type Connector,
  type DocumentRecord,
  FIELDS,
  type QueryFilter,
  RagfreshError,
  type StateStore,
} from '@ragfresh/core';
import { type LiveFetchOptions, READER_FIELDS } from './fields.js';
import { type CurrentView, currentViewFilter, type FilterDialect } from './filters.js';
import { liveRefresh } from './live.js';

export { type LiveFetchOptions, READER_FIELDS };

interface CommonOptions extends BaseRetrieverInput {
  /** Results per query. Default 4. */
  readonly k?: number;
  /** Reads the published epoch; ragfresh's connector for the same index. */
  readonly connector?: Pick<Connector, 'readEpoch'>;
  /** Alternative to `connector`: any function returning the published epoch (e.g. `readChromaEpoch`). */
  readonly readEpoch?: () => Promise<number>;
  /** `epoch` (default): snapshot view, needs `connector` or `readEpoch`. `flag`: `rf_current = true`. */
  readonly view?: 'epoch' | 'flag';
  /** Document status, last good observation and fetch validators. */
  readonly state?: Pick<StateStore, 'getDocument'>;
  /** Chunks of degraded/quarantined documents: `label` (default, `rf_stale`) or `exclude`. */
  readonly staleReaders?: 'label' | 'exclude';
  /** Opt-in: refetch top results older than the freshness objective. Needs `state` for validators. */
  readonly liveFetch?: LiveFetchOptions;
}

export interface VectorStoreRetrieverOptions extends CommonOptions {
  readonly vectorStore: VectorStoreInterface;
  /** The store's filter dialect, or your own `(view) => filter` (e.g. to add clauses). */
  readonly filter: FilterDialect | ((view: CurrentView) => unknown);
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

  constructor(options: RagfreshRetrieverOptions) {
    super(options);
    const k = options.k ?? 4;
    if (!Number.isSafeInteger(k) || k < 1) {
      throw new RagfreshError('INVALID_ARGUMENT', `k must be a positive integer, got ${k}.`, {
        scope: 'langchain',
      });
    }
    if (
      (options.view ?? 'epoch') === 'epoch' &&
      options.connector === undefined &&
      options.readEpoch === undefined
    ) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        "the epoch view needs connector (for readEpoch) or readEpoch; or use view: 'flag'.",
        { scope: 'langchain' },
      );
    }
    if (options.liveFetch !== undefined && !(options.liveFetch.objectiveMs >= 0)) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        'liveFetch.objectiveMs must be a non-negative number of milliseconds.',
        { scope: 'langchain' },
      );
    }
    if (options.staleReaders !== undefined && options.state === undefined) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        'staleReaders needs state (the StateStore that knows which documents are degraded).',
        { scope: 'langchain' },
      );
    }
    this.options = options;
    this.k = k;
  }

  /** Queries a ragfresh connector directly (no LangChain vector store class needed). */
  static fromConnector(options: ConnectorRetrieverOptions): RagfreshRetriever {
    return new RagfreshRetriever(options);
  }

  /** The view this query reads: the published epoch, read now, or the flag. */
  async currentView(): Promise<CurrentView> {
    if ((this.options.view ?? 'epoch') === 'flag') return 'flag';
    const read = this.options.readEpoch ?? (() => this.options.connector!.readEpoch());
    return { epoch: await read() };
  }

  override async _getRelevantDocuments(
    query: string,
    _runManager?: CallbackManagerForRetrieverRun,
  ): Promise<Document[]> {
    const view = await this.currentView();
    const exclude = this.options.staleReaders === 'exclude';
    // Excluding stale chunks after the search would leave fewer than k: over-fetch.
    const fetchK = exclude ? this.k * 3 : this.k;
    const raw = await this.#search(query, fetchK, view);
    let docs = await this.#annotate(raw, view);
    if (exclude) docs = docs.filter((d) => d.metadata[READER_FIELDS.stale] !== true);
    docs = docs.slice(0, this.k);
    if (this.options.liveFetch !== undefined) {
      docs = await liveRefresh(docs, this.options.liveFetch, this.options.state);
    }
    return docs;
  }

  async #search(query: string, k: number, view: CurrentView): Promise<Document[]> {
    const o = this.options;
    if ('vectorStore' in o) {
      const filter =
        typeof o.filter === 'function' ? o.filter(view) : currentViewFilter(o.filter, view);
      const found = await o.vectorStore.similaritySearch(query, k, filter as never);
      return found.map(
        (d) =>
          new Document({
            pageContent: d.pageContent,
            metadata: { ...d.metadata },
            ...(d.id === undefined ? {} : { id: d.id }),
          }),
      );
    }
    const vector = await o.embeddings.embedQuery(query);
    const filter: QueryFilter = {
      view: view === 'flag' ? { kind: 'flag' } : { kind: 'epoch', epoch: view.epoch },
      ...(o.sourceId === undefined ? {} : { sourceId: o.sourceId }),
    };
    const hits = await o.connector.query(vector, k, filter);
    return hits.map(
      (h) =>
        new Document({
          id: h.id,
          pageContent: h.text,
          metadata: { ...h.metadata, rf_score: h.score },
        }),
    );
  }

  async #annotate(docs: Document[], view: CurrentView): Promise<Document[]> {
    const state = this.options.state;
    const records = new Map<string, DocumentRecord | undefined>();
    if (state !== undefined) {
      const ids = [...new Set(docs.map((d) => d.metadata[FIELDS.documentId]))].filter(
        (id): id is string => typeof id === 'string',
      );
      await Promise.all(ids.map(async (id) => records.set(id, await state.getDocument(id))));
    }
    return docs.map((d) => {
      const m = d.metadata as Record<string, unknown>;
      if (view !== 'flag') m[READER_FIELDS.epoch] = view.epoch;
      const record = records.get(String(m[FIELDS.documentId]));
      if (record !== undefined) annotateWithRecord(m, record);
      return d;
    });
  }
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
