import { RagfreshError } from '@ragfresh/core';
import { Cluster, type Redis } from 'ioredis';
import type { QueueRedis } from './config.js';

/** A server's `maxmemory-policy`, or why it could not be read. */
type PolicyReading = { readonly policy: string } | { readonly unreadable: string };

/**
 * The policy as `INFO memory` reports it (allowed where managed services disable CONFIG), else
 * as `CONFIG GET` does.
 */
async function readPolicy(node: Redis): Promise<PolicyReading> {
  const problems: string[] = [];
  try {
    const info = await node.info('memory');
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    if (policy !== undefined) return { policy };
    problems.push('INFO memory has no maxmemory_policy');
  } catch (err) {
    problems.push(`INFO: ${(err as Error).message}`);
  }
  try {
    const reply = (await node.config('GET', 'maxmemory-policy')) as unknown;
    const policy = Array.isArray(reply) ? reply[1] : undefined;
    if (typeof policy === 'string') return { policy };
    problems.push('CONFIG GET maxmemory-policy returned nothing');
  } catch (err) {
    problems.push(`CONFIG GET: ${(err as Error).message}`);
  }
  return { unreadable: problems.join('; ') };
}

/**
 * Whether the connection (on a cluster, its slot map) became ready; false when `signal` ended
 * the wait first (a worker stopped while Redis is still unreachable).
 */
async function ready(redis: QueueRedis, signal: AbortSignal | undefined): Promise<boolean> {
  if (redis.status === 'ready') return true;
  if (signal?.aborted === true) return false;
  return new Promise<boolean>((resolve, reject) => {
    const settle = (outcome: boolean | Error) => {
      redis.off('ready', onReady);
      redis.off('end', onEnd);
      signal?.removeEventListener('abort', onAbort);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const onReady = () => settle(true);
    const onEnd = () => settle(new Error('the Redis connection ended before it was ready'));
    const onAbort = () => settle(false);
    redis.on('ready', onReady);
    redis.on('end', onEnd);
    signal?.addEventListener('abort', onAbort);
  });
}

function where(node: Redis): string {
  return `${node.options.host ?? '127.0.0.1'}:${node.options.port ?? 6379}`;
}

/**
 * Refuses a Redis (every master of a cluster) whose `maxmemory-policy` is not `noeviction`:
 * BullMQ keeps jobs, locks and flow links in plain keys, and an evicting server drops them
 * under memory pressure, losing or duplicating work without an error. Throws INVALID_CONFIG
 * with one line naming the policy and the fix. A server that lets neither INFO nor CONFIG
 * read the policy is not refused: `warn` hears one line and the caller goes on. Waits for an
 * unreachable Redis to answer, unless `signal` ends the wait (then nothing is checked).
 */
export async function assertQueueRedis(
  redis: QueueRedis,
  warn: (message: string) => void = () => {},
  signal?: AbortSignal,
): Promise<void> {
  if (!(await ready(redis, signal))) return;
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    const reading = await readPolicy(node);
    if ('unreadable' in reading) {
      warn(
        `cannot read maxmemory-policy of Redis at ${where(node)} (${reading.unreadable}); BullMQ needs noeviction, make sure the server is set so`,
      );
      continue;
    }
    if (reading.policy !== 'noeviction')
      throw new RagfreshError(
        'INVALID_CONFIG',
        `Redis at ${where(node)} has maxmemory-policy ${reading.policy}, which evicts queue keys under memory pressure; BullMQ needs noeviction: set maxmemory-policy noeviction (redis.conf, CONFIG SET, or your managed Redis's parameter group) and start the worker again.`,
        { scope: 'queue', details: { policy: reading.policy, node: where(node) } },
      );
  }
}
