import {
  type Connector,
  FIELDS,
  type FlatMetadata,
  type ListedChunk,
  MAX_BATCH_REFS,
  OPEN_EPOCH,
  type PublishCandidate,
  reasonLine,
  toStoredChunk,
  type VersionPatch,
  type VersionRef,
} from '@ragfresh/core';
import type { Corpus } from '../corpus.js';
import type { CaseContext, ConformanceCase } from '../types.js';
import { chunkIdsOf, listInView, sameMembers, sleep, type ViewKind } from './helpers.js';

const ref = (c: PublishCandidate): VersionRef => ({
  documentId: c.documentId,
  versionId: c.versionId,
});

/** The same texts under two names: two documents that share one versionId (ids differ). */
const TWIN_TEXTS = [
  { text: 'Identical page text served at two URLs, paragraph one.' },
  { text: 'Identical page text served at two URLs, paragraph two.' },
];

/** One set of documents for the batch-vs-single comparison; `prefix` keeps the sets apart. */
function batchShape(corpus: Corpus, prefix: string) {
  return {
    a1: corpus.generated(`${prefix}-a`, 'v1', 4),
    a2: corpus.generated(`${prefix}-a`, 'v2', 3),
    b: corpus.generated(`${prefix}-b`, 'v1', 2),
    c: corpus.generated(`${prefix}-c`, 'v1', 5),
    t1: corpus.version(`${prefix}-twin-1`, TWIN_TEXTS),
    t2: corpus.version(`${prefix}-twin-2`, TWIN_TEXTS),
  };
}
type Shape = ReturnType<typeof batchShape>;

/** The patches both forms apply, in this order: several versions, only some of each document. */
function patchesOf(s: Shape, base: number): VersionPatch[] {
  return [
    { ...ref(s.a1), patch: { to: base + 5 } },
    { ...ref(s.b), patch: { current: true } },
    { ...ref(s.c), patch: { to: base + 6, current: false } },
    { ...ref(s.t2), patch: { to: base + 7 } },
  ];
}

/** What every chunk's [rf_to, rf_current] must be after the patches (staged at rf_from = base). */
function expectedValidity(s: Shape, base: number): Array<[PublishCandidate, number, boolean]> {
  return [
    [s.a1, base + 5, false],
    [s.a2, OPEN_EPOCH, false],
    [s.b, OPEN_EPOCH, true],
    [s.c, base + 6, false],
    [s.t1, OPEN_EPOCH, false],
    [s.t2, base + 7, false],
  ];
}

/** Metadata as JSON with sorted keys (stores need not keep key order), optionally without some keys. */
function canonical(m: FlatMetadata, without: readonly string[] = []): string {
  const rest = Object.entries(m).filter(([k]) => !without.includes(k));
  return JSON.stringify(rest.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Metadata without the validity fields: what a patch must leave untouched. */
function otherFields(m: FlatMetadata): string {
  return canonical(m, [FIELDS.to, FIELDS.current]);
}

/** `2 chunk(s): rf_to 7 / rf_current false ×2` — the validity states of a listing, counted. */
function describeListing(rows: readonly ListedChunk[]): string {
  const states = new Map<string, number>();
  for (const r of rows) {
    const key = `rf_to ${r.metadata[FIELDS.to]} / rf_current ${r.metadata[FIELDS.current]}`;
    states.set(key, (states.get(key) ?? 0) + 1);
  }
  const parts = [...states].map(([k, n]) => `${k} ×${n}`);
  return `${rows.length} chunk(s)${parts.length === 0 ? '' : `: ${parts.join(', ')}`}`;
}

/** Polls until `documentId`'s version counts `n` (eventual stores), up to the lag budget. */
async function settleCount(ctx: CaseContext, connector: Connector, r: VersionRef, n: number) {
  const v = ctx.capabilities.visibility;
  const deadline = performance.now() + (v.mode === 'immediate' ? 0 : v.maxLagMs * 2 + 1_000);
  for (;;) {
    if ((await connector.countChunks(r.documentId, r.versionId)) === n) return;
    if (performance.now() > deadline) return;
    await sleep(25);
  }
}

export const batchHooksAgree: ConformanceCase = {
  id: 'batch-hooks-agree',
  title: 'the batch forms of count, list, patch and delete do what the single forms do',
  guarantee:
    'Over a multi-document batch — several versions of one document, two documents sharing one versionId (same text at two URLs), absent refs, and more than MAX_BATCH_REFS documents — countChunksMany, listChunksMany, patchValidityMany and deleteVersions give exactly the results of countChunks, listChunks, patchValidity and deleteVersion one by one: patches and deletes touch only the named (document, version) pairs, and only rf_to / rf_current.',
  whenItFails:
    "The connector's _countMany / _listMany / _patchValidityMany / _deleteVersions overrides: select (document, version) pairs exactly — `rf_doc IN docs AND rf_version IN versions` is the cross product and matches a twin's version; return one count per ref in order (0 for an absent one); page through store limits; apply each patch's own fields to its own version only.",
  appliesTo: () => true,
  declared: () => 'batch = single for count, list, patch, delete',
  timeoutMs: 120_000,
  async run(ctx) {
    const connector = await ctx.connector();
    const base = (await connector.readEpoch()) + 1;
    const batch = batchShape(ctx.corpus, 'batch');
    const single = batchShape(ctx.corpus, 'single');
    const many = Array.from({ length: MAX_BATCH_REFS + 5 }, (_, i) =>
      ctx.corpus.generated(`many-${i}`, 'v1', 1),
    );
    const all = [...Object.values(batch), ...Object.values(single), ...many];
    await connector.upsert(all.flatMap((v) => v.chunks.map((c) => toStoredChunk(c, base))));
    for (const v of all) await settleCount(ctx, connector, ref(v), v.chunks.length);

    // Counts, with an absent version, an absent document and a repeated ref.
    const refs: VersionRef[] = [
      ...[batch.a1, batch.a2, batch.b, batch.c, batch.t1, batch.t2].map(ref),
      { documentId: batch.a1.documentId, versionId: 'vabsent' },
      { documentId: ctx.corpus.documentId('never-written'), versionId: batch.a1.versionId },
      ref(batch.a1),
    ];
    const expectedCounts = [4, 3, 2, 5, 2, 2, 0, 0, 4];
    let observedCounts: number[] = [];
    await ctx.eventually('counted', async () => {
      const counts = await ctx.time('countMany', () => connector.countChunksMany(refs));
      observedCounts = counts;
      const singles: number[] = [];
      for (const r of refs) singles.push(await connector.countChunks(r.documentId, r.versionId));
      ctx.observe('counts', counts);
      ctx.check(
        counts.join() === expectedCounts.join(),
        `countChunksMany gives [${counts.join(', ')}], expected [${expectedCounts.join(', ')}]`,
      );
      ctx.check(
        counts.join() === singles.join(),
        `countChunksMany gives [${counts.join(', ')}], countChunks one by one [${singles.join(', ')}]`,
      );
      const manyCounts = await connector.countChunksMany(many.map(ref));
      const wrong = manyCounts.filter((n) => n !== 1).length;
      ctx.check(
        manyCounts.length === many.length && wrong === 0,
        `countChunksMany over ${many.length} versions (more than one hook call): ${wrong} count(s) are not 1`,
      );
    });

    // Listings: the same rows as listChunks, document by document.
    const docs = [batch.a1, batch.b, batch.c, batch.t1, batch.t2].map((v) => v.documentId);
    const absent = ctx.corpus.documentId('never-written');
    await ctx.eventually('listed', async () => {
      const listed = await ctx.time('listMany', () =>
        connector.listChunksMany([...docs, absent], { withEmbeddings: true }),
      );
      for (const doc of docs) {
        const one = await connector.listChunks(doc);
        const got = listed.get(doc) ?? [];
        ctx.check(
          sameMembers(chunkIdsOf(got), chunkIdsOf(one)) &&
            got.every((r) =>
              one.some(
                (o) =>
                  o.id === r.id &&
                  o.text === r.text &&
                  canonical(o.metadata) === canonical(r.metadata),
              ),
            ),
          `listChunksMany returns ${got.length} chunk(s) of ${doc}, listChunks ${one.length} (or text/metadata differ)`,
        );
        ctx.check(
          got.every((r) => r.embedding?.length === ctx.dimensions),
          `listChunksMany({ withEmbeddings: true }) returns chunks of ${doc} without their vectors`,
        );
      }
      ctx.check(
        (listed.get(absent) ?? ['?']).length === 0,
        'listChunksMany returns chunks for a document that was never written',
      );
      const manyListed = await connector.listChunksMany(many.map((v) => v.documentId));
      const wrong = many.filter((v) => (manyListed.get(v.documentId) ?? []).length !== 1).length;
      ctx.check(
        wrong === 0,
        `listChunksMany over ${many.length} documents: ${wrong} document(s) do not list their 1 chunk`,
      );
    });

    // Patches: the batch form on one set, the single form on its twin set; same outcome.
    const before = new Map<string, string>();
    for (const v of Object.values(batch)) {
      for (const r of await connector.listChunks(v.documentId, v.versionId))
        before.set(String(r.metadata[FIELDS.chunkId]), otherFields(r.metadata));
    }
    await ctx.time('patchMany', () => connector.patchValidityMany(patchesOf(batch, base)));
    for (const p of patchesOf(single, base))
      await connector.patchValidity(p.documentId, p.versionId, p.patch);
    await ctx.eventually('patched', async () => {
      for (const [shape, form] of [
        [batch, 'patchValidityMany'],
        [single, 'patchValidity'],
      ] as const) {
        for (const [v, to, current] of expectedValidity(shape, base)) {
          const rows = await connector.listChunks(v.documentId, v.versionId);
          const ok =
            rows.length === v.chunks.length &&
            rows.every(
              (r) =>
                r.metadata[FIELDS.to] === to &&
                r.metadata[FIELDS.current] === current &&
                r.metadata[FIELDS.from] === base,
            );
          ctx.check(
            ok,
            `after ${form}, ${v.documentId} ${v.versionId} holds ${describeListing(rows)}, expected rf_to ${to}, rf_current ${current} on ${v.chunks.length} chunk(s)`,
          );
          if (shape !== batch) continue;
          const changed = rows.filter(
            (r) => before.get(String(r.metadata[FIELDS.chunkId])) !== otherFields(r.metadata),
          );
          ctx.check(
            changed.length === 0,
            `patchValidityMany changed fields other than rf_to/rf_current on ${changed.length} chunk(s) of ${v.documentId}`,
          );
        }
      }
    });

    // Deletes: named versions only; absent refs are no-ops.
    const doomed = (s: Shape): VersionRef[] => [
      ref(s.a2),
      ref(s.t1),
      { documentId: s.c.documentId, versionId: 'vabsent' },
      { documentId: ctx.corpus.documentId('never-written'), versionId: s.a1.versionId },
    ];
    await ctx.time('deleteMany', () => connector.deleteVersions(doomed(batch)));
    for (const r of doomed(single)) await connector.deleteVersion(r.documentId, r.versionId);
    await connector.deleteVersions(many.map(ref));
    await ctx.eventually('deleted', async () => {
      for (const [shape, form] of [
        [batch, 'deleteVersions'],
        [single, 'deleteVersion'],
      ] as const) {
        const left = [shape.a1, shape.a2, shape.b, shape.c, shape.t1, shape.t2];
        const counts: number[] = [];
        for (const v of left) counts.push(await connector.countChunks(v.documentId, v.versionId));
        ctx.check(
          counts.join() === '4,0,2,5,0,2',
          `after ${form}, versions a1,a2,b,c,twin-1,twin-2 count [${counts.join(', ')}], expected [4, 0, 2, 5, 0, 2]`,
        );
      }
      let manyLeft = 0;
      for (const v of many) manyLeft += await connector.countChunks(v.documentId, v.versionId);
      ctx.observe('manyLeft', manyLeft);
      ctx.check(
        manyLeft === 0,
        `deleteVersions over ${many.length} versions left ${manyLeft} chunk(s)`,
      );
    });
    ctx.observed(
      `counts [${observedCounts.join(', ')}]; ${many.length} refs in ${Math.ceil(many.length / MAX_BATCH_REFS)} hook calls; patches and deletes checked on 12 versions`,
    );
  },
};

export const batchVerifyFailHolds: ConformanceCase = {
  id: 'batch-verify-fail-holds',
  title: 'one document failing verification leaves the whole batch unpromoted',
  guarantee:
    'When one document of a batch is not queryable at verification, nothing of the batch is promoted: the epoch stays, no chunk of the batch is in the epoch or flag view, every replaced (and to-be-removed) version stays current and complete, the staged chunks are deleted; the failing document is verify-failed (quarantined, old version kept), the others are held with their state untouched, and publish again in the next batch.',
  whenItFails:
    '_countMany / _listMany must read the store exactly (a count that echoes what was written passes a document whose chunks are gone); _deleteVersions must remove every staged chunk of the batch; _patchValidityMany must not have run (nothing is closed before verification passes).',
  appliesTo: () => true,
  declared: () => 'held: epoch unchanged, 0 batch chunks visible',
  timeoutMs: 120_000,
  async run(ctx) {
    const connector = await ctx.connector();
    const state = ctx.memoryState();
    let sabotage: (() => Promise<void>) | undefined;
    const vis = ctx.capabilities.visibility;
    const publisher = await ctx.publisher({
      state,
      graceEpochs: 1,
      // Immediate stores verify at the first attempt; do not wait 2 s for the one that fails.
      ...(vis.mode === 'immediate' ? { verifyTimeoutMs: 300 } : {}),
      hooks: {
        beforeStep: async (step) => {
          if (step === 'staged' && sabotage !== undefined) await sabotage();
        },
      },
    });
    const names = ['a', 'b', 'c', 'e'];
    const v1 = names.map((n) => ctx.corpus.generated(`held-${n}`, 'v1', 3));
    const first = await publisher.publish(v1);
    ctx.check(
      first.documents.every((d) => d.outcome === 'published'),
      `first publication: ${first.documents.map((d) => d.outcome).join(', ')}`,
    );
    const epoch = await connector.readEpoch();
    const [a1, b1, c1, e1] = v1 as [
      PublishCandidate,
      PublishCandidate,
      PublishCandidate,
      PublishCandidate,
    ];
    const a2 = ctx.corpus.generated('held-a', 'v2', 4);
    const b2 = ctx.corpus.generated('held-b', 'v2', 4);
    const c2 = ctx.corpus.generated('held-c', 'v2', 2);
    const d1 = ctx.corpus.generated('held-d', 'v1', 3);
    const removal = { documentId: e1.documentId, reason: 'conformance: removal in a held batch' };
    // b's staged chunks vanish between staging and verification (a lost write).
    sabotage = async () => {
      await connector.deleteVersion(b2.documentId, b2.versionId);
      await settleCount(ctx, connector, ref(b2), 0);
    };
    const report = await ctx.time('failingBatch', () =>
      publisher.publish([a2, b2, c2, d1], { removals: [removal] }),
    );
    sabotage = undefined;
    const outcome = new Map(report.documents.map((d) => [d.documentId, d.outcome]));
    const outcomes = [a2, b2, c2, d1, e1].map((v) => outcome.get(v.documentId) ?? 'none');
    ctx.observe('outcomes', outcomes);
    ctx.check(
      outcomes.join() === 'held,verify-failed,held,held,held',
      `outcomes a,b,c,d(new),e(removal) are ${outcomes.join(', ')}, expected held, verify-failed, held, held, held`,
    );
    const after = await connector.readEpoch();
    ctx.check(
      after === epoch && report.epoch === epoch,
      `epoch moved ${epoch} -> ${after} (report ${report.epoch}) although the batch failed verification`,
    );
    const staged = new Set([a2, b2, c2, d1].flatMap((v) => v.chunks.map((c) => c.chunkId)));
    let visible = 0;
    await ctx.eventually('held', async () => {
      visible = 0;
      for (const kind of ['epoch', 'flag'] as ViewKind[]) {
        for (const [old, next] of [
          [a1, a2],
          [b1, b2],
          [c1, c2],
          [e1, undefined],
          [undefined, d1],
        ] as const) {
          const doc = (old ?? next)!.documentId;
          const ids = await listInView(connector, doc, kind);
          const leaked = ids.filter((id) => staged.has(id)).length;
          visible += leaked;
          const want = old === undefined ? [] : old.chunks.map((c) => c.chunkId);
          ctx.check(
            sameMembers(ids, want),
            `${kind} view of ${doc} holds ${ids.length} chunk(s) (${leaked} of the failed batch), expected its ${want.length} old one(s)`,
          );
        }
      }
      const unscoped = await connector.searchCurrent(a2.chunks[0]!.embedding, 50);
      const leaked = unscoped.filter((h) => staged.has(String(h.metadata[FIELDS.chunkId])));
      visible += leaked.length;
      ctx.check(
        leaked.length === 0,
        `an unscoped epoch reader sees ${leaked.length} chunk(s) of the failed batch`,
      );
      for (const v of [a2, b2, c2, d1]) {
        const left = await connector.countChunks(v.documentId, v.versionId);
        ctx.check(
          left === 0,
          `${left} staged chunk(s) of ${v.documentId} left after the batch failed`,
        );
      }
      for (const v of [a1, b1, c1, e1]) {
        const rows = await connector.listChunks(v.documentId, v.versionId);
        ctx.check(
          rows.length === v.chunks.length &&
            rows.every(
              (r) => r.metadata[FIELDS.to] === OPEN_EPOCH && r.metadata[FIELDS.current] === true,
            ),
          `old version of ${v.documentId} is ${describeListing(rows)}, expected ${v.chunks.length} chunk(s) open and current`,
        );
      }
    });
    ctx.observe('batchChunksVisible', visible);
    const records = await Promise.all(
      [a1, b1, c1, e1, d1].map((v) => state.getDocument(v.documentId)),
    );
    const [ra, rb, rc, re, rd] = records;
    ctx.check(
      [ra, rc, re].every(
        (r, i) => r?.currentVersionId === [a1, c1, e1][i]!.versionId && r?.status === 'healthy',
      ),
      `held documents' state changed: ${[ra, rc, re].map((r) => `${r?.status}/${r?.currentVersionId}`).join(', ')}`,
    );
    ctx.check(
      rb?.status === 'quarantined' && rb.currentVersionId === b1.versionId,
      `the failing document's state is ${rb?.status}/${rb?.currentVersionId}, expected quarantined with its old version current`,
    );
    ctx.check(rd === undefined, 'a held new document got a state record');
    ctx.check(
      (await state.getJournal()) === undefined,
      'the journal was not cleared after the held batch',
    );

    // The held documents publish in the next batch.
    const retry = await ctx.time('retryBatch', () =>
      publisher.publish([a2, c2, d1], { removals: [removal] }),
    );
    const retried = [a2, c2, d1, e1].map(
      (v) => retry.documents.find((d) => d.documentId === v.documentId)?.outcome ?? 'none',
    );
    ctx.check(
      retried.join() === 'published,published,published,removed',
      `retrying the held documents gave ${retried.join(', ')}, expected published ×3, removed`,
    );
    await ctx.eventually('retried', async () => {
      for (const [doc, want] of [
        [a2.documentId, a2],
        [b1.documentId, b1],
        [c2.documentId, c2],
        [d1.documentId, d1],
        [e1.documentId, undefined],
      ] as const) {
        const ids = await listInView(connector, doc, 'epoch');
        const expected = want === undefined ? [] : want.chunks.map((c) => c.chunkId);
        ctx.check(
          sameMembers(ids, expected),
          `after the retry, the epoch view of ${doc} holds ${ids.length} chunk(s), expected ${expected.length}`,
        );
      }
    });
    ctx.observed(
      `${outcomes.join('/')}; epoch ${epoch} -> ${after}; ${visible} batch chunks visible; retry ${retried.join('/')}`,
    );
  },
};

export const identicalChunkTexts: ConformanceCase = {
  id: 'identical-chunk-texts',
  title: 'repeated chunk texts verify and publish',
  guarantee:
    'A document made of 12 identical chunks (identical vectors), two documents with the same text (one shared versionId), and a document mixing both all verify and publish in one batch with every chunk in the epoch and flag views; replacing one of the two same-text documents leaves the other fully current, and grace collection never deletes it.',
  whenItFails:
    'Ties among identical vectors in _query (any of them may come first; do not collapse duplicates), and (document, version) selection in _patchValidityMany / _deleteVersions / _countMany: a filter on the version alone, or the cross product of documents and versions, touches the other document with the same versionId.',
  appliesTo: () => true,
  declared: () => 'identical texts: published, same-text neighbour kept',
  timeoutMs: 120_000,
  async run(ctx) {
    const connector = await ctx.connector();
    const publisher = await ctx.publisher({ graceEpochs: 1, smokeSample: 4 });
    const boilerplate = { text: 'Subscribe to our newsletter for product updates.' };
    const shared = [
      { text: 'Shared text, first paragraph of a mirrored page.' },
      { text: 'Shared text, second paragraph of a mirrored page.' },
      { text: 'Shared text, third paragraph of a mirrored page.' },
    ];
    const repeated = ctx.corpus.version(
      'repeated',
      Array.from({ length: 12 }, () => boilerplate),
    );
    const mirrorA = ctx.corpus.version('mirror-a', shared);
    const mirrorB = ctx.corpus.version('mirror-b', shared);
    const mixed = ctx.corpus.version('mixed', [...shared, boilerplate, boilerplate, boilerplate]);
    ctx.check(
      mirrorA.versionId === mirrorB.versionId,
      'the suite built two same-text documents with different versionIds (suite bug)',
    );
    const docs = [repeated, mirrorA, mirrorB, mixed];
    const report = await ctx.time('publish', () => publisher.publish(docs));
    const outcomes = report.documents.map((d) => d.outcome);
    ctx.check(
      outcomes.every((o) => o === 'published'),
      `publishing identical texts gave ${report.documents.map((d) => `${d.outcome}${d.reasons.length > 0 ? ` (${d.reasons.map(reasonLine).join('; ')})` : ''}`).join(', ')}`,
    );
    const check = async (label: string, expected: readonly PublishCandidate[]) => {
      for (const kind of ['epoch', 'flag'] as ViewKind[]) {
        for (const v of expected) {
          const ids = await listInView(connector, v.documentId, kind);
          ctx.check(
            sameMembers(
              ids,
              v.chunks.map((c) => c.chunkId),
            ),
            `${label}: the ${kind} view of ${v.documentId} holds ${ids.length} chunk(s), expected its ${v.chunks.length}`,
          );
        }
      }
      const current = expected.find((v) => v.documentId === repeated.documentId)!;
      const hits = await connector.searchCurrent(current.chunks[0]!.embedding, 12, {
        documentId: repeated.documentId,
      });
      ctx.observe(`${label.replace(/\W+/g, '-')}-repeatedHits`, hits.length);
      // ANN indexes may return fewer than all 12 ties (partial reads are reported, not failed).
      ctx.check(
        hits.length > 0 && hits.every((h) => h.metadata[FIELDS.versionId] === current.versionId),
        `${label}: a scoped query with the repeated chunk's vector returns ${hits.length} hit(s), not all of the current version`,
      );
    };
    await ctx.eventually('published', () => check('after publishing', docs));

    // Replace one mirror: the other (same versionId) must stay current, then stay stored.
    const mirrorA2 = ctx.corpus.generated('mirror-a', 'v2', 2);
    const repeated2 = ctx.corpus.version(
      'repeated',
      Array.from({ length: 12 }, () => ({ text: 'Accept all cookies to continue.' })),
    );
    const replaced = await ctx.time('replace', () => publisher.publish([mirrorA2, repeated2]));
    ctx.check(
      replaced.documents.every((d) => d.outcome === 'published'),
      `replacing gave ${replaced.documents.map((d) => d.outcome).join(', ')}`,
    );
    await ctx.eventually('replaced', () =>
      check('after replacing mirror-a', [repeated2, mirrorA2, mirrorB, mixed]),
    );
    await publisher.publish([ctx.corpus.generated('tick', 'v1', 1)]);
    await publisher.collectRetired();
    let neighbour = -1;
    await ctx.eventually('collected', async () => {
      neighbour = await connector.countChunks(mirrorB.documentId, mirrorB.versionId);
      const oldA = await connector.countChunks(mirrorA.documentId, mirrorA.versionId);
      ctx.check(
        neighbour === shared.length,
        `grace collection of mirror-a's old version left ${neighbour} of the ${shared.length} chunks of mirror-b (same versionId)`,
      );
      ctx.check(oldA === 0, `${oldA} chunk(s) of mirror-a's replaced version left after grace`);
    });
    ctx.observe('neighbourChunks', neighbour);
    ctx.observed(
      outcomes.every((o) => o === 'published') && neighbour === shared.length
        ? 'identical texts: published, same-text neighbour kept'
        : `outcomes ${outcomes.join('/')}, neighbour ${neighbour}/${shared.length}`,
    );
  },
};

export const batchCases: readonly ConformanceCase[] = [
  batchHooksAgree,
  batchVerifyFailHolds,
  identicalChunkTexts,
];
