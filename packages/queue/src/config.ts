import { RagfreshError, redactUrl } from '@ragfresh/core';
import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** `queue: { redis, prefix, cluster }` in the ragfresh config: where the BullMQ queues live. */
export interface QueueConfig {
  /** `redis://host:port[/db]` or `rediss://…`; with `cluster`, one node the others are found from. */
  readonly redis: string;
  /**
   * BullMQ key prefix and politeness key prefix; one per deployment (or test). Default `ragfresh`,
   * `{ragfresh}` on a cluster, where the prefix must hold a `{hash tag}`.
   */
  readonly prefix?: string;
  /** `redis` is a node of a Redis Cluster (ioredis `Cluster`). Default false. */
  readonly cluster?: boolean;
}

/** A connection to the queues: one Redis server, or a Redis Cluster. */
export type QueueRedis = Redis | Cluster;

/**
 * Letters, digits, ".", "_", "-", with at most one `{hash tag}`: Redis Cluster hashes only the
 * tag, so every key of the prefix (a queue's, a flow's across queues, a host's politeness
 * keys) lands in one slot, which BullMQ's multi-key scripts need.
 */
export const QUEUE_PREFIX_PATTERN = /^[A-Za-z0-9._-]*(\{[A-Za-z0-9._-]+\})?[A-Za-z0-9._-]*$/;

/** Whether `prefix` holds a Redis Cluster hash tag (`{…}`). */
export function hasHashTag(prefix: string): boolean {
  return /\{[^{}]+\}/.test(prefix);
}

export const PAGES_QUEUE = 'pages';
export const PUBLISH_QUEUE = 'publish';
/** One job per source and due window, run after its page jobs (a BullMQ flow's parent). */
export const FINISH_QUEUE = 'finish';

/** One clear line for a bad `queue` config, or undefined when it is fine. */
export function queueConfigProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'must be { redis: "redis://…", prefix? }';
  const v = value as Record<string, unknown>;
  if (typeof v.redis !== 'string' || !/^rediss?:\/\/./.test(v.redis))
    return `queue.redis must be a redis:// or rediss:// URL, got ${JSON.stringify(v.redis)}`;
  if (v.cluster !== undefined && typeof v.cluster !== 'boolean')
    return `queue.cluster must be true or false, got ${JSON.stringify(v.cluster)}`;
  if (
    v.prefix !== undefined &&
    (typeof v.prefix !== 'string' || v.prefix === '' || !QUEUE_PREFIX_PATTERN.test(v.prefix))
  )
    return `queue.prefix must be letters, digits, ".", "_" or "-" with at most one {hash tag}, got ${JSON.stringify(v.prefix)}`;
  if (v.cluster === true && typeof v.prefix === 'string' && !hasHashTag(v.prefix))
    return `queue.prefix ${JSON.stringify(v.prefix)} has no {hash tag}; on a Redis Cluster every queue key must share one slot: use e.g. "{${v.prefix}}"`;
  if (v.cluster === true && !/^rediss?:\/\/[^/]*\/?(0)?$/.test(v.redis))
    return `queue.redis selects a database, which a Redis Cluster does not have: drop the "/db" from ${JSON.stringify(redactUrl(v.redis))}`;
  return undefined;
}

export function prefixOf(config: QueueConfig): string {
  return config.prefix ?? (config.cluster === true ? '{ragfresh}' : 'ragfresh');
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * Whether an error only says Redis cannot be reached right now (connectRedis reports the outage
 * once; BullMQ and ioredis retry on their own).
 */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  return /Connection is closed|ECONNREFUSED|ECONNRESET|ETIMEDOUT|Stream isn't writeable/.test(
    err.message,
  );
}

/**
 * A Redis connection for BullMQ (which needs `maxRetriesPerRequest: null` for workers) and the
 * politeness gate: a `Redis`, or a `Cluster` when `config.cluster` is set (`extra`'s
 * `lazyConnect` and `retryStrategy` then apply to the cluster, the rest to each node).
 * `onError` hears one line when Redis stops answering and one when it answers again (not every
 * reconnect attempt).
 */
export function connectRedis(
  config: QueueConfig,
  onError: (message: string) => void = () => {},
  extra: RedisOptions = {},
): QueueRedis {
  const problem = queueConfigProblem(config);
  if (problem !== undefined)
    throw new RagfreshError('INVALID_CONFIG', `queue: ${problem}.`, { scope: 'queue' });
  const options: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    lazyConnect: false,
    ...extra,
  };
  const redis =
    config.cluster === true ? openCluster(config.redis, options) : new Redis(config.redis, options);
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    onError(
      `redis unreachable at ${redactUrl(config.redis)} (${err.message}); not taking work until it answers`,
    );
  });
  redis.on('ready', () => {
    if (down) onError(`redis at ${redactUrl(config.redis)} answers again; taking work`);
    down = false;
  });
  return redis;
}

function openCluster(seed: string, options: RedisOptions): Cluster {
  const url = new URL(seed);
  const { lazyConnect, retryStrategy, enableReadyCheck, ...node } = options;
  return new Cluster([{ host: url.hostname, port: Number(url.port === '' ? 6379 : url.port) }], {
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableReadyCheck === undefined ? {} : { enableReadyCheck }),
    ...(retryStrategy === undefined ? {} : { clusterRetryStrategy: retryStrategy }),
    redisOptions: {
      ...node,
      ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
      ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
      ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  });
}
