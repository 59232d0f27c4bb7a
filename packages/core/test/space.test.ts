import { Embeddings } from '@langchain/core/embeddings';
import { describe, expect, it } from 'vitest';
import {
  CountingEmbeddings,
  checkEmbeddingSpace,
  contentVersionOf,
  describeEmbeddingSpace,
  finishSpaceMigration,
  HashingEmbeddings,
  InMemoryStateStore,
  isRagfreshError,
  readSpaceRecord,
  sameContentVersion,
  spaceVersionId,
  writeSpaceRecord,
} from '../src/index.js';

/** A remote-style embeddings class: model and options as properties, vectors from HashingEmbeddings. */
class ModelEmbeddings extends Embeddings {
  readonly #inner: HashingEmbeddings;
  constructor(
    readonly model: string,
    readonly dimensions: number,
    seed: number,
    readonly batchSize = 16,
  ) {
    super({});
    this.#inner = new HashingEmbeddings({ dimensions, seed });
  }
  async embedDocuments(texts: string[]): Promise<number[][]> {
    return this.#inner.embedDocuments(texts);
  }
  async embedQuery(text: string): Promise<number[]> {
    return this.#inner.embedQuery(text);
  }
}

describe('embedding space identity', () => {
  it('is stable for the same embeddings and differs by seed, dimensions, version and model', async () => {
    const base = await describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 64 }));
    expect(base.id).toMatch(/^es_[0-9a-f]{12}$/);
    expect(base).toMatchObject({
      className: 'HashingEmbeddings',
      dimensions: 64,
      options: { dimensions: 64, seed: 0 },
    });
    expect((await describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 64 }))).id).toBe(
      base.id,
    );
    // Counting only observes: the same vectors, the same space.
    expect((await describeEmbeddingSpace(new CountingEmbeddings({ dimensions: 64 }))).id).toBe(
      base.id,
    );
    const others = await Promise.all([
      describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 64, seed: 1 })),
      describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 65 })),
      describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 64 }), { version: '2' }),
    ]);
    expect(new Set([base.id, ...others.map((s) => s.id)]).size).toBe(4);
  });

  it('reads model and vector options a LangChain class exposes, and tells two models apart by the probe', async () => {
    const a = await describeEmbeddingSpace(new ModelEmbeddings('m-1', 32, 0));
    expect(a).toMatchObject({
      className: 'ModelEmbeddings',
      model: 'm-1',
      options: { dimensions: 32 },
    });
    // Batch size shapes no vector: not part of the space.
    expect((await describeEmbeddingSpace(new ModelEmbeddings('m-1', 32, 0, 99))).id).toBe(a.id);
    // The same class and model name serving other vectors: only the probe tells.
    const swapped = await describeEmbeddingSpace(new ModelEmbeddings('m-1', 32, 5));
    expect(swapped.probe).not.toBe(a.probe);
    expect(swapped.id).not.toBe(a.id);
  });

  it('a seed other than 0 changes every vector; seed 0 keeps the pinned ones', async () => {
    const text = 'Pricing: the starter plan costs nine dollars a month.';
    const plain = new HashingEmbeddings({ dimensions: 64 }).embedText(text);
    const zero = new HashingEmbeddings({ dimensions: 64, seed: 0 }).embedText(text);
    const seeded = new HashingEmbeddings({ dimensions: 64, seed: 7 }).embedText(text);
    expect(zero).toEqual(plain);
    expect(seeded).not.toEqual(plain);
    expect(() => new HashingEmbeddings({ seed: -1 })).toThrow(/seed -1/);
  });

  it('stored version ids carry the space; content comparisons ignore it', async () => {
    const space = await describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 8, seed: 3 }));
    const moved = spaceVersionId('v0123456789abcdef01234567', space);
    expect(moved).toBe(`v0123456789abcdef01234567~${space.id}`);
    expect(spaceVersionId(moved, space)).toBe(moved);
    expect(contentVersionOf(moved)).toBe('v0123456789abcdef01234567');
    expect(sameContentVersion(moved, 'v0123456789abcdef01234567')).toBe(true);
    expect(sameContentVersion(moved, 'vffffffffffffffffffffffff')).toBe(false);
    expect(sameContentVersion(undefined, moved)).toBe(false);
  });
});

describe('checkEmbeddingSpace', () => {
  it('records the space of a writer, leaves a reader unrecorded, refuses another space in one line', async () => {
    const state = new InMemoryStateStore();
    const a = await describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 16 }));
    const b = await describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 16, seed: 2 }));
    expect(await checkEmbeddingSpace(state, a, { adopt: false })).toBeUndefined();
    expect(await readSpaceRecord(state)).toBeUndefined();
    expect((await checkEmbeddingSpace(state, a, { adopt: true }))?.active.id).toBe(a.id);
    expect((await checkEmbeddingSpace(state, a, { adopt: false }))?.active.id).toBe(a.id);
    const refused = await checkEmbeddingSpace(state, b, { adopt: true }).catch((e: unknown) => e);
    expect(isRagfreshError(refused, 'SPACE_MISMATCH')).toBe(true);
    const message = (refused as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain(a.id);
    expect(message).toContain(b.id);
    expect(message).toContain('ragfresh migrate embeddings');
    // Refusing changed nothing.
    expect((await readSpaceRecord(state))?.active.id).toBe(a.id);
  });

  it('a finished migration makes its space active and marks a left namespace for retirement', async () => {
    const state = new InMemoryStateStore();
    const a = await describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 16 }));
    const b = await describeEmbeddingSpace(new HashingEmbeddings({ dimensions: 24 }));
    await writeSpaceRecord(state, {
      active: a,
      migration: { to: b, namespace: b.id, startedAt: '2026-01-01T00:00:00.000Z' },
    });
    // Another space's batch finishes nothing.
    await finishSpaceMigration(state, a.id, '2026-01-01T00:01:00.000Z');
    expect((await readSpaceRecord(state))?.active.id).toBe(a.id);
    await finishSpaceMigration(state, b.id, '2026-01-01T00:01:00.000Z');
    const after = await readSpaceRecord(state);
    expect(after).toEqual({
      active: b,
      namespace: b.id,
      retiring: { dimensions: 16, at: '2026-01-01T00:01:00.000Z' },
    });
    await finishSpaceMigration(state, b.id, '2026-01-01T00:02:00.000Z');
    expect(await readSpaceRecord(state)).toEqual(after);
  });
});
