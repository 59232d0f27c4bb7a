// The epoch compare-and-set on a replicated Qdrant collection (issue 32): the emulator's
// replicated mode models Qdrant 1.19's write ordering and read consistency (qdrant-replicas.ts in
// @ragfresh/emulators); no Qdrant cluster runs here.
import { randomUUID } from 'node:crypto';
import { QdrantClient } from '@qdrant/js-client-rest';
import { runSuite } from '@ragfresh/conformance';
import { isRagfreshError } from '@ragfresh/core';
import { CLOUD_STRICT_MODE, type QdrantEmulator, startQdrantEmulator } from '@ragfresh/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qdrantFixture } from '../src/fixture.js';
import {
  createQdrantConnector,
  EPOCH_POINT_ID,
  EPOCH_SPACE_KEY,
  EPOCH_TOKEN_KEY,
  EPOCH_VALUE_KEY,
  type QdrantConnector,
} from '../src/index.js';
import { DIMS } from './support.js';

const REPLICAS = 3;
let emu: QdrantEmulator;
let n = 0;

beforeAll(async () => {
  emu = await startQdrantEmulator({ replicas: REPLICAS, replicaDelayMs: 30 });
});
afterAll(async () => emu.close());

/** One publisher per node, all on one collection. */
async function publishers(): Promise<{ collection: string; at: QdrantConnector[] }> {
  const collection = `r${++n}`;
  const at: QdrantConnector[] = [];
  for (const url of emu.nodes) {
    const c = createQdrantConnector({ url, collection, timeoutMs: 2_000 });
    await c.open({ dimensions: DIMS });
    at.push(c);
  }
  return { collection, at };
}

async function outcome(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'ok',
    (e: unknown) => (isRagfreshError(e) ? e.code : String(e)),
  );
}

/** What the connector sent before issue 32: default (weak) ordering, read-back from one replica. */
async function weakAdvance(
  client: QdrantClient,
  collection: string,
  expected: number,
  next: number,
): Promise<string> {
  const token = randomUUID();
  await client.setPayload(collection, {
    wait: true,
    payload: { [EPOCH_VALUE_KEY]: next, [EPOCH_TOKEN_KEY]: token },
    filter: {
      must: [{ has_id: [EPOCH_POINT_ID] }, { key: EPOCH_VALUE_KEY, match: { value: expected } }],
    },
  });
  const [p] = await client.retrieve(collection, { ids: [EPOCH_POINT_ID], with_payload: true });
  return p?.payload?.[EPOCH_TOKEN_KEY] === token && p.payload[EPOCH_VALUE_KEY] === next
    ? 'ok'
    : 'EPOCH_CONFLICT';
}

/** The pointer as each replica holds it (a read on each node, no consistency). */
async function pointers(collection: string): Promise<unknown[]> {
  return Promise.all(
    emu.nodes.map(async (url) => {
      const [p] = await new QdrantClient({ url, checkCompatibility: false }).retrieve(collection, {
        ids: [EPOCH_POINT_ID],
        with_payload: true,
      });
      return p?.payload;
    }),
  );
}

describe(`Qdrant epoch compare-and-set on ${REPLICAS} replicas (emulator)`, () => {
  it('control: weakly ordered writes read back from the local replica let two racers on two nodes both win, and the replicas diverge', async () => {
    const { collection } = await publishers();
    const clients = emu.nodes
      .slice(0, 2)
      .map((url) => new QdrantClient({ url, checkCompatibility: false }));
    const results = await Promise.all(clients.map((c) => weakAdvance(c, collection, 0, 1)));
    expect(results).toEqual(['ok', 'ok']);
    const held = await pointers(collection);
    expect(new Set(held.map((p) => JSON.stringify(p))).size).toBeGreaterThan(1);
    // A read asking every replica finds no pointer they agree on.
    const all = await clients[0]!.retrieve(collection, {
      ids: [EPOCH_POINT_ID],
      with_payload: true,
      consistency: 'all',
    });
    expect(all).toEqual([]);
  });

  it('the connector (ordering strong, read-back consistency all): of racers on every node exactly one wins each move, and every replica holds the winner and its space', async () => {
    const { collection, at } = await publishers();
    for (let epoch = 0; epoch < 4; epoch++) {
      // Each racer names a space of its own: the one the replicas hold must be the winner's.
      const spaceOf = (node: number) => `es_node${node}_move${epoch}`;
      const results = await Promise.all(
        at.map((c, node) => outcome(c.advanceEpoch(epoch, epoch + 1, { space: spaceOf(node) }))),
      );
      expect(
        results.filter((r) => r === 'ok'),
        `move ${epoch} -> ${epoch + 1}`,
      ).toHaveLength(1);
      expect(results.filter((r) => r !== 'ok').every((r) => r === 'EPOCH_CONFLICT')).toBe(true);
      const held = await pointers(collection);
      expect(new Set(held.map((p) => JSON.stringify(p))).size).toBe(1);
      expect((held[0] as Record<string, unknown>)[EPOCH_VALUE_KEY]).toBe(epoch + 1);
      expect((held[0] as Record<string, unknown>)[EPOCH_SPACE_KEY]).toBe(
        spaceOf(results.indexOf('ok')),
      );
    }
    for (const c of at) expect(await c.readEpoch()).toBe(4);
    for (const c of at) expect(await c.readEpochSpace()).toMatch(/^es_node\d_move3$/);
  });

  it('the emulator refuses an unknown ordering and a malformed consistency as Qdrant does (400)', async () => {
    const { collection } = await publishers();
    const base = `${emu.url}/collections/${collection}/points`;
    const bad = await fetch(`${base}/payload?wait=true&ordering=fast`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payload: { x: 1 }, points: [EPOCH_POINT_ID] }),
    });
    expect(bad.status).toBe(400);
    const read = await fetch(`${base}?consistency=most`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ids: [EPOCH_POINT_ID] }),
    });
    expect(read.status).toBe(400);
  });

  it('the conformance cases on the epoch, its space and the fence pass on the replicated emulator, each connector on the next node', async () => {
    const report = await runSuite({
      fixture: qdrantFixture({ strictMode: CLOUD_STRICT_MODE, replicas: 3, replicaDelayMs: 15 }),
      cases: [
        'epoch-race',
        'epoch-in-store',
        // The space rides in the same strongly ordered write as the epoch.
        'epoch-space',
        'promotion-epoch-readers',
        'crash-before-advance',
        'crash-after-advance',
        // Fencing across replicas: a paused publisher woken after a takeover, and a crash between
        // the claim and the pointer write.
        'paused-publisher',
        'claim-crash',
      ],
    });
    expect(report.cases.map((c) => [c.id, c.status, c.failures])).toEqual(
      report.cases.map((c) => [c.id, 'passed', []]),
    );
    expect(report.cases).toHaveLength(8);
  }, 120_000);
});
