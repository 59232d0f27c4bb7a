// The control plane: list, create (2026-07 body; 2025-01 in Local mode), describe and delete
// indexes, each index with its own data-plane server.
import type { RoutedRequest } from '../routes.js';
import { Reply } from '../server.js';
import {
  control,
  type Index,
  type IndexSpec,
  isObject,
  type JsonObject,
  PINECONE_LIMITS,
} from './wire.js';

const INDEX_NAME = /^[a-z0-9]([a-z0-9-]{0,43}[a-z0-9])?$/;
/** Tag rules of the IndexModel `tags` field: at most 20; keys alphanumeric, '_', '-' (≤ 80). */
const TAG_KEY = /^[A-Za-z0-9_-]{1,80}$/;
/** Values: printable ASCII or spaces, ≤ 120 characters. */
const TAG_VALUE = /^[\x20-\x7e]{0,120}$/;

/** `tags` and `deletion_protection` of a create body (both API versions accept them). */
function tagsAndProtection(b: JsonObject): Pick<IndexSpec, 'tags' | 'deletionProtection'> {
  const tags: Record<string, string> = {};
  if (b.tags !== undefined && b.tags !== null) {
    if (!isObject(b.tags)) throw control(400, 'INVALID_ARGUMENT', 'tags must be an object');
    const entries = Object.entries(b.tags);
    if (entries.length > 20)
      throw control(400, 'INVALID_ARGUMENT', 'An index can have at most 20 tags');
    for (const [k, v] of entries) {
      if (!TAG_KEY.test(k) || typeof v !== 'string' || !TAG_VALUE.test(v))
        throw control(
          400,
          'INVALID_ARGUMENT',
          `Invalid tag ${JSON.stringify(k)}: keys must be 80 characters or less and alphanumeric, '_', or '-'; values 120 printable ASCII characters or less`,
        );
      tags[k] = v;
    }
  }
  const p = b.deletion_protection ?? 'disabled';
  if (p !== 'enabled' && p !== 'disabled')
    throw control(
      400,
      'INVALID_ARGUMENT',
      `deletion_protection must be 'enabled' or 'disabled', got ${JSON.stringify(p)}`,
    );
  return { tags, deletionProtection: p };
}

export class ControlPlane {
  readonly indexes = new Map<string, Index>();

  constructor(
    readonly local: boolean,
    /** Starts the data plane of a new index and registers it. */
    readonly addIndex: (spec: IndexSpec) => Promise<Index>,
  ) {}

  model(ix: Index): unknown {
    const ready = Date.now() >= ix.readyAt;
    const status = ready
      ? { ready: true, state: 'Ready' }
      : { ready: false, state: 'Initializing' };
    // Absent when none (the API may answer `null`, which the client's model reads as absent).
    const tags = Object.keys(ix.tags).length === 0 ? {} : { tags: { ...ix.tags } };
    if (this.local) {
      // API 2025-01 IndexModel: dimension / metric / spec at the top level.
      return {
        name: ix.name,
        dimension: ix.dimension,
        metric: ix.metric,
        host: ix.server.url.replace(/^https?:\/\//, ''),
        spec: { serverless: { cloud: ix.cloud, region: ix.region } },
        status,
        deletion_protection: ix.deletionProtection,
        ...tags,
        vector_type: 'dense',
      };
    }
    return {
      name: ix.name,
      host: ix.server.url,
      status,
      deployment: {
        deployment_type: 'managed',
        cloud: ix.cloud,
        region: ix.region,
        environment: `${ix.region}-${ix.cloud}`,
      },
      schema: {
        fields: { _values: { type: 'dense_vector', dimension: ix.dimension, metric: ix.metric } },
      },
      deletion_protection: ix.deletionProtection,
      ...tags,
    };
  }
}

/** Pinecone Local's create: the API 2025-01 body `{ name, dimension, metric, spec }`. */
async function createLocalIndex(ctx: ControlPlane, b: JsonObject): Promise<unknown> {
  for (const k of Object.keys(b)) {
    if (
      ![
        'name',
        'dimension',
        'metric',
        'spec',
        'deletion_protection',
        'tags',
        'vector_type',
      ].includes(k)
    )
      throw control(400, 'INVALID_ARGUMENT', `Bad request: unknown field \`${k}\` (API 2025-01)`);
  }
  const name = b.name;
  if (typeof name !== 'string' || !INDEX_NAME.test(name))
    throw control(400, 'INVALID_ARGUMENT', 'Bad request: invalid index name');
  const dimension = b.dimension;
  if (typeof dimension !== 'number' || !Number.isInteger(dimension) || dimension < 1)
    throw control(400, 'INVALID_ARGUMENT', 'Bad request: missing field `dimension`');
  const serverless =
    isObject(b.spec) && isObject(b.spec.serverless) ? b.spec.serverless : undefined;
  if (serverless === undefined)
    throw control(400, 'INVALID_ARGUMENT', 'Bad request: missing field `spec`');
  const metric = b.metric ?? 'cosine';
  if (metric !== 'cosine' && metric !== 'euclidean' && metric !== 'dotproduct')
    throw control(400, 'INVALID_ARGUMENT', `Invalid metric ${String(metric)}`);
  if (ctx.indexes.has(name))
    throw control(409, 'ALREADY_EXISTS', `Resource ${name} already exists`);
  const ix = await ctx.addIndex({
    name,
    dimension,
    metric,
    cloud: String(serverless.cloud),
    region: String(serverless.region),
    ...tagsAndProtection(b),
  });
  return new Reply(201, ctx.model(ix));
}

/** `GET /indexes` */
export function listIndexes(_req: RoutedRequest, ctx: ControlPlane): unknown {
  return { indexes: [...ctx.indexes.values()].map((ix) => ctx.model(ix)) };
}

/** `POST /indexes` */
export async function createIndex(req: RoutedRequest, ctx: ControlPlane): Promise<unknown> {
  const b = req.body;
  if (!isObject(b))
    throw control(400, 'INVALID_ARGUMENT', 'Bad request: body must be a JSON object');
  if (ctx.local) return createLocalIndex(ctx, b);
  for (const k of Object.keys(b)) {
    // The control plane speaks snake_case on the wire (see the generated *ToJSON mappers).
    if (
      ![
        'name',
        'deployment',
        'schema',
        'cmek_id',
        'read_capacity',
        'tags',
        'deletion_protection',
      ].includes(k)
    ) {
      throw control(400, 'INVALID_ARGUMENT', `Bad request: unknown field \`${k}\``);
    }
  }
  const name = b.name;
  if (typeof name !== 'string' || !INDEX_NAME.test(name)) {
    throw control(
      400,
      'INVALID_ARGUMENT',
      "Name must consist of lower case alphanumeric characters or '-', and be 1-45 characters long",
    );
  }
  const values =
    isObject(b.schema) && isObject(b.schema.fields) ? b.schema.fields._values : undefined;
  if (!isObject(values) || values.type !== 'dense_vector') {
    throw control(
      400,
      'INVALID_ARGUMENT',
      'The ragfresh emulator creates dense vector indexes only: schema.fields._values must be a dense_vector field',
    );
  }
  const dimension = values.dimension;
  if (
    typeof dimension !== 'number' ||
    !Number.isInteger(dimension) ||
    dimension < 1 ||
    dimension > PINECONE_LIMITS.maxDimension
  ) {
    throw control(
      400,
      'INVALID_ARGUMENT',
      `Dimension must be an integer between 1 and ${PINECONE_LIMITS.maxDimension}`,
    );
  }
  const metric = values.metric ?? 'cosine';
  if (metric !== 'cosine' && metric !== 'euclidean' && metric !== 'dotproduct') {
    throw control(400, 'INVALID_ARGUMENT', `Invalid metric ${String(metric)}`);
  }
  const d = isObject(b.deployment)
    ? b.deployment
    : { deployment_type: 'managed', cloud: 'aws', region: 'us-east-1' };
  if (
    d.deployment_type !== 'managed' ||
    typeof d.cloud !== 'string' ||
    typeof d.region !== 'string'
  ) {
    throw control(
      400,
      'INVALID_ARGUMENT',
      'The ragfresh emulator creates managed (serverless) indexes only',
    );
  }
  if (ctx.indexes.has(name))
    throw control(409, 'ALREADY_EXISTS', `Resource ${name} already exists`);
  const ix = await ctx.addIndex({
    name,
    dimension,
    metric,
    cloud: d.cloud,
    region: d.region,
    ...tagsAndProtection(b),
  });
  return new Reply(201, ctx.model(ix));
}

function existing(req: RoutedRequest, ctx: ControlPlane): Index {
  const ix = ctx.indexes.get(req.params.name ?? '');
  if (!ix) throw control(404, 'NOT_FOUND', `Resource ${req.params.name} not found`);
  return ix;
}

/** `GET /indexes/{name}` */
export function describeIndex(req: RoutedRequest, ctx: ControlPlane): unknown {
  return ctx.model(existing(req, ctx));
}

/** `DELETE /indexes/{name}` */
export async function deleteIndex(req: RoutedRequest, ctx: ControlPlane): Promise<unknown> {
  const ix = existing(req, ctx);
  // "Deletion protection is enabled for this index": 403 until configured off.
  if (ix.deletionProtection === 'enabled')
    throw control(
      403,
      'FORBIDDEN',
      `Deletion protection is enabled for this index. Disable deletion protection before retrying.`,
    );
  ctx.indexes.delete(ix.name);
  await ix.server.close();
  return new Reply(202, {});
}
