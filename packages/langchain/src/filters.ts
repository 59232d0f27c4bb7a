import type { DocumentInterface } from '@langchain/core/documents';
import { accessAdmits, accessKey, FIELDS, RagfreshError, readerAccessTokens } from '@ragfresh/core';

/** Vector stores whose LangChain class (or plain client) `currentViewFilter` speaks. */
export type FilterDialect = 'chroma' | 'qdrant' | 'pinecone' | 'pgvector' | 'lancedb' | 'memory';

export const FILTER_DIALECTS: readonly FilterDialect[] = Object.freeze([
  'chroma',
  'qdrant',
  'pinecone',
  'pgvector',
  'lancedb',
  'memory',
]);

/**
 * Which chunks a reader may see:
 * - `{ epoch }`: the snapshot view `rf_from <= epoch < rf_to` (the strong guarantee: a reader
 *   that read `epoch` once per question never sees two versions of a document, nor none, on a
 *   connector declaring `snapshot` promotion);
 * - `'flag'`: `rf_current = true` (a fixed filter; the connector's weaker `flagPromotion`
 *   guarantee, usually `overlap`: briefly both versions during a promotion).
 */
export type CurrentView = { readonly epoch: number } | 'flag';

export type ChromaWhere =
  | { $and: [{ rf_from: { $lte: number } }, { rf_to: { $gt: number } }] }
  | { rf_current: { $eq: true } };
export interface QdrantFilter {
  must: Array<
    | { key: string; range: { lte: number } | { gt: number } }
    | { key: string; match: { value: boolean } }
  >;
}
export type PineconeFilter =
  | { rf_from: { $lte: number }; rf_to: { $gt: number } }
  | { rf_current: { $eq: true } };
export type PgVectorFilter =
  | { rf_from: { lte: number }; rf_to: { gt: number } }
  | { rf_current: true };
/** LangChain's MemoryVectorStore (and ragfresh's in-process stores) take a predicate. */
export type MemoryFilter = (doc: DocumentInterface) => boolean;

export interface FilterByDialect {
  chroma: ChromaWhere;
  qdrant: QdrantFilter;
  pinecone: PineconeFilter;
  pgvector: PgVectorFilter;
  lancedb: string;
  memory: MemoryFilter;
}

function epochOf(view: CurrentView): number | undefined {
  if (view === 'flag') return undefined;
  if (!Number.isSafeInteger(view.epoch) || view.epoch < 0) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `epoch must be a non-negative integer, got ${String(view.epoch)}; read it with connector.readEpoch().`,
      { scope: 'langchain' },
    );
  }
  return view.epoch;
}

/**
 * The filter object a LangChain vector store (or the store's own client) needs to read the
 * current view of a ragfresh index. Pass it as the `filter` argument of `similaritySearch*`,
 * or let {@link RagfreshRetriever} apply it on every query.
 *
 * | store      | epoch view `E`                                                            | flag view                            |
 * | ---------- | ------------------------------------------------------------------------- | ------------------------------------ |
 * | `chroma`   | `{ $and: [{ rf_from: { $lte: E } }, { rf_to: { $gt: E } }] }`             | `{ rf_current: { $eq: true } }`      |
 * | `qdrant`   | `{ must: [{ key: 'metadata.rf_from', range: { lte: E } }, { key: 'metadata.rf_to', range: { gt: E } }] }` | `{ must: [{ key: 'metadata.rf_current', match: { value: true } }] }` |
 * | `pinecone` | `{ rf_from: { $lte: E }, rf_to: { $gt: E } }` (implicit AND)              | `{ rf_current: { $eq: true } }`      |
 * | `pgvector` | `{ rf_from: { lte: E }, rf_to: { gt: E } }` (PGVectorStore range ops)     | `{ rf_current: true }`               |
 * | `lancedb`  | `'rf_from <= E AND rf_to > E'` (SQL `where`, prefilter)                    | `'rf_current = true'`                |
 * | `memory`   | `(doc) => rf_from <= E && E < rf_to`                                      | `(doc) => rf_current === true`       |
 */
export function currentViewFilter<D extends FilterDialect>(
  store: D,
  view: CurrentView,
): FilterByDialect[D];
export function currentViewFilter(store: FilterDialect, view: CurrentView): unknown {
  const epoch = epochOf(view);
  switch (store) {
    case 'chroma':
      return epoch === undefined
        ? { [FIELDS.current]: { $eq: true } }
        : { $and: [{ [FIELDS.from]: { $lte: epoch } }, { [FIELDS.to]: { $gt: epoch } }] };
    case 'qdrant':
      return epoch === undefined
        ? { must: [{ key: `metadata.${FIELDS.current}`, match: { value: true } }] }
        : {
            must: [
              { key: `metadata.${FIELDS.from}`, range: { lte: epoch } },
              { key: `metadata.${FIELDS.to}`, range: { gt: epoch } },
            ],
          };
    case 'pinecone':
      return epoch === undefined
        ? { [FIELDS.current]: { $eq: true } }
        : { [FIELDS.from]: { $lte: epoch }, [FIELDS.to]: { $gt: epoch } };
    case 'pgvector':
      return epoch === undefined
        ? { [FIELDS.current]: true }
        : { [FIELDS.from]: { lte: epoch }, [FIELDS.to]: { gt: epoch } };
    case 'lancedb':
      return epoch === undefined
        ? `${FIELDS.current} = true`
        : `${FIELDS.from} <= ${epoch} AND ${FIELDS.to} > ${epoch}`;
    case 'memory':
      return epoch === undefined
        ? (doc: DocumentInterface) => doc.metadata[FIELDS.current] === true
        : (doc: DocumentInterface) => {
            const from = Number(doc.metadata[FIELDS.from]);
            const to = Number(doc.metadata[FIELDS.to]);
            return from <= epoch && epoch < to;
          };
    default:
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `no current-view filter for store ${JSON.stringify(store)}; use one of ${FILTER_DIALECTS.join(', ')}, or pass filter: (view) => yourFilter.`,
        { scope: 'langchain' },
      );
  }
}

/**
 * The access scope of a reader with `groups` in the store's syntax: public chunks (`rf_access`
 * holds `*`) and those of its groups, as a list-membership condition the store applies before
 * ranking (ragfresh's connectors store `rf_access` this way; Chroma as boolean keys).
 *
 * | store      | reader with groups `g…`                                                 |
 * | ---------- | ----------------------------------------------------------------------- |
 * | `chroma`   | `{ $or: [{ 'rf_access.*': { $eq: true } }, { 'rf_access.g': { $eq: true } }, …] }` |
 * | `qdrant`   | `{ key: 'metadata.rf_access', match: { any: ['*', 'g', …] } }`          |
 * | `pinecone` | `{ rf_access: { $in: ['*', 'g', …] } }`                                  |
 * | `pgvector` | `{ rf_access: { arrayContains: ['*', 'g', …] } }` (jsonb `?|`)           |
 * | `lancedb`  | `array_has_any(rf_access, make_array('*', 'g', …))`                      |
 * | `memory`   | `(doc) => rf_access has '*' or a group`                                  |
 */
export function accessFilter(store: FilterDialect, groups: readonly string[]): object | string {
  const tokens = readerAccessTokens(groups);
  switch (store) {
    case 'chroma': {
      const any = tokens.map((t) => ({ [accessKey(t)]: { $eq: true } }));
      return any.length === 1 ? any[0]! : { $or: any };
    }
    case 'qdrant':
      return { key: `metadata.${FIELDS.access}`, match: { any: tokens } };
    case 'pinecone':
      return { [FIELDS.access]: { $in: tokens } };
    case 'pgvector':
      return { [FIELDS.access]: { arrayContains: tokens } };
    case 'lancedb':
      return `array_has_any(${FIELDS.access}, make_array(${tokens.map((t) => `'${t.replaceAll("'", "''")}'`).join(', ')}))`;
    case 'memory':
      return (doc: DocumentInterface) => accessAdmits(doc.metadata[FIELDS.access], groups);
    default:
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `no access filter for store ${JSON.stringify(store)}; use one of ${FILTER_DIALECTS.join(', ')}.`,
        { scope: 'langchain' },
      );
  }
}

/**
 * The current view ANDed with a filter of your own, in the store's syntax (what you would pass
 * as LangChain's `filter`). Without a view (a store `index()` built has no validity fields) it
 * is your filter alone; without your filter, the current view alone.
 */
export function combineFilters(
  store: FilterDialect,
  view: CurrentView | undefined,
  given: object | string | undefined,
  /** The reader's groups: the access scope ANDed in too (only with a view). */
  access?: readonly string[],
): object | string | undefined {
  if (view === undefined) return given;
  const current = currentViewFilter(store, view) as object | string;
  const scope = access === undefined ? undefined : accessFilter(store, access);
  const filter =
    scope === undefined ? given : given === undefined ? scope : andFilters(store, scope, given);
  if (filter === undefined) return current;
  return andFilters(store, current, filter);
}

/** Two filters of one dialect ANDed (a view's own `$and` / `must` list is extended, not nested). */
function andFilters(store: FilterDialect, a: object | string, b: object | string): object | string {
  switch (store) {
    case 'chroma': {
      const c = a as { $and?: object[] };
      return { $and: [...(c.$and ?? [a]), b] };
    }
    case 'qdrant': {
      const q = a as { must?: object[] };
      return { must: [...(q.must ?? [a]), b] };
    }
    case 'pinecone':
      return { $and: [a, b] };
    case 'pgvector':
      return { ...(b as object), ...(a as object) };
    case 'lancedb':
      return `(${String(a)}) AND (${String(b)})`;
    case 'memory': {
      const x = a as MemoryFilter;
      const y = b as MemoryFilter;
      return (doc: DocumentInterface) => x(doc) && y(doc);
    }
    default:
      return a;
  }
}
