import { FIELDS, type FlatMetadata, type FlatValue, type StoredChunk } from '@ragfresh/core';
import {
  type ConformanceCase,
  hasLangChainReader,
  type LangChainReader,
  type LangChainReaderView,
} from '../types.js';
import { sameValue } from './helpers.js';

/** Custom fields whose types a validity patch must not change (the driver type traps). */
const TYPED_FIELDS: Readonly<Record<string, FlatValue>> = Object.freeze({
  cf_true: true,
  cf_false: false,
  cf_int: 7,
  cf_zero: 0,
  cf_large_int: 2_000_000_001,
  cf_float: 0.25,
  cf_numeric_text: '42',
  cf_boolean_text: 'true',
});

function typeDiff(expected: FlatMetadata, actual: FlatMetadata): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(expected)) {
    const got = actual[key];
    if (!sameValue(got, value)) {
      problems.push(
        `${key}: wrote ${typeof value} ${JSON.stringify(value)}, read ${got === undefined ? 'nothing' : `${typeof got} ${JSON.stringify(got)}`}`,
      );
    }
  }
  return problems;
}

export const metadataTypesAfterPatch: ConformanceCase = {
  id: 'metadata-types-after-patch',
  title: 'metadata types survive validity patches',
  guarantee:
    'After patchValidity and patchValidityMany set rf_to and flip rf_current on and off, every metadata field keeps its value and its type: rf_current is a boolean, rf_to / rf_from / rf_ordinal integers, custom booleans stay booleans, integers and floats numbers, numeric-looking strings strings — read back through listChunks and query.',
  whenItFails:
    "_patchValidity / _patchValidityMany writing the patch through the driver: a JavaScript boolean bound as a SQL parameter often reaches the store as 1/0 (SQLite, MySQL) or a JSON patch as text; write JSON true/false (json('true'), a jsonb literal) and integers as integers, and patch only rf_to / rf_current (a read-modify-write that re-encodes the whole metadata changes other fields' types). Also _list / _query decoding (authoring.md §5, driver type traps).",
  appliesTo: () => true,
  declared: () => 'types kept by patches',
  async run(ctx) {
    const connector = await ctx.connector();
    const epoch = await connector.readEpoch();
    const a = ctx.corpus.generated('typed-a', 'v1', 3);
    const b = ctx.corpus.generated('typed-b', 'v1', 2);
    const write = (c: typeof a): StoredChunk[] =>
      c.chunks.map((ch, ordinal) => ({
        id: ch.chunkId,
        text: ch.text,
        embedding: ch.embedding,
        metadata: {
          [FIELDS.chunkId]: ch.chunkId,
          [FIELDS.documentId]: ch.documentId,
          [FIELDS.versionId]: ch.versionId,
          [FIELDS.sourceId]: ch.sourceId,
          [FIELDS.ordinal]: ordinal,
          [FIELDS.from]: epoch + 1,
          [FIELDS.to]: 2_147_483_647,
          [FIELDS.current]: false,
          [FIELDS.source]: ch.provenance.url,
          [FIELDS.url]: ch.provenance.url,
          [FIELDS.title]: ch.provenance.title,
          [FIELDS.retrievedAt]: ch.provenance.retrievedAt,
          [FIELDS.tokenCount]: ch.tokenCount,
          ...TYPED_FIELDS,
        },
      }));
    const storedA = write(a);
    const storedB = write(b);
    await connector.upsert([...storedA, ...storedB]);
    // Single form: on, bounded, then off again (a false written as 0 shows only here).
    await connector.patchValidity(a.documentId, a.versionId, { current: true });
    await connector.patchValidity(a.documentId, a.versionId, { to: epoch + 5 });
    await connector.patchValidity(a.documentId, a.versionId, { current: false });
    // Batch form: both fields at once on b, only the flag on a.
    await connector.patchValidityMany([
      { documentId: b.documentId, versionId: b.versionId, patch: { current: true, to: epoch + 9 } },
      { documentId: a.documentId, versionId: a.versionId, patch: { current: true } },
    ]);
    const expected = new Map<string, FlatMetadata>([
      ...storedA.map(
        (c) =>
          [
            c.id,
            { ...c.metadata, [FIELDS.to]: epoch + 5, [FIELDS.current]: true } as FlatMetadata,
          ] as const,
      ),
      ...storedB.map(
        (c) =>
          [
            c.id,
            { ...c.metadata, [FIELDS.to]: epoch + 9, [FIELDS.current]: true } as FlatMetadata,
          ] as const,
      ),
    ]);
    let mismatches = 0;
    await ctx.eventually('patched', async () => {
      mismatches = 0;
      for (const doc of [a, b]) {
        const listed = await connector.listChunks(doc.documentId, doc.versionId);
        ctx.check(
          listed.length === doc.chunks.length,
          `listed ${listed.length} chunk(s) of ${doc.documentId}, wrote ${doc.chunks.length}`,
        );
        for (const row of listed) {
          const want = expected.get(String(row.metadata[FIELDS.chunkId]));
          if (want === undefined) continue;
          const problems = typeDiff(want, row.metadata);
          mismatches += problems.length;
          ctx.check(
            problems.length === 0,
            `listChunks after patches: ${problems.slice(0, 4).join('; ')}`,
          );
        }
        const hits = await connector.query(doc.chunks[0]!.embedding, doc.chunks.length, {
          view: { kind: 'flag' },
          documentId: doc.documentId,
        });
        ctx.check(
          hits.length === doc.chunks.length,
          `flag view returns ${hits.length} chunk(s) of ${doc.documentId} after { current: true }, expected ${doc.chunks.length} (is rf_current stored as a boolean the flag filter matches?)`,
        );
        for (const hit of hits) {
          const want = expected.get(String(hit.metadata[FIELDS.chunkId]));
          if (want === undefined) continue;
          const problems = typeDiff(want, hit.metadata);
          mismatches += problems.length;
          ctx.check(
            problems.length === 0,
            `query after patches: ${problems.slice(0, 4).join('; ')}`,
          );
        }
      }
    });
    ctx.observe('mismatches', mismatches);
    ctx.observed(mismatches === 0 ? 'types kept by patches' : `${mismatches} type mismatch(es)`);
  },
};

const READER_DOCS = 20;
const READER_K = 4;

interface Recall {
  readonly found: number;
  readonly leaked: number;
  readonly wrongText: number;
}

async function recallOf(
  reader: LangChainReader,
  current: ReadonlyArray<{
    readonly chunkId: string;
    readonly text: string;
    readonly embedding: readonly number[];
  }>,
  view: LangChainReaderView,
  inView: ReadonlySet<string>,
): Promise<Recall> {
  const ids = inView;
  let found = 0;
  let leaked = 0;
  let wrongText = 0;
  for (const chunk of current) {
    const hits = await reader.search(chunk.embedding, READER_K, view);
    leaked += hits.filter((h) => !ids.has(String(h.metadata[FIELDS.chunkId]))).length;
    const hit = hits.find((h) => h.metadata[FIELDS.chunkId] === chunk.chunkId);
    if (hit !== undefined) {
      found += 1;
      if (hit.pageContent !== chunk.text) wrongText += 1;
    }
  }
  return { found, leaked, wrongText };
}

export const langchainReader: ConformanceCase = {
  id: 'langchain-reader',
  title: "the store's LangChain class reads the current view",
  guarantee:
    "The LangChain class named in the manifest, reading what the Publisher wrote with the per-store doc's current-view filters (epoch and rf_current), returns only current chunks with their text, and — for recall 'complete' — finds every current chunk by its own vector (k = 4), both while the retired previous version is still stored with duplicate vectors (ragfresh reuses the vector of every unchanged chunk) and after it was deleted. For recall 'lossy' the measured recall is reported, not failed.",
  whenItFails:
    "A leak: the filter the fixture's langchainReader builds (and the per-store doc gives) does not select the current view, or the stored layout is not the one the class reads (column / payload names, metadata as flat JSON, rf_current a real boolean). Missing current chunks: the class's search is approximate and loses rows with duplicate vectors (or filters after a top-k): declare langchain.recall 'lossy' and document it in the per-store doc, or store the layout the class searches exactly. A missing langchainReader: the manifest names a class, so the fixture's target must supply langchainReader(namespace).",
  appliesTo: (c) => c.langchain !== undefined,
  declared: (c) => `${c.langchain?.recall ?? 'none'}: ${c.langchain?.class ?? ''}`,
  timeoutMs: 180_000,
  async run(ctx) {
    const claim = ctx.capabilities.langchain!;
    const target = ctx.target;
    if (!hasLangChainReader(target)) {
      ctx.check(
        false,
        `the manifest names ${claim.class}, but the fixture's target has no langchainReader(namespace); add one that opens the class on the namespace's data`,
      );
      ctx.observed('no langchainReader in the fixture');
      return;
    }
    const connector = await ctx.connector();
    const publisher = await ctx.publisher({ graceEpochs: 1 });
    const names = Array.from({ length: READER_DOCS }, (_, i) => `reader-${i}`);
    const v1 = names.map((n) => ctx.corpus.generated(n, 'v1', 3));
    // v2 keeps chunks 0 and 1 of v1 word for word (same vectors), and changes chunk 2.
    const v2 = names.map((n) => {
      const [c0, c1] = ctx.corpus.texts(n, 'v1', 2);
      return ctx.corpus.version(n, [c0!, c1!, ...ctx.corpus.texts(n, 'v2', 3).slice(2)]);
    });
    await publisher.publish(v1);
    await publisher.publish(v2);
    const current = v2.flatMap((d) => d.chunks);
    // Chunk ids of the current view: the replacements, and later the batch that ends the grace.
    const inView = new Set(current.map((c) => c.chunkId));
    const duplicates = v2.reduce(
      (n, d, i) =>
        n +
        d.chunks.filter((c) => v1[i]!.chunks.some((o) => o.embedding.join() === c.embedding.join()))
          .length,
      0,
    );
    const retiredStored = async () =>
      (
        await connector.countChunksMany(
          v1.map((d) => ({ documentId: d.documentId, versionId: d.versionId })),
        )
      ).reduce((s, n) => s + n, 0);
    const before = await retiredStored();
    ctx.check(
      before === v1.length * 3,
      `precondition: ${before} of ${v1.length * 3} retired v1 chunks still stored after the replacement (graceEpochs 1)`,
    );
    const reader = await target.langchainReader(ctx.namespace);
    const phases: string[] = [];
    const measure = async (phase: string) => {
      const epoch = await connector.readEpoch();
      for (const view of [{ kind: 'epoch', epoch }, { kind: 'flag' }] as LangChainReaderView[]) {
        let r: Recall = { found: 0, leaked: 0, wrongText: 0 };
        await ctx.eventually(`${phase}-${view.kind}`, async () => {
          r = await recallOf(reader, current, view, inView);
          ctx.check(
            r.leaked === 0,
            `${phase}, ${view.kind} filter: ${r.leaked} hit(s) outside the current view (retired or staged chunks)`,
          );
          ctx.check(
            r.wrongText === 0,
            `${phase}: ${r.wrongText} hit(s) with pageContent other than the chunk text`,
          );
          if (claim.recall === 'complete') {
            ctx.check(
              r.found === current.length,
              `${phase}, ${view.kind} filter: ${claim.class} found ${r.found} of ${current.length} current chunks by their own vector (k = ${READER_K}); recall 'complete' requires all`,
            );
          }
        });
        ctx.observe(`${phase}-${view.kind}-found`, r.found);
        ctx.observe(`${phase}-${view.kind}-leaked`, r.leaked);
        phases.push(`${phase} ${view.kind} ${r.found}/${current.length}`);
      }
    };
    try {
      await measure('retired-stored');
      // Another batch moves the epoch past the grace period; collection deletes v1.
      const tick = ctx.corpus.generated('reader-tick', 'v1', 1);
      await publisher.publish([tick]);
      for (const c of tick.chunks) inView.add(c.chunkId);
      await publisher.collectRetired();
      let after = -1;
      await ctx.eventually('collected', async () => {
        after = await retiredStored();
        ctx.check(after === 0, `precondition: ${after} retired v1 chunks still stored after grace`);
      });
      await measure('retired-deleted');
    } finally {
      await reader.close();
    }
    ctx.observe('currentChunks', current.length);
    ctx.observe('duplicateVectors', duplicates);
    ctx.observed(`${claim.recall}: ${phases.join(', ')}; ${duplicates} reused vectors`);
  },
};
