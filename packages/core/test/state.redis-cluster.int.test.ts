import { createCluster, type RedisClusterType } from '@keyv/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisCluster, redisCli, startRedisCluster } from '../../queue/test/redis-server.ts';
import { isRagfreshError, openStateStore, PUBLISHER_LEASE } from '../src/index.js';
import { describeAggregates } from './aggregates.suite.js';
import { describeStateStore, doc, journal, randomNamespace } from './state.suite.js';

// A real Redis Cluster of three masters that this file starts from Debian's redis-server (fails
// loudly without it) and stops by PID. The whole backend suite runs on it, through the same
// `redis://` URL a single node takes: the store recognises the cluster at open.
let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster(3);
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

const open = (namespace: string) => openStateStore(cluster.seed, { namespace });

describeStateStore('redis', open);
describeAggregates('redis-cluster', open, { runs: 8 });

describe('the Redis state store on a cluster', () => {
  let raw: RedisClusterType;
  beforeAll(async () => {
    raw = createCluster({ rootNodes: [{ url: cluster.seed }] }) as RedisClusterType;
    await raw.connect();
  });
  afterAll(async () => {
    await raw?.close();
  });

  /** Every key under `match` on every master, with its slot and the master holding it. */
  async function keysOf(match: string): Promise<{ key: string; slot: number; port: number }[]> {
    const out: { key: string; slot: number; port: number }[] = [];
    for (const master of raw.masters) {
      const node = await raw.nodeClient(master);
      for (const key of await node.keys(match))
        out.push({
          key,
          slot: Number(await node.sendCommand(['CLUSTER', 'KEYSLOT', key])),
          port: master.port,
        });
    }
    return out;
  }

  it('keeps every key of a namespace under its {hash tag}, in one slot on one master', async () => {
    const namespace = randomNamespace();
    const state = await open(namespace);
    try {
      expect(state.keys.root).toBe(`{${namespace}}`);
      // Records, the per-source index, a lease, the fenced journal and the aggregates (the
      // suites above run every other kind of write on this cluster too).
      await state.putDocuments(['a', 'b', 'c', 'd'].map((id) => doc(id, id < 'c' ? 's1' : 's2')));
      const lease = await state.acquireLease(PUBLISHER_LEASE, 'me', 30_000);
      await state.putJournal(journal(lease!.fence));
      await state.rebuildAggregates();
      expect(await state.hasAggregates()).toBe(true);

      const keys = await keysOf(`*${namespace}*`);
      // 4 documents, 4 index entries, lease, journal, marker, aggregate indexes.
      expect(keys.length).toBeGreaterThan(11);
      for (const k of keys) expect(k.key.startsWith(`{${namespace}}:`)).toBe(true);
      expect(new Set(keys.map((k) => k.slot)).size).toBe(1);
      expect(new Set(keys.map((k) => k.port)).size).toBe(1);
      // Control: the slot is the tag's own, and untagged keys of the same names would spread.
      expect(keys[0]!.slot).toBe(
        Number(await raw.sendCommand(namespace, true, ['CLUSTER', 'KEYSLOT', namespace])),
      );
      const untagged = await Promise.all(
        keys.map((k) =>
          raw.sendCommand(undefined, true, [
            'CLUSTER',
            'KEYSLOT',
            k.key.replace(`{${namespace}}`, namespace),
          ]),
        ),
      );
      expect(new Set(untagged.map(Number)).size).toBeGreaterThan(1);

      // Listings (SCAN on every master, then MGET in the slot) read what was written.
      const listed = [];
      for await (const r of state.listDocuments({ sourceId: 's2' })) listed.push(r.documentId);
      expect(listed.sort()).toEqual(['c', 'd']);
    } finally {
      await state.close();
    }
  });

  it('namespaces of one cluster land on different masters, each whole', async () => {
    // Eight namespaces over three masters: by the slot hash, more than one master is used.
    const namespaces = Array.from({ length: 8 }, () => randomNamespace());
    for (const ns of namespaces) {
      const state = await open(ns);
      await state.putDocument(doc('x', 's'));
      await state.close();
    }
    const ports = new Set<number>();
    for (const ns of namespaces) {
      const keys = await keysOf(`{${ns}}:*`);
      // The record, its index entry and its aggregate entries.
      expect(keys.map((k) => k.key)).toContain(`{${ns}}:doc:x`);
      expect(new Set(keys.map((k) => k.port)).size).toBe(1);
      ports.add(keys[0]!.port);
    }
    expect(ports.size).toBeGreaterThan(1);
  });

  it('refuses a state URL that selects a database on a cluster node, in one line', async () => {
    const err = await openStateStore(`${cluster.seed}/2`).catch((e: unknown) => e);
    expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
    expect((err as Error).message).toContain(
      `state store ${cluster.seed}/2 is a Redis Cluster node and a cluster has no databases: drop the "/db" from the state URL.`,
    );
    // Control: without the database the same node opens.
    await (await openStateStore(`${cluster.seed}/0`)).close();
  });
});

describe('a failover of the namespace master (three masters, a replica each)', () => {
  let failing: RedisCluster;
  beforeAll(async () => {
    failing = await startRedisCluster(3, { replicas: 1, nodeTimeoutMs: 1000 });
  }, 60_000);
  afterAll(async () => {
    await failing?.stop();
  });

  it('the store open at the time reports STORE_UNREACHABLE; a new open reads every replicated record from the promoted replica', async () => {
    const namespace = randomNamespace();
    const state = await openStateStore(failing.seed, { namespace });
    const lease = await state.acquireLease(PUBLISHER_LEASE, 'first', 60_000);
    try {
      await state.putDocuments(['a', 'b', 'c'].map((id) => doc(id, 's1')));
      await state.putJournal(journal(lease!.fence));
      const slot = (
        await redisCli(failing.masters[0]!.port, 'cluster', 'keyslot', namespace)
      ).trim();
      const owners = [];
      for (const m of failing.masters)
        if ((await redisCli(m.port, 'cluster', 'countkeysinslot', slot)).trim() !== '0')
          owners.push(m);
      expect(owners).toHaveLength(1);
      const owner = owners[0]!;
      // Every write replicated before the master goes (WAIT: one replica acknowledged).
      expect((await redisCli(owner.port, 'wait', '1', '5000')).trim()).toBe('1');
      await owner.stop();
      // Like a single node that went away: the open store says so in one line, it does not hang.
      const err = await state.getDocument('b').catch((e: unknown) => e);
      expect(isRagfreshError(err, 'STORE_UNREACHABLE')).toBe(true);
    } finally {
      await state.close();
    }

    // The cluster promotes the replica (cluster-node-timeout 1 s); a new open from a node that
    // is up finds it and reads the same state.
    const alive = failing.masters.find(
      (m) => m.proc.exitCode === null && m.proc.signalCode === null,
    )!;
    const promoted = async () => {
      for (const r of failing.replicas)
        if ((await redisCli(r.port, 'role')).startsWith('master')) return true;
      return false;
    };
    const deadline = Date.now() + 30_000;
    while (
      !(await promoted()) ||
      !(await redisCli(alive.port, 'cluster', 'info')).includes('cluster_state:ok')
    ) {
      if (Date.now() > deadline) throw new Error('the cluster did not fail over in 30 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const again = await openStateStore(`redis://127.0.0.1:${alive.port}`, { namespace });
    try {
      const listed = [];
      for await (const r of again.listDocuments({ sourceId: 's1' })) listed.push(r);
      expect(listed.sort((x, y) => (x.documentId < y.documentId ? -1 : 1))).toEqual(
        ['a', 'b', 'c'].map((id) => doc(id, 's1')),
      );
      expect(await again.getJournal()).toEqual(journal(lease!.fence));
      // The lease survived with its fence: the old grant still fences, a new holder waits, and
      // the grant after expiry is above it.
      expect(await again.currentFence(PUBLISHER_LEASE)).toBe(lease!.fence);
      await again.putJournal(journal(lease!.fence, 'batch-2'));
      expect(await again.acquireLease(PUBLISHER_LEASE, 'second', 60_000)).toBeUndefined();
      await again.releaseLease(lease!);
      expect((await again.acquireLease(PUBLISHER_LEASE, 'second', 60_000))!.fence).toBe(
        lease!.fence + 1,
      );
    } finally {
      await again.close();
    }
  }, 60_000);
});
