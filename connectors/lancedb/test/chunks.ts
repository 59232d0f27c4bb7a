import { chunkId, FIELDS, type FlatValue, OPEN_EPOCH, type StoredChunk } from '@ragfresh/core';

export const DIMS = 8;

/** Deterministic unit-ish vector for (seed, ordinal); distinct seeds point different ways. */
export function vector(seed: number, dims = DIMS): number[] {
  const v: number[] = [];
  for (let i = 0; i < dims; i++)
    v.push(Math.sin(seed * 12.9898 + i * 78.233) * 0.5 + (i === seed % dims ? 1 : 0));
  return v;
}

export interface ChunkSpec {
  readonly documentId: string;
  readonly versionId: string;
  readonly count: number;
  readonly from: number;
  readonly to?: number;
  readonly current?: boolean;
  readonly sourceId?: string;
  readonly text?: (ordinal: number) => string;
  readonly extra?: Record<string, FlatValue>;
  readonly dims?: number;
}

export function makeChunks(spec: ChunkSpec): StoredChunk[] {
  const out: StoredChunk[] = [];
  for (let ordinal = 0; ordinal < spec.count; ordinal++) {
    const id = chunkId(spec.documentId, spec.versionId, ordinal);
    out.push({
      id,
      text: spec.text?.(ordinal) ?? `${spec.documentId} ${spec.versionId} chunk ${ordinal}`,
      embedding: vector(ordinal + spec.versionId.length * 31 + spec.documentId.length, spec.dims),
      metadata: {
        [FIELDS.chunkId]: id,
        [FIELDS.documentId]: spec.documentId,
        [FIELDS.versionId]: spec.versionId,
        [FIELDS.sourceId]: spec.sourceId ?? spec.documentId.split(':')[0]!,
        [FIELDS.ordinal]: ordinal,
        [FIELDS.from]: spec.from,
        [FIELDS.to]: spec.to ?? OPEN_EPOCH,
        [FIELDS.current]: spec.current ?? false,
        [FIELDS.source]: spec.documentId,
        [FIELDS.url]: `https://example.org/${encodeURIComponent(spec.documentId)}`,
        [FIELDS.title]: `Title of ${spec.documentId}`,
        [FIELDS.retrievedAt]: '2026-11-30T00:00:00.000Z',
        [FIELDS.tokenCount]: 42,
        ...spec.extra,
      },
    });
  }
  return out;
}

let counter = 0;
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export async function expectCode(
  promise: Promise<unknown>,
  code: string,
): Promise<Error & { code: string }> {
  try {
    await promise;
  } catch (err) {
    const e = err as Error & { code: string };
    if (e.code !== code)
      throw new Error(`expected ${code}, got ${e.code ?? 'no code'}: ${e.message}`);
    return e;
  }
  throw new Error(`expected ${code}, but it resolved`);
}
