import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DocumentLedger,
  type DocumentRecord,
  type JournalDocument,
  type KeyvStateStore,
  recountAggregates,
  type StateAggregates,
} from '../src/index.js';

// The per-source aggregates a backend keeps must equal a full recount after any sequence of
// ledger transitions: random sequences over a few documents of two sources, with clock values
// drawn from a small set so ties on every timestamp happen. One suite, a few lines per backend.

const SOURCES = ['s1', 's2'] as const;
const DOCS = ['s1:a', 's1:b', 's1:c', 's2:a', 's2:b'] as const;
const TIMES = [0, 1, 2, 3, 5, 8].map((h) => new Date(Date.UTC(2026, 0, 1, h)).toISOString());

type Step =
  | { readonly kind: 'observed'; readonly doc: number; readonly t: number }
  | { readonly kind: 'observedMany'; readonly docs: readonly number[]; readonly t: number }
  | { readonly kind: 'degraded'; readonly doc: number; readonly t: number }
  | { readonly kind: 'gone'; readonly doc: number; readonly t: number }
  | { readonly kind: 'quarantined'; readonly doc: number; readonly t: number }
  | { readonly kind: 'published'; readonly doc: number; readonly t: number; readonly v: number }
  | { readonly kind: 'removed'; readonly doc: number; readonly t: number }
  | { readonly kind: 'proposed'; readonly doc: number; readonly t: number; readonly reason: number }
  | { readonly kind: 'decided'; readonly doc: number; readonly t: number; readonly how: number }
  | { readonly kind: 'lifted'; readonly doc: number; readonly t: number }
  | { readonly kind: 'deleted'; readonly doc: number }
  | { readonly kind: 'itemDeleted'; readonly doc: number };

const doc = fc.integer({ min: 0, max: DOCS.length - 1 });
const t = fc.integer({ min: 0, max: TIMES.length - 1 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('observed' as const), doc, t }),
  fc.record({
    kind: fc.constant('observedMany' as const),
    docs: fc.uniqueArray(doc, { maxLength: 4 }),
    t,
  }),
  fc.record({ kind: fc.constant('degraded' as const), doc, t }),
  fc.record({ kind: fc.constant('gone' as const), doc, t }),
  fc.record({ kind: fc.constant('quarantined' as const), doc, t }),
  fc.record({ kind: fc.constant('published' as const), doc, t, v: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('removed' as const), doc, t }),
  fc.record({
    kind: fc.constant('proposed' as const),
    doc,
    t,
    reason: fc.integer({ min: 0, max: 1 }),
  }),
  fc.record({ kind: fc.constant('decided' as const), doc, t, how: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('lifted' as const), doc, t }),
  fc.record({ kind: fc.constant('deleted' as const), doc }),
  // A removal request purges the document's review items (pending ones included).
  fc.record({ kind: fc.constant('itemDeleted' as const), doc }),
);

let epoch = 0;

async function apply(state: KeyvStateStore, s: Step): Promise<void> {
  let now = TIMES[0]!;
  const ledger = new DocumentLedger(state, { now: () => new Date(now) });
  if (s.kind !== 'deleted' && s.kind !== 'itemDeleted') now = TIMES[s.t]!;
  const id = 'doc' in s ? DOCS[s.doc]! : '';
  const sourceId = id.split(':')[0]!;
  const base = async (documentId: string) =>
    (await state.getDocument(documentId)) ??
    DocumentLedger.fresh(
      documentId,
      documentId.split(':')[0]!,
      `https://example.org/${documentId}`,
    );
  const itemId = `del:${id}`;
  switch (s.kind) {
    case 'observed':
      await ledger.observed(await base(id), { validators: { etag: `"${s.t}"` }, retrievedAt: now });
      return;
    case 'observedMany': {
      // Held, then written in one transaction (what a run does with its 304s).
      for (const d of s.docs)
        await ledger.observedLater(await base(DOCS[d]!), {
          validators: { etag: `"${s.t}"` },
          retrievedAt: now,
        });
      await ledger.flushObservations();
      return;
    }
    case 'degraded':
      await ledger.degraded(await base(id), [`not the document at ${now}`]);
      return;
    case 'gone':
      await ledger.goneEvidence(await base(id), 404, { goneChecks: 2, minGoneAgeMs: 0 });
      return;
    case 'quarantined':
      await ledger.quarantined(
        { documentId: id, sourceId, url: `https://example.org/${id}`, versionId: 'vq' },
        await state.getDocument(id),
        ['shrank'],
      );
      return;
    case 'published':
    case 'removed': {
      const record = await state.getDocument(id);
      if (s.kind === 'removed' && record?.currentVersionId === undefined) return;
      epoch += 1;
      const d: JournalDocument = {
        documentId: id,
        sourceId,
        versionId: s.kind === 'removed' ? record!.currentVersionId! : `v${s.v}`,
        chunkIds: [],
        action: s.kind === 'removed' ? 'remove' : 'publish',
        url: `https://example.org/${id}`,
        ...(s.kind === 'published'
          ? {
              contentHash: `h${s.v}`,
              retrievedAt: TIMES[Math.max(0, s.t - 1)]!,
              sourceModifiedAt: TIMES[s.v]!,
            }
          : {}),
      };
      await ledger.published(record, d, epoch, now);
      return;
    }
    case 'proposed':
      await ledger.proposed({
        id: itemId,
        kind: s.reason === 0 ? 'deletion' : 'ingestion',
        documentId: id,
        sourceId,
        url: `https://example.org/${id}`,
        reason: s.reason === 0 ? 'confirmed-gone' : 'contract',
        evidence: [],
      });
      return;
    case 'decided': {
      const item = await state.getReviewItem(itemId);
      if (item === undefined) return;
      if (s.how === 0) await ledger.deletionApproved(item, 'test');
      else if (s.how === 1) await ledger.deletionRejected(item, 'test');
      else if (s.how === 2) await ledger.quarantineRejected(item, 'test');
      else await ledger.withdrawn(item, 'answered again');
      return;
    }
    case 'lifted':
      await ledger.tombstoneLifted(id, 'test');
      return;
    case 'deleted':
      await state.deleteDocument(DOCS[s.doc]!);
      return;
    case 'itemDeleted':
      await state.deleteReviewItem(itemId);
      return;
  }
}

/** Plain data, so two aggregates compare field by field (records by id). */
function comparable(a: StateAggregates) {
  return {
    pendingDocuments: [...a.pendingDocuments].sort(),
    sources: [...a.sources.values()].map((s) => ({
      ...s,
      attention: s.attention.map((r: DocumentRecord) => r.documentId),
    })),
  };
}

export function describeAggregates(
  name: string,
  /** A new connection to `namespace` (two calls with one namespace: two writers on one state). */
  open: (namespace: string) => Promise<KeyvStateStore>,
  options: { readonly runs?: number } = {},
): void {
  describe(`per-source aggregates (${name})`, () => {
    const opened: KeyvStateStore[] = [];
    const connect = async (namespace: string) => {
      const state = await open(namespace);
      opened.push(state);
      return state;
    };
    const fresh = () =>
      connect(`agg-${name}-${process.pid}-${Math.random().toString(36).slice(2)}`);
    afterAll(async () => {
      for (const s of opened) await s.close();
    });

    it('equal a full recount after any sequence of transitions', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
          const state = await fresh();
          await state.rebuildAggregates(); // an empty state: the marker, nothing counted
          for (const s of steps) await apply(state, s);
          const kept = await state.aggregates([...SOURCES]);
          expect(kept).toBeDefined();
          expect(comparable(kept!)).toEqual(comparable(await recountAggregates(state, SOURCES)));
        }),
        { numRuns: options.runs ?? 30 },
      );
    });

    it('are rebuilt for a state written before they were kept, and recounted until then', async () => {
      const state = await fresh();
      for (const s of [
        { kind: 'published', doc: 0, t: 2, v: 1 },
        { kind: 'published', doc: 3, t: 3, v: 2 },
        { kind: 'degraded', doc: 1, t: 4 },
        { kind: 'proposed', doc: 3, t: 5, reason: 0 },
      ] as Step[])
        await apply(state, s);
      // What a state written before the ledger kept aggregates looks like: records, no indexes.
      await state.backend.zclear!(state.keys.collection('agg'));
      await state.backend.zclear!(state.keys.collection('aggrev'));
      // No marker yet: the store says it has none, so readers recount.
      expect(await state.hasAggregates()).toBe(false);
      expect(await state.aggregates([...SOURCES])).toBeUndefined();
      await new DocumentLedger(state).ensureAggregates();
      expect(await state.hasAggregates()).toBe(true);
      const kept = (await state.aggregates([...SOURCES]))!;
      expect(comparable(kept)).toEqual(comparable(await recountAggregates(state, SOURCES)));
      const s1 = kept.sources.get('s1')!;
      expect([s1.documents, s1.counts.healthy, s1.unpublished, s1.live.degraded]).toEqual([
        2, 1, 1, 1,
      ]);
      expect(kept.sources.get('s2')!.pendingReview).toEqual({ 'deletion/confirmed-gone': 1 });
      expect([...kept.pendingDocuments]).toEqual(['s2:a']);
    });

    it('stay exact when two connections write the same records at once (guarded, retried)', async () => {
      const a = await fresh();
      const b = await connect(a.namespace);
      await a.rebuildAggregates();
      for (const d of [0, 1, 2]) await apply(a, { kind: 'published', doc: d, t: 1, v: d });
      // Status flips (degraded, then observed healthy again) move counters: a write built on a
      // record another connection changed meanwhile would count the flip twice or not at all.
      const writer = (state: KeyvStateStore, offset: number) => async () => {
        for (let i = 0; i < 24; i++) {
          const d = (i + offset) % 3;
          await apply(
            state,
            i % 2 === 0 ? { kind: 'degraded', doc: d, t: 2 } : { kind: 'observed', doc: d, t: 3 },
          );
        }
      };
      const c = await connect(a.namespace);
      let refused = 0;
      for (const state of [a, b, c]) {
        const commit = state.backend.commit!.bind(state.backend);
        (state.backend as { commit: typeof commit }).commit = async (guards, ops) => {
          const ok = await commit(guards, ops);
          if (!ok) refused++;
          return ok;
        };
      }
      await Promise.all([writer(a, 0)(), writer(b, 1)(), writer(c, 2)(), writer(a, 1)()]);
      const kept = (await a.aggregates(['s1']))!;
      expect(comparable(kept)).toEqual(comparable(await recountAggregates(a, ['s1'])));
      expect(kept.sources.get('s1')!.documents).toBe(3);
      // The race happened: some commits were refused (and retried on fresh reads).
      expect(refused).toBeGreaterThan(0);
    });

    it('write a batch of observations in one guarded transaction, every record moved', async () => {
      const state = await fresh();
      await state.rebuildAggregates();
      await apply(state, { kind: 'published', doc: 0, t: 1, v: 0 });
      await apply(state, { kind: 'published', doc: 1, t: 1, v: 0 });
      await apply(state, { kind: 'observedMany', docs: [0, 1], t: 4 });
      const records = await Promise.all([state.getDocument('s1:a'), state.getDocument('s1:b')]);
      expect(records.map((r) => r?.timestamps.retrievedAt)).toEqual([TIMES[4], TIMES[4]]);
      const kept = (await state.aggregates(['s1']))!.sources.get('s1')!;
      expect(kept.oldestObservedAt).toBe(TIMES[4]);
    });
  });
}
