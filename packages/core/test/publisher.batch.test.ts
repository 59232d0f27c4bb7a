import { MemoryConnector } from '@ragfresh/connector-memory';
import { describe, expect, it } from 'vitest';
import {
  type DocumentRecord,
  FIELDS,
  InMemoryStateStore,
  type JournalStep,
  type ListedChunk,
  MAX_BATCH_REFS,
  type PublishCandidate,
  Publisher,
  type PublisherOptions,
  type QueryFilter,
  type QueryHit,
  reasonLine,
  type StoredChunk,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
} from '../src/index.js';
import { candidate, DIMS } from './support.js';

type Hook =
  | 'upsert'
  | 'patchValidity'
  | 'patchValidityMany'
  | 'count'
  | 'countMany'
  | 'list'
  | 'listMany'
  | 'deleteVersion'
  | 'deleteVersions'
  | 'query'
  | 'advanceEpoch';

/** The reference connector, counting every hook call (one call = one store operation). */
class SpyConnector extends MemoryConnector {
  readonly calls = new Map<Hook, number>();
  /** Sizes of each batch-hook call, to see core's slicing. */
  readonly sizes = new Map<Hook, number[]>();
  #count(hook: Hook, size?: number): void {
    this.calls.set(hook, (this.calls.get(hook) ?? 0) + 1);
    if (size !== undefined) this.sizes.set(hook, [...(this.sizes.get(hook) ?? []), size]);
  }
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.calls);
  }
  protected override _upsert(chunks: readonly StoredChunk[]) {
    this.#count('upsert', chunks.length);
    return super._upsert(chunks);
  }
  protected override _patchValidity(d: string, v: string, p: ValidityPatch) {
    this.#count('patchValidity');
    return super._patchValidity(d, v, p);
  }
  protected override _patchValidityMany(patches: readonly VersionPatch[]) {
    this.#count('patchValidityMany', patches.length);
    return super._patchValidityMany(patches);
  }
  protected override _count(d: string, v: string) {
    this.#count('count');
    return super._count(d, v);
  }
  protected override _countMany(refs: readonly VersionRef[]) {
    this.#count('countMany', refs.length);
    return super._countMany(refs);
  }
  protected override _list(d: string, v: string | undefined, e: boolean) {
    this.#count('list');
    return super._list(d, v, e);
  }
  protected override _listMany(ids: readonly string[], e: boolean): Promise<ListedChunk[]> {
    this.#count('listMany', ids.length);
    return super._listMany(ids, e);
  }
  protected override _deleteVersion(d: string, v: string) {
    this.#count('deleteVersion');
    return super._deleteVersion(d, v);
  }
  protected override _deleteVersions(refs: readonly VersionRef[]) {
    this.#count('deleteVersions', refs.length);
    return super._deleteVersions(refs);
  }
  protected override _query(v: readonly number[], k: number, f: QueryFilter): Promise<QueryHit[]> {
    this.#count('query');
    return super._query(v, k, f);
  }
  protected override _advanceEpoch(e: number, n: number) {
    this.#count('advanceEpoch');
    return super._advanceEpoch(e, n);
  }
}

/** Which protocol step each journal step's work belongs to (the step runs after it is journalled). */
const STEP_OF: Partial<Record<JournalStep, string>> = {
  staging: 'stage',
  staged: 'verify',
  promoting: 'promote',
  promoted: 'record',
  flagged: 'flag',
  retired: 'retire',
  confirmed: 'confirm',
};

/** Publishes through a Publisher whose hooks attribute every store operation to its step. */
async function setup(
  connector: SpyConnector = new SpyConnector(),
  extra: Partial<PublisherOptions> = {},
) {
  await connector.open({ dimensions: DIMS });
  const state = new InMemoryStateStore();
  let step = 'validate';
  let mark = connector.snapshot();
  let perStep: Record<string, Record<string, number>> = {};
  const close = () => {
    const now = connector.snapshot();
    const diff: Record<string, number> = {};
    for (const [k, v] of Object.entries(now))
      if (v !== (mark[k] ?? 0)) diff[k] = v - (mark[k] ?? 0);
    if (Object.keys(diff).length > 0) perStep[step] = diff;
    mark = now;
  };
  const publisher = await Publisher.open({
    connector,
    state,
    hooks: {
      beforeStep: (s) => {
        const next = STEP_OF[s];
        if (next === undefined) return;
        close();
        step = next;
      },
    },
    ...extra,
  });
  /** Store operations per step of one publish call. */
  const publish = async (...args: Parameters<Publisher['publish']>) => {
    perStep = {};
    step = 'validate';
    mark = connector.snapshot();
    const report = await publisher.publish(...args);
    close();
    return { report, perStep };
  };
  return { connector, state, publisher, publish };
}

const docs = (n: number, label: string, chunks = 3): PublishCandidate[] =>
  Array.from({ length: n }, (_, i) =>
    candidate(
      'docs',
      `https://e.com/p${i}`,
      Array.from({ length: chunks }, (_, j) => `page ${i} ${label} paragraph ${j} text`),
    ),
  );

describe('Publisher: one store operation per step per batch', () => {
  it('a cold batch of 10 documents: 1 upsert, 1 count + 1 list + 3 smoke queries, 1 advance, 1 flag patch, 1 confirm listing', async () => {
    const { publish } = await setup();
    const { report, perStep } = await publish(docs(10, 'v1'));
    expect(report.documents.map((d) => d.outcome)).toEqual(Array(10).fill('published'));
    expect(perStep).toEqual({
      stage: { upsert: 1 },
      verify: { countMany: 1, listMany: 1, query: 3 },
      // Nothing is replaced, so there is no validity bound to close: only the epoch moves.
      promote: { advanceEpoch: 1 },
      flag: { patchValidityMany: 1 },
      confirm: { listMany: 1 },
    });
  });

  it('replacing 10 documents: 1 bound patch, 1 flag patch (new on, old off), retire = 1 count + 1 delete', async () => {
    const { connector, publish } = await setup(new SpyConnector(), { graceEpochs: 0 });
    await publish(docs(10, 'v1'));
    const { report, perStep } = await publish(docs(10, 'v2'));
    expect(report.documents.map((d) => d.outcome)).toEqual(Array(10).fill('published'));
    expect(perStep).toEqual({
      stage: { upsert: 1 },
      verify: { countMany: 1, listMany: 1, query: 3 },
      promote: { patchValidityMany: 1, advanceEpoch: 1 },
      flag: { patchValidityMany: 1 },
      retire: { countMany: 1, deleteVersions: 1 },
      confirm: { listMany: 1 },
    });
    // Promote closes 10 versions; the flag call carries 20 patches (10 on, 10 off).
    expect(connector.sizes.get('patchValidityMany')?.slice(-2)).toEqual([10, 20]);
    expect(report.retiredChunks).toBe(30);
    // No single-version hook was used by the protocol.
    for (const single of ['patchValidity', 'count', 'list', 'deleteVersion'] as const)
      expect(connector.calls.get(single) ?? 0).toBe(0);
  });

  it('a batch beyond MAX_BATCH_REFS is sliced: ceil(n / 100) calls, a document never split', async () => {
    const n = MAX_BATCH_REFS + 50;
    const { connector, publish } = await setup(new SpyConnector(), { graceEpochs: 0 });
    await publish(docs(n, 'v1', 1));
    connector.sizes.clear();
    const { perStep } = await publish(docs(n, 'v2', 1));
    expect(perStep.verify).toEqual({ countMany: 2, listMany: 2, query: 3 });
    expect(perStep.promote).toEqual({ patchValidityMany: 2, advanceEpoch: 1 });
    // 300 flag patches in pairs per document: slices of 100, never splitting a pair.
    expect(connector.sizes.get('patchValidityMany')).toEqual([100, 50, 100, 100, 100]);
    expect(connector.sizes.get('countMany')).toEqual([100, 50, 100, 50]);
    expect(perStep.confirm).toEqual({ listMany: 2 });
  });
});

/** Reports one document's staged version as short by one chunk: verification of it fails. */
class UndercountingConnector extends SpyConnector {
  constructor(readonly lossy: string) {
    super();
  }
  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const counts = await super._countMany(refs);
    return counts.map((n, i) => (refs[i]!.documentId === this.lossy ? n - 1 : n));
  }
}

describe('Publisher: a batch with a document failing verification is held', () => {
  it('nothing is promoted; the failing document is verify-failed, the others held with state untouched', async () => {
    const v1 = docs(4, 'v1');
    const v2 = docs(4, 'v2');
    const connector = new UndercountingConnector(v2[2]!.documentId);
    const { state, publish } = await setup(connector, { verifyTimeoutMs: 50 });
    // Documents 0, 1, 3 are current; document 2 is new in the next batch, and counts short.
    await publish([v1[0]!, v1[1]!, v1[3]!]);
    const before = new Map<string, DocumentRecord | undefined>();
    for (const d of v1) before.set(d.documentId, await state.getDocument(d.documentId));
    const { report, perStep } = await publish(v2);
    expect(report.epoch).toBe(1);
    expect(await connector.readEpoch()).toBe(1);
    expect(report.documents.map((d) => d.outcome)).toEqual([
      'held',
      'held',
      'verify-failed',
      'held',
    ]);
    expect(report.documents[2]?.reasons.map(reasonLine)[0]).toMatch(
      /^verify-failed: count 2, expected 3/,
    );
    expect(report.documents[0]?.reasons.map(reasonLine)[0]).toMatch(/^batch-held: 1 document/);
    // Verify polled the failing document only after the first attempt; then one delete of the batch.
    expect(perStep.verify?.deleteVersions).toBe(1);
    expect(connector.sizes.get('deleteVersions')?.at(-1)).toBe(4);
    expect(perStep.promote).toBeUndefined();
    expect(connector.calls.get('patchValidityMany')).toBe(1); // the first batch's flag only
    for (const d of v2) expect(await connector.countChunks(d.documentId, d.versionId)).toBe(0);
    // Held documents: state as before (the new document has none); the failing one quarantined.
    for (const i of [0, 1, 3])
      expect(await state.getDocument(v1[i]!.documentId)).toEqual(before.get(v1[i]!.documentId));
    const failed = await state.getDocument(v2[2]!.documentId);
    expect(failed?.status).toBe('quarantined');
    expect(failed?.currentVersionId).toBeUndefined();
    // The old versions are still the current view.
    const hits = await connector.searchCurrent(v2[0]!.chunks[0]!.embedding, 100);
    expect(new Set(hits.map((h) => h.metadata[FIELDS.versionId]))).toEqual(
      new Set([v1[0]!.versionId, v1[1]!.versionId, v1[3]!.versionId]),
    );
    // Held documents publish in the next batch.
    const again = await publish([v2[0]!, v2[1]!, v2[3]!]);
    expect(again.report.documents.map((d) => d.outcome)).toEqual([
      'published',
      'published',
      'published',
    ]);
  });
});

/** Among equal scores returns the highest id first and only the top hit: never the middle probe. */
class TopTwinConnector extends SpyConnector {
  protected override async _query(
    v: readonly number[],
    k: number,
    f: QueryFilter,
  ): Promise<QueryHit[]> {
    const all = await super._query(v, Math.max(k, 1000), f);
    return all.sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : -1)).slice(0, 1);
  }
}

describe('Publisher: identical chunk texts', () => {
  it('a document of identical chunks and two same-text documents verify and publish (a twin of the probe counts)', async () => {
    const { connector, publish } = await setup(new TopTwinConnector(), { smokeSample: 10 });
    const same = ['Same text on two mirrors.', 'Second paragraph, also the same.'];
    const batch = [
      candidate('docs', 'https://e.com/boiler', Array(12).fill('Subscribe to our newsletter.')),
      candidate('docs', 'https://e.com/mirror-a', same),
      candidate('docs', 'https://e.com/mirror-b', same),
    ];
    expect(batch[1]!.versionId).toBe(batch[2]!.versionId);
    const { report, perStep } = await publish(batch);
    expect(report.documents.map((d) => [d.outcome, d.reasons])).toEqual([
      ['published', []],
      ['published', []],
      ['published', []],
    ]);
    expect(perStep.verify).toEqual({ countMany: 1, listMany: 1, query: 3 });
    for (const c of batch) {
      const listed = await connector.listChunks(c.documentId, c.versionId);
      expect(listed.map((l) => [l.metadata[FIELDS.current], l.metadata[FIELDS.from]])).toEqual(
        c.chunks.map(() => [true, 1]),
      );
    }
    // Replacing one mirror leaves the other (same versionId) current and stored.
    const { report: replaced } = await publish([
      candidate('docs', 'https://e.com/mirror-a', ['A new text for mirror a.']),
    ]);
    expect(replaced.documents[0]?.outcome).toBe('published');
    const b = await connector.listChunks(batch[2]!.documentId, batch[2]!.versionId);
    expect(b.map((l) => [l.metadata[FIELDS.current], l.metadata[FIELDS.to]])).toEqual([
      [true, 2_147_483_647],
      [true, 2_147_483_647],
    ]);
  });
});

/** Counts state writes per document. */
class CountingState extends InMemoryStateStore {
  readonly writes = new Map<string, number>();
  override async putDocument(record: DocumentRecord): Promise<void> {
    this.writes.set(record.documentId, (this.writes.get(record.documentId) ?? 0) + 1);
    await super.putDocument(record);
  }
}

describe('Publisher: the observation travels in the candidate', () => {
  it('validators and raw digest are recorded once, by the roll-forward write that makes the version current', async () => {
    const connector = new SpyConnector();
    await connector.open({ dimensions: DIMS });
    const state = new CountingState();
    const publisher = await Publisher.open({ connector, state });
    const base = candidate('docs', 'https://e.com/obs', ['Observed page text.']);
    const observed: PublishCandidate = {
      ...base,
      validators: {
        etag: '"abc"',
        lastModified: 'Tue, 01 Dec 2026 08:00:00 GMT',
        pipelineKey: 'k1',
      },
      rawDigest: 'sha256:0123',
    };
    await publisher.publish([observed]);
    expect(state.writes.get(base.documentId)).toBe(1);
    const record = await state.getDocument(base.documentId);
    expect(record).toMatchObject({
      currentVersionId: base.versionId,
      validators: {
        etag: '"abc"',
        lastModified: 'Tue, 01 Dec 2026 08:00:00 GMT',
        pipelineKey: 'k1',
      },
      rawDigest: 'sha256:0123',
      lastGoodAt: base.retrievedAt,
      goneCount: 0,
      status: 'healthy',
    });
    // A held or failed candidate's observation is not recorded as if it were current.
    const failing = new UndercountingConnector(base.documentId);
    await failing.open({ dimensions: DIMS });
    const state2 = new CountingState();
    const p2 = await Publisher.open({ connector: failing, state: state2, verifyTimeoutMs: 30 });
    const r = await p2.publish([observed]);
    expect(r.documents[0]?.outcome).toBe('verify-failed');
    const quarantined = await state2.getDocument(base.documentId);
    expect(quarantined?.validators).toBeUndefined();
    expect(quarantined?.rawDigest).toBeUndefined();
  });
});
