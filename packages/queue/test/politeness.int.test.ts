import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DEFAULT_TURN_TTL_MS, Fetcher, RedisPolitenessGate } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Needs the Redis of this machine and CI (127.0.0.1:6379); fails loudly without it.
const REDIS_URL = process.env.RAGFRESH_TEST_REDIS ?? 'redis://127.0.0.1:6379';
const UA = 'ragfresh-test/1.0 (+https://example.org/bot)';
const INTERVAL = 40;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    // Without the replay rule the turn would come only after its TTL, when its own token expires.
    const turn = await gate.acquire(
      'replayed.example',
      { intervalMs: INTERVAL, perHostConcurrency: 1, maxHoldMs: 2000 },
      undefined,
    );
    expect(replies).toEqual([0]);
    await turn.answered();
  });
});

describe("a dead holder's host turn (real Redis; the holder is a child process running built code)", () => {
  const HOLDER = fileURLToPath(new URL('./turn-holder.ts', import.meta.url));
  const TTL = 1000;
  const policy = { intervalMs: 10, perHostConcurrency: 1, maxHoldMs: 300_000 };
  /** Redis' clock, ms (the gate's scripts use it for every expiry). */
  const redisNow = async () => {
    const [s, us] = await redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  /** The expiry (Redis ms) of the one turn held on `host`, or undefined. */
  const expiryOf = async (p: string, host: string) => {
    const [, score] = await redis.zrange(`${p}:{${host}}:holders`, 0, 0, 'WITHSCORES');
    return score === undefined ? undefined : Number(score);
  };

  it('is renewed while its holder lives, and ends one TTL after the holder is SIGKILLed', async () => {
    const p = `${prefix}:dead`;
    const host = 'held.example';
    const child = spawn(process.execPath, [HOLDER, REDIS_URL, p, host, String(TTL)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((r) => child.on('exit', r));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => d.toString().includes('granted') && resolve());
        void exited.then(() => reject(new Error('turn-holder exited before its turn was granted')));
      });
      const first = (await expiryOf(p, host))!;
      expect(first - (await redisNow())).toBeLessThanOrEqual(TTL);
      let granted = false;
      const waiting = new RedisPolitenessGate({ redis, prefix: p, turnTtlMs: TTL });
      const turn = waiting.acquire(host, policy).then((t) => {
        granted = true;
        return t;
      });
      // Control: while the holder lives, three TTLs pass and its turn is still its own (renewed).
      await sleep(3 * TTL);
      expect(granted).toBe(false);
      const renewed = (await expiryOf(p, host))!;
      expect(renewed).toBeGreaterThan(first + TTL);

      child.kill('SIGKILL');
      await exited;
      const dead = await redisNow();
      const last = (await expiryOf(p, host))!;
      // The last renewal's expiry is at most one TTL after the holder died, and nothing renews it.
      expect(last - dead).toBeLessThanOrEqual(TTL);
      await (await turn).answered();
      const grantedAt = await redisNow();
      expect(granted).toBe(true);
      expect(grantedAt).toBeGreaterThanOrEqual(last);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  it('by default a turn lives at most 30 s without renewal, far below the request timeout it used to follow', async () => {
    expect(DEFAULT_TURN_TTL_MS).toBeLessThanOrEqual(30_000);
    const p = `${prefix}:default`;
    const gate = new RedisPolitenessGate({ redis, prefix: p });
    const turn = await gate.acquire('default.example', policy);
    const left = (await expiryOf(p, 'default.example'))! - (await redisNow());
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(30_000);
    await turn.answered();
    expect(await expiryOf(p, 'default.example')).toBeUndefined();
  });
});
