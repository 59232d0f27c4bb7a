import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type DocumentRecord,
  isRagfreshError,
  type JournalEntry,
  type KeyvStateStore,
  PUBLISHER_LEASE,
  type ReviewItem,
  type RunSummary,
  type Tombstone,
} from '../src/index.js';

/**
 * Opens a store on a fresh, isolated namespace. Calling it twice with the same `namespace`
 * must give two independent store instances (separate connections) over the same data.
 */
export type OpenStore = (namespace: string) => Promise<KeyvStateStore>;

/** Random per-test namespace, so runs never see each other's data. */
export function randomNamespace(): string {
  return `t-${randomUUID()}`;
}

export function doc(
  documentId: string,
  sourceId: string,
  extra: Partial<DocumentRecord> = {},
): DocumentRecord {
  return {
    documentId,
    sourceId,
    url: `https://example.com/${sourceId}/${documentId}`,
    status: 'healthy',
    statusReasons: [],
    currentVersionId: `v-${documentId}`,
    currentChunkIds: [`${documentId}:0`, `${documentId}:1`],
    timestamps: { retrievedAt: '2026-11-30T03:00:00.000Z' },
    ...extra,
  };
}

export function journal(
  fence: number,
  batchId = 'batch-1',
  step: JournalEntry['step'] = 'manifest',
): JournalEntry {
  return {
    batchId,
    step,
    baseEpoch: 4,
    targetEpoch: 5,
    startedAt: '2026-11-30T03:00:00.000Z',
    fence,
    documents: [
      {
        documentId: 'd1',
        sourceId: 's1',
        versionId: 'v2',
        chunkIds: ['c1'],
        previousVersionId: 'v1',
        action: 'publish',
      },
    ],
  };
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isRagfreshError(error)) return error.code;
    throw error;
  }
  return 'resolved';
}

/**
 * The behaviour every StateStore backend must show. Each case states one guarantee; a failure
 * names the backend and the guarantee that broke.
 */
export function describeStateStore(backend: string, open: OpenStore): void {
  describe(`StateStore on ${backend}`, () => {
    const opened: KeyvStateStore[] = [];
    const openTracked = async (namespace: string) => {
      const store = await open(namespace);
      opened.push(store);
      return store;
    };
    afterEach(async () => {
      const stores = opened.splice(0);
      // Leave shared servers as they were: remove every key of the namespaces this test used.
      const cleaned = new Set<string>();
      for (const store of stores) {
        if (cleaned.has(store.namespace)) continue;
        cleaned.add(store.namespace);
        await store.close().catch(() => undefined);
        const cleaner = await open(store.namespace);
        for await (const [key] of cleaner.backend.scan(cleaner.keys.root)) {
          await cleaner.backend.delete(key);
        }
        await cleaner.close();
      }
      await Promise.all(stores.map((s) => s.close()));
    });

    it('starts empty in a fresh namespace (the fixture isolates tests)', async () => {
      const store = await openTracked(randomNamespace());
      expect(store.kind).toBe(backend);
      expect(await collect(store.listDocuments())).toEqual([]);
      expect(await store.getJournal()).toBeUndefined();
      expect(await store.currentFence(PUBLISHER_LEASE)).toBeUndefined();
      expect(await store.listReviewItems()).toEqual([]);
      expect(await store.listTombstones()).toEqual([]);
      expect(await store.listRetirements()).toEqual([]);
      expect(await store.listRuns('s1', 10)).toEqual([]);
    });

    it('round-trips a document record exactly and overwrites it whole', async () => {
      const store = await openTracked(randomNamespace());
      const first = doc('d1', 's1', {
        contentHash: 'h1',
        validators: { etag: '"abc"' },
        goneCount: 2,
      });
      await store.putDocument(first);
      expect(await store.getDocument('d1')).toEqual(first);
      const second = doc('d1', 's1', { status: 'degraded', statusReasons: ['shrink'] });
      await store.putDocument(second);
      // Nothing of the first record survives: a write replaces the record, never merges.
      expect(await store.getDocument('d1')).toEqual(second);
      await store.deleteDocument('d1');
      expect(await store.getDocument('d1')).toBeUndefined();
      await store.deleteDocument('d1'); // deleting a missing record is fine
    });

    it('writes each record atomically: concurrent writers leave exactly one whole record', async () => {
      const namespace = randomNamespace();
      const [a, b] = [await openTracked(namespace), await openTracked(namespace)];
      const versions = Array.from({ length: 20 }, (_, i) =>
        doc('d1', 's1', {
          currentVersionId: `v${i}`,
          currentChunkIds: Array.from({ length: 50 }, (_, j) => `v${i}:${j}`),
          contentHash: `h${i}`,
        }),
      );
      await Promise.all(versions.map((v, i) => (i % 2 === 0 ? a : b).putDocument(v)));
      const stored = await a.getDocument('d1');
      expect(versions).toContainEqual(stored);
      expect(
        stored?.currentChunkIds.every((id) => id.startsWith(`${stored.currentVersionId}:`)),
      ).toBe(true);
    });

    it('lists documents by source, across pages, and follows moves and deletes', async () => {
      const store = await openTracked(randomNamespace());
      const inA = Array.from({ length: 300 }, (_, i) =>
        doc(`a-${String(i).padStart(3, '0')}`, 'src:a'),
      );
      for (let i = 0; i < inA.length; i += 50)
        await Promise.all(inA.slice(i, i + 50).map((d) => store.putDocument(d)));
      await store.putDocument(doc('b-1', 'src:a:b'));
      await store.putDocument(doc('b-2', 'src:a:b'));

      const listedA = await collect(store.listDocuments({ sourceId: 'src:a' }));
      expect(listedA.map((d) => d.documentId).sort()).toEqual(inA.map((d) => d.documentId));
      // A source id that extends another (src:a:b) is not confused with it.
      expect(
        (await collect(store.listDocuments({ sourceId: 'src:a:b' })))
          .map((d) => d.documentId)
          .sort(),
      ).toEqual(['b-1', 'b-2']);
      expect(await collect(store.listDocuments())).toHaveLength(302);
      expect(await collect(store.listDocuments({ sourceId: 'nope' }))).toEqual([]);

      await store.putDocument(doc('a-000', 'src:c'));
      await store.deleteDocument('a-001');
      const after = (await collect(store.listDocuments({ sourceId: 'src:a' }))).map(
        (d) => d.documentId,
      );
      expect(after).toHaveLength(298);
      expect(after).not.toContain('a-000');
      expect(after).not.toContain('a-001');
      expect(
        (await collect(store.listDocuments({ sourceId: 'src:c' }))).map((d) => d.documentId),
      ).toEqual(['a-000']);
    });

    it('keeps the review queue, tombstones, retirements, robots verdicts and runs', async () => {
      const store = await openTracked(randomNamespace());
      const review = (id: string, status: ReviewItem['status'], createdAt: string): ReviewItem => ({
        id,
        kind: 'deletion',
        documentId: `d-${id}`,
        sourceId: 's1',
        url: `https://example.com/${id}`,
        reason: '410 twice',
        evidence: ['410 at t1', '410 at t2'],
        createdAt,
        status,
      });
      await store.putReviewItem(review('r2', 'pending', '2026-11-30T02:00:00.000Z'));
      await store.putReviewItem(review('r1', 'pending', '2026-11-30T01:00:00.000Z'));
      await store.putReviewItem(review('r3', 'approved', '2026-11-30T00:00:00.000Z'));
      expect((await store.listReviewItems({ status: 'pending' })).map((r) => r.id)).toEqual([
        'r1',
        'r2',
      ]);
      expect((await store.listReviewItems()).map((r) => r.id)).toEqual(['r3', 'r1', 'r2']);
      expect(await store.getReviewItem('r3')).toEqual(
        review('r3', 'approved', '2026-11-30T00:00:00.000Z'),
      );
      await store.putReviewItem({
        ...review('r1', 'rejected', '2026-11-30T01:00:00.000Z'),
        decidedBy: 'ana',
      });
      expect((await store.listReviewItems({ status: 'pending' })).map((r) => r.id)).toEqual(['r2']);
      await store.deleteReviewItem('r3');
      await store.deleteReviewItem('absent');
      expect((await store.listReviewItems()).map((r) => r.id)).toEqual(['r1', 'r2']);

      // The epoch history: ordered by epoch (also past 9 -> 10), the first record of an epoch stays.
      await store.putEpochRecord({ epoch: 10, at: '2026-11-30T10:00:00.000Z' });
      await store.putEpochRecord({ epoch: 9, at: '2026-11-30T09:00:00.000Z' });
      await store.putEpochRecord({ epoch: 10, at: '2026-11-30T11:00:00.000Z' });
      expect(await store.listEpochRecords()).toEqual([
        { epoch: 9, at: '2026-11-30T09:00:00.000Z' },
        { epoch: 10, at: '2026-11-30T10:00:00.000Z' },
      ]);

      const tomb = (documentId: string): Tombstone => ({
        documentId,
        sourceId: 's1',
        url: `https://example.com/${documentId}`,
        reason: 'gone',
        evidence: ['404 x3'],
        createdAt: '2026-11-30T03:00:00.000Z',
        approvedBy: 'auto-policy:gone-3',
      });
      await store.putTombstone(tomb('d2'));
      await store.putTombstone(tomb('d1'));
      expect((await store.listTombstones()).map((t) => t.documentId)).toEqual(['d1', 'd2']);
      expect(await store.getTombstone('d1')).toEqual(tomb('d1'));
      await store.deleteTombstone('d1');
      expect((await store.listTombstones()).map((t) => t.documentId)).toEqual(['d2']);

      await store.putRetirement({
        documentId: 'd1',
        versionId: 'v1',
        epoch: 7,
        at: '2026-11-30T03:00:00.000Z',
      });
      await store.putRetirement({
        documentId: 'd2',
        versionId: 'v1',
        epoch: 3,
        at: '2026-11-30T03:00:00.000Z',
      });
      expect((await store.listRetirements()).map((r) => [r.documentId, r.epoch])).toEqual([
        ['d2', 3],
        ['d1', 7],
      ]);
      await store.deleteRetirement('d2', 'v1');
      expect((await store.listRetirements()).map((r) => r.documentId)).toEqual(['d1']);

      const verdict = {
        host: 'example.com',
        fetchedAt: 't0',
        expiresAt: 't1',
        status: 200,
        body: 'User-agent: *\nDisallow: /x',
      };
      await store.putRobots(verdict);
      expect(await store.getRobots('example.com')).toEqual(verdict);
      expect(await store.getRobots('other.example')).toBeUndefined();

      const run = (runId: string, sourceId: string, minute: number): RunSummary => ({
        runId,
        sourceId,
        startedAt: `2026-11-30T03:${String(minute).padStart(2, '0')}:00.000Z`,
        finishedAt: `2026-11-30T03:${String(minute).padStart(2, '0')}:30.000Z`,
        complete: true,
        counts: { fetched: minute },
        alerts: [],
      });
      for (const [id, minute] of [
        ['r-a', 5],
        ['r-b', 1],
        ['r-c', 9],
        ['r-d', 3],
      ] as const) {
        await store.appendRun(run(id, 's1', minute));
      }
      await store.appendRun(run('r-x', 's2', 59));
      expect((await store.listRuns('s1', 3)).map((r) => r.runId)).toEqual(['r-c', 'r-a', 'r-d']);
      expect((await store.listRuns('s1', 10)).map((r) => r.runId)).toEqual([
        'r-c',
        'r-a',
        'r-d',
        'r-b',
      ]);
      expect(await store.listRuns('s1', 0)).toEqual([]);
      expect(await store.listRuns('s2', 10)).toEqual([run('r-x', 's2', 59)]);
    });

    it('grants a lease to one holder at a time, with a fence that only grows', async () => {
      const store = await openTracked(randomNamespace());
      const a1 = await store.acquireLease(PUBLISHER_LEASE, 'a', 10_000);
      expect(a1).toMatchObject({ name: PUBLISHER_LEASE, holder: 'a', fence: 1 });
      expect(await store.acquireLease(PUBLISHER_LEASE, 'b', 10_000)).toBeUndefined();
      expect(await store.currentFence(PUBLISHER_LEASE)).toBe(1);
      // Re-acquiring by the holder is a new grant: a new, higher fence.
      const a2 = await store.acquireLease(PUBLISHER_LEASE, 'a', 10_000);
      expect(a2?.fence).toBe(2);
      const renewed = await store.renewLease(a2!, 20_000);
      expect(renewed.fence).toBe(2);
      expect(renewed.expiresAt).toBeGreaterThan(a2!.expiresAt);
      expect(await codeOf(store.renewLease(a1!, 10_000))).toBe('LEASE_LOST');
      await store.releaseLease(a1!); // a stale release does nothing
      expect(await store.currentFence(PUBLISHER_LEASE)).toBe(2);
      await store.releaseLease(renewed);
      expect(await store.currentFence(PUBLISHER_LEASE)).toBeUndefined();
      const b = await store.acquireLease(PUBLISHER_LEASE, 'b', 10_000);
      expect(b?.fence).toBe(3);
      expect(await codeOf(store.renewLease(renewed, 10_000))).toBe('LEASE_LOST');
      // Lease names are independent.
      expect((await store.acquireLease('other', 'a', 10_000))?.fence).toBe(1);
    });

    it('grants a fence of at least minFence (a store fenced by an earlier state), and never lower', async () => {
      const store = await openTracked(randomNamespace());
      expect((await store.acquireLease('m', 'a', 10_000, { minFence: 41 }))?.fence).toBe(41);
      // The floor is a floor: the next grant is still above the previous one.
      expect((await store.acquireLease('m', 'a', 10_000, { minFence: 5 }))?.fence).toBe(42);
      expect((await store.acquireLease('m', 'a', 10_000))?.fence).toBe(43);
      // Held by another holder: no grant, whatever the floor.
      expect(await store.acquireLease('m', 'b', 10_000, { minFence: 100 })).toBeUndefined();
      expect(await store.currentFence('m')).toBe(43);
    });

    it('keeps the fence strictly increasing across expiry, release and many holders', async () => {
      const store = await openTracked(randomNamespace());
      const fences: number[] = [];
      for (let i = 0; i < 12; i += 1) {
        const lease = await store.acquireLease('l', `h${i % 3}`, i % 2 === 0 ? 30 : 10_000);
        expect(lease).toBeDefined();
        fences.push(lease!.fence);
        if (i % 2 === 0)
          await sleep(60); // expires by itself
        else await store.releaseLease(lease!);
      }
      expect(fences).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    });

    it('refuses a journal write from a holder whose expired lease was taken over (LEASE_LOST)', async () => {
      const namespace = randomNamespace();
      const [a, b] = [await openTracked(namespace), await openTracked(namespace)];
      const leaseA = await a.acquireLease(PUBLISHER_LEASE, 'a', 300);
      await a.putJournal(journal(leaseA!.fence, 'batch-a', 'staging'));
      expect(await b.getJournal()).toEqual(journal(leaseA!.fence, 'batch-a', 'staging'));

      await sleep(400);
      // Expired and nobody took it yet: still refused, the fence is not current any more.
      expect(await codeOf(a.putJournal(journal(leaseA!.fence, 'batch-a', 'staged')))).toBe(
        'LEASE_LOST',
      );
      const leaseB = await b.acquireLease(PUBLISHER_LEASE, 'b', 10_000);
      expect(leaseB!.fence).toBeGreaterThan(leaseA!.fence);
      expect(await codeOf(a.putJournal(journal(leaseA!.fence, 'batch-a', 'staged')))).toBe(
        'LEASE_LOST',
      );
      expect(await codeOf(a.renewLease(leaseA!, 10_000))).toBe('LEASE_LOST');
      // The refused write changed nothing; the new holder can resume and write.
      expect(await a.getJournal()).toEqual(journal(leaseA!.fence, 'batch-a', 'staging'));
      await b.putJournal(journal(leaseB!.fence, 'batch-a', 'staged'));
      expect((await a.getJournal())?.fence).toBe(leaseB!.fence);
      // A made-up fence is refused too.
      expect(await codeOf(b.putJournal(journal(leaseB!.fence + 1)))).toBe('LEASE_LOST');
    });

    it('renews an expired lease nobody took over, and refuses once someone did', async () => {
      const store = await openTracked(randomNamespace());
      const lease = await store.acquireLease(PUBLISHER_LEASE, 'a', 50);
      await sleep(100);
      expect(await store.currentFence(PUBLISHER_LEASE)).toBeUndefined();
      expect(await codeOf(store.putJournal(journal(lease!.fence)))).toBe('LEASE_LOST');
      // The fence is still the newest grant, so extending it is safe and the journal accepts it.
      const renewed = await store.renewLease(lease!, 10_000);
      expect(renewed.fence).toBe(lease!.fence);
      expect(await store.currentFence(PUBLISHER_LEASE)).toBe(lease!.fence);
      await store.putJournal(journal(renewed.fence));
      const short = await store.renewLease(renewed, 50);
      await sleep(100);
      expect((await store.acquireLease(PUBLISHER_LEASE, 'b', 10_000))?.fence).toBe(
        lease!.fence + 1,
      );
      expect(await codeOf(store.renewLease(short, 10_000))).toBe('LEASE_LOST');
    });

    it('clears the journal only for its own batch', async () => {
      const store = await openTracked(randomNamespace());
      const lease = await store.acquireLease(PUBLISHER_LEASE, 'a', 10_000);
      await store.putJournal(journal(lease!.fence, 'batch-1', 'promoted'));
      await store.clearJournal('batch-0');
      expect((await store.getJournal())?.batchId).toBe('batch-1');
      await store.clearJournal('batch-1');
      expect(await store.getJournal()).toBeUndefined();
      await store.clearJournal('batch-1');
    });

    it('lets exactly one of two concurrent acquirers (separate connections) win each round', async () => {
      const namespace = randomNamespace();
      const [a, b] = [await openTracked(namespace), await openTracked(namespace)];
      const fences: number[] = [];
      for (let round = 0; round < 25; round += 1) {
        const [la, lb] = await Promise.all([
          a.acquireLease(`race-${round}`, 'a', 10_000),
          b.acquireLease(`race-${round}`, 'b', 10_000),
        ]);
        expect([la, lb].filter((l) => l !== undefined)).toHaveLength(1);
        // Contending for one lease that keeps expiring: every grant gets its own fence.
        const [sa, sb] = await Promise.all([
          a.acquireLease('shared', 'a', 1),
          b.acquireLease('shared', 'b', 1),
        ]);
        for (const l of [sa, sb]) if (l !== undefined) fences.push(l.fence);
        await sleep(3);
      }
      expect(new Set(fences).size).toBe(fences.length);
      expect(Math.max(...fences)).toBe(fences.length);
    });

    it('lets only the current fence write the journal while holders race', async () => {
      const namespace = randomNamespace();
      const [a, b] = [await openTracked(namespace), await openTracked(namespace)];
      let accepted = 0;
      let refused = 0;
      for (let round = 0; round < 15; round += 1) {
        const old = await a.acquireLease(PUBLISHER_LEASE, 'a', 5);
        if (old === undefined) throw new Error('lease should be free again');
        await sleep(10);
        const [takeover, write] = await Promise.allSettled([
          b.acquireLease(PUBLISHER_LEASE, 'b', 5),
          a.putJournal(journal(old.fence, `batch-${round}`)),
        ]);
        expect(takeover.status).toBe('fulfilled');
        if (write.status === 'fulfilled') accepted += 1;
        else {
          expect(isRagfreshError(write.reason, 'LEASE_LOST')).toBe(true);
          refused += 1;
        }
        await sleep(10);
      }
      // The lease had expired before every write: none may land.
      expect({ accepted, refused }).toEqual({ accepted: 0, refused: 15 });
    });

    it('reports a corrupt stored value as STATE_CORRUPT instead of dropping it', async () => {
      const store = await openTracked(randomNamespace());
      await store.putDocument(doc('good', 's1'));
      await store.putDocument(doc('bad', 's1'));
      await store.backend.set(store.keys.document('bad'), '{"documentId": "bad", "sourceId": ');
      expect(await codeOf(store.getDocument('bad'))).toBe('STATE_CORRUPT');
      expect(await codeOf(collect(store.listDocuments()))).toBe('STATE_CORRUPT');
      expect(await codeOf(collect(store.listDocuments({ sourceId: 's1' })))).toBe('STATE_CORRUPT');
      await store.backend.set(store.keys.document('bad'), '["valid json", "wrong shape"]');
      expect(await codeOf(store.getDocument('bad'))).toBe('STATE_CORRUPT');

      await store.backend.set(store.keys.journal(), 'not json');
      expect(await codeOf(store.getJournal())).toBe('STATE_CORRUPT');
      await store.backend.set(store.keys.lease(PUBLISHER_LEASE), '{oops');
      expect(await codeOf(store.currentFence(PUBLISHER_LEASE))).toBe('STATE_CORRUPT');
      expect(await codeOf(store.acquireLease(PUBLISHER_LEASE, 'a', 1000))).toBe('STATE_CORRUPT');
      expect(await codeOf(store.putJournal(journal(1)))).toBe('STATE_CORRUPT');
      await store.backend.set(store.keys.reviewItem('r1'), '42');
      expect(await codeOf(store.listReviewItems())).toBe('STATE_CORRUPT');
      // A good record next to the damaged ones still reads.
      expect((await store.getDocument('good'))?.documentId).toBe('good');
    });

    it('rejects bad arguments and use after close with coded errors', async () => {
      const store = await openTracked(randomNamespace());
      expect(await codeOf(store.putDocument(doc('', 's1')))).toBe('INVALID_ARGUMENT');
      expect(await codeOf(store.acquireLease(PUBLISHER_LEASE, 'a', 0))).toBe('INVALID_ARGUMENT');
      expect(await codeOf(store.putJournal(journal(0)))).toBe('INVALID_ARGUMENT');
      await store.close();
      expect(await codeOf(store.getDocument('d1'))).toBe('NOT_OPEN');
    });
  });
}
