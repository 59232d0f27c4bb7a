import { RagfreshError } from '@ragfresh/core';
import { Redis, type RedisOptions } from 'ioredis';

/** `queue: { redis, prefix }` in the ragfresh config: where the BullMQ queues live. */
export interface QueueConfig {
  /** `redis://host:port[/db]` or `rediss://…`. */
  readonly redis: string;
  /** BullMQ key prefix and politeness key prefix; one per deployment (or test). Default `ragfresh`. */
  readonly prefix?: string;
}

export const PAGES_QUEUE = 'pages';
export const PUBLISH_QUEUE = 'publish';

/** One clear line for a bad `queue` config, or undefined when it is fine. */
export function queueConfigProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'must be { redis: "redis://…", prefix? }';
  const v = value as Record<string, unknown>;
  if (typeof v.redis !== 'string' || !/^rediss?:\/\/./.test(v.redis))
    return `queue.redis must be a redis:// or rediss:// URL, got ${JSON.stringify(v.redis)}`;
  if (
    v.prefix !== undefined &&
    (typeof v.prefix !== 'string' || !/^[A-Za-z0-9._-]+$/.test(v.prefix))
  )
    return `queue.prefix must be letters, digits, ".", "_" or "-", got ${JSON.stringify(v.prefix)}`;
  return undefined;
}

export function prefixOf(config: QueueConfig): string {
  return config.prefix ?? 'ragfresh';
}

function mask(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.href;
  } catch {
    return '(unparseable URL)';
  }
}

/**
 * A Redis connection for BullMQ (which needs `maxRetriesPerRequest: null` for workers) and the
 * politeness gate. `onError` hears every connection problem once per outage.
 */
export function connectRedis(
  config: QueueConfig,
  onError: (message: string) => void = () => {},
  extra: RedisOptions = {},
): Redis {
  const problem = queueConfigProblem(config);
  if (problem !== undefined)
    throw new RagfreshError('INVALID_CONFIG', `queue: ${problem}.`, { scope: 'queue' });
  const redis = new Redis(config.redis, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    lazyConnect: false,
    ...extra,
  });
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    onError(
      `redis unreachable at ${mask(config.redis)} (${err.message}); not taking work until it answers`,
    );
  });
  redis.on('ready', () => {
    down = false;
  });
  return redis;
}
