// The control plane: list, create (2026-07 body; 2025-01 in Local mode), describe and delete
// indexes, each index with its own data-plane server.
import type { RoutedRequest } from '../routes.js';
import { Reply } from '../server.js';
import { control, type Index, isObject, type JsonObject, PINECONE_LIMITS } from './wire.js';

const INDEX_NAME = /^[a-z0-9]([a-z0-9-]{0,43}[a-z0-9])?$/;

export class ControlPlane {
  readonly indexes = new Map<string, Index>();

  constructor(
    readonly local: boolean,
    /** Starts the data plane of a new index and registers it. */
    readonly addIndex: (
      name: string,
      dimension: number,
      metric: Index['metric'],
      cloud: string,
      region: string,
    ) => Promise<Index>,
  ) {}

  model(ix: Index): unknown {
    if (this.local) {
      // API 2025-01 IndexModel: dimension / metric / spec at the top level.
      return {
        name: ix.name,
        dimension: ix.dimension,
        metric: ix.metric,
        host: ix.server.url.replace(/^https?:\/\//, ''),
        spec: { serverless: { cloud: ix.cloud, region: ix.region } },
        status: { ready: true, state: 'Ready' },
        deletion_protection: 'disabled',
        vector_type: 'dense',
      };
    }
    return {
      name: ix.name,
      host: ix.server.url,
      status: { ready: true, state: 'Ready' },
      deployment: {
        deployment_type: 'managed',
        cloud: ix.cloud,
        region: ix.region,
        environment: `${ix.region}-${ix.cloud}`,
      },
      schema: {
        fields: { _values: { type: 'dense_vector', dimension: ix.dimension, metric: ix.metric } },
      },
      deletion_protection: 'disabled',
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
  const ix = await ctx.addIndex(
    name,
    dimension,
    metric,
    String(serverless.cloud),
    String(serverless.region),
  );
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
  return new Reply(201, ctx.model(await ctx.addIndex(name, dimension, metric, d.cloud, d.region)));
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
  ctx.indexes.delete(ix.name);
  await ix.server.close();
  return new Reply(202, {});
}
