import { Pinecone } from '@pinecone-database/pinecone';
import { isRagfreshError } from '@ragfresh/core';
import { type PineconeEmulator, startPineconeEmulator } from '@ragfresh/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalIndex } from '../src/fixture.js';
import {
  createPineconeConnector,
  EPOCH_INDEX_KEY,
  EPOCH_SPACE_KEY,
  EPOCH_VECTOR_ID,
  epochNamespace,
  type PineconeConnector,
  type PineconeConnectorOptions,
  spaceIndexName,
} from '../src/index.js';
import { DIMS } from './support.js';

// The embedding space on Pinecone: the epoch pointer names the space (and the index) in the
// move's own update, and forNamespace opens an index of its own per space — created through the
// control plane like the configured one, tagged as ragfresh's, waited for until ready.

const READY_AFTER_MS = 400;
let emu: PineconeEmulator;
let local: PineconeEmulator;
let pc: Pinecone;

function options(
  on: PineconeEmulator,
  extra: Partial<PineconeConnectorOptions> = {},
): PineconeConnectorOptions {
  return {
    apiKey: `k-${new URL(on.url).port}`,
    controllerHostUrl: on.url,
    indexName: 'docs',
    namespace: 'kb',
    maxLagMs: 1_000,
    timeoutMs: 1_000,
    retry: { attempts: 10, baseDelayMs: 5, maxDelayMs: 200 },
    ...extra,
  };
}

async function opened(c: PineconeConnector, dimensions: number): Promise<PineconeConnector> {
  await c.open({ dimensions });
  return c;
}

async function codeOf(p: Promise<unknown>): Promise<unknown> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return isRagfreshError(err) ? err.code : err;
}

const creates = (on: PineconeEmulator) => on.requests.get('POST /indexes') ?? 0;

beforeAll(async () => {
  emu = await startPineconeEmulator({ indexReadyAfterMs: READY_AFTER_MS });
  local = await startPineconeEmulator({ mode: 'local-2025-01' });
  pc = new Pinecone({
    apiKey: `k-${new URL(emu.url).port}`,
    controllerHostUrl: emu.url,
    maxRetries: 0,
  });
  // The user's index: not ragfresh's defaults, so copying them is observable.
  await pc.createIndex({
    name: 'docs',
    dimension: DIMS,
    metric: 'dotproduct',
    spec: { serverless: { cloud: 'gcp', region: 'europe-west4' } },
    deletionProtection: 'enabled',
    waitUntilReady: true,
  });
});
afterAll(async () => {
  await emu?.close();
  await local?.close();
});

describe('space index names', () => {
  it('are <index>-<suffix> within Pinecone rules, hashed past 45 characters, deterministic', () => {
    expect(spaceIndexName('docs', 'es_0123456789ab')).toBe('docs-es-0123456789ab');
    const long = 'a-very-long-production-index-name-for-docs';
    const name = spaceIndexName(long, 'es_0123456789ab');
    expect(name).toMatch(/^[a-z0-9]([a-z0-9-]{0,43}[a-z0-9])?$/);
    expect(name.length).toBeLessThanOrEqual(45);
    expect(name).toBe(spaceIndexName(long, 'es_0123456789ab'));
    expect(name).not.toBe(spaceIndexName(long, 'es_0123456789ac'));
    expect(spaceIndexName('x'.repeat(45), 'y'.repeat(40))).toHaveLength(45);
  });

  it('refuses a spaceIndex that is not a namespace suffix, in one line', async () => {
    expect(() => createPineconeConnector(options(emu, { spaceIndex: 'Es-1' }))).toThrow(
      /spaceIndex must be a namespace suffix \(1-40 lower-case letters, digits or _\), got "Es-1"\./,
    );
  });
});

describe('forNamespace on Pinecone: an index per embedding space', () => {
  it('creates the space index like the configured one, waits until ready, and every role reopens it', async () => {
    const base = await opened(createPineconeConnector(options(emu)), DIMS);
    const before = creates(emu);
    const space = base.forNamespace('es_aaaaaaaaaaaa') as PineconeConnector;
    const started = Date.now();
    await space.open({ dimensions: DIMS + 4 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(READY_AFTER_MS - 50);
    expect(creates(emu)).toBe(before + 1);
    expect(space.indexName).toBe('docs-es-aaaaaaaaaaaa');
    const model = await pc.describeIndex('docs-es-aaaaaaaaaaaa');
    expect(model.status.ready).toBe(true);
    expect(model.schema.fields._values).toMatchObject({
      type: 'dense_vector',
      dimension: DIMS + 4,
      metric: 'dotproduct',
    });
    expect(model.deployment).toMatchObject({ cloud: 'gcp', region: 'europe-west4' });
    expect(model.deletionProtection).toBe('enabled');
    expect(model.tags).toEqual({
      ragfresh: 'space-index',
      ragfresh_index: 'docs',
      ragfresh_space: 'es_aaaaaaaaaaaa',
    });
    // Its own epoch and fence: the configured index's pointer is not touched.
    await space.advanceEpoch(0, 3, { space: 'es_aaaaaaaaaaaa' });
    expect(await base.readEpoch()).toBe(0);
    // Another role (a fresh connector of the same config) derives the same index and opens it
    // without creating anything.
    const again = createPineconeConnector(options(emu)).forNamespace('es_aaaaaaaaaaaa');
    await again.open({ dimensions: DIMS + 4 });
    expect(creates(emu)).toBe(before + 1);
    expect(await again.readEpoch()).toBe(3);
    expect(await again.readEpochSpace()).toBe('es_aaaaaaaaaaaa');
    // At other dimensions the same index is refused as it is for the configured one.
    const wrong = createPineconeConnector(options(emu)).forNamespace('es_aaaaaaaaaaaa');
    expect(await codeOf(wrong.open({ dimensions: DIMS }))).toBe('DIMENSION_MISMATCH');
    // The user's index keeps its deletion protection; the emulator refuses its deletion.
    await expect(pc.deleteIndex('docs')).rejects.toThrow(/Deletion protection is enabled/);
  });

  it('finds the configured name by listing when configured by host', async () => {
    const host = (await pc.describeIndex('docs')).host;
    const byHost = createPineconeConnector(options(emu, { indexName: undefined, host }));
    await byHost.open({ dimensions: DIMS });
    const space = byHost.forNamespace('es_bbbbbbbbbbbb') as PineconeConnector;
    await space.open({ dimensions: DIMS + 4 });
    expect(space.indexName).toBe('docs-es-bbbbbbbbbbbb');
    const unknown = createPineconeConnector(
      options(emu, { indexName: undefined, host: 'http://127.0.0.1:9' }),
    ).forNamespace('es_bbbbbbbbbbbb');
    expect(await codeOf(unknown.open({ dimensions: DIMS + 4 }))).toBe('NOT_SUPPORTED');
  });

  it('refuses an index of the derived name that ragfresh did not create', async () => {
    await pc.createIndex({
      name: 'docs-es-cccccccccccc',
      dimension: DIMS + 4,
      spec: { serverless: { cloud: 'aws', region: 'us-east-1' } },
      waitUntilReady: true,
    });
    const space = createPineconeConnector(options(emu)).forNamespace('es_cccccccccccc');
    const err = await space.open({ dimensions: DIMS + 4 }).catch((e: unknown) => e);
    expect(isRagfreshError(err) && err.code).toBe('FOREIGN_DATA');
    expect(String((err as Error).message)).toContain(
      'index docs-es-cccccccccccc exists but ragfresh did not create it (no tag ragfresh=space-index)',
    );
  });

  it('on Pinecone Local (API 2025-01) creates the space index with the 2025-01 body', async () => {
    await createLocalIndex(local.url, 'docs', DIMS, 'x');
    const base = createPineconeConnector(options(local, { epochClaim: 'lease-only' }));
    await base.open({ dimensions: DIMS });
    const space = base.forNamespace('es_dddddddddddd') as PineconeConnector;
    await space.open({ dimensions: DIMS + 4 });
    await space.advanceEpoch(0, 1, { space: 'es_dddddddddddd' });
    expect(await space.readEpochSpace()).toBe('es_dddddddddddd');
    const model = (await (
      await fetch(`${local.url}/indexes/docs-es-dddddddddddd`, { headers: { 'Api-Key': 'x' } })
    ).json()) as Record<string, unknown>;
    expect(model).toMatchObject({
      dimension: DIMS + 4,
      metric: 'cosine',
      tags: { ragfresh: 'space-index', ragfresh_index: 'docs' },
    });
  });
});

describe('the epoch pointer names the space', () => {
  it('in the same update as the epoch; a move naming none keeps it; readable by a plain client', async () => {
    const c = await opened(createPineconeConnector(options(emu, { namespace: 'ptr' })), DIMS);
    const reader = await opened(createPineconeConnector(options(emu, { namespace: 'ptr' })), DIMS);
    expect(await reader.readEpochSpace()).toBeUndefined();
    const updates = emu.requests.get('POST /vectors/update') ?? 0;
    await c.advanceEpoch(0, 1, { space: 'es_first' });
    const pointer = async () =>
      (
        await pc
          .index({ host: (await pc.describeIndex('docs')).host, namespace: epochNamespace('ptr') })
          .fetch({ ids: [EPOCH_VECTOR_ID] })
      ).records[EPOCH_VECTOR_ID]?.metadata;
    expect(await pointer()).toMatchObject({
      rf_epoch: 1,
      [EPOCH_SPACE_KEY]: 'es_first',
      [EPOCH_INDEX_KEY]: 'docs',
    });
    // One claim-LSN update and one conditional pointer update: the space rode on the latter.
    expect((emu.requests.get('POST /vectors/update') ?? 0) - updates).toBe(2);
    await c.advanceEpoch(1, 2, { space: 'es_second' });
    expect(await reader.readEpochSpace()).toBe('es_second');
    await c.advanceEpoch(2, 3);
    expect(await reader.readEpoch()).toBe(3);
    expect(await reader.readEpochSpace()).toBe('es_second');
    // A stale move changes neither.
    expect(await codeOf(c.advanceEpoch(1, 9, { space: 'es_stale' }))).toBe('EPOCH_CONFLICT');
    expect(await pointer()).toMatchObject({ rf_epoch: 3, [EPOCH_SPACE_KEY]: 'es_second' });
  });
});
