// Data-plane writes and point reads: upsert, update (by id or by filter), delete, fetch, list.
import type { RoutedRequest } from '../routes.js';
import { matchPineconeFilter, validatePineconeFilter } from './filter.js';
import type { IndexPlane } from './plane.js';
import {
  checkMetadata,
  checkMetadataSize,
  fields,
  invalid,
  type Json,
  type JsonObject,
  PINECONE_LIMITS,
  rpc,
  type Vector,
} from './wire.js';

/** `POST /vectors/upsert` */
export function upsertVectors(req: RoutedRequest, p: IndexPlane): unknown {
  const b = fields(req.body, ['vectors', 'namespace'], 'UpsertRequest');
  if (!Array.isArray(b.vectors) || b.vectors.length === 0)
    throw invalid('Invalid request: no vectors provided');
  if (b.vectors.length > PINECONE_LIMITS.upsertVectors) {
    throw invalid(
      `Invalid request: upsert of ${b.vectors.length} vectors exceeds the limit of ${PINECONE_LIMITS.upsertVectors} vectors per request`,
    );
  }
  // No duplicate-id refusal: the service takes the batch (the last record of an id wins).
  const vectors: Vector[] = b.vectors.map((raw) => {
    const v = fields(raw, ['id', 'values', 'sparseValues', 'metadata'], 'Vector');
    const id = p.checkId(v.id);
    if (v.sparseValues !== undefined)
      throw invalid('Sparse values are not supported by this dense index in the ragfresh emulator');
    const values = p.checkValues(v.values, id);
    if (v.metadata === undefined) return { id, values };
    const metadata = checkMetadata(v.metadata, `id '${id}'`);
    checkMetadataSize(metadata, id);
    return { id, values, metadata: structuredClone(metadata) };
  });
  const lsn = p.write(b.namespace, (m) => {
    for (const v of vectors) m.set(v.id, v);
  });
  return p.written({ upsertedCount: vectors.length }, lsn);
}

/** `POST /vectors/update` */
export function updateVectors(req: RoutedRequest, p: IndexPlane): unknown {
  const b = fields(
    req.body,
    ['id', 'values', 'sparseValues', 'setMetadata', 'namespace', 'filter', 'dryRun'],
    'UpdateRequest',
  );
  const hasId = b.id !== undefined;
  const hasFilter = b.filter !== undefined;
  if (hasId === hasFilter)
    throw invalid('Invalid request: exactly one of id or filter must be provided');
  if (b.sparseValues !== undefined)
    throw invalid('Sparse values are not supported by this dense index in the ragfresh emulator');
  const values = b.values === undefined ? undefined : p.checkValues(b.values, String(b.id));
  const set = b.setMetadata === undefined ? undefined : checkMetadata(b.setMetadata, 'setMetadata');
  if (hasId) {
    const id = p.checkId(b.id);
    const existing = p.view(b.namespace, 'fetch').store.get(id);
    if (existing && set) checkMetadataSize({ ...existing.metadata, ...set }, id);
    const lsn = p.write(b.namespace, (m) => {
      const v = m.get(id);
      if (!v) return;
      m.set(id, {
        ...v,
        ...(values ? { values } : {}),
        ...(set ? { metadata: { ...v.metadata, ...structuredClone(set) } } : {}),
      });
    });
    return p.written({}, lsn);
  }
  if (p.settings.updateByFilter !== true) {
    const status = p.settings.updateByFilter === false ? 400 : p.settings.updateByFilter;
    if (status === 501) throw rpc(501, 12, 'Not implemented: update by metadata filter');
    if (status === 404) throw rpc(404, 5, 'Not Found: POST /vectors/update with filter');
    throw invalid('Update by metadata filter is not supported for this index');
  }
  if (values !== undefined) throw invalid('Invalid request: values cannot be updated by filter');
  validatePineconeFilter(b.filter);
  const filter = b.filter as JsonObject;
  // Evaluated against the namespace as its (lagging) metadata index sees it now: records
  // written but not yet indexed are not matched, and `matchedRecords` says so.
  const matched = [...p.view(b.namespace, 'query').store.values()].filter((v) =>
    matchPineconeFilter(v.metadata, filter),
  );
  if (set) for (const v of matched) checkMetadataSize({ ...v.metadata, ...set }, v.id);
  const ids = matched.map((v) => v.id);
  if (b.dryRun !== true && set) {
    const lsn = p.write(b.namespace, (m) => {
      for (const id of ids) {
        const v = m.get(id);
        if (v) m.set(id, { ...v, metadata: { ...v.metadata, ...structuredClone(set) } });
      }
    });
    return p.written({ matchedRecords: matched.length }, lsn);
  }
  return { matchedRecords: matched.length };
}

/** `POST /vectors/delete` */
export function deleteVectors(req: RoutedRequest, p: IndexPlane): unknown {
  const b = fields(req.body, ['ids', 'deleteAll', 'namespace', 'filter'], 'DeleteRequest');
  const modes = [b.ids !== undefined, b.deleteAll === true, b.filter !== undefined].filter(
    Boolean,
  ).length;
  if (modes !== 1)
    throw invalid('Invalid request: exactly one of ids, deleteAll or filter must be provided');
  let lsn: number;
  if (b.ids !== undefined) {
    if (!Array.isArray(b.ids) || b.ids.length === 0)
      throw invalid('Invalid request: ids must be a non-empty array');
    if (b.ids.length > PINECONE_LIMITS.deleteIds)
      throw invalid(
        `Invalid request: delete of ${b.ids.length} ids exceeds the limit of ${PINECONE_LIMITS.deleteIds}`,
      );
    const ids = b.ids.map(p.checkId);
    lsn = p.write(b.namespace, (m) => {
      for (const id of ids) m.delete(id);
    });
  } else if (b.deleteAll === true) {
    lsn = p.write(b.namespace, (m) => m.clear());
  } else {
    validatePineconeFilter(b.filter);
    const filter = b.filter as JsonObject;
    // Applied in log order to whatever the record holds then.
    lsn = p.write(b.namespace, (m) => {
      for (const v of [...m.values()]) if (matchPineconeFilter(v.metadata, filter)) m.delete(v.id);
    });
  }
  return p.written({}, lsn);
}

/** `GET /vectors/fetch` */
export function fetchVectors(req: RoutedRequest, p: IndexPlane): unknown {
  for (const k of new Set(req.query.keys()))
    if (!['ids', 'namespace'].includes(k)) throw invalid(`unknown query parameter "${k}"`);
  const ids = req.query.getAll('ids');
  if (ids.length === 0) throw invalid('Invalid request: ids must be provided');
  if (ids.length > PINECONE_LIMITS.fetchIds)
    throw invalid(
      `Invalid request: fetch of ${ids.length} ids exceeds the limit of ${PINECONE_LIMITS.fetchIds}`,
    );
  const target = p.view(req.query.get('namespace'), 'fetch').store;
  const vectors: Record<string, Json> = {};
  for (const id of ids) {
    const v = target.get(id);
    if (v)
      vectors[id] = {
        id: v.id,
        values: [...v.values],
        ...(v.metadata ? { metadata: structuredClone(v.metadata) } : {}),
      };
  }
  return {
    vectors,
    namespace: p.nsName(req.query.get('namespace')),
    usage: { readUnits: 1 },
  };
}

/** `GET /vectors/list` */
export function listVectors(req: RoutedRequest, p: IndexPlane): unknown {
  for (const k of req.query.keys()) {
    if (!['prefix', 'limit', 'paginationToken', 'namespace'].includes(k))
      throw invalid(`unknown query parameter "${k}"`);
  }
  const limitRaw = req.query.get('limit');
  const limit = limitRaw === null ? PINECONE_LIMITS.listLimit : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1 || limit > PINECONE_LIMITS.listLimit) {
    throw invalid(`Invalid request: limit must be between 1 and ${PINECONE_LIMITS.listLimit}`);
  }
  const prefix = req.query.get('prefix') ?? '';
  const token = req.query.get('paginationToken');
  let after: string | undefined;
  if (token !== null) {
    try {
      const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
        after?: unknown;
      };
      if (typeof decoded.after !== 'string') throw new Error('bad token');
      after = decoded.after;
    } catch {
      throw invalid('Invalid request: paginationToken is malformed');
    }
  }
  const ids = [...p.view(req.query.get('namespace'), 'list').store.keys()]
    .filter((id) => id.startsWith(prefix) && (after === undefined || id > after))
    .sort();
  const page = ids.slice(0, limit);
  const more = ids.length > limit;
  return {
    vectors: page.map((id) => ({ id })),
    ...(more
      ? {
          pagination: {
            next: Buffer.from(JSON.stringify({ after: page.at(-1) })).toString('base64url'),
          },
        }
      : {}),
    namespace: p.nsName(req.query.get('namespace')),
    usage: { readUnits: 1 },
  };
}
