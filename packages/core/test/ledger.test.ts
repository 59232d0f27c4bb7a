import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DOCUMENT_HISTORY_LIMIT,
  DocumentLedger,
  type DocumentRecord,
  InMemoryStateStore,
  OBSERVATION_BATCH,
  type ReviewItem,
  type Tombstone,
} from '../src/index.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

function ledgerAt(clock: { ms: number }, tombstones?: Tombstone[]) {
  const state = new InMemoryStateStore();
  const mirror =
    tombstones === undefined
      ? undefined
      : {
          put: async (t: Tombstone) => void tombstones.push(t),
          delete: async (id: string) => {
            const i = tombstones.findIndex((t) => t.documentId === id);
            if (i >= 0) tombstones.splice(i, 1);
          },
          list: async () => [...tombstones],
        };
  return {
    state,
    ledger: new DocumentLedger(state, {
      now: () => new Date(clock.ms),
      ...(mirror === undefined ? {} : { tombstones: mirror }),
    }),
  };
}

const live = (): DocumentRecord => ({
  ...DocumentLedger.fresh('docs:a', 'docs', 'https://docs.example.org/a'),
  currentVersionId: 'v1',
  currentChunkIds: ['docs:a#v1#0'],
});

describe('DocumentLedger transitions', () => {
  it('gone evidence becomes proposable after goneChecks observations spanning minGoneAge', async () => {
    const clock = { ms: T0 };
    const { ledger, state } = ledgerAt(clock);
    const policy = { goneChecks: 2, minGoneAgeMs: 60_000 };
    const first = await ledger.goneEvidence(live(), 404, policy);
    expect([first.goneCount, first.proposable, first.record.status]).toEqual([
      1,
      false,
      'degraded',
    ]);
    clock.ms += 30_000;
    const early = await ledger.goneEvidence(first.record, 404, policy);
    // Enough checks, not enough time: waits for the age.
    expect([early.goneCount, early.proposable]).toEqual([2, false]);
    expect(early.reason).toMatch(/waits for minGoneAge until/);
    clock.ms += 30_000;
    const enough = await ledger.goneEvidence(early.record, 410, policy);
    expect([enough.goneCount, enough.proposable, enough.goneSince]).toEqual([
      3,
      true,
      new Date(T0).toISOString(),
    ]);
    expect((await state.getDocument('docs:a'))?.goneCount).toBe(3);
    // A good observation starts the evidence over and heals the degraded status.
    const healed = await ledger.observed(enough.record, {
      validators: { etag: '"x"' },
      retrievedAt: new Date(clock.ms).toISOString(),
    });
    expect([healed.goneCount, healed.status]).toEqual([0, 'healthy']);
  });

  it('keeps one bounded history, newest last', async () => {
    const { ledger } = ledgerAt({ ms: T0 });
    let r = live();
    for (let i = 0; i < DOCUMENT_HISTORY_LIMIT + 7; i++) r = await ledger.degraded(r, [`n${i}`]);
    expect(r.history).toHaveLength(DOCUMENT_HISTORY_LIMIT);
    expect(r.history!.at(-1)!.reasons).toEqual([`n${DOCUMENT_HISTORY_LIMIT + 6}`]);
  });

  it('a proposal is written once while it stands; approval tombstones and mirrors it', async () => {
    const mirrored: Tombstone[] = [];
    const { ledger, state } = ledgerAt({ ms: T0 }, mirrored);
    await state.putDocument(live());
    const item = {
      id: 'delete:docs:a',
      kind: 'deletion' as const,
      documentId: 'docs:a',
      sourceId: 'docs',
      url: 'https://docs.example.org/a',
      reason: 'confirmed-gone',
      evidence: ['404 x3'],
    };
    const written = (await ledger.proposed(item)) as ReviewItem;
    expect(written.status).toBe('pending');
    expect(await ledger.proposed(item)).toBeUndefined();
    await ledger.deletionApproved(written, 'alice');
    expect((await state.getReviewItem(item.id))?.status).toBe('approved');
    expect((await state.getTombstone('docs:a'))?.approvedBy).toBe('alice');
    expect(mirrored.map((t) => t.documentId)).toEqual(['docs:a']);
    // Decided: a new proposal for the same document may be written again.
    expect((await ledger.proposed(item))?.status).toBe('pending');
    await ledger.tombstoneLifted('docs:a', 'bob');
    expect(await state.getTombstone('docs:a')).toBeUndefined();
    expect(mirrored).toEqual([]);
    expect((await state.getDocument('docs:a'))?.history?.at(-1)?.event).toBe('tombstone-lifted');
  });

  it('a withdrawn proposal is noted on the document; a rejected deletion resets the evidence', async () => {
    const { ledger, state } = ledgerAt({ ms: T0 });
    await state.putDocument({ ...live(), goneCount: 4 });
    const item = (await ledger.proposed({
      id: 'delete:docs:a',
      kind: 'deletion',
      documentId: 'docs:a',
      sourceId: 'docs',
      url: 'https://docs.example.org/a',
      reason: 'confirmed-gone',
      evidence: [],
    }))!;
    await ledger.withdrawn(item, 'the page answered 200/304');
    expect((await state.getReviewItem(item.id))?.status).toBe('withdrawn');
    expect((await state.getDocument('docs:a'))?.history?.at(-1)?.event).toBe('proposal-withdrawn');
    const again = (await ledger.proposed(item))!;
    await ledger.deletionRejected(again, 'carol');
    expect((await state.getDocument('docs:a'))?.goneCount).toBe(0);
    expect((await state.getReviewItem(item.id))?.decidedBy).toBe('carol');
  });

  it('restored never overwrites a record the state has', async () => {
    const { ledger, state } = ledgerAt({ ms: T0 });
    await state.putDocument({ ...live(), statusReasons: ['kept'] });
    expect(await ledger.restored({ ...live(), statusReasons: ['from the store'] })).toBe(false);
    expect((await state.getDocument('docs:a'))?.statusReasons).toEqual(['kept']);
  });
});

// One writer: outside the state backends, only the ledger writes records, review items and
// tombstones. A second writer is how two history limits and four record builders came about.
describe('the ledger is the only writer', () => {
  const root = resolve(import.meta.dirname, '../../..');
  const sources = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sources(path);
      return path.endsWith('.ts') ? [path] : [];
    });
  it('a removal request leaves only a minimal tombstone (no URL) and can be undone; decisions are audited', async () => {
    const clock = { ms: T0 };
    const mirrored: Tombstone[] = [];
    const { state, ledger } = ledgerAt(clock, mirrored);
    await state.putDocument(live());
    await ledger.proposed({
      id: 'del:docs:a',
      kind: 'deletion',
      documentId: 'docs:a',
      sourceId: 'docs',
      url: 'https://docs.example.org/a',
      reason: 'confirmed-gone',
      evidence: ['HTTP 404'],
    });
    const [t] = await ledger.removalRequested(
      [{ documentId: 'docs:a', sourceId: 'docs', urlHash: 'ab'.repeat(32) }],
      { reason: 'takedown', by: 'alice' },
    );
    expect(t).toMatchObject({ url: '', reason: 'takedown', approvedBy: 'alice', evidence: [] });
    expect(mirrored).toHaveLength(1);
    await ledger.removalPurged(['docs:a']);
    expect(await state.getDocument('docs:a')).toBeUndefined();
    expect(await state.listReviewItems()).toEqual([]);
    expect(JSON.stringify(await state.getTombstone('docs:a'))).not.toContain('docs.example.org');
    expect(await ledger.removalUndone('docs:a')).toBe(true);
    expect(await state.getTombstone('docs:a')).toBeUndefined();
    expect(mirrored).toHaveLength(0);
    // Only removal tombstones are undone this way.
    expect(await ledger.removalUndone('docs:a')).toBe(false);

    const appended: unknown[] = [];
    const audited = new DocumentLedger(state, {
      audit: {
        append: async (e) => {
          appended.push(e);
          return { ...e, seq: 1, at: '', prev: '', hash: '' };
        },
      },
    });
    await audited.decided(
      {
        id: 'i',
        kind: 'deletion',
        documentId: 'docs:b',
        sourceId: 'docs',
        url: 'u',
        reason: 'r',
        evidence: [],
        createdAt: '',
        status: 'pending',
      },
      'rejected',
      'bob',
    );
    expect(appended).toEqual([
      {
        action: 'review-rejected',
        by: 'bob',
        reason: 'r',
        documents: ['docs:b'],
        details: { item: 'i', kind: 'deletion' },
      },
    ]);
  });

  it('no putDocument / putReviewItem / putTombstone / deleteTombstone / deleteDocument / deleteReviewItem call elsewhere', () => {
    const writers = new Set<string>();
    for (const group of ['packages', 'connectors'])
      for (const pkg of readdirSync(join(root, group))) {
        const src = join(root, group, pkg, 'src');
        try {
          statSync(src);
        } catch {
          continue;
        }
        for (const file of sources(src)) {
          const text = readFileSync(file, 'utf8');
          if (
            /\.(putDocument|putReviewItem|putTombstone|deleteTombstone|deleteDocument|deleteReviewItem)\(/.test(
              text,
            )
          )
            writers.add(relative(root, file));
        }
      }
    const allowed = [...writers].filter(
      (f) => f === 'packages/core/src/ledger.ts' || f.startsWith('packages/core/src/state/'),
    );
    expect([...writers].sort()).toEqual(allowed.sort());
    expect(writers.has('packages/core/src/ledger.ts')).toBe(true);
  });
});

describe('DocumentLedger: batched 304s', () => {
  it('holds 304s until a batch is full or flushed, and writes each onto the record as stored then', async () => {
    const clock = { ms: T0 };
    const { state, ledger } = ledgerAt(clock);
    const ids = Array.from({ length: OBSERVATION_BATCH + 2 }, (_, i) => `s:${i}`);
    for (const id of ids)
      await state.putDocument({
        ...DocumentLedger.fresh(id, 's', `https://e.com/${id}`),
        status: 'degraded',
        statusReasons: ['outage'],
        currentVersionId: 'v1',
      });
    const calls: number[] = [];
    const update = state.updateDocuments.bind(state);
    state.updateDocuments = async (documentIds, fn) => {
      calls.push(documentIds.length);
      await update(documentIds, fn);
    };
    const at = (h: number) => new Date(T0 + h * 3600_000).toISOString();
    const bases = await Promise.all(ids.map((id) => state.getDocument(id)));
    // A change written after the first 304 was read: the batch keeps it (applied onto it).
    await ledger.observedLater(bases[0]!, { validators: { etag: '"a"' }, retrievedAt: at(1) });
    await state.putDocument({ ...(await state.getDocument('s:0'))!, url: 'https://e.com/moved' });
    for (const b of bases.slice(1))
      await ledger.observedLater(b!, { validators: { etag: '"a"' }, retrievedAt: at(1) });
    expect(calls).toEqual([OBSERVATION_BATCH]);
    // Not yet written: the last two wait for the flush.
    expect((await state.getDocument(ids.at(-1)!))?.timestamps.retrievedAt).toBeUndefined();
    await ledger.flushObservations();
    expect(calls).toEqual([OBSERVATION_BATCH, 2]);
    const records = await Promise.all(ids.map((id) => state.getDocument(id)));
    expect(
      records.every((r) => r?.timestamps.retrievedAt === at(1) && r.status === 'healthy'),
    ).toBe(true);
    expect(records[0]?.url).toBe('https://e.com/moved');
    // An observation older than the stored one moves nothing.
    await ledger.observedLater(records[1]!, { validators: { etag: '"old"' }, retrievedAt: at(0) });
    await ledger.flushObservations();
    expect((await state.getDocument('s:1'))?.validators?.etag).toBe('"a"');
  });
});
