import { FIELDS, type PromotionGuarantee, type PublishCandidate, reasonLine } from '@ragfresh/core';
import type { CaseContext, ConformanceCase } from '../types.js';
import { readDocument, round, type ViewKind } from './helpers.js';

const DOCUMENTS = 4;
const READERS = 4;
const ROUNDS = 3;
const MIN_READS_PER_READER = 25;
/** Chunk counts per round: versions differ in size so a partial view is visible as one. */
const SIZES = [5, 4, 6, 5];

interface Tally {
  reads: number;
  both: number;
  neither: number;
  partial: number;
  readsWhilePublishing: number;
  batchReads: number;
  mixedBatch: number;
}

function forbids(g: PromotionGuarantee): { both: boolean; neither: boolean } {
  return { both: g !== 'overlap', neither: g !== 'gap' };
}

function expectation(g: PromotionGuarantee): string {
  const f = forbids(g);
  return `${g}: ${[f.both ? 'both=0' : '', f.neither ? 'neither=0' : ''].filter(Boolean).join(', ')}`;
}

async function runPromotion(
  ctx: CaseContext,
  kind: ViewKind,
  guarantee: PromotionGuarantee,
): Promise<void> {
  const connector = await ctx.connector();
  // Replaced versions stay stored for the whole case: batched publications move the epoch
  // faster than a slow reader's query on a loaded machine, and this case proves promotion, not
  // retirement (retire-after-grace proves that).
  const publisher = await ctx.publisher({ graceEpochs: 2, graceMs: 600_000 });
  const names = Array.from({ length: DOCUMENTS }, (_, i) => `doc${i}`);
  const rounds: PublishCandidate[][] = SIZES.slice(0, ROUNDS + 1).map((size, r) =>
    names.map((n, i) => ctx.corpus.generated(n, `v${r + 1}`, size + (i % 2))),
  );
  const generation = new Map<string, number>();
  const sizeOf = new Map<string, number>();
  rounds.forEach((batch, r) => {
    for (const v of batch) {
      generation.set(v.versionId, r);
      sizeOf.set(v.versionId, v.chunks.length);
    }
  });
  const first = await publisher.publish(rounds[0]!);
  ctx.check(
    first.documents.every((d) => d.outcome === 'published'),
    'the initial publication did not publish every document',
  );
  const k = Math.max(...SIZES) * 2 + 4;
  const tally: Tally = {
    reads: 0,
    both: 0,
    neither: 0,
    partial: 0,
    readsWhilePublishing: 0,
    batchReads: 0,
    mixedBatch: 0,
  };
  let publishing = true;
  const examples: string[] = [];

  const reader = async (r: number): Promise<void> => {
    let own = 0;
    for (let i = r; publishing || own < MIN_READS_PER_READER; i++, own++) {
      const during = publishing;
      if (kind === 'epoch' && r === 0 && i % 2 === 0) {
        // A reader of the whole batch: one epoch must show one generation across documents.
        const hits = await connector.searchCurrent(
          rounds[0]![0]!.chunks[0]!.embedding,
          k * DOCUMENTS,
          {
            sourceId: ctx.corpus.sourceId,
          },
        );
        const gens = new Set(hits.map((h) => generation.get(String(h.metadata[FIELDS.versionId]))));
        tally.batchReads++;
        if (gens.size > 1) tally.mixedBatch++;
        continue;
      }
      const d = i % DOCUMENTS;
      const docId = rounds[0]![d]!.documentId;
      const hits = await readDocument(
        connector,
        docId,
        rounds[0]![d]!.chunks[0]!.embedding,
        k,
        kind,
      );
      tally.reads++;
      if (during) tally.readsWhilePublishing++;
      const versions = new Map<string, number>();
      for (const h of hits) {
        const v = String(h.metadata[FIELDS.versionId]);
        versions.set(v, (versions.get(v) ?? 0) + 1);
      }
      if (versions.size > 1) {
        tally.both++;
        if (examples.length < 3)
          examples.push(
            `both: ${docId} showed ${[...versions.keys()].map((v) => `v${(generation.get(v) ?? -1) + 1}`).join('+')}`,
          );
      } else if (versions.size === 0) {
        tally.neither++;
        if (examples.length < 3) examples.push(`neither: ${docId} showed no chunk`);
      } else {
        const [v, n] = [...versions][0]!;
        if (sizeOf.get(v) !== n) tally.partial++;
      }
    }
  };

  const writer = async (): Promise<number> => {
    const started = performance.now();
    try {
      for (let r = 1; r <= ROUNDS; r++) {
        const report = await publisher.publish(rounds[r]!);
        const bad = report.documents.filter((d) => d.outcome !== 'published');
        ctx.check(
          bad.length === 0,
          `round ${r}: ${bad.length} document(s) not published (${bad[0]?.outcome}: ${bad[0]?.reasons.map(reasonLine).join('; ')})`,
        );
      }
    } finally {
      publishing = false;
    }
    return performance.now() - started;
  };

  const [publishMs] = await Promise.all([
    writer(),
    ...Array.from({ length: READERS }, (_, r) => reader(r)),
  ]);
  for (const [key, value] of Object.entries(tally)) ctx.observe(key, value);
  ctx.observe('publishMs', round(publishMs));
  ctx.observe('documents', DOCUMENTS);
  ctx.observe('readers', READERS);
  ctx.observe('rounds', ROUNDS);
  if (examples.length > 0) ctx.observe('examples', examples);
  const f = forbids(guarantee);
  ctx.check(
    tally.readsWhilePublishing > 0,
    'no read overlapped a publication; the case proved nothing (readers too slow to start?)',
  );
  if (f.both)
    ctx.check(
      tally.both === 0,
      `declared ${guarantee}, but ${tally.both} of ${tally.reads} reads saw two versions of a document (${examples.find((e) => e.startsWith('both')) ?? ''})`,
    );
  if (f.neither)
    ctx.check(
      tally.neither === 0,
      `declared ${guarantee}, but ${tally.neither} of ${tally.reads} reads saw no version of a document`,
    );
  if (guarantee === 'snapshot' && kind === 'epoch') {
    ctx.check(
      tally.mixedBatch === 0,
      `declared snapshot, but ${tally.mixedBatch} of ${tally.batchReads} batch reads mixed generations across documents`,
    );
  }
  // After the last round every reader must see exactly the final version.
  await ctx.eventually('final', async () => {
    for (const v of rounds[ROUNDS]!) {
      const hits = await readDocument(connector, v.documentId, v.chunks[0]!.embedding, k, kind);
      const wrong = hits.filter((h) => h.metadata[FIELDS.versionId] !== v.versionId).length;
      ctx.check(
        wrong === 0 && hits.length === v.chunks.length,
        `after publishing, ${kind} readers of ${v.documentId} see ${hits.length - wrong} current and ${wrong} other chunk(s)`,
      );
    }
  });
  const observedGuarantee =
    tally.both === 0 && tally.neither === 0
      ? 'snapshot/atomic'
      : tally.neither === 0
        ? 'overlap'
        : tally.both === 0
          ? 'gap'
          : 'none';
  ctx.observed(
    `${observedGuarantee}: both=${tally.both}, neither=${tally.neither}, partial=${tally.partial} of ${tally.reads} reads${kind === 'epoch' ? `, mixed=${tally.mixedBatch}/${tally.batchReads}` : ''}`,
  );
}

export const promotionEpochReaders: ConformanceCase = {
  id: 'promotion-epoch-readers',
  title: 'promotion under concurrent epoch readers (searchCurrent)',
  guarantee:
    'While documents are republished, readers that read the published epoch and query its view (searchCurrent scoped by document) see what the declared promotion guarantee promises: snapshot/atomic never both versions nor neither (snapshot: never two generations across the batch), overlap never neither, gap never both.',
  whenItFails:
    'The epoch view filter in _query (rf_from <= E AND E < rf_to, both bounds, compared as numbers), _readEpoch reading the same store the query reads, _patchValidityMany closing every replaced version ({ to: T }) before core calls _advanceEpoch, and _advanceEpoch being one write. A reader that asked for an epoch must not be answered from rf_current. If the store cannot filter two numeric bounds inside the vector query, declare a weaker promotion.',
  appliesTo: () => true,
  declared: (c) => expectation(c.promotion),
  timeoutMs: 120_000,
  run: (ctx) => runPromotion(ctx, 'epoch', ctx.capabilities.promotion),
};

export const promotionFlagReaders: ConformanceCase = {
  id: 'promotion-flag-readers',
  title: 'promotion under concurrent rf_current readers',
  guarantee:
    'While documents are republished, readers that only filter rf_current = true (query with the flag view, scoped by document) see what the declared flagPromotion guarantee promises: atomic never both nor neither, overlap never neither, gap never both.',
  whenItFails:
    "The flag flip reaches _patchValidityMany as one call holding the new versions' { current: true } and the replaced versions' { current: false }. atomic: apply the whole call in one transaction (the default _patchValidityMany loops _patchValidity, one commit per version: override it, or declare overlap). overlap: apply the patches in the order given (current: true first), never clearing before setting. _patchValidity must touch only the version it names: clearing the document's other versions there is not how atomic flags are made.",
  appliesTo: () => true,
  declared: (c) => expectation(c.flagPromotion),
  timeoutMs: 120_000,
  run: (ctx) => runPromotion(ctx, 'flag', ctx.capabilities.flagPromotion),
};
