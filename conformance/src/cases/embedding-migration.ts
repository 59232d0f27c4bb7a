import {
  type Connector,
  describeEmbeddingSpace,
  type EmbeddingSpace,
  FIELDS,
  HashingEmbeddings,
  listCurrentChunks,
  Publisher,
  readSpaceRecord,
  respaceCandidates,
  writeSpaceRecord,
} from '@ragfresh/core';
import { embed } from '../corpus.js';
import type { CaseContext, ConformanceCase } from '../types.js';

const MIN_READS_EACH_SIDE = 5;

/** The corpus's deterministic embedding as a LangChain embeddings object: the old space. */
function corpusEmbeddings(dimensions: number): Parameters<typeof describeEmbeddingSpace>[0] {
  return {
    embedQuery: async (text: string) => embed(text, dimensions),
    embedDocuments: async (texts: string[]) => texts.map((t) => embed(t, dimensions)),
  };
}

interface Tally {
  reads: number;
  old: number;
  new: number;
  mixed: number;
  /** Reads that started after the migration's publication returned (answered, any space). */
  afterFlip: number;
  /** Of those, reads that still saw the old space. */
  oldAfterFlip: number;
}

/** `document#ordinal text` of every chunk in a connector's current view. */
async function currentView(connector: Connector, vector: readonly number[]) {
  const hits = await connector.searchCurrent(vector, 100);
  return {
    chunks: hits
      .map(
        (h) =>
          `${String(h.metadata[FIELDS.documentId])}#${String(h.metadata[FIELDS.ordinal])} ${h.text}`,
      )
      .sort(),
    spaces: [...new Set(hits.map((h) => String(h.metadata[FIELDS.space])))],
  };
}

async function runMigration(ctx: CaseContext, otherDimensions: boolean): Promise<void> {
  const dims = ctx.dimensions;
  const state = ctx.memoryState();
  const from = await describeEmbeddingSpace(corpusEmbeddings(dims));
  const model = new HashingEmbeddings({ dimensions: otherDimensions ? dims + 4 : dims, seed: 7 });
  const to: EmbeddingSpace = await describeEmbeddingSpace(model);
  const source = await ctx.connector();
  // Old versions stay stored through the case: a reader that read the old epoch can finish.
  const first = await ctx.publisher({ state, spaceId: from.id, graceMs: 600_000 });
  await first.publish(['a', 'b', 'c'].map((n, i) => ctx.corpus.generated(n, 'v1', 3 + i)));
  await first.close();
  await writeSpaceRecord(state, { active: from });
  const before = await currentView(source, embed('probe', dims));
  ctx.check(
    before.chunks.length === 12,
    `the old space's view holds ${before.chunks.length} of 12 chunks`,
  );

  const namespace = otherDimensions ? to.id : undefined;
  const target = namespace === undefined ? source : source.forNamespace(namespace);
  if (target !== source) {
    await target.open({ dimensions: to.dimensions });
    const [held, old] = [await target.readEpoch(), await source.readEpoch()];
    if (held < old) await target.advanceEpoch(held, old);
  }
  try {
    await writeSpaceRecord(state, {
      active: from,
      migration: {
        to,
        ...(namespace === undefined ? {} : { namespace }),
        startedAt: new Date().toISOString(),
      },
    });
    const tally: Tally = { reads: 0, old: 0, new: 0, mixed: 0, afterFlip: 0, oldAfterFlip: 0 };
    let flipped = false;
    let stop = false;
    const vectorB = await model.embedQuery('probe');
    // A reader as every role reads: the state's space record picks the namespace and the query
    // embeddings, the store's epoch the view.
    const reader = (async () => {
      while (!stop) {
        const afterFlip = flipped;
        const record = await readSpaceRecord(state);
        const inNew = record?.active.id === to.id;
        const connector = record?.namespace === undefined ? source : target;
        const hits = await connector.searchCurrent(inNew ? vectorB : embed('probe', dims), 100);
        const spaces = new Set(hits.map((h) => h.metadata[FIELDS.space]));
        tally.reads++;
        if (afterFlip) tally.afterFlip++;
        if (spaces.size > 1) tally.mixed++;
        else if (spaces.has(from.id)) {
          tally.old++;
          if (afterFlip) tally.oldAfterFlip++;
        } else if (spaces.has(to.id)) tally.new++;
        // Yield to timers: a driver whose calls settle as microtasks would starve the writer.
        await new Promise((r) => setTimeout(r, 1));
      }
    })();
    // Waits for n more answered reads (of those started after the move, once it returned): a
    // read in flight at the move may rightly answer from the old space and is not counted.
    const reads = async (n: number, counter: 'reads' | 'afterFlip' = 'reads') => {
      const until = tally[counter] + n;
      while (tally[counter] < until) await new Promise((r) => setTimeout(r, 5));
    };
    try {
      await reads(MIN_READS_EACH_SIDE);
      const current = await listCurrentChunks(source, state);
      const vectors = await model.embedDocuments(
        current.flatMap((d) => d.chunks.map((c) => c.text)),
      );
      const candidates = respaceCandidates(current, to, vectors);
      const publisher = await Publisher.open({
        connector: target,
        state,
        spaceId: to.id,
        graceMs: 600_000,
        ...(namespace === undefined ? {} : { namespace }),
      });
      try {
        const report = await ctx.time('migrate', () =>
          publisher.publish(candidates, { respace: true }),
        );
        ctx.check(
          report.documents.every((d) => d.outcome === 'published'),
          `the migration published ${report.documents.filter((d) => d.outcome === 'published').length} of ${candidates.length} documents`,
        );
      } finally {
        await publisher.close();
      }
      flipped = true;
      await reads(MIN_READS_EACH_SIDE, 'afterFlip');
    } finally {
      stop = true;
      await reader;
    }
    ctx.observe('reads', tally.reads);
    ctx.observe('oldSpaceReads', tally.old);
    ctx.observe('newSpaceReads', tally.new);
    ctx.observe('mixedReads', tally.mixed);
    ctx.check(
      tally.mixed === 0,
      `${tally.mixed} of ${tally.reads} reads returned chunks of both spaces`,
    );
    ctx.check(
      tally.oldAfterFlip === 0,
      `${tally.oldAfterFlip} reads that started after the move still saw the old space`,
    );
    ctx.check(
      tally.old >= MIN_READS_EACH_SIDE && tally.new >= MIN_READS_EACH_SIDE,
      `the reader saw the old space ${tally.old} and the new ${tally.new} times; expected both`,
    );
    const record = await readSpaceRecord(state);
    ctx.check(record?.active.id === to.id, 'the space record does not name the new space active');
    await ctx.eventually('new-space view', async () => {
      const after = await currentView(target, vectorB);
      ctx.check(
        after.spaces.length === 1 && after.spaces[0] === to.id,
        `the current view holds spaces ${after.spaces.join(', ')}, expected only ${to.id}`,
      );
      ctx.check(
        JSON.stringify(after.chunks) === JSON.stringify(before.chunks),
        `the new space's view holds ${after.chunks.length} chunks, not exactly the old space's ${before.chunks.length}`,
      );
    });
    ctx.observed(
      `mixed=${tally.mixed}, old after move=${tally.oldAfterFlip}, ${tally.reads} reads`,
    );
  } finally {
    if (target !== source) await target.close();
  }
}

const guarantee = (where: string) =>
  `A model change re-embeds every current chunk from its stored text into ${where} and moves readers in one epoch move: a polling reader never sees both spaces in one answer, sees only the new one once the move returned, and the new view holds exactly the old view's chunks.`;

export const embeddingMigrationSameDimensions: ConformanceCase = {
  id: 'embedding-migration',
  title: 'a model change of the same dimensions migrates in one epoch move',
  guarantee: guarantee('staged rows of the same collection'),
  whenItFails:
    'Staged rows of the new space must stay outside the epoch view until the advance (rf_from = T), the old rows must leave it at T (patchValidity to), and _listMany must return both spaces of a version as separate versions (their versionIds differ by the ~space suffix).',
  appliesTo: () => true,
  declared: () => 'mixed=0, old after move=0',
  run: (ctx) => runMigration(ctx, false),
};

export const embeddingMigrationNewDimensions: ConformanceCase = {
  id: 'embedding-migration-new-dimensions',
  title: 'a model change of other dimensions migrates into a new namespace',
  guarantee: guarantee('a new namespace of the store (forNamespace), the space record naming it'),
  whenItFails:
    "_forNamespace must build a connector of the same options whose collection / table is the name + `__<suffix>`, with its own epoch and fence, opened at the new dimensions without touching this one's.",
  appliesTo: (c) => c.namespaces === true,
  declared: () => 'mixed=0, old after move=0',
  run: (ctx) => runMigration(ctx, true),
};
