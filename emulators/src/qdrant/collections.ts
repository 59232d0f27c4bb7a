// Collections and aliases: server info, list / create / describe / delete collections, aliases,
// payload indexes.
import { ReplicaSet } from '../qdrant-replicas.js';
import type { RoutedRequest } from '../routes.js';
import { HttpError, LaggedLog } from '../server.js';
import { checkQuery, type QdrantServer, WRITE_QUERY } from './context.js';
import {
  body,
  type Collection,
  DISTANCES,
  type Distance,
  fields,
  format,
  INDEX_TYPES,
  isObject,
  type Json,
  notFound,
  type Point,
  type StrictMode,
  validation,
  wrongInput,
} from './wire.js';

export function collectionInfo(c: Collection) {
  const payloadSchema: Record<string, Json> = {};
  for (const [field, schema] of c.indexes) {
    const type = isObject(schema) ? schema.type : schema;
    payloadSchema[field] = {
      data_type: type as Json,
      params: isObject(schema) ? schema : null,
      points: c.points.size,
    };
  }
  return {
    status: 'green',
    optimizer_status: 'ok',
    indexed_vectors_count: 0,
    points_count: c.points.size,
    segments_count: 1,
    config: {
      params: {
        vectors: { size: c.size, distance: c.distance },
        shard_number: 1,
        replication_factor: 1,
        write_consistency_factor: 1,
        on_disk_payload: true,
      },
      hnsw_config: {
        m: 16,
        ef_construct: 100,
        full_scan_threshold: 10000,
        max_indexing_threads: 0,
        on_disk: false,
      },
      optimizer_config: {
        deleted_threshold: 0.2,
        vacuum_min_vector_number: 1000,
        default_segment_number: 0,
        max_segment_size: null,
        memmap_threshold: null,
        indexing_threshold: 20000,
        flush_interval_sec: 5,
        max_optimization_threads: null,
      },
      wal_config: { wal_capacity_mb: 32, wal_segments_ahead: 0 },
      quantization_config: null,
      strict_mode_config: (c.strict ?? { enabled: false }) as Json,
    },
    payload_schema: payloadSchema,
  };
}

export function createCollection(s: QdrantServer, name: string, raw: unknown): boolean {
  const b = fields(
    raw ?? {},
    [
      'vectors',
      'shard_number',
      'sharding_method',
      'replication_factor',
      'write_consistency_factor',
      'on_disk_payload',
      'hnsw_config',
      'wal_config',
      'optimizers_config',
      'quantization_config',
      'sparse_vectors',
      'strict_mode_config',
      'metadata',
    ],
    'CreateCollection',
  );
  if (!/^[^/\\\0]{1,255}$/.test(name))
    throw validation(`collection_name: invalid collection name ${name}`);
  if (s.state.collections.has(name))
    throw new HttpError(409, body(`Wrong input: Collection \`${name}\` already exists!`));
  if (s.state.aliases.has(name))
    throw wrongInput(`Alias with the same name \`${name}\` already exists!`);
  const v = fields(
    b.vectors,
    [
      'size',
      'distance',
      'hnsw_config',
      'quantization_config',
      'on_disk',
      'datatype',
      'multivector_config',
    ],
    'VectorParams',
  );
  if (!Number.isSafeInteger(v.size) || (v.size as number) < 1)
    throw validation('vectors.size: value 0 invalid, must be 1 or larger');
  if (!DISTANCES.includes(v.distance as Distance)) {
    throw format(
      `unknown variant \`${String(v.distance)}\`, expected one of \`Cosine\`, \`Euclid\`, \`Dot\`, \`Manhattan\``,
    );
  }
  const replicas = new ReplicaSet<Point>(s.options.replicas ?? 1, s.options.replicaDelayMs ?? 20);
  s.state.collections.set(name, {
    name,
    size: v.size as number,
    distance: v.distance as Distance,
    replicas,
    get points() {
      return replicas.points;
    },
    indexes: new Map(),
    log: new LaggedLog(),
    strict: (isObject(b.strict_mode_config) ? b.strict_mode_config : s.options.strictMode) as
      | StrictMode
      | undefined,
  });
  return true;
}

export function changeAliases(s: QdrantServer, raw: unknown): boolean {
  const b = fields(raw, ['actions'], 'ChangeAliasesOperation');
  if (!Array.isArray(b.actions)) throw format('missing field `actions`');
  // All actions apply atomically: validate and run on a copy, then swap it in.
  const next = new Map(s.state.aliases);
  for (const action of b.actions) {
    if (isObject(action) && 'create_alias' in action) {
      const a = fields(
        fields(action, ['create_alias'], 'CreateAliasOperation').create_alias,
        ['collection_name', 'alias_name'],
        'CreateAlias',
      );
      if (typeof a.collection_name !== 'string' || typeof a.alias_name !== 'string')
        throw format('missing field `alias_name`');
      if (!s.state.collections.has(a.collection_name))
        throw notFound(`Collection \`${a.collection_name}\` doesn't exist!`);
      if (s.state.collections.has(a.alias_name))
        throw wrongInput(`Collection \`${a.alias_name}\` already exists!`);
      if (next.has(a.alias_name)) throw wrongInput(`Alias \`${a.alias_name}\` already exists!`);
      next.set(a.alias_name, a.collection_name);
    } else if (isObject(action) && 'delete_alias' in action) {
      const a = fields(
        fields(action, ['delete_alias'], 'DeleteAliasOperation').delete_alias,
        ['alias_name'],
        'DeleteAlias',
      );
      if (typeof a.alias_name !== 'string' || !next.has(a.alias_name))
        throw notFound(`Alias \`${String(a.alias_name)}\` doesn't exist!`);
      next.delete(a.alias_name);
    } else if (isObject(action) && 'rename_alias' in action) {
      const a = fields(
        fields(action, ['rename_alias'], 'RenameAliasOperation').rename_alias,
        ['old_alias_name', 'new_alias_name'],
        'RenameAlias',
      );
      const target = next.get(a.old_alias_name as string);
      if (target === undefined)
        throw notFound(`Alias \`${String(a.old_alias_name)}\` doesn't exist!`);
      next.delete(a.old_alias_name as string);
      next.set(a.new_alias_name as string, target);
    } else {
      throw format('data did not match any variant of untagged enum AliasOperations');
    }
  }
  s.state.aliases.clear();
  for (const [a, c] of next) s.state.aliases.set(a, c);
  return true;
}

/** `GET /` */
export function serverInfo(_req: RoutedRequest, s: QdrantServer): unknown {
  return { title: 'qdrant - vector search engine (ragfresh emulator)', version: s.version };
}

/** `GET /aliases` */
export function listAliases(_req: RoutedRequest, s: QdrantServer): unknown {
  return s.ok({
    aliases: [...s.state.aliases].map(([a, c]) => ({ alias_name: a, collection_name: c })),
  });
}

/** `GET /collections` */
export function listCollections(_req: RoutedRequest, s: QdrantServer): unknown {
  return s.ok({ collections: [...s.state.collections.keys()].map((name) => ({ name })) });
}

/** `POST /collections/aliases` */
export function updateAliases(req: RoutedRequest, s: QdrantServer): unknown {
  checkQuery(req, ['timeout']);
  return s.ok(changeAliases(s, req.body));
}

/** `GET /collections/{name}` */
export function getCollection(req: RoutedRequest, s: QdrantServer): unknown {
  return s.ok(collectionInfo(s.state.resolve(req.params.name!)));
}

/** `PUT /collections/{name}` */
export function putCollection(req: RoutedRequest, s: QdrantServer): unknown {
  checkQuery(req, ['timeout']);
  return s.ok(createCollection(s, req.params.name!, req.body));
}

/** `DELETE /collections/{name}` */
export function deleteCollection(req: RoutedRequest, s: QdrantServer): unknown {
  checkQuery(req, ['timeout']);
  const name = req.params.name!;
  const existed = s.state.collections.delete(name);
  for (const [a, c] of [...s.state.aliases]) if (c === name) s.state.aliases.delete(a);
  return s.ok(existed);
}

/** `GET /collections/{name}/exists` */
export function collectionExists(req: RoutedRequest, s: QdrantServer): unknown {
  const name = req.params.name!;
  return s.ok({ exists: s.state.collections.has(s.state.aliases.get(name) ?? name) });
}

/** `GET /collections/{name}/aliases` */
export function collectionAliases(req: RoutedRequest, s: QdrantServer): unknown {
  const c = s.state.resolve(req.params.name!);
  return s.ok({
    aliases: [...s.state.aliases]
      .filter(([, t]) => t === c.name)
      .map(([a, t]) => ({ alias_name: a, collection_name: t })),
  });
}

/** `PUT /collections/{name}/index` */
export function createFieldIndex(req: RoutedRequest, s: QdrantServer): unknown {
  checkQuery(req, WRITE_QUERY);
  const c = s.state.resolve(req.params.name!);
  const b = fields(req.body, ['field_name', 'field_schema'], 'CreateFieldIndex');
  if (typeof b.field_name !== 'string' || b.field_name === '')
    throw format('missing field `field_name`');
  const schema = b.field_schema;
  const type = isObject(schema) ? schema.type : schema;
  if (typeof type !== 'string' || !INDEX_TYPES.includes(type)) {
    throw format('data did not match any variant of untagged enum PayloadFieldSchema');
  }
  return s.ok(s.write(c, req, () => c.indexes.set(b.field_name as string, schema as Json)));
}
