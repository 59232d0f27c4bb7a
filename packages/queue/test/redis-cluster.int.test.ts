import { fixture } from '@ragfresh/connector-pgvector/fixture';
import {
  type Connector,
  HashingEmbeddings,
  InMemoryStateStore,
  openStateStore,
} from '@ragfresh/core';
import type { EngineSource } from '@ragfresh/engine';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import { Fetcher, RedisPolitenessGate } from '@ragfresh/fetch';
import { startSimWeb } from '@ragfresh/sim';
import { Queue } from 'bullmq';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertQueueRedis,
  connectRedis,
  FINISH_QUEUE,
  type FinishJob,
  finishJobId,
  PageWorker,
  PublishConsumer,
  prefixOf,
  queueConfigProblem,
  scheduleDueSources,
} from '../src/index.js';
import { UA, uniqueName } from './cluster.js';
import { type RedisCluster, startRedisCluster } from './redis-server.js';

// A real Redis Cluster of three masters that this file starts from Debian's redis-server
// (fails loudly without it) and stops by PID; the vector store is the pgvector fixture (PGlite).
const DIMENSIONS = 32;
const PAGES = 12;
const INTERVAL = 30;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('queue config: hash-tagged prefixes', () => {
  it('accepts a {hash tag}, refuses a cluster prefix without one, and defaults to {ragfresh} on a cluster', () => {
    expect(queueConfigProblem({ redis: 'redis://h:1', prefix: '{ragfresh}' })).toBeUndefined();
    expect(queueConfigProblem({ redis: 'redis://h:1', prefix: 'rf-{a.b}_1' })).toBeUndefined();
    expect(queueConfigProblem({ redis: 'redis://h:1', prefix: 'ragfresh' })).toBeUndefined();
    // Control: the pattern still refuses what is not a prefix.
    for (const prefix of ['{a}{b}', '{}', 'a:b', 'a{b', ''])
      expect(queueConfigProblem({ redis: 'redis://h:1', prefix })).toMatch(/^queue\.prefix must/);
    expect(queueConfigProblem({ redis: 'redis://h:1', prefix: 'rf', cluster: true })).toBe(
      'queue.prefix "rf" has no {hash tag}; on a Redis Cluster every queue key must share one slot: use e.g. "{rf}"',
    );
    expect(queueConfigProblem({ redis: 'redis://h:1/2', cluster: true })).toMatch(/database/);
    expect(prefixOf({ redis: 'redis://h:1', cluster: true })).toBe('{ragfresh}');
    expect(prefixOf({ redis: 'redis://h:1' })).toBe('ragfresh');
  });
});

describe('on a real Redis Cluster (three masters)', () => {
  let cluster: RedisCluster;
  let redis: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    redis = connectRedis({ redis: cluster.seed, cluster: true }) as Cluster;
  }, 60_000);
  afterAll(async () => {
    await redis?.quit().catch(() => {});
    await cluster?.stop();
  });

  /** The slots of every key under `match`, read from each master. */
  async function slotsOf(match: string): Promise<Map<string, number>> {
    const slots = new Map<string, number>();
    for (const node of redis.nodes('master'))
      for (const key of await node.keys(match))
        slots.set(key, Number(await redis.cluster('KEYSLOT', key)));
    return slots;
  }

  it('the Redis state store opens on the same cluster, its namespace in the slot of its {hash tag}', async () => {
    const namespace = uniqueName('state');
    const state = await openStateStore(cluster.seed, { namespace });
    try {
      await state.putDocument({
        documentId: 'd1',
        sourceId: 's1',
        url: 'https://a.test/d1',
        status: 'healthy',
        statusReasons: [],
        currentChunkIds: [],
        timestamps: {},
      });
      expect((await state.getDocument('d1'))?.url).toBe('https://a.test/d1');
      const slots = await slotsOf(`{${namespace}}:*`);
      expect(slots.size).toBeGreaterThan(1);
      expect([...new Set(slots.values())]).toEqual([
        Number(await redis.cluster('KEYSLOT', namespace)),
      ]);
    } finally {
      await state.close();
    }
  });

  it('assertQueueRedis reads every master: one evicting master refuses the cluster, naming it', async () => {
    await expect(assertQueueRedis(redis)).resolves.toBeUndefined();
    const last = redis.nodes('master').at(-1)!;
    await last.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      await expect(assertQueueRedis(redis)).rejects.toThrow(
        `Redis at 127.0.0.1:${last.options.port} has maxmemory-policy allkeys-lru`,
      );
    } finally {
      await last.config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('control: one script over two keys of different slots is refused (CROSSSLOT), as the old politeness keys were', async () => {
    const script = "return redis.call('EXISTS', KEYS[1], KEYS[2])";
    await expect(
      redis.eval(script, 2, 'ragfresh:polite:holders:a.test', 'ragfresh:polite:host:a.test'),
    ).rejects.toThrow(/CROSSSLOT/);
    expect(await redis.eval(script, 2, 'p:{a.test}:holders', 'p:{a.test}:host')).toBe(0);
  });

  it("the politeness gate runs every script in one slot: a host's keys share it, a tagged prefix puts every host there", async () => {
    const hosts = ['a.test', 'b.test:8080', 'c.test', 'd.test', 'e.test'];
    const policy = { intervalMs: 5, perHostConcurrency: 1, maxHoldMs: 5000 };
    for (const prefix of [uniqueName('gate'), `{${uniqueName('gate')}}`]) {
      const gate = new RedisPolitenessGate({ redis, prefix });
      // Each turn held (its holders key exists) and each host blocked (its state key exists).
      const turns = [];
      for (const host of hosts) {
        turns.push(await gate.acquire(host, policy));
        await gate.block(host, 60_000);
        expect(await gate.blockedFor(host)).toBeGreaterThan(0);
      }
      const slots = await slotsOf(`${prefix}:*`);
      // Each host's two keys (holders, host state) and nothing else.
      expect(slots.size).toBe(hosts.length * 2);
      for (const host of hosts) {
        const own = [...slots].filter(([k]) => k.includes(`{${encodeURIComponent(host)}}`));
        expect(own.length).toBe(2);
        expect(new Set(own.map(([, s]) => s)).size).toBe(1);
      }
      const distinct = new Set(slots.values()).size;
      if (prefix.startsWith('{')) expect(distinct).toBe(1);
      else expect(distinct).toBe(hosts.length);
      for (const turn of turns) await turn.answered();
    }
  });

  it('page workers, the publisher and the scheduler on a {hash tag} prefix publish every page, all keys in one slot', async () => {
    const prefix = `{${uniqueName('cluster')}}`;
    const namespace = uniqueName('state').replace(/-/g, '_');
    await using sim = await startSimWeb({ seed: 52, hosts: 1, pagesPerHost: PAGES });
    const target = await fixture.start();
    const state = new InMemoryStateStore();
    const embeddings = new HashingEmbeddings({ dimensions: DIMENSIONS });
    const gate = new RedisPolitenessGate({ redis, prefix: `${prefix}:polite` });
    const fetcher = new Fetcher({
      userAgent: UA,
      minIntervalMs: INTERVAL,
      network: { allowPrivateNetworks: true },
      robots: false,
      politeness: gate,
    });
    let connector: Connector | undefined;
    let worker: PageWorker | undefined;
    let consumer: PublishConsumer | undefined;
    try {
      connector = await target.createConnector(namespace);
      await connector.open({ dimensions: DIMENSIONS });
      const sources: EngineSource[] = sim.hosts().map((h) => ({
        id: h,
        urls: sim.urls(h),
        everyMs: 86_400_000,
        identity: { mode: 'normalize' },
      }));
      const deps = {
        sources,
        connector,
        state,
        fetcher,
        pipeline: new ExtractPipeline({}),
        embeddings,
        concurrency: 2,
        batchSize: 5,
      };
      worker = new PageWorker({ connection: redis, prefix, deps, name: 'w1', finishPollMs: 200 });
      consumer = new PublishConsumer({
        connection: redis,
        prefix,
        deps,
        name: 'p1',
        publisher: { embedQuery: (text) => embeddings.embedQuery(text) },
      });
      consumer.start();
      const report = await scheduleDueSources({
        connection: redis,
        prefix,
        deps,
        all: true,
        urlsPerJob: 4,
      });
      expect(report.sources.map((s) => [s.pages, s.jobs])).toEqual([[PAGES, 3]]);
      const finish = new Queue<FinishJob>(FINISH_QUEUE, { connection: redis, prefix });
      const id = finishJobId(report.sources[0]!.sourceId, report.sources[0]!.runKey);
      // A hang guard, not a performance bound: the vitest timeout ends a stuck run.
      while ((await finish.getJobState(id)) !== 'completed') await sleep(100);
      await finish.close();

      const records = [];
      for await (const r of state.listDocuments()) records.push(r);
      expect(records.length).toBe(PAGES);
      expect(records.every((r) => r.status === 'healthy' && r.currentVersionId !== undefined)).toBe(
        true,
      );
      const counts = await connector.countChunksMany(
        records.map((r) => ({ documentId: r.documentId, versionId: r.currentVersionId! })),
      );
      expect(counts).toEqual(records.map((r) => r.currentChunkIds?.length));
      expect(counts.every((n) => n > 0)).toBe(true);

      // The server saw the shared interval between all requests to its host.
      const times = sim
        .log()
        .map((e) => e.time)
        .sort((a, b) => a - b);
      expect(times.length).toBe(PAGES);
      for (let i = 1; i < times.length; i++)
        expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(INTERVAL - 1);

      // Every key of the deployment (queues, flows, politeness) sits in the tag's one slot.
      const slots = await slotsOf(`${prefix}*`);
      expect([...slots.keys()].some((k) => k.startsWith(`${prefix}:pages:`))).toBe(true);
      expect([...slots.keys()].some((k) => k.startsWith(`${prefix}:polite:`))).toBe(true);
      expect(new Set(slots.values()).size).toBe(1);
    } finally {
      await worker?.close();
      await consumer?.close();
      await fetcher.close();
      await connector?.close();
      await target.stop();
    }
  }, 120_000);
});
