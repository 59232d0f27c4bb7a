import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryConnector } from '@ragfresh/connector-memory';
import {
  type Connector,
  FIELDS,
  HashingEmbeddings,
  InMemoryStateStore,
  type JournalStep,
  type StateStore,
} from '@ragfresh/core';
import { MemoryRawSnapshotStore } from '@ragfresh/fetch';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ComposedEngine,
  composeEngine,
  type EngineSettings,
  resolveEngineSettings,
} from './internals.js';

// Republish in place, killed at a step of its batch: before the epoch move the next publisher
// rolls it back (the old rows stay current, nothing of the attempt is left) and running it again
// completes it; after the move the next publisher rolls it forward (the document is republished,
// lifecycle kept) and running it again finds nothing left to do. The memory connector persists
// to a file, so each compose is a new process's view of the same index.

let web: SimWeb;
let dir: string;
let settings: EngineSettings;
const state: StateStore = new InMemoryStateStore();
const snapshots = new MemoryRawSnapshotStore();

beforeAll(async () => {
  web = await startSimWeb({ seed: 11, hosts: 1, pagesPerHost: 3 });
  dir = mkdtempSync(join(tmpdir(), 'ragfresh-republish-'));
  settings = resolveEngineSettings({
    sources: [
      { id: 'docs', urls: web.urls('docs-0'), everyMs: 60_000, identity: { mode: 'normalize' } },
    ],
    fetch: {
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      robots: false,
      minIntervalMs: 0,
      allowPrivateNetworks: true,
    },
    publish: { maxRetireShare: 1 },
    chunking: { maxTokens: 120 },
  });
});
afterAll(async () => {
  await web.stop();
  rmSync(dir, { recursive: true, force: true });
});

class Killed extends Error {}

function compose(killAt?: JournalStep): Promise<ComposedEngine> {
  return composeEngine(
    settings,
    {
      connector: createMemoryConnector({ persistPath: join(dir, 'index.json') }),
      state,
      embeddings: new HashingEmbeddings({ dimensions: 16 }),
      snapshots,
      ...(killAt === undefined
        ? {}
        : {
            publisherHooks: {
              beforeStep: (step, entry) => {
                if (step === killAt && entry.documents.some((d) => d.republish === true))
                  throw new Killed(`killed before ${step}`);
              },
            },
          }),
    },
    'refresh',
  );
}

/** Writes every stored row again without the keys a store written before them lacks. */
async function strip(connector: Connector): Promise<void> {
  const ids: string[] = [];
  for await (const r of state.listDocuments()) ids.push(r.documentId);
  const rows = [...(await connector.listChunksMany(ids, { withEmbeddings: true })).values()].flat();
  await connector.upsert(
    rows.map((r) => {
      const { [FIELDS.access]: _a, [FIELDS.space]: _s, ...metadata } = r.metadata;
      return { id: r.id, text: r.text, embedding: r.embedding!, metadata };
    }),
  );
}

async function currentVersions(): Promise<string[]> {
  const out: string[] = [];
  for await (const r of state.listDocuments()) out.push(r.currentVersionId ?? '-');
  return out.sort();
}

/** Every current row carries both keys. */
async function complete(e: ComposedEngine): Promise<boolean> {
  const epoch = await e.connector.readEpoch();
  const hits = await e.connector.query(await e.embeddings.embedQuery('docs'), 1000, {
    view: { kind: 'epoch', epoch },
  });
  return (
    hits.length > 0 &&
    hits.every(
      (h) =>
        Array.isArray(h.metadata[FIELDS.access]) && typeof h.metadata[FIELDS.space] === 'string',
    )
  );
}

describe('republish in place: one journalled batch, resumed by the next publisher', () => {
  it('killed before the epoch move: rolled back, then completed by running it again; killed after it: rolled forward', async () => {
    let e = await compose();
    await e.engine.refresh({ all: true });
    const published = await currentVersions();
    expect(published.length).toBe(3);
    await strip(e.connector);
    expect(await complete(e)).toBe(false);
    const epoch = await e.connector.readEpoch();
    await e.close();

    e = await compose('promoting');
    await expect(e.engine.republish()).rejects.toBeInstanceOf(Killed);
    await e.close().catch(() => {});

    // The next process: the attempt rolled back, the old rows still current.
    e = await compose();
    expect(await e.connector.readEpoch()).toBe(epoch);
    expect(await currentVersions()).toEqual(published);
    expect(await complete(e)).toBe(false);
    const done = await e.engine.republish();
    expect(done).toMatchObject({
      documents: 3,
      lacking: 3,
      republished: 3,
      skipped: [],
      epoch: epoch + 1,
    });
    expect(done.counts.chunksEmbedded).toBe(0);
    expect(await currentVersions()).toEqual(published.map((v) => `${v}~${e.space.id}~r1`));
    expect(await complete(e)).toBe(true);
    for await (const r of state.listDocuments()) {
      expect(r.status).toBe('healthy');
      expect(r.history?.at(-1)?.event).toBe('republished');
    }
    await strip(e.connector);
    await e.close();

    e = await compose('retired');
    await expect(e.engine.republish()).rejects.toBeInstanceOf(Killed);
    await e.close().catch(() => {});

    // The next process: the epoch had moved, so the batch is rolled forward.
    e = await compose();
    try {
      expect(await e.connector.readEpoch()).toBe(epoch + 2);
      expect(await currentVersions()).toEqual(published.map((v) => `${v}~${e.space.id}~r2`));
      expect(await complete(e)).toBe(true);
      expect(await e.engine.republish()).toMatchObject({ lacking: 0, republished: 0 });
      expect(await e.connector.readEpoch()).toBe(epoch + 2);
      // A refresh afterwards finds every page unchanged (same content version).
      const refresh = await e.engine.refresh({ all: true });
      expect(refresh.totals.published).toBe(0);
    } finally {
      await e.close();
    }
  });
});
