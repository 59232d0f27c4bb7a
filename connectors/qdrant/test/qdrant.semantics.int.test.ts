import { QdrantClient } from '@qdrant/js-client-rest';
import { runSuite } from '@ragfresh/conformance';
import { InMemoryStateStore, isRagfreshError, Publisher, type StoreFixture } from '@ragfresh/core';
import { CLOUD_STRICT_MODE, type QdrantEmulator, startQdrantEmulator } from '@ragfresh/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qdrantFixture } from '../src/fixture.js';
import {
  createQdrantConnector,
  EPOCH_POINT_ID,
  EPOCH_VALUE_KEY,
  MIN_SERVER_VERSION,
  PAYLOAD_INDEXES,
  QdrantConnector,
  type QdrantConnectorOptions,
} from '../src/index.js';
import { candidate, DIMS, stored } from './support.js';

let emu: QdrantEmulator;
let n = 0;

beforeAll(async () => {
  emu = await startQdrantEmulator({ strictMode: CLOUD_STRICT_MODE });
});
afterAll(async () => emu.close());

async function connector(extra: Partial<QdrantConnectorOptions> = {}, url = emu.url) {
  const c = createQdrantConnector({
    url,
    collection: `s${++n}`,
    timeoutMs: 1_000,
    retry: { attempts: 6, baseDelayMs: 5, maxDelayMs: 50 },
    ...extra,
  });
  await c.open({ dimensions: DIMS });
  return c;
}

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => (isRagfreshError(e) ? e.code : String(e)),
  );
}

const requests = (route: string) => emu.requests.get(route) ?? 0;

/** The epoch compare-and-set as it was before issue 17: value only, no token. */
class ValueOnlyCasQdrant extends QdrantConnector {
  protected override async _advanceEpoch(expected: number, next: number): Promise<void> {
    await this.call('advance epoch', (c) =>
      c.setPayload(this.collection, {
        wait: true,
        payload: { [EPOCH_VALUE_KEY]: next },
        filter: {
          must: [
            { has_id: [EPOCH_POINT_ID] },
            { key: EPOCH_VALUE_KEY, match: { value: expected } },
          ],
        },
      }),
    );
    const now = await this.readEpoch();
    if (now !== next) throw this.error('EPOCH_CONFLICT', `store holds ${now}`);
  }
}

describe('Qdrant connector against the emulator in Qdrant Cloud strict mode', () => {
  it('indexes rf_epoch, so the filtered epoch compare-and-set is accepted; without that index strict mode refuses it (HTTP 400)', async () => {
    const c = await connector();
    expect(PAYLOAD_INDEXES.map(([f]) => f)).toContain(EPOCH_VALUE_KEY);
    const info = await c.client.getCollection(c.collection);
    expect(info.payload_schema?.[EPOCH_VALUE_KEY]?.data_type).toBe('integer');
    await c.advanceEpoch(0, 1);
    expect(await c.readEpoch()).toBe(1);

    // The layout before issue 17: every index but rf_epoch.
    const raw = new QdrantClient({ url: emu.url, checkCompatibility: false });
    const name = `legacy${++n}`;
    await raw.createCollection(name, { vectors: { size: DIMS, distance: 'Cosine' } });
    for (const [field, schema] of PAYLOAD_INDEXES.filter(([f]) => f !== EPOCH_VALUE_KEY))
      await raw.createPayloadIndex(name, { field_name: field, field_schema: schema, wait: true });
    const v = new Array<number>(DIMS).fill(0);
    v[0] = 1;
    await raw.upsert(name, {
      wait: true,
      points: [{ id: EPOCH_POINT_ID, vector: v, payload: { [EPOCH_VALUE_KEY]: 0 } }],
    });
    const refused = await raw
      .setPayload(name, {
        wait: true,
        payload: { [EPOCH_VALUE_KEY]: 1 },
        filter: { must: [{ key: EPOCH_VALUE_KEY, match: { value: 0 } }] },
      })
      .then(
        () => 200,
        (e: { status?: number; data?: { status?: { error?: string } } }) =>
          `${e.status} ${e.data?.status?.error}`,
      );
    expect(refused).toMatch(/^400 Bad request: Index required but not found for "rf_epoch"/);
    await c.close();
  });

  it('publishes and replaces a batch of 12 documents in a handful of requests (batched set_payload / scroll / delete)', async () => {
    const c = await connector();
    const publisher = await Publisher.open({
      connector: c,
      state: new InMemoryStateStore(),
      graceEpochs: 0,
    });
    const v1 = Array.from({ length: 12 }, (_, i) =>
      candidate('s', `https://example.com/b${i}`, [`doc ${i} one`, `doc ${i} two`]),
    );
    const v2 = Array.from({ length: 12 }, (_, i) =>
      candidate('s', `https://example.com/b${i}`, [`doc ${i} one, revised`]),
    );
    await publisher.publish(v1);
    const before = new Map(emu.requests);
    await publisher.publish(v2);
    const delta = (route: string) => (emu.requests.get(route) ?? 0) - (before.get(route) ?? 0);
    const setPayload = delta('POST /collections/{name}/points/payload');
    const deletes = delta('POST /collections/{name}/points/delete');
    // Per document this would be 12 × (close + flag on + flag off) set_payloads and 12 deletes.
    expect(setPayload).toBeLessThanOrEqual(6);
    expect(deletes).toBeLessThanOrEqual(2);
    expect(await c.countChunksMany(v2)).toEqual(v2.map(() => 1));
    expect((await c.listChunksMany(v2.map((d) => d.documentId))).size).toBe(12);
    await publisher.close();
    await c.close();
  });
});

describe('Qdrant connector: server version, status codes, wait_timeout', () => {
  it(`refuses a server older than ${MIN_SERVER_VERSION} at open (it would ignore update_mode and overwrite the pointer)`, async () => {
    const old = await startQdrantEmulator({ version: '1.16.3' });
    try {
      // What the floor guards against: the old server ignores update_mode and overwrites.
      const raw = new QdrantClient({ url: old.url, checkCompatibility: false });
      await raw.createCollection('p', { vectors: { size: 2, distance: 'Cosine' } });
      await raw.upsert('p', { wait: true, points: [{ id: 1, vector: [1, 0], payload: { v: 1 } }] });
      await raw.upsert('p', {
        wait: true,
        update_mode: 'insert_only',
        points: [{ id: 1, vector: [1, 0], payload: { v: 2 } }],
      });
      const [p] = await raw.retrieve('p', { ids: [1], with_payload: true });
      expect(p?.payload).toEqual({ v: 2 });
      expect(old.ignoredFields).toContain('PointsList.update_mode');

      const c = createQdrantConnector({ url: old.url, collection: 'x' });
      const err = await c.open({ dimensions: DIMS }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isRagfreshError(err, 'NOT_SUPPORTED')).toBe(true);
      expect(String((err as Error).message)).toMatch(/1\.16\.3 is older than 1\.17\.0/);
    } finally {
      await old.close();
    }
  });

  it('retries 408 and 429 without Retry-After; 403 fails at once with STORE_REJECTED', async () => {
    const c = await connector();
    const doc = candidate('s', 'https://example.com/r', ['retry me']);
    emu.inject({ status: 408, route: 'POST /collections/{name}/points/payload', times: 2 });
    const before = requests('POST /collections/{name}/points/payload');
    await c.patchValidity(doc.documentId, doc.versionId, { current: true });
    expect(requests('POST /collections/{name}/points/payload') - before).toBe(3);
    emu.inject({ status: 429, route: 'POST /collections/{name}/points/count' });
    expect(await c.countChunks(doc.documentId, doc.versionId)).toBe(0);
    emu.inject({ status: 403, route: 'POST /collections/{name}/points/payload' });
    const b2 = requests('POST /collections/{name}/points/payload');
    expect(await codeOf(c.patchValidity(doc.documentId, doc.versionId, { to: 3 }))).toBe(
      'STORE_REJECTED',
    );
    expect(requests('POST /collections/{name}/points/payload') - b2).toBe(1);
    await c.close();
  });

  it('treats status wait_timeout as not visible: the write is retried until completed, and only then returns', async () => {
    const c = await connector({
      writeTimeoutSeconds: 1,
      retry: { attempts: 30, baseDelayMs: 20, maxDelayMs: 200 },
    });
    const doc = candidate('s', 'https://example.com/w', ['slow one', 'slow two']);
    emu.inject({ slowWriteMs: 1_500, route: 'PUT /collections/{name}/points' });
    const before = requests('PUT /collections/{name}/points');
    await c.upsert(stored(doc, 1));
    expect(requests('PUT /collections/{name}/points') - before).toBeGreaterThanOrEqual(2);
    expect(await c.countChunks(doc.documentId, doc.versionId)).toBe(2);
    await c.close();
  });
});

describe('epoch-race conformance case', () => {
  it('passes on the token compare-and-set (strict-mode emulator)', async () => {
    const report = await runSuite({
      fixture: qdrantFixture({ strictMode: CLOUD_STRICT_MODE }),
      cases: ['epoch-race'],
    });
    expect(report.cases[0]?.failures).toEqual([]);
    expect(report.cases[0]?.status).toBe('passed');
  });

  it('fails on the value-only compare-and-set that came before it (both racers read back `next`)', async () => {
    const base = qdrantFixture();
    const legacy: StoreFixture = {
      store: 'qdrant',
      async start(options) {
        const t = await base.start(options);
        return {
          ...t,
          async createConnector(ns) {
            const real = (await t.createConnector(ns)) as QdrantConnector;
            await real.close();
            return new ValueOnlyCasQdrant({
              url: urlOf(t.description),
              collection: real.collection,
            });
          },
        };
      },
    };
    const report = await runSuite({ fixture: legacy, cases: ['epoch-race'] });
    expect(report.cases[0]?.status).toBe('failed');
    expect(report.cases[0]?.failures.join('\n')).toMatch(
      /2 of 2 racers succeeded|stale advanceEpoch/,
    );
  });
});

function urlOf(description: string): string {
  return /http:\/\/127\.0\.0\.1:\d+/.exec(description)![0];
}
