import {
  chunkId,
  chunkUuid,
  documentId,
  errorMessage,
  FIELDS,
  toStoredChunk,
} from '@ragfresh/core';
import fc from 'fast-check';
import type { CaseContext, ConformanceCase } from '../types.js';

const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function property<T>(ctx: CaseContext, name: string, prop: fc.IProperty<T>): void {
  try {
    fc.assert(prop, { numRuns: 60, seed: 42 });
  } catch (err) {
    ctx.check(false, `${name}: ${errorMessage(err).split('\n').slice(0, 3).join(' ')}`);
  }
}

/** Two calls give the same value. */
const stable = (fn: () => string): boolean => {
  const first = fn();
  return fn() === first;
};

const segment = fc.stringMatching(/^[a-z0-9-]{1,12}$/);

export const idsDeterministic: ConformanceCase = {
  id: 'ids-deterministic',
  title: 'ids are deterministic and ignore volatile values',
  guarantee:
    'documentId, versionId, chunkId and chunkUuid are the same on every call and machine, never depend on fetch time, tracking parameters or fragments, and the store keeps them: staging one version twice with different fetch times stores the same ids.',
  whenItFails:
    'Identity code in @ragfresh/core (a version mismatch between core copies?) or the connector rewriting ids: with idForm "uuid" the stored id must be chunkUuid(chunkId) and metadata rf_chunk the readable chunkId.',
  appliesTo: () => true,
  declared: (c) => `stable ids, stored as ${c.idForm}`,
  async run(ctx) {
    property(
      ctx,
      'documentId ignores tracking parameters and fragments',
      fc.property(segment, segment, segment, (a, b, tracking) => {
        const base = `https://Example.COM:443/${a}/${b}?id=${a}`;
        const noisy = `https://example.com/${a}/${b}?utm_source=${tracking}&id=${a}&fbclid=${tracking}#${tracking}`;
        return (
          stable(() => documentId('src', base)) &&
          documentId('src', base) === documentId('src', noisy)
        );
      }),
    );
    property(
      ctx,
      'versionId and chunk ids ignore fetch time and volatile provenance',
      fc.property(
        fc.array(fc.string({ minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 5 }),
        fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }),
        fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }),
        (texts, t1, t2) => {
          const chunks = texts.map((text) => ({ text, headingPath: ['H'] }));
          const a = ctx.corpus.version('prop', chunks, { retrievedAt: t1.toISOString() });
          const b = ctx.corpus.version('prop', chunks, {
            retrievedAt: t2.toISOString(),
            provenance: { region: 'eu', sourceModifiedAt: t2.toISOString() },
          });
          return (
            a.versionId === b.versionId &&
            a.chunks.every(
              (c, i) =>
                c.chunkId === b.chunks[i]!.chunkId &&
                chunkUuid(c.chunkId) === chunkUuid(b.chunks[i]!.chunkId),
            )
          );
        },
      ),
    );
    property(
      ctx,
      'versionId changes with content and with how it was cut',
      fc.property(
        fc.string({ minLength: 1, maxLength: 30 }),
        fc.string({ minLength: 1, maxLength: 30 }),
        (x, y) => {
          const joined = ctx.corpus.version('cut', [{ text: `${x} ${y}` }]);
          const split = ctx.corpus.version('cut', [{ text: x }, { text: y }]);
          const other = ctx.corpus.version('cut', [{ text: `${x} ${y}!` }]);
          return joined.versionId !== split.versionId && joined.versionId !== other.versionId;
        },
      ),
    );
    property(
      ctx,
      'chunkId and chunkUuid are pure functions; chunkUuid is a v5 UUID',
      fc.property(segment, segment, fc.nat({ max: 100_000 }), (d, v, ordinal) => {
        const id = chunkId(`s:${d}`, `v${v}`, ordinal);
        return (
          stable(() => chunkId(`s:${d}`, `v${v}`, ordinal)) &&
          stable(() => chunkUuid(id)) &&
          UUID_V5.test(chunkUuid(id))
        );
      }),
    );

    const connector = await ctx.connector();
    const first = ctx.corpus.generated('stable', 'v1', 4, {
      retrievedAt: '2026-01-01T00:00:00.000Z',
    });
    const again = ctx.corpus.generated('stable', 'v1', 4, {
      retrievedAt: '2026-06-30T12:34:56.000Z',
    });
    ctx.check(
      first.versionId === again.versionId,
      'two fetches of the same content built different versionIds',
    );
    const epoch = await connector.readEpoch();
    await connector.upsert(first.chunks.map((c) => toStoredChunk(c, epoch + 1)));
    await connector.upsert(again.chunks.map((c) => toStoredChunk(c, epoch + 1)));
    let wrongForm = 0;
    await ctx.eventually('stored', async () => {
      const listed = await connector.listChunks(first.documentId, first.versionId);
      ctx.observe('stored', listed.length);
      ctx.check(
        listed.length === first.chunks.length,
        `stored ${listed.length} chunks for a ${first.chunks.length}-chunk version staged twice`,
      );
      wrongForm = 0;
      for (const row of listed) {
        const readable = String(row.metadata[FIELDS.chunkId]);
        const expectedId = ctx.capabilities.idForm === 'uuid' ? chunkUuid(readable) : readable;
        if (row.id !== expectedId) wrongForm++;
      }
      ctx.check(
        wrongForm === 0,
        `${wrongForm} stored id(s) are not the declared ${ctx.capabilities.idForm} form of rf_chunk`,
      );
      ctx.check(
        listed.map((r) => String(r.metadata[FIELDS.chunkId])).join() ===
          first.chunks.map((c) => c.chunkId).join(),
        'stored rf_chunk values differ from the chunk ids core computed',
      );
    });
    ctx.observed(
      wrongForm === 0
        ? `stable ids, stored as ${ctx.capabilities.idForm}`
        : `${wrongForm} ids in another form`,
    );
  },
};
