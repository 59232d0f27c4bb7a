import { FIELDS, type QueryFilter, toStoredChunk } from '@ragfresh/core';
import type { ConformanceCase } from '../types.js';
import { byVersion, describeVersions } from './helpers.js';

const CHUNKS = 3;

export const accessScope: ConformanceCase = {
  id: 'access-scope',
  title: "readers see public chunks and their groups' chunks, filtered by the store",
  guarantee:
    "A reader passing groups sees public chunks (rf_access ['*']) and chunks whose rf_access lists one of its groups, never others, in the epoch and flag views; a reader with no groups sees public chunks only; a chunk without rf_access is seen by no reader; the store applies the scope before ranking, so k nearest public chunks come back even when scoped chunks are nearer; and after a narrowing publication a group that lost access reads nothing of the document, not even at the previous epoch.",
  whenItFails:
    "The access clause of _query: rf_access is a list of strings and the condition is list membership of any of the reader's tokens (Qdrant match.any, Pinecone $in, pgvector jsonb ?|, Chroma $contains under $or, LanceDB array_has_any, libSQL json_each), in the same filter as the view. Fewer than k public hits means the scope is applied after a top-k. A hit after narrowing: _patchValidityMany must write { to: 0, current: false } (the withdrawal) like any other patch.",
  appliesTo: () => true,
  declared: () => 'store-side list membership; narrowing leaves no stale reader',
  async run(ctx) {
    const connector = await ctx.connector();
    const publisher = await ctx.publisher();
    const open = ctx.corpus.generated('public', 'v1', CHUNKS);
    const teamA = ctx.corpus.generated('team-a', 'v1', CHUNKS, {
      provenance: { access: ['team-a'] },
    });
    const both = ctx.corpus.generated('both', 'v1', CHUNKS, {
      provenance: { access: ['team-a', 'team-b'] },
    });
    await ctx.time('publish', () => publisher.publish([open, teamA, both]));
    // Written outside the protocol without rf_access (another app, or before access scope).
    const legacy = ctx.corpus.generated('legacy', 'v1', 1);
    const legacyChunk = toStoredChunk(legacy.chunks[0]!, 1);
    const { [FIELDS.access]: _dropped, ...bare } = legacyChunk.metadata;
    await connector.upsert([{ ...legacyChunk, metadata: { ...bare, [FIELDS.current]: true } }]);

    const names = new Map([
      [open.versionId, 'public'],
      [teamA.versionId, 'team-a'],
      [both.versionId, 'team-a+b'],
      [legacy.versionId, 'legacy'],
    ]);
    const expect: ReadonlyArray<readonly [readonly string[], readonly string[]]> = [
      [[], [open.versionId]],
      [['team-a'], [open.versionId, teamA.versionId, both.versionId]],
      [['team-b'], [open.versionId, both.versionId]],
      [
        ['team-b', 'team-c'],
        [open.versionId, both.versionId],
      ],
      [['nobody'], [open.versionId]],
    ];
    const probe = teamA.chunks[0]!.embedding;
    let seen: string[] = [];
    await ctx.eventually('scoped', async () => {
      seen = [];
      const epoch = await connector.readEpoch();
      for (const view of [{ kind: 'epoch', epoch }, { kind: 'flag' }] as const) {
        for (const [access, versions] of expect) {
          const hits = await connector.query(probe, 50, { view, access });
          const got = byVersion(hits);
          seen.push(`${view.kind} [${access.join(',')}]: ${describeVersions(got, names)}`);
          const wrong = [...got.keys()].filter((v) => !versions.includes(v));
          ctx.check(
            wrong.length === 0,
            `${view.kind} reader with groups [${access.join(', ')}] saw ${wrong.map((v) => names.get(v) ?? v).join(', ')}`,
          );
          for (const v of versions) {
            ctx.check(
              got.get(v) === CHUNKS,
              `${view.kind} reader with groups [${access.join(', ')}] saw ${got.get(v) ?? 0} of ${CHUNKS} chunks of ${names.get(v)}`,
            );
          }
        }
      }
      // The default reader names no groups: public only.
      const unscoped = byVersion(await connector.searchCurrent(probe, 50));
      ctx.check(
        unscoped.size === 1 && unscoped.get(open.versionId) === CHUNKS,
        `searchCurrent without groups saw ${describeVersions(unscoped, names)}, expected public×${CHUNKS}`,
      );
      // k stays honest: the nearest chunks are team-a's, a public-only reader still gets k.
      const top = await connector.query(probe, CHUNKS, {
        view: { kind: 'epoch', epoch },
        access: [],
      });
      ctx.check(
        top.length === CHUNKS && top.every((h) => h.metadata[FIELDS.versionId] === open.versionId),
        `a public-only reader asking for k=${CHUNKS} near team-a's chunks got ${top.length} hit(s) (${describeVersions(byVersion(top), names)}): the scope was applied after ranking`,
      );
    });
    ctx.observe('scoped', seen.length);

    // Narrowing: team-b loses access to `both`.
    const before = await connector.readEpoch();
    const narrowed = ctx.corpus.generated('both', 'v1', CHUNKS, {
      provenance: { access: ['team-a'] },
    });
    ctx.check(
      narrowed.versionId !== both.versionId,
      'the same text under a narrower scope got the same versionId: access must be part of it',
    );
    await ctx.time('narrow', () => publisher.publish([narrowed]));
    const views: ReadonlyArray<readonly [string, QueryFilter['view']]> = [
      ['previous epoch', { kind: 'epoch', epoch: before }],
      ['current epoch', { kind: 'epoch', epoch: before + 1 }],
      ['flag', { kind: 'flag' }],
    ];
    let leaks = 0;
    await ctx.eventually('narrowed', async () => {
      leaks = 0;
      for (const [label, view] of views) {
        const b = await connector.query(both.chunks[0]!.embedding, 50, {
          view,
          access: ['team-b'],
          documentId: both.documentId,
        });
        leaks += b.length;
        ctx.check(
          b.length === 0,
          `after narrowing, team-b read ${b.length} chunk(s) of the document (${describeVersions(byVersion(b), new Map([[both.versionId, 'old scope']]))}) in the ${label} view`,
        );
      }
      const a = await connector.searchCurrent(both.chunks[0]!.embedding, 50, {
        access: ['team-a'],
        documentId: both.documentId,
      });
      ctx.check(
        a.length === CHUNKS && a.every((h) => h.metadata[FIELDS.versionId] === narrowed.versionId),
        `after narrowing, team-a reads ${describeVersions(byVersion(a))}, expected the narrowed version×${CHUNKS}`,
      );
    });
    ctx.observe('leaksAfterNarrowing', leaks);
    ctx.observed(`${seen.slice(0, 3).join('; ')}; ${leaks} read(s) after narrowing`);
  },
};
