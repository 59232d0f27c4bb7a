import { FIELDS, reasonLine } from '@ragfresh/core';
import type { ConformanceCase } from '../types.js';
import {
  byVersion,
  describeVersions,
  listInView,
  readDocument,
  sameMembers,
  type ViewKind,
} from './helpers.js';

export const shorterReplacement: ConformanceCase = {
  id: 'shorter-replacement',
  title: 'a shorter version leaves no trailing chunk',
  guarantee:
    'Replacing a 6-chunk version with a 3-chunk one leaves exactly the 3 new chunks in the current view (epoch and flag readers, query and listing), and once the grace period passed exactly those 3 stored.',
  whenItFails:
    "Chunk ids include the version, so old ordinals 3..5 are not overwritten: the old version must be closed by (document, version) in _patchValidityMany (or _patchValidity, which the default loops) and deleted by (document, version) in _deleteVersions (or _deleteVersion), not by the new version's ids.",
  appliesTo: () => true,
  declared: () => 'new version only; old gone after grace',
  async run(ctx) {
    const connector = await ctx.connector();
    const publisher = await ctx.publisher({ graceEpochs: 1 });
    const long = ctx.corpus.generated('page', 'long', 6);
    const short = ctx.corpus.generated('page', 'short', 3);
    await publisher.publish([long]);
    await ctx.time('replace', () => publisher.publish([short]));
    const expected = short.chunks.map((c) => c.chunkId);
    let seen: string[] = [];
    await ctx.eventually('replaced', async () => {
      seen = [];
      for (const kind of ['epoch', 'flag'] as ViewKind[]) {
        const hits = await readDocument(
          connector,
          short.documentId,
          long.chunks[5]!.embedding,
          20,
          kind,
        );
        const ids = hits.map((h) => String(h.metadata[FIELDS.chunkId]));
        seen.push(
          `${kind}: ${describeVersions(
            byVersion(hits),
            new Map([
              [long.versionId, 'long'],
              [short.versionId, 'short'],
            ]),
          )}`,
        );
        ctx.check(
          sameMembers(ids, expected),
          `${kind} readers see ${ids.length} chunk(s) (${describeVersions(byVersion(hits))}), expected the 3 new ones`,
        );
        const listed = await listInView(connector, short.documentId, kind);
        ctx.check(
          sameMembers(listed, expected),
          `listing the ${kind} view shows ${listed.length} chunk(s), expected the 3 new ones`,
        );
      }
    });
    // Another batch moves the epoch past the grace period; collection runs at its end.
    await publisher.publish([ctx.corpus.generated('other', 'v1', 2)]);
    await publisher.collectRetired();
    let stored: Awaited<ReturnType<typeof connector.listChunks>> = [];
    await ctx.eventually('collected', async () => {
      stored = await connector.listChunks(short.documentId);
      ctx.observe('storedAfterGrace', stored.length);
      ctx.check(
        sameMembers(
          stored.map((r) => String(r.metadata[FIELDS.chunkId])),
          expected,
        ),
        `after grace collection ${stored.length} chunk(s) stored (${describeVersions(byVersion(stored))}), expected only the 3 new ones`,
      );
    });
    ctx.observed(`${seen.join('; ')}; ${stored.length} stored after grace`);
  },
};

export const retireAfterGrace: ConformanceCase = {
  id: 'retire-after-grace',
  title: 'a replaced version is deleted after the grace epochs, not before',
  guarantee:
    'With graceEpochs = 2, the replaced version leaves the current view at once, stays stored while fewer than 2 epochs passed (a reader of the previous epoch can finish), and is deleted, every chunk, once they passed.',
  whenItFails:
    'Core retires through _countMany then _deleteVersions (their defaults loop _count / _deleteVersion): delete every chunk of each (document, version) — beyond one page of results and across write batches — and nothing of other versions; count what is stored, not what was written.',
  appliesTo: () => true,
  declared: () => 'stored for 2 epochs, then 0 chunks',
  async run(ctx) {
    const connector = await ctx.connector();
    const publisher = await ctx.publisher({ graceEpochs: 2 });
    const v1 = ctx.corpus.generated('aging', 'v1', 7);
    const v2 = ctx.corpus.generated('aging', 'v2', 7);
    await publisher.publish([v1]);
    await publisher.publish([v2]);
    const counts: number[] = [await connector.countChunks(v1.documentId, v1.versionId)];
    const inView = await listInView(connector, v1.documentId, 'epoch');
    ctx.check(
      !inView.some((id) => v1.chunks.some((c) => c.chunkId === id)),
      'the replaced version is still in the current view right after promotion',
    );
    await publisher.publish([ctx.corpus.generated('tick0', 'v1', 1)]);
    counts.push(await connector.countChunks(v1.documentId, v1.versionId));
    await publisher.publish([ctx.corpus.generated('tick1', 'v1', 1)]);
    await ctx.eventually('deleted', async () => {
      counts[2] = await connector.countChunks(v1.documentId, v1.versionId);
      ctx.check(
        counts[2] === 0,
        `after the grace epochs ${counts[2]} chunk(s) of the replaced version are still stored`,
      );
    });
    ctx.observe('storedAfterEpochs', counts);
    ctx.check(
      counts[0] === v1.chunks.length,
      `right after replacement ${counts[0]} chunks stored, expected ${v1.chunks.length} (grace not yet passed)`,
    );
    ctx.check(
      counts[1] === v1.chunks.length,
      `one epoch later ${counts[1]} chunks stored, expected ${v1.chunks.length} (grace not yet passed)`,
    );
    const current = await connector.countChunks(v2.documentId, v2.versionId);
    ctx.check(
      current === v2.chunks.length,
      `the current version lost chunks: ${current} of ${v2.chunks.length} stored`,
    );
    ctx.observed(`stored ${counts.join(' -> ')}`);
  },
};

export const deleteTombstone: ConformanceCase = {
  id: 'delete-tombstone',
  title: 'an approved removal leaves the current view and tombstones the record',
  guarantee:
    'A Publisher removal takes the document out of the epoch and flag views at one epoch, leaves the other documents of the source untouched, marks the record tombstoned without a current version, deletes its chunks after grace, and removing an absent document is a no-op.',
  whenItFails:
    "_patchValidityMany on the removed version ({ to: T } then { current: false }), _deleteVersions after grace, and _query filters scoped by documentId: the other documents' chunks must be unaffected.",
  appliesTo: () => true,
  declared: () => 'removed: 0 visible, record tombstoned',
  async run(ctx) {
    const connector = await ctx.connector();
    const state = ctx.memoryState();
    const publisher = await ctx.publisher({ state, graceEpochs: 1 });
    const docs = ['a', 'b', 'c'].map((n) => ctx.corpus.generated(n, 'v1', 3));
    await publisher.publish(docs);
    const [gone, ...kept] = docs as [(typeof docs)[0], ...typeof docs];
    const report = await ctx.time('remove', () =>
      publisher.publish([], {
        removals: [{ documentId: gone.documentId, reason: 'conformance: gone (410 twice)' }],
      }),
    );
    ctx.check(
      report.documents.some((d) => d.documentId === gone.documentId && d.outcome === 'removed'),
      `removal outcome ${report.documents.map((d) => d.outcome).join(', ')}, expected removed`,
    );
    let visible = 0;
    await ctx.eventually('removed', async () => {
      visible = 0;
      for (const kind of ['epoch', 'flag'] as ViewKind[]) {
        const hits = await readDocument(
          connector,
          gone.documentId,
          gone.chunks[0]!.embedding,
          10,
          kind,
        );
        visible += hits.length;
        ctx.check(
          hits.length === 0,
          `${kind} readers still see ${hits.length} chunk(s) of the removed document`,
        );
        for (const d of kept) {
          const k = await readDocument(connector, d.documentId, d.chunks[0]!.embedding, 10, kind);
          ctx.check(
            k.length === d.chunks.length,
            `${kind} readers see ${k.length} of ${d.chunks.length} chunks of ${d.documentId}, which was not removed`,
          );
        }
      }
    });
    const record = await state.getDocument(gone.documentId);
    ctx.observe('recordStatus', record?.status ?? 'missing');
    ctx.check(
      record?.status === 'tombstoned',
      `record status is ${record?.status ?? 'missing'}, expected tombstoned`,
    );
    ctx.check(
      record?.currentVersionId === undefined,
      `tombstoned record still names current version ${record?.currentVersionId}`,
    );
    const again = await publisher.publish([], {
      removals: [{ documentId: gone.documentId, reason: 'again' }],
    });
    ctx.check(
      again.documents.every((d) => d.outcome === 'skipped'),
      `removing an already removed document gave ${again.documents.map((d) => d.outcome).join(', ')}, expected skipped`,
    );
    await publisher.publish([ctx.corpus.generated('d', 'v1', 1)]);
    let stored = 0;
    await ctx.eventually('collected', async () => {
      stored = await connector.countChunks(gone.documentId, gone.versionId);
      ctx.observe('storedAfterGrace', stored);
      ctx.check(
        stored === 0,
        `${stored} chunk(s) of the removed document are still stored after the grace period`,
      );
    });
    ctx.observed(
      `removed: ${visible} visible, record ${record?.status ?? 'missing'}, ${stored} stored after grace`,
    );
  },
};

export const epochShared: ConformanceCase = {
  id: 'epoch-in-store',
  title: 'a second client reads the published epoch from the store alone',
  guarantee:
    'With epochInStore, another connector instance on the same namespace (a reader in another process) reads the published epoch and the same current view, with no state store.',
  whenItFails:
    '_readEpoch must read the store (a pointer document, row or point), not a field cached in the connector; _advanceEpoch must write it there.',
  appliesTo: (c) => c.epochInStore,
  declared: () => 'epoch readable from the store',
  async run(ctx) {
    const publisher = await ctx.publisher();
    const v1 = ctx.corpus.generated('shared', 'v1', 3);
    const v2 = ctx.corpus.generated('shared', 'v2', 2);
    await publisher.publish([v1]);
    await publisher.publish([v2]);
    const writerEpoch = await (await ctx.connector()).readEpoch();
    const reader = await ctx.openAnotherConnector();
    let readerEpoch = -1;
    await ctx.eventually('shared', async () => {
      readerEpoch = await reader.readEpoch();
      const hits = await reader.searchCurrent(v2.chunks[0]!.embedding, 10, {
        documentId: v2.documentId,
      });
      ctx.observe('writerEpoch', writerEpoch);
      ctx.observe('readerEpoch', readerEpoch);
      ctx.check(
        readerEpoch === writerEpoch,
        `a second client reads epoch ${readerEpoch}, the writer published ${writerEpoch}`,
      );
      ctx.check(
        hits.length === v2.chunks.length &&
          hits.every((h) => h.metadata[FIELDS.versionId] === v2.versionId),
        `a second client's current view shows ${describeVersions(byVersion(hits))}, expected v2×${v2.chunks.length}`,
      );
    });
    ctx.observed(`reader epoch ${readerEpoch} = writer ${writerEpoch}`);
  },
};

export const revertToEarlierVersion: ConformanceCase = {
  id: 'revert-to-earlier-version',
  title: 'reverting to an earlier version makes it current again and keeps it',
  guarantee:
    'Publishing A, then B, then A again (same content, so the same versionId and chunk ids as the retired copy) makes A current in the epoch and flag views with every chunk, and grace collection deletes B but never the current A.',
  whenItFails:
    "_upsert must overwrite a stored chunk's whole metadata (a merge or set-payload that keeps the old rf_to/rf_current leaves the reverted version closed), and _deleteVersions / _deleteVersion must delete only the (document, version) pairs asked for.",
  appliesTo: () => true,
  declared: () => 'A current again; B deleted after grace',
  async run(ctx) {
    const connector = await ctx.connector();
    const publisher = await ctx.publisher({ graceEpochs: 1 });
    const a = ctx.corpus.generated('revert', 'A', 3);
    const b = ctx.corpus.generated('revert', 'B', 2);
    await publisher.publish([a]);
    await publisher.publish([b]);
    const report = await ctx.time('revert', () => publisher.publish([a]));
    ctx.check(
      report.documents[0]?.outcome === 'published',
      `republishing the earlier version: ${report.documents[0]?.outcome} ${report.documents[0]?.reasons.map(reasonLine).join('; ')}`,
    );
    const expected = a.chunks.map((c) => c.chunkId);
    const names = new Map([
      [a.versionId, 'A'],
      [b.versionId, 'B'],
    ]);
    let seen: string[] = [];
    const inspect = async (when: string) => {
      seen = [];
      for (const kind of ['epoch', 'flag'] as ViewKind[]) {
        const hits = await readDocument(connector, a.documentId, a.chunks[0]!.embedding, 10, kind);
        seen.push(`${kind}: ${describeVersions(byVersion(hits), names)}`);
        ctx.check(
          sameMembers(
            hits.map((h) => String(h.metadata[FIELDS.chunkId])),
            expected,
          ),
          `${when}, ${kind} readers see ${describeVersions(byVersion(hits), names)}, expected A×${a.chunks.length}`,
        );
      }
    };
    await ctx.eventually('reverted', () => inspect('after the revert'));
    await publisher.publish([ctx.corpus.generated('tick0', 'v1', 1)]);
    await publisher.publish([ctx.corpus.generated('tick1', 'v1', 1)]);
    let stored = { a: -1, b: -1 };
    await ctx.eventually('collected', async () => {
      stored = {
        a: await connector.countChunks(a.documentId, a.versionId),
        b: await connector.countChunks(b.documentId, b.versionId),
      };
      ctx.check(
        stored.a === a.chunks.length,
        `grace collection left ${stored.a} of ${a.chunks.length} chunks of the current version A`,
      );
      ctx.check(stored.b === 0, `${stored.b} chunk(s) of the replaced version B left after grace`);
      await inspect('two epochs later');
    });
    ctx.observe('storedAfterGrace', stored);
    ctx.observed(`${seen.join('; ')}; stored A×${stored.a}, B×${stored.b}`);
  },
};
