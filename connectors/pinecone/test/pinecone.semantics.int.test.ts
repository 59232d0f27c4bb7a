import { Pinecone } from '@pinecone-database/pinecone';
import { runSuite } from '@ragfresh/conformance';
import { FIELDS, isRagfreshError, type StoreFixture } from '@ragfresh/core';
import { type PineconeEmulatorOptions, startPineconeEmulator } from '@ragfresh/emulators';
import { describe, expect, it } from 'vitest';
import { DataPlaneError } from '../src/data-plane.js';
import { pineconeFixture } from '../src/fixture.js';
import {
  createPineconeConnector,
  EPOCH_VALUE_KEY,
  EPOCH_VECTOR_ID,
  epochNamespace,
  isUnsupported,
  PineconeConnector,
  type PineconeConnectorOptions,
} from '../src/index.js';
import { candidate, DIMS, stored } from './support.js';

let n = 0;

async function withEmulator<T>(
  emulatorOptions: PineconeEmulatorOptions,
  run: (ctx: {
    emu: Awaited<ReturnType<typeof startPineconeEmulator>>;
    host: string;
    connector: (extra?: Partial<PineconeConnectorOptions>) => Promise<PineconeConnector>;
    raw: Pinecone;
  }) => Promise<T>,
): Promise<T> {
  const emu = await startPineconeEmulator(emulatorOptions);
  const apiKey = `k-${new URL(emu.url).port}`;
  const host = await emu.createIndex(`sem-${++n}`, DIMS);
  try {
    return await run({
      emu,
      host,
      raw: new Pinecone({ apiKey, controllerHostUrl: emu.url, maxRetries: 0 }),
      async connector(extra = {}) {
        const c = createPineconeConnector({
          apiKey,
          host,
          namespace: 'docs',
          maxLagMs: 1_500,
          timeoutMs: 1_000,
          retry: { attempts: 10, baseDelayMs: 5, maxDelayMs: 100 },
          ...extra,
        });
        await c.open({ dimensions: DIMS });
        return c;
      },
    });
  } finally {
    await emu.close();
  }
}

const requests = (emu: { requests: Map<string, number> }, key: string) =>
  emu.requests.get(key) ?? 0;

describe('Pinecone connector: the LSN freshness barrier (query slower than fetch)', () => {
  it('a patch fetches back before queries reflect it; patchValidity returns only once queries do', async () => {
    await withEmulator(
      { lags: { fetchMs: 0, listMs: 0, queryMs: 400 } },
      async ({ emu, connector }) => {
        const c = await connector();
        const doc = candidate('s', 'https://example.com/a', ['one', 'two']);
        await c.upsert(stored(doc, 1));
        const index = c.index;
        // What the old connector relied on: the patch reads back by fetch at once...
        const ids = doc.chunks.map((ch) => ch.chunkId);
        for (const id of ids) await index.update({ id, metadata: { [FIELDS.to]: 7 } });
        const fetched = await index.fetch({ ids });
        expect(ids.every((id) => fetched.records[id]?.metadata?.[FIELDS.to] === 7)).toBe(true);
        // ...while a reader's query still sees the unpatched records.
        const early = await index.query({
          vector: doc.chunks[0]!.embedding as number[],
          topK: 5,
          includeMetadata: true,
          filter: { [FIELDS.to]: { $eq: 7 } },
        });
        expect(early.matches.length).toBe(0);
        // The connector's patch returns only once the query path reflects it.
        await c.patchValidity(doc.documentId, doc.versionId, { to: 9 });
        const after = await index.query({
          vector: doc.chunks[0]!.embedding as number[],
          topK: 5,
          includeMetadata: true,
          filter: { [FIELDS.to]: { $eq: 9 } },
        });
        expect(after.matches.length).toBe(2);
        expect(requests(emu, 'POST /query')).toBeGreaterThan(1);
      },
    );
  });

  it('a filtered update evaluated on the lagging index matches 0 records; the connector waits for the index first, and checks matchedRecords', async () => {
    await withEmulator(
      { lags: { fetchMs: 0, listMs: 0, queryMs: 300 } },
      async ({ emu, host, connector }) => {
        const c = await connector();
        const doc = candidate('s', 'https://example.com/b', ['one', 'two', 'three']);
        await c.upsert(stored(doc, 1));
        const res = await fetch(`${host}/vectors/update`, {
          method: 'POST',
          headers: { 'Api-Key': 'x', 'content-type': 'application/json' },
          body: JSON.stringify({
            namespace: 'docs',
            filter: { [FIELDS.documentId]: { $eq: doc.documentId } },
            setMetadata: { probe: 1 },
          }),
        });
        expect(await res.json()).toEqual({ matchedRecords: 0 });
        const before = requests(emu, 'POST /vectors/update');
        await c.patchValidity(doc.documentId, doc.versionId, { current: true });
        // One update by filter matched all three: no per-id fallback was needed.
        expect(requests(emu, 'POST /vectors/update') - before).toBe(1);
        const listed = await c.listChunks(doc.documentId);
        expect(listed.every((l) => l.metadata[FIELDS.current] === true)).toBe(true);
      },
    );
  });
});

describe('Pinecone connector: update-by-filter fallback classification', () => {
  it.each([400, 404, 501] as const)(
    'falls back to per-id updates when update by filter answers %i (and a 501 is not retried)',
    async (status) => {
      await withEmulator({ updateByFilter: status }, async ({ emu, connector }) => {
        const c = await connector();
        const doc = candidate('s', `https://example.com/${status}`, ['one', 'two']);
        await c.upsert(stored(doc, 1));
        const before = requests(emu, 'POST /vectors/update');
        await c.patchValidity(doc.documentId, doc.versionId, { to: 4 });
        // 1 refused filtered update + 2 per-id updates.
        expect(requests(emu, 'POST /vectors/update') - before).toBe(3);
        const listed = await c.listChunks(doc.documentId);
        expect(listed.map((l) => l.metadata[FIELDS.to])).toEqual([4, 4]);
      });
    },
  );

  it('classifies only 404, 501 and a 400 that says so as unsupported', () => {
    expect(isUnsupported(new DataPlaneError(404, 'Not Found'))).toBe(true);
    expect(isUnsupported(new DataPlaneError(501, 'Not implemented'))).toBe(true);
    expect(
      isUnsupported(new DataPlaneError(400, 'Update by metadata filter is not supported')),
    ).toBe(true);
    expect(isUnsupported(new DataPlaneError(400, 'Invalid filter: $eq needs a value'))).toBe(false);
    expect(isUnsupported(new DataPlaneError(400, 'Metadata size is 41000 bytes'))).toBe(false);
    expect(isUnsupported(new DataPlaneError(503, 'unavailable'))).toBe(false);
  });
});

/** The epoch compare-and-set as it was before issue 17: check, then set by id. */
class CheckThenSetPinecone extends PineconeConnector {
  protected override async _advanceEpoch(expected: number, next: number): Promise<void> {
    const now = await this.readEpoch();
    if (now === next) return;
    if (now !== expected) throw this.error('EPOCH_CONFLICT', `store holds ${now}`);
    const epochIndex = this.pinecone.index({
      name: this.options.indexName!,
      namespace: epochNamespace(this.options.namespace),
    });
    await epochIndex.update({ id: EPOCH_VECTOR_ID, metadata: { [EPOCH_VALUE_KEY]: next } });
    for (let i = 0; i < 100 && (await this.readEpoch()) !== next; i++)
      await new Promise((r) => setTimeout(r, 20));
  }
}

describe('epoch-race conformance case on Pinecone', () => {
  it('passes on the LSN-ordered claim with query slower than fetch', async () => {
    const report = await runSuite({
      fixture: pineconeFixture({ lags: { fetchMs: 20, listMs: 30, queryMs: 120 } }),
      cases: ['epoch-race'],
    });
    expect(report.cases[0]?.failures).toEqual([]);
    expect(report.cases[0]?.status).toBe('passed');
  });

  it('fails on the check-then-set that came before it', async () => {
    const base = pineconeFixture({ lags: { fetchMs: 20, listMs: 30, queryMs: 120 } });
    const legacy: StoreFixture = {
      store: 'pinecone',
      async start(options) {
        const t = await base.start(options);
        return {
          ...t,
          async createConnector(ns) {
            const real = (await t.createConnector(ns)) as PineconeConnector;
            return new CheckThenSetPinecone(real.options);
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

  it('an index without LSN headers cannot claim exclusively: NOT_SUPPORTED unless lease-only is declared', async () => {
    await withEmulator({ lsnHeaders: false }, async ({ connector }) => {
      const exclusive = await connector();
      const err = await exclusive.advanceEpoch(0, 1).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isRagfreshError(err, 'NOT_SUPPORTED')).toBe(true);
      const leaseOnly = await connector({ namespace: 'other', epochClaim: 'lease-only' });
      expect(leaseOnly.capabilities.epochClaim).toBe('lease-only');
      await leaseOnly.advanceEpoch(0, 1);
      expect(await leaseOnly.readEpoch()).toBe(1);
    });
  });
});
