import type { DocumentInterface } from '@langchain/core/documents';
import { accessAsKeys, accessFromKeys, type FlatMetadata, type FlatValue } from '@ragfresh/core';

/** One metadata condition the connector needs a store to filter on. */
export type Condition =
  | { readonly field: string; readonly op: 'eq'; readonly value: FlatValue }
  | { readonly field: string; readonly op: 'lte' | 'gt'; readonly value: number }
  | { readonly field: string; readonly op: 'in'; readonly value: readonly string[] }
  /** The field is a list of strings holding any of `value` (the access scope, `rf_access`). */
  | { readonly field: string; readonly op: 'any'; readonly value: readonly string[] };

/**
 * Turns the connector's conditions (always joined by AND) into the `filter` argument of one
 * LangChain vector store class. `undefined` means "no filter". Every store speaks its own filter
 * language, so this is the one piece a user writes for a store not listed in FILTER_DIALECTS.
 */
export interface FilterDialect {
  readonly name: string;
  build(conditions: readonly Condition[]): unknown;
  /**
   * For a store whose metadata holds no lists: how a chunk's metadata is written (a list field
   * spelled as boolean keys, `accessAsKeys`) and read back (`accessFromKeys`). Default: as is.
   */
  encodeMetadata?(metadata: FlatMetadata): Record<string, unknown>;
  decodeMetadata?(stored: Record<string, unknown>): Record<string, unknown>;
}

/** LangChain's `MemoryVectorStore` (and any store taking a `(doc) => boolean` predicate). */
export const memoryFilters: FilterDialect = {
  name: 'memory',
  build(conditions) {
    if (conditions.length === 0) return undefined;
    return (doc: DocumentInterface) =>
      conditions.every((c) => {
        const v = doc.metadata[c.field] as unknown;
        switch (c.op) {
          case 'eq':
            return v === c.value;
          case 'lte':
            return typeof v === 'number' && v <= c.value;
          case 'gt':
            return typeof v === 'number' && v > c.value;
          case 'in':
            return typeof v === 'string' && c.value.includes(v);
          case 'any':
            return Array.isArray(v) && v.some((e) => c.value.includes(e as string));
          default:
            return false;
        }
      });
  },
};

/**
 * LangChain's `Chroma` class: a Chroma `where` (`$eq`, `$lte`, `$gt`, `$in`, `$and`). Chroma 1.0
 * servers hold no list metadata, so `rf_access` is written as boolean keys (`rf_access.<token>`)
 * and its `any` condition is an `$or` of those keys.
 */
export const chromaFilters: FilterDialect = {
  name: 'chroma',
  encodeMetadata: (metadata) => accessAsKeys(metadata),
  decodeMetadata: (stored) => accessFromKeys(stored),
  build(conditions) {
    const clauses = conditions.map((c): Record<string, unknown> => {
      if (c.op === 'any') {
        const each = c.value.map((v) => ({ [`${c.field}.${v}`]: { $eq: true } }));
        return each.length === 1 ? each[0]! : { $or: each };
      }
      const op = c.op === 'eq' ? '$eq' : c.op === 'in' ? '$in' : c.op === 'lte' ? '$lte' : '$gt';
      return { [c.field]: { [op]: c.op === 'in' ? [...c.value] : c.value } };
    });
    if (clauses.length === 0) return undefined;
    return clauses.length === 1 ? clauses[0] : { $and: clauses };
  },
};

export const FILTER_DIALECTS = Object.freeze({ memory: memoryFilters, chroma: chromaFilters });
export type FilterDialectName = keyof typeof FILTER_DIALECTS;
