import { isRagfreshError } from '@ragfresh/core';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { assertQueueRedis } from '../src/index.js';
import { type RedisServer, startOwnRedis } from './redis-server.js';

// redis-servers of this file's own on free ports (the shared 6379 keeps its config); fails
// loudly without Debian's redis-server. The CLI's refusal is in packages/cli/test/worker.int.test.ts.
const servers: RedisServer[] = [];
const clients: Redis[] = [];
afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const s of servers) await s.stop();
});

async function serverWith(args: string[]): Promise<Redis> {
  const server = await startOwnRedis(args);
  servers.push(server);
  // No ready check: it is an INFO, which one server here refuses.
  const redis = new Redis({
    host: '127.0.0.1',
    port: server.port,
    maxRetriesPerRequest: null,
    enableReadyCheck: false,
  });
  clients.push(redis);
  return redis;
}

describe('assertQueueRedis: BullMQ needs maxmemory-policy noeviction', () => {
  it('refuses an evicting server with one line naming its policy and the fix', async () => {
    const redis = await serverWith(['--maxmemory-policy', 'allkeys-lru']);
    const warnings: string[] = [];
    const err = await assertQueueRedis(redis, (w) => warnings.push(w)).catch((e: unknown) => e);
    expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
    const message = (err as Error).message;
    expect(message).not.toContain('\n');
    expect(message).toMatch(
      /has maxmemory-policy allkeys-lru, .*BullMQ needs noeviction: set maxmemory-policy noeviction/,
    );
    expect(warnings).toEqual([]);
  });

  it('a server refusing only CONFIG (the usual managed case) is read through INFO, and refused', async () => {
    const redis = await serverWith([
      '--maxmemory-policy',
      'volatile-ttl',
      '--rename-command',
      'CONFIG',
      '',
    ]);
    await expect(assertQueueRedis(redis)).rejects.toThrow(/has maxmemory-policy volatile-ttl, /);
  });

  it('control: a noeviction server (the default) passes without a word', async () => {
    const redis = await serverWith([]);
    const warnings: string[] = [];
    await expect(assertQueueRedis(redis, (w) => warnings.push(w))).resolves.toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('a server that lets neither INFO nor CONFIG read the policy (managed Redis) is a warning, not a refusal', async () => {
    // Evicting, but the policy cannot be read: the worker starts and says what to check. (A
    // server refusing only CONFIG, the usual managed case, is read through INFO and checked.)
    const redis = await serverWith([
      '--maxmemory-policy',
      'allkeys-lru',
      '--rename-command',
      'INFO',
      '',
      '--rename-command',
      'CONFIG',
      '',
    ]);
    const warnings: string[] = [];
    await expect(assertQueueRedis(redis, (w) => warnings.push(w))).resolves.toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^cannot read maxmemory-policy of Redis at 127\.0\.0\.1:\d+ \(INFO: .*unknown command.*; CONFIG GET: .*unknown command.*\); BullMQ needs noeviction/,
    );
  });

  it('stops waiting for an unreachable Redis when its signal aborts (a worker stopped during an outage)', async () => {
    const redis = new Redis({
      host: '127.0.0.1',
      port: 1,
      maxRetriesPerRequest: null,
      retryStrategy: () => 50,
    });
    redis.on('error', () => {});
    clients.push(redis);
    const stop = new AbortController();
    const checked = assertQueueRedis(redis, () => {}, stop.signal);
    stop.abort();
    await expect(checked).resolves.toBeUndefined();
  });
});
