import { MemoryConnector } from '@ragfresh/connector-memory';
import { describe, expect, it } from 'vitest';
import {
  FIELDS,
  InMemoryStateStore,
  isRagfreshError,
  OPEN_EPOCH,
  type PublishContract,
  Publisher,
  type PublisherOptions,
  reasonLine,
} from '../src/index.js';
import { candidate, DIMS, embed, stored } from './support.js';

async function setup(extra: Partial<PublisherOptions> = {}) {
  const connector = new MemoryConnector();
  await connector.open({ dimensions: DIMS });
  const state = new InMemoryStateStore();
  const publisher = await Publisher.open({ connector, state, ...extra });
  return { connector, state, publisher };
}

async function currentVersions(connector: MemoryConnector, docId: string): Promise<string[]> {
  const hits = await connector.searchCurrent(embed('x'), 1000, { documentId: docId });
  return [...new Set(hits.map((h) => String(h.metadata[FIELDS.versionId])))];
}

const v1 = [
  'Pricing starts at 10 dollars a month.',
  'The team plan adds SSO.',
  'Enterprise has audit logs.',
];
const v2 = ['Pricing starts at 12 dollars a month.'];

describe('Publisher', () => {
  it('publishes a new document at epoch 1 and records it', async () => {
    const { connector, state, publisher } = await setup();
    const c = candidate('docs', 'https://e.com/pricing', v1);
    const report = await publisher.publish([c]);
    expect(report.epoch).toBe(1);
    expect(report.documents.map((d) => d.outcome)).toEqual(['published']);
    expect(await connector.readEpoch()).toBe(1);
    expect(await currentVersions(connector, c.documentId)).toEqual([c.versionId]);
    const record = await state.getDocument(c.documentId);
    expect(record?.currentVersionId).toBe(c.versionId);
    expect(record?.currentChunkIds).toHaveLength(3);
    expect(record?.status).toBe('healthy');
    expect(record?.timestamps.queryableAt).toBeDefined();
    const listed = await connector.listChunks(c.documentId, c.versionId);
    expect(
      listed.every((l) => l.metadata[FIELDS.current] === true && l.metadata[FIELDS.from] === 1),
    ).toBe(true);
    expect(await state.getJournal()).toBeUndefined();
  });

  it('replaces with a shorter version: no trailing chunk in the view; old deleted after the grace epoch', async () => {
    const { connector, publisher } = await setup({ graceEpochs: 1 });
    const a = candidate('docs', 'https://e.com/pricing', v1);
    const b = candidate('docs', 'https://e.com/pricing', v2);
    await publisher.publish([a]);
    const report = await publisher.publish([b]);
    expect(report.documents[0]).toMatchObject({
      outcome: 'published',
      previousVersionId: a.versionId,
    });
    expect(await currentVersions(connector, b.documentId)).toEqual([b.versionId]);
    expect(
      (await connector.searchCurrent(embed('x'), 100, { documentId: b.documentId })).length,
    ).toBe(1);
    const old = await connector.listChunks(a.documentId, a.versionId);
    expect(old).toHaveLength(3);
    expect(
      old.every((o) => o.metadata[FIELDS.to] === 2 && o.metadata[FIELDS.current] === false),
    ).toBe(true);
    // Grace: the retired version survives epoch 2 and goes once epoch 3 is published.
    await publisher.publish([candidate('docs', 'https://e.com/other', ['unrelated page'])]);
    expect(await connector.countChunks(a.documentId, a.versionId)).toBe(0);
    expect(await connector.countChunks(b.documentId, b.versionId)).toBe(1);
  });

  it('does nothing for an unchanged version', async () => {
    const { connector, publisher } = await setup();
    const a = candidate('docs', 'https://e.com/pricing', v1);
    await publisher.publish([a]);
    const again = await publisher.publish([candidate('docs', 'https://e.com/pricing', v1)]);
    expect(again.documents[0]?.outcome).toBe('unchanged');
    expect(again.epoch).toBe(1);
    expect(again.stagedChunks).toBe(0);
    expect(connector.size).toBe(3);
  });

  it('rejects a candidate that breaks its contract, keeps the old version and quarantines', async () => {
    const contract: PublishContract = {
      maxShrink: 0.5,
      requiredPhrases: ['pricing'],
      minChars: 10,
    };
    const { connector, state, publisher } = await setup({ contracts: () => contract });
    const a = candidate('docs', 'https://e.com/pricing', v1);
    await publisher.publish([a]);
    const shrunk = candidate('docs', 'https://e.com/pricing', ['Accept all cookies']);
    const report = await publisher.publish([shrunk]);
    expect(report.documents[0]?.outcome).toBe('rejected-by-gate');
    expect(report.documents[0]?.reasons.map(reasonLine).join(' ')).toMatch(/shrink/);
    expect(report.documents[0]?.reasons.map(reasonLine).join(' ')).toMatch(/missing-phrase/);
    expect(report.epoch).toBe(1);
    expect(await currentVersions(connector, a.documentId)).toEqual([a.versionId]);
    const record = await state.getDocument(a.documentId);
    expect(record?.status).toBe('quarantined');
    expect(record?.currentVersionId).toBe(a.versionId);
    expect(await connector.countChunks(shrunk.documentId, shrunk.versionId)).toBe(0);
  });

  it('removes documents at one epoch, but never more than the retire-share gate allows', async () => {
    const { connector, state, publisher } = await setup({ maxRetireShare: 0.5 });
    const docs = [1, 2, 3, 4].map((i) =>
      candidate('docs', `https://e.com/p${i}`, [`page ${i} text`]),
    );
    await publisher.publish(docs);
    const tooMany = await publisher.publish([], {
      removals: docs.slice(0, 3).map((d) => ({ documentId: d.documentId, reason: 'gone' })),
    });
    expect(tooMany.documents.every((d) => d.outcome === 'rejected-by-gate')).toBe(true);
    expect(tooMany.epoch).toBe(1);
    const ok = await publisher.publish([], {
      removals: [{ documentId: docs[0]!.documentId, reason: '410 x3' }],
    });
    expect(ok.documents[0]?.outcome).toBe('removed');
    expect(await currentVersions(connector, docs[0]!.documentId)).toEqual([]);
    expect((await state.getDocument(docs[0]!.documentId))?.status).toBe('tombstoned');
    expect(await currentVersions(connector, docs[1]!.documentId)).toEqual([docs[1]!.versionId]);
  });

  it('one writer at a time: a second publisher is refused while the lease is held', async () => {
    const { connector, state, publisher } = await setup();
    await expect(Publisher.open({ connector, state })).rejects.toSatisfy((e) =>
      isRagfreshError(e, 'LEASE_HELD'),
    );
    await publisher.close();
    const next = await Publisher.open({ connector, state });
    expect(next.fence).toBeGreaterThan(publisher.fence);
  });

  it('a publisher whose lease was taken over cannot write the journal (fencing)', async () => {
    const { connector, state, publisher } = await setup({ leaseTtlMs: 50 });
    await new Promise((r) => setTimeout(r, 80));
    const other = await Publisher.open({ connector, state, leaseTtlMs: 60_000 });
    await expect(
      publisher.publish([candidate('docs', 'https://e.com/a', ['x y'])]),
    ).rejects.toSatisfy((e) => isRagfreshError(e, 'LEASE_LOST'));
    const report = await other.publish([candidate('docs', 'https://e.com/a', ['x y'])]);
    expect(report.epoch).toBe(1);
  });

  it('the fence reaches the store: a takeover raises it, writes under the old fence are refused', async () => {
    const { connector, state, publisher } = await setup({ leaseTtlMs: 50 });
    expect(await connector.readFence()).toBe(publisher.fence);
    await new Promise((r) => setTimeout(r, 80));
    const other = await Publisher.open({ connector, state, leaseTtlMs: 60_000 });
    expect(await connector.readFence()).toBe(other.fence);
    const c = candidate('docs', 'https://e.com/a', ['x y']);
    const stale = { fence: publisher.fence };
    for (const write of [
      () => connector.upsert(stored(c, 1), stale),
      () => connector.patchValidityMany([{ ...c, patch: { current: true } }], stale),
      () => connector.deleteVersions([c], stale),
      () => connector.advanceEpoch(0, 1, stale),
    ]) {
      await expect(write()).rejects.toSatisfy(
        (e) => isRagfreshError(e, 'LEASE_LOST') && /fence 1 refused.*holds fence 2/.test(String(e)),
      );
    }
    // Control: the same writes under the current fence go through.
    await connector.upsert(stored(c, 1), { fence: other.fence });
    await connector.advanceEpoch(0, 1, { fence: other.fence });
    expect(await connector.readEpoch()).toBe(1);
    expect(await connector.countChunks(c.documentId, c.versionId)).toBe(1);
  });

  it("a reset state store beside a fenced store grants a fence above the store's", async () => {
    const { connector, publisher } = await setup();
    await publisher.publish([candidate('docs', 'https://e.com/a', ['x y'])]);
    await publisher.close();
    await Publisher.open({ connector, state: new InMemoryStateStore() }).then((p) => p.close());
    // Each fresh state would grant fence 1 again; the publisher asks for one above the store's.
    const third = await Publisher.open({ connector, state: new InMemoryStateStore() });
    expect(third.fence).toBe(3);
    expect(await connector.readFence()).toBe(3);
    const report = await third.publish([candidate('docs', 'https://e.com/b', ['z w'])]);
    expect(report.epoch).toBe(2);
  });

  it('a long write that keeps making progress keeps its lease; one request longer than the lease loses it', async () => {
    /** A memory store whose every write request takes `ms` (a slow remote index). */
    class SlowWrites extends MemoryConnector {
      constructor(readonly ms: number) {
        super({ capabilities: { maxWriteBatch: 4 } });
      }
      protected override async _upsert(
        chunks: Parameters<MemoryConnector['upsert']>[0],
        fence?: number,
      ) {
        await new Promise((r) => setTimeout(r, this.ms));
        return super._upsert(chunks, fence);
      }
    }
    const words = (n: number) => Array.from({ length: n }, (_, i) => `chunk ${i} words`);
    // 40 chunks in 10 requests of 60 ms: 600 ms of writing under a 200 ms lease.
    const steady = new SlowWrites(60);
    await steady.open({ dimensions: DIMS });
    const state = new InMemoryStateStore();
    const a = await Publisher.open({ connector: steady, state, leaseTtlMs: 200 });
    const report = await a.publish([candidate('docs', 'https://e.com/long', words(40))]);
    expect(report.documents[0]?.outcome).toBe('published');
    expect(
      await steady.countChunks(report.documents[0]!.documentId, report.documents[0]!.versionId),
    ).toBe(40);
    await a.close();
    // One request of 500 ms under the same lease: nothing renews it meanwhile, it is lost.
    const stuck = new SlowWrites(500);
    await stuck.open({ dimensions: DIMS });
    const b = await Publisher.open({
      connector: stuck,
      state: new InMemoryStateStore(),
      leaseTtlMs: 200,
    });
    await expect(b.publish([candidate('docs', 'https://e.com/stuck', words(3))])).rejects.toThrow(
      /no longer held/,
    );
  });

  it.each([
    ['manifest', 'rolled-back'],
    ['staging', 'rolled-back'],
    ['staged', 'rolled-back'],
    ['verified', 'rolled-back'],
    ['promoting', 'rolled-back'],
    ['promoted', 'rolled-forward'],
    ['flagged', 'rolled-forward'],
    ['retired', 'rolled-forward'],
    ['confirmed', 'rolled-forward'],
  ] as const)('a failure before step %s is %s by the next publisher', async (step, action) => {
    const connector = new MemoryConnector();
    await connector.open({ dimensions: DIMS });
    const state = new InMemoryStateStore();
    const a = candidate('docs', 'https://e.com/pricing', v1);
    // The first publisher finishes and closes (its lease released): only the crash is timed.
    const first = await Publisher.open({ connector, state });
    await first.publish([a]);
    await first.close();
    // Opens a publisher, again while a crashed one's lease has not expired yet.
    const openOnceFree = async (
      options: Omit<Parameters<typeof Publisher.open>[0], 'connector' | 'state'>,
      tries = 100,
    ): Promise<Publisher> => {
      try {
        return await Publisher.open({ connector, state, ...options });
      } catch (err) {
        if (tries <= 1) throw err;
        await new Promise((r) => setTimeout(r, 40));
        return openOnceFree(options, tries - 1);
      }
    };
    // A lease long enough for the crashing batch to reach its step on a loaded machine; the
    // recovering publisher waits it out.
    const crashing = await openOnceFree({
      leaseTtlMs: 1000,
      hooks: {
        beforeStep: (s) => {
          if (s === step) throw new Error(`simulated crash before ${s}`);
        },
      },
    });
    const b = candidate('docs', 'https://e.com/pricing', v2);
    await expect(crashing.publish([b])).rejects.toThrow(/simulated crash/);
    const recovering = await openOnceFree({});
    expect(await state.getJournal()).toBeUndefined();
    const expected = action === 'rolled-back' ? a : b;
    expect(await currentVersions(connector, a.documentId)).toEqual([expected.versionId]);
    expect((await state.getDocument(a.documentId))?.currentVersionId).toBe(expected.versionId);
    // Each version enters the history once, also when the crash came after the batch wrote the
    // document record (flagged, retired, confirmed): recovery must not record it again.
    const history = ((await state.getDocument(a.documentId))?.history ?? []).map(
      (h) => `${h.event} ${h.versionId}`,
    );
    expect(history).toEqual([
      `published ${a.versionId}`,
      ...(action === 'rolled-forward' ? [`replaced ${b.versionId}`] : []),
    ]);
    const visible = await connector.searchCurrent(embed('x'), 100, { documentId: a.documentId });
    expect(visible).toHaveLength(expected.chunks.length);
    if (action === 'rolled-back') {
      expect(await connector.countChunks(b.documentId, b.versionId)).toBe(0);
      const old = await connector.listChunks(a.documentId, a.versionId);
      expect(old.every((o) => o.metadata[FIELDS.to] === OPEN_EPOCH)).toBe(true);
    }
    const after = await recovering.publish([
      candidate('docs', 'https://e.com/pricing', ['third version']),
    ]);
    expect(after.documents[0]?.outcome).toBe('published');
  });
});
