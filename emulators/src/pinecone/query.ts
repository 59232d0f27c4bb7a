// Data-plane search and stats: query (exact scoring on the lagging query path) and
// describe_index_stats.
import type { RoutedRequest } from '../routes.js';
import { Reply } from '../server.js';
import { matchPineconeFilter, validatePineconeFilter } from './filter.js';
import type { IndexPlane } from './plane.js';
import {
  fields,
  type Index,
  invalid,
  type Json,
  type JsonObject,
  PINECONE_LIMITS,
} from './wire.js';

function similarity(metric: Index['metric'], a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let l2 = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
    l2 += (x - y) ** 2;
  }
  if (metric === 'dotproduct') return dot;
  if (metric === 'euclidean') return l2;
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** `POST /query` */
export function queryVectors(req: RoutedRequest, p: IndexPlane): unknown {
  const b = fields(
    req.body,
    [
      'namespace',
      'topK',
      'filter',
      'includeValues',
      'includeMetadata',
      'vector',
      'sparseVector',
      'id',
      'scanFactor',
      'maxCandidates',
    ],
    'QueryRequest',
  );
  if (
    typeof b.topK !== 'number' ||
    !Number.isInteger(b.topK) ||
    b.topK < 1 ||
    b.topK > PINECONE_LIMITS.topK
  ) {
    throw invalid(`Invalid request: topK must be between 1 and ${PINECONE_LIMITS.topK}`);
  }
  if ((b.vector === undefined) === (b.id === undefined))
    throw invalid('Invalid request: exactly one of vector or id must be provided');
  if (b.sparseVector !== undefined)
    throw invalid('Sparse queries are not supported by this dense index in the ragfresh emulator');
  if (b.filter !== undefined) validatePineconeFilter(b.filter);
  const indexed = p.view(b.namespace, 'query');
  const target = indexed.store;
  const freshness: Record<string, string> = p.settings.lsnHeaders
    ? { 'x-pinecone-max-indexed-lsn': String(indexed.applied) }
    : {};
  let q: number[];
  if (b.id !== undefined) {
    const v = target.get(p.checkId(b.id));
    if (!v)
      return new Reply(
        200,
        { matches: [], namespace: p.nsName(b.namespace), usage: { readUnits: 1 } },
        freshness,
      );
    q = v.values;
  } else {
    q = p.checkValues(b.vector, 'query');
  }
  const filter = b.filter as JsonObject | undefined;
  const better =
    p.ix.metric === 'euclidean' ? (a: number, c: number) => a - c : (a: number, c: number) => c - a;
  const scored = [...target.values()]
    .filter((v) => filter === undefined || matchPineconeFilter(v.metadata, filter))
    .map((v) => ({ v, s: similarity(p.ix.metric, q, v.values) }))
    .sort((x, y) => better(x.s, y.s) || (x.v.id < y.v.id ? -1 : 1))
    .slice(0, b.topK);
  const result = {
    matches: scored.map(({ v, s }) => ({
      id: v.id,
      score: Math.fround(s),
      values: b.includeValues === true ? [...v.values] : [],
      ...(b.includeMetadata === true && v.metadata
        ? { metadata: structuredClone(v.metadata) }
        : {}),
    })),
    namespace: p.nsName(b.namespace),
    usage: { readUnits: 5 },
  };
  const bytes = Buffer.byteLength(JSON.stringify(result), 'utf8');
  if (bytes > PINECONE_LIMITS.queryResultBytes) {
    throw invalid(
      `Query result size ${bytes} bytes exceeds the 4MB limit; lower topK or leave out values or metadata`,
    );
  }
  return new Reply(200, result, freshness);
}

/** `POST /describe_index_stats` */
export function describeIndexStats(req: RoutedRequest, p: IndexPlane): unknown {
  const b = fields(req.body ?? {}, ['filter'], 'DescribeIndexStatsRequest');
  if (b.filter !== undefined)
    throw invalid(
      'Invalid request: describe_index_stats does not support filtering on serverless indexes',
    );
  const namespaces: Record<string, Json> = {};
  let total = 0;
  for (const name of p.ix.namespaces.keys()) {
    const m = p.view(name, 'list').store;
    if (m.size === 0) continue;
    namespaces[name] = { vectorCount: m.size };
    total += m.size;
  }
  return {
    namespaces,
    dimension: p.ix.dimension,
    indexFullness: 0,
    totalVectorCount: total,
    metric: p.ix.metric,
    vectorType: 'dense',
  };
}
