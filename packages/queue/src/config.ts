import { RagfreshError, redactUrl } from '@ragfresh/core';
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
/** One job per source and due window, run after its page jobs (a BullMQ flow's parent). */
export const FINISH_QUEUE = 'finish';

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
 * politeness gate. `onError` hears one line when Redis stops answering and one when it answers
 * again (not every reconnect attempt).
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
      `redis unreachable at ${redactUrl(config.redis)} (${err.message}); not taking work until it answers`,
    );
  });
  redis.on('ready', () => {
    if (down) onError(`redis at ${redactUrl(config.redis)} answers again; taking work`);
    down = false;
  });
  return redis;
}
