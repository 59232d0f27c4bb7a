import { randomUUID } from 'node:crypto';
import { Fetcher, RedisPolitenessGate } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Needs the Redis of this machine and CI (127.0.0.1:6379); fails loudly without it.
const REDIS_URL = process.env.RAGFRESH_TEST_REDIS ?? 'redis://127.0.0.1:6379';
const UA = 'ragfresh-test/1.0 (+https://example.org/bot)';
const INTERVAL = 40;

let redis: Redis;
const prefix = `rf-polite-test-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect();
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

function minGap(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let min = Number.POSITIVE_INFINITY;
  for (let i = 1; i < sorted.length; i++) min = Math.min(min, sorted[i]! - sorted[i - 1]!);
  return min;
}

function fetchers(shared: boolean, ns: string): Fetcher[] {
  return [1, 2, 3].map(
    () =>
      new Fetcher({
        userAgent: UA,
        robots: false,
        minIntervalMs: INTERVAL,
        network: { allowPrivateNetworks: true },
        ...(shared
          ? { politeness: new RedisPolitenessGate({ redis, prefix: `${prefix}:${ns}` }) }
          : {}),
      }),
  );
}

describe('RedisPolitenessGate: per-host politeness across fetchers', () => {
  it('three fetchers sharing the gate: the server sees gaps >= the interval between all their requests', async () => {
    await using sim = await startSimWeb({ seed: 3, hosts: 2, pagesPerHost: 12 });
    const all = fetchers(true, 'gap');
    const urls = sim.urls();
    await Promise.all(all.map((f, i) => Promise.all(urls.map((u) => f.fetch(`${u}?w=${i}`)))));
    for (const f of all) await f.close();
    for (const host of sim.hosts()) {
      const times = sim
        .log()
        .filter((e) => e.host === host)
        .map((e) => e.time);
      expect(times.length).toBe(36);
      // Clock jitter only: Redis' clock and the sim's are the same machine's.
      expect(minGap(times)).toBeGreaterThanOrEqual(INTERVAL - 1);
    }
  });

  it('control: three fetchers without it each keep their own interval, so the server sees shorter gaps', async () => {
    await using sim = await startSimWeb({ seed: 3, hosts: 1, pagesPerHost: 12 });
    const all = fetchers(false, 'control');
    const urls = sim.urls();
    await Promise.all(all.map((f, i) => Promise.all(urls.map((u) => f.fetch(`${u}?w=${i}`)))));
    for (const f of all) await f.close();
    expect(minGap(sim.log().map((e) => e.time))).toBeLessThan(INTERVAL - 1);
  });

  it("one fetcher's Retry-After pauses the host for the others", async () => {
    await using sim = await startSimWeb({ seed: 4, hosts: 2, pagesPerHost: 4 });
    const [a, b] = fetchers(true, 'retry');
    const [host, other] = sim.hosts();
    sim.mutateHost(host!, 'rateLimit', { times: 1, retryAfter: 1 });
    const first = await a!.fetch(sim.urls().find((u) => u.startsWith(sim.origin(host!)))!);
    // a waited the block out and retried: 429 then 200.
    expect(first.outcome).toBe('ok');
    const limited = sim.log().find((e) => e.status === 429)!;
    expect(limited).toBeDefined();
    sim.mutateHost(host!, 'rateLimit', { times: 1, retryAfter: 1 });
    const gate = new RedisPolitenessGate({ redis, prefix: `${prefix}:retry` });
    const second = a!.fetch(`${sim.origin(host!)}/`);
    // b, another fetcher, starts while the host is blocked by a's second 429.
    let blocked = 0;
    for (let i = 0; i < 400 && blocked === 0; i++) {
      if (sim.log().filter((e) => e.status === 429).length === 2)
        blocked = await gate.blockedFor(new URL(sim.origin(host!)).host);
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(blocked).toBeGreaterThan(0);
    const limitedAgain = sim.log().filter((e) => e.status === 429)[1]!;
    const fromB = await b!.fetch(sim.urls().filter((u) => u.startsWith(sim.origin(host!)))[1]!);
    const otherHost = await b!.fetch(sim.urls().find((u) => u.startsWith(sim.origin(other!)))!);
    await second;
    expect(fromB.outcome).toBe('ok');
    expect(otherHost.outcome).toBe('ok');
    const after = sim
      .log()
      .filter((e) => e.host === host && e.time > limitedAgain.time)
      .map((e) => e.time);
    expect(after.length).toBeGreaterThan(0);
    // Nobody asked the host again before the Retry-After (1 s) had passed.
    expect(Math.min(...after) - limitedAgain.time).toBeGreaterThanOrEqual(1000 - 1);
    await a!.close();
    await b!.close();
  });
});

describe('shared gate across a Redis outage', () => {
  it('an acquire sent again after its reply was lost is granted, not held behind its own turn', async () => {
    // ioredis sends unanswered commands again after a reconnect: a turn granted just before
    // Redis went away is asked for a second time with the same token.
    const replies: number[] = [];
    const replaying = {
      async eval(script: string, numKeys: number, ...args: (string | number)[]) {
        await redis.eval(script, numKeys, ...args);
        const again = await redis.eval(script, numKeys, ...args);
        replies.push(Number(again));
        return again;
      },
    };
    const gate = new RedisPolitenessGate({ redis: replaying, prefix: `${prefix}:replay` });
    // Without the replay rule the turn would come only after maxHoldMs, when its own token expires.
    const turn = await gate.acquire(
      'replayed.example',
      { intervalMs: INTERVAL, perHostConcurrency: 1, maxHoldMs: 2000 },
      undefined,
    );
    expect(replies).toEqual([0]);
    await turn.answered();
  });
});
