// Points: upsert, retrieve, set payload, delete, scroll, count and nearest-vector query.
import type { RoutedRequest } from '../routes.js';
import type { EmulatorRequest } from '../server.js';
import { checkQuery, type QdrantServer, READ_QUERY, WRITE_QUERY } from './context.js';
import { checkStrict, compareIds, matchFilter, validateFilter } from './filter.js';
import {
  normalise,
  score,
  selectPayload,
  setAtPath,
  toF32,
  validateWithPayload,
  validateWithVector,
  vectorOf,
} from './records.js';
import {
  type Collection,
  fields,
  format,
  idKey,
  ignore,
  isObject,
  type Json,
  type JsonObject,
  notFound,
  type Point,
  parsePointId,
  validation,
  wrongInput,
} from './wire.js';

function upsert(s: QdrantServer, c: Collection, req: EmulatorRequest): unknown {
  if (isObject(req.body) && 'batch' in req.body) {
    throw wrongInput('the ragfresh emulator implements the PointsList form of upsert only');
  }
  const b = fields(req.body, ['points', 'shard_key', 'update_filter', 'update_mode'], 'PointsList');
  if (!Array.isArray(b.points)) throw format('missing field `points`');
  if (b.shard_key !== undefined && b.shard_key !== null)
    throw wrongInput('Shard key specified, but collection is not sharded');
  validateFilter(b.update_filter);
  checkStrict(c, b.update_filter, 'update');
  // Servers before 1.17 do not know update_mode: serde ignores it and the upsert overwrites.
  if (!s.knowsUpdateMode && 'update_mode' in b) ignore('PointsList.update_mode');
  const mode = (s.knowsUpdateMode ? b.update_mode : undefined) ?? 'upsert';
  if (!['upsert', 'insert_only', 'update_only'].includes(mode as string)) {
    throw format(
      `unknown variant \`${String(mode)}\`, expected one of \`upsert\`, \`insert_only\`, \`update_only\``,
    );
  }
  const points: Point[] = b.points.map((raw) => {
    const p = fields(raw, ['id', 'vector', 'payload'], 'PointStruct');
    if (!('id' in p)) throw format('missing field `id`');
    if (!('vector' in p)) throw format('missing field `vector`');
    const id = parsePointId(p.id);
    const vector = vectorOf(p.vector, c.size);
    if (p.payload !== undefined && p.payload !== null && !isObject(p.payload))
      throw format('invalid type for `payload`, expected a map');
    return {
      id,
      vector: c.distance === 'Cosine' ? normalise(vector) : toF32(vector),
      payload: structuredClone((p.payload ?? {}) as JsonObject),
    };
  });
  return s.write(c, req, () => {
    for (const p of points) {
      const key = idKey(p.id);
      const existing = c.points.get(key);
      if (existing) {
        if (mode === 'insert_only') continue;
        if (b.update_filter && !matchFilter(existing, b.update_filter)) continue;
      } else if (mode === 'update_only') {
        continue;
      }
      // Each replica holds its own copy (payload updates mutate points in place).
      c.points.set(key, c.replicas.count > 1 ? structuredClone(p) : p);
    }
  });
}

function selectPoints(c: Collection, b: JsonObject, what: string): () => Point[] {
  const hasPoints = b.points !== undefined && b.points !== null;
  const hasFilter = b.filter !== undefined && b.filter !== null;
  if (hasPoints === hasFilter)
    throw format(`data did not match any variant of untagged enum ${what}`);
  if (hasPoints) {
    if (!Array.isArray(b.points)) throw format('invalid type for `points`, expected a sequence');
    const ids = b.points.map(parsePointId);
    return () =>
      ids.map((id) => c.points.get(idKey(id))).filter((p): p is Point => p !== undefined);
  }
  validateFilter(b.filter);
  checkStrict(c, b.filter, 'update');
  return () => [...c.points.values()].filter((p) => matchFilter(p, b.filter));
}

function setPayload(s: QdrantServer, c: Collection, req: EmulatorRequest): unknown {
  const b = fields(req.body, ['payload', 'points', 'filter', 'shard_key', 'key'], 'SetPayload');
  if (!isObject(b.payload)) throw format('missing field `payload`');
  if (b.key !== undefined && b.key !== null && typeof b.key !== 'string')
    throw format('invalid type for `key`, expected a string');
  const hasPoints = b.points !== undefined && b.points !== null;
  const hasFilter = b.filter !== undefined && b.filter !== null;
  if (!hasPoints && !hasFilter)
    throw validation('Either list of point ids or filter must be provided');
  if (hasPoints && hasFilter)
    throw validation('Only one of list of point ids or filter must be provided');
  const targets = selectPoints(c, b, 'SetPayload');
  if (hasPoints) {
    for (const id of (b.points as Json[]).map(parsePointId)) {
      if (!c.points.has(idKey(id))) throw notFound(`No point with id ${id} found`);
    }
  }
  const payload = b.payload;
  const key = b.key as string | null | undefined;
  return s.write(c, req, () => {
    for (const p of targets()) setAtPath(p.payload, key, payload);
  });
}

function record(
  p: Point,
  withPayload: Json | undefined,
  withVector: Json | undefined,
  dfltPayload: boolean,
) {
  const out: JsonObject = { id: p.id };
  const payload = selectPayload(p, withPayload, dfltPayload);
  if (payload !== undefined) out.payload = payload;
  if (withVector === true) out.vector = [...p.vector];
  return out;
}

function scroll(c: Collection, raw: unknown) {
  const b = fields(
    raw,
    ['shard_key', 'offset', 'limit', 'filter', 'with_payload', 'with_vector', 'order_by'],
    'ScrollRequest',
  );
  validateFilter(b.filter);
  checkStrict(c, b.filter, 'retrieve');
  validateWithPayload(b.with_payload);
  validateWithVector(b.with_vector);
  if (b.order_by !== undefined && b.order_by !== null)
    throw wrongInput('order_by is not supported by the ragfresh emulator');
  const limit = b.limit ?? 10;
  if (!Number.isSafeInteger(limit) || (limit as number) < 1)
    throw validation('limit: value 0 invalid, must be 1 or larger');
  const offset = b.offset === undefined || b.offset === null ? undefined : parsePointId(b.offset);
  const matching = [...c.points.values()]
    .filter((p) => matchFilter(p, b.filter))
    .sort((x, y) => compareIds(x.id, y.id))
    .filter((p) => offset === undefined || compareIds(p.id, offset) >= 0);
  const page = matching.slice(0, limit as number);
  const next = matching[limit as number];
  return {
    points: page.map((p) => record(p, b.with_payload, b.with_vector, true)),
    next_page_offset: next === undefined ? null : next.id,
  };
}

function query(c: Collection, raw: unknown) {
  const b = fields(
    raw,
    [
      'shard_key',
      'prefetch',
      'query',
      'using',
      'filter',
      'params',
      'score_threshold',
      'limit',
      'offset',
      'with_vector',
      'with_payload',
      'lookup_from',
    ],
    'QueryRequest',
  );
  if (b.prefetch !== undefined && b.prefetch !== null)
    throw wrongInput('prefetch is not supported by the ragfresh emulator');
  if (b.using !== undefined && b.using !== null)
    throw wrongInput(`Vector with name ${String(b.using)} is not configured in this collection`);
  validateFilter(b.filter);
  checkStrict(c, b.filter, 'retrieve');
  validateWithPayload(b.with_payload);
  validateWithVector(b.with_vector);
  const limit = b.limit ?? 10;
  const offset = b.offset ?? 0;
  if (!Number.isSafeInteger(limit) || (limit as number) < 1)
    throw validation('limit: value 0 invalid, must be 1 or larger');
  if (!Number.isSafeInteger(offset) || (offset as number) < 0)
    throw format('invalid value for `offset`');
  let target: number[] | undefined;
  if (Array.isArray(b.query)) target = vectorOf(b.query, c.size, 'query');
  else if (isObject(b.query) && 'nearest' in b.query) {
    const q = fields(b.query, ['nearest', 'mmr'], 'NearestQuery');
    if (q.mmr !== undefined && q.mmr !== null)
      throw wrongInput('mmr is not supported by the ragfresh emulator');
    target = vectorOf(q.nearest, c.size, 'nearest');
  } else if (b.query !== undefined && b.query !== null) {
    throw wrongInput('only nearest-vector queries are supported by the ragfresh emulator');
  }
  const q = target && c.distance === 'Cosine' ? normalise(target) : target;
  const candidates = [...c.points.values()].filter((p) => matchFilter(p, b.filter));
  const higherIsBetter = c.distance === 'Cosine' || c.distance === 'Dot';
  const scored = candidates.map((p) => ({ p, s: q ? score(c.distance, q, p.vector) : 0 }));
  if (q)
    scored.sort((x, y) => (higherIsBetter ? y.s - x.s : x.s - y.s) || compareIds(x.p.id, y.p.id));
  else scored.sort((x, y) => compareIds(x.p.id, y.p.id));
  const threshold = b.score_threshold;
  const kept = scored.filter(
    (x) => typeof threshold !== 'number' || (higherIsBetter ? x.s >= threshold : x.s <= threshold),
  );
  const page = kept.slice(offset as number, (offset as number) + (limit as number));
  return {
    points: page.map(({ p, s }) => ({
      ...record(p, b.with_payload, b.with_vector, false),
      version: 0,
      score: Math.fround(s),
    })),
  };
}

const points = (req: RoutedRequest, s: QdrantServer) => s.state.resolve(req.params.name!);

/** `PUT /collections/{name}/points` */
export function upsertPoints(req: RoutedRequest, s: QdrantServer): unknown {
  checkQuery(req, WRITE_QUERY);
  return s.ok(upsert(s, points(req, s), req));
}

/** `POST /collections/{name}/points` (retrieve by ids; `consistency` resolved across replicas) */
export function retrievePoints(req: RoutedRequest, s: QdrantServer): unknown {
  const c = points(req, s);
  checkQuery(req, READ_QUERY);
  const b = fields(req.body, ['shard_key', 'ids', 'with_payload', 'with_vector'], 'PointRequest');
  if (!Array.isArray(b.ids)) throw format('missing field `ids`');
  validateWithPayload(b.with_payload);
  validateWithVector(b.with_vector);
  const ids = b.ids.map(parsePointId);
  const plan = c.replicas.plan(s.state.node, req.query.get('consistency'));
  const out = c.replicas.resolve(
    plan,
    () =>
      ids
        .map((id) => c.points.get(idKey(id)))
        .filter((p): p is Point => p !== undefined)
        .map((p) => record(p, b.with_payload, b.with_vector, true)),
    (r) => JSON.stringify(r.id),
  );
  return s.ok(out);
}

/** `POST /collections/{name}/points/payload` */
export function setPointsPayload(req: RoutedRequest, s: QdrantServer): unknown {
  const c = points(req, s);
  checkQuery(req, WRITE_QUERY);
  return s.ok(setPayload(s, c, req));
}

/** `POST /collections/{name}/points/delete` */
export function deletePoints(req: RoutedRequest, s: QdrantServer): unknown {
  const c = points(req, s);
  checkQuery(req, WRITE_QUERY);
  const b = fields(req.body, ['points', 'filter', 'shard_key'], 'PointsSelector');
  const targets = selectPoints(c, b, 'PointsSelector');
  return s.ok(
    s.write(c, req, () => {
      for (const p of targets()) c.points.delete(idKey(p.id));
    }),
  );
}

/** `POST /collections/{name}/points/scroll` */
export function scrollPoints(req: RoutedRequest, s: QdrantServer): unknown {
  const c = points(req, s);
  checkQuery(req, READ_QUERY);
  s.localRead(c, req);
  return s.ok(scroll(c, req.body ?? {}));
}

/** `POST /collections/{name}/points/count` */
export function countPoints(req: RoutedRequest, s: QdrantServer): unknown {
  const c = points(req, s);
  checkQuery(req, READ_QUERY);
  s.localRead(c, req);
  const b = fields(req.body ?? {}, ['shard_key', 'filter', 'exact'], 'CountRequest');
  validateFilter(b.filter);
  checkStrict(c, b.filter, 'retrieve');
  if (b.exact !== undefined && typeof b.exact !== 'boolean')
    throw format('invalid type for `exact`, expected a boolean');
  return s.ok({ count: [...c.points.values()].filter((p) => matchFilter(p, b.filter)).length });
}

/** `POST /collections/{name}/points/query` */
export function queryPoints(req: RoutedRequest, s: QdrantServer): unknown {
  const c = points(req, s);
  checkQuery(req, READ_QUERY);
  s.localRead(c, req);
  return s.ok(query(c, req.body));
}
