import { type Connector, FIELDS, type QueryHit } from '@ragfresh/core';

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

export type ViewKind = 'epoch' | 'flag';

/** What a reader of `kind` sees of one document: hits scoped by documentId. */
export async function readDocument(
  connector: Connector,
  documentId: string,
  probe: readonly number[],
  k: number,
  kind: ViewKind,
): Promise<QueryHit[]> {
  return kind === 'epoch'
    ? connector.searchCurrent(probe, k, { documentId })
    : connector.query(probe, k, { view: { kind: 'flag' }, documentId });
}

/** Chunk counts per versionId. */
export function byVersion(
  rows: ReadonlyArray<{ readonly metadata: Readonly<Record<string, unknown>> }>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) {
    const v = String(r.metadata[FIELDS.versionId]);
    out.set(v, (out.get(v) ?? 0) + 1);
  }
  return out;
}

export function describeVersions(
  m: ReadonlyMap<string, number>,
  names: ReadonlyMap<string, string> = new Map(),
): string {
  if (m.size === 0) return 'nothing';
  return [...m].map(([v, n]) => `${names.get(v) ?? v}×${n}`).join(', ');
}

/** Chunk ids as the store spells them: readable chunk ids are kept in `rf_chunk`. */
export function chunkIdsOf(
  rows: ReadonlyArray<{
    readonly id: string;
    readonly metadata: Readonly<Record<string, unknown>>;
  }>,
): string[] {
  return rows.map((r) => String(r.metadata[FIELDS.chunkId] ?? r.id));
}

/** Every chunk of a document that the epoch or flag view holds, read by listing. */
export async function listInView(
  connector: Connector,
  documentId: string,
  kind: ViewKind,
): Promise<string[]> {
  const epoch = await connector.readEpoch();
  const rows = await connector.listChunks(documentId);
  return chunkIdsOf(
    rows.filter((r) => {
      if (kind === 'flag') return r.metadata[FIELDS.current] === true;
      return Number(r.metadata[FIELDS.from]) <= epoch && epoch < Number(r.metadata[FIELDS.to]);
    }),
  );
}

export function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const s = new Set(a);
  return s.size === a.length && b.every((x) => s.has(x));
}

export function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Equal metadata values: scalars by identity, lists of strings (`rf_access`) entry by entry. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) return JSON.stringify(a) === JSON.stringify(b);
  return a === b;
}
