import {
  chunkId,
  FIELDS,
  type FlatValue,
  OPEN_EPOCH,
  type StoredChunk,
  storedAccess,
} from '@ragfresh/core';

export const DIMS = 8;

/** A deterministic, non-zero vector for (seed, dims): distinct seeds give distinct directions. */
export function vectorFor(seed: number, dims = DIMS): number[] {
  const v: number[] = [];
  let x = (seed * 2654435761) % 4294967296;
  for (let i = 0; i < dims; i++) {
    x = (x * 1664525 + 1013904223) % 4294967296;
    v.push(Math.round(((x / 4294967296) * 2 - 1) * 1000) / 1000 || 0.001);
  }
  return v;
}

export interface ChunkOptions {
  readonly from?: number;
  readonly to?: number;
  readonly current?: boolean;
  readonly source?: string;
  readonly dims?: number;
  readonly text?: string;
  readonly seed?: number;
  readonly extra?: Readonly<Record<string, FlatValue>>;
}

export function makeChunk(
  doc: string,
  version: string,
  ordinal: number,
  o: ChunkOptions = {},
): StoredChunk {
  const id = chunkId(doc, version, ordinal);
  return {
    id,
    text: o.text ?? `text of ${id}`,
    embedding: vectorFor(o.seed ?? ordinal + 1, o.dims),
    metadata: {
      [FIELDS.chunkId]: id,
      [FIELDS.documentId]: doc,
      [FIELDS.versionId]: version,
      [FIELDS.sourceId]: o.source ?? doc.split(':')[0] ?? 'src',
      [FIELDS.ordinal]: ordinal,
      [FIELDS.from]: o.from ?? 1,
      [FIELDS.to]: o.to ?? OPEN_EPOCH,
      [FIELDS.current]: o.current ?? false,
      [FIELDS.source]: doc,
      [FIELDS.url]: `https://example.com/${encodeURIComponent(doc)}`,
      [FIELDS.title]: `Title ${doc}`,
      [FIELDS.access]: storedAccess([]),
      ...o.extra,
    },
  };
}

export function makeVersion(
  doc: string,
  version: string,
  count: number,
  o: ChunkOptions = {},
): StoredChunk[] {
  return Array.from({ length: count }, (_, i) => makeChunk(doc, version, i, o));
}

/** Unique namespace per test, so cases never share a table. */
let counter = 0;
export function namespace(label: string): string {
  counter += 1;
  return `${label}_${process.pid}_${counter}_${Date.now().toString(36)}`;
}
