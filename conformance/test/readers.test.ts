import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CASES,
  type LangChainReader,
  type LangChainReaderTarget,
  runCase,
} from '@ragfresh/conformance';
import { NumericFlagsConnector } from '@ragfresh/conformance/broken';
import { MemoryConnector } from '@ragfresh/connector-memory';
import {
  type ConnectorCapabilities,
  FIELDS,
  type LangChainReaderCapability,
  type QueryHit,
  type StoreTarget,
} from '@ragfresh/core';
import { afterAll, describe, expect, it } from 'vitest';

const langchainCase = CASES.find((c) => c.id === 'langchain-reader')!;
const typesCase = CASES.find((c) => c.id === 'metadata-types-after-patch')!;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Search = (
  connector: MemoryConnector,
  ...args: Parameters<LangChainReader['search']>
) => Promise<QueryHit[]>;

/** The connector's own exact search with the view asked for: what a faithful class returns. */
const exact: Search = (c, vector, k, view) => c.query(vector, k, { view });

/**
 * A memory target whose "LangChain class" is `search` over the case's own connector, so the
 * case's logic can be held against readers that are right, lossy or leaky.
 */
function target(
  langchain: LangChainReaderCapability | undefined,
  search: Search | undefined,
): { target: StoreTarget; capabilities: ConnectorCapabilities } {
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-readers-'));
  dirs.push(dir);
  const first = new Map<string, MemoryConnector>();
  const capabilities = langchain === undefined ? {} : { langchain };
  const base: StoreTarget = {
    kind: 'embedded',
    description: 'memory connector with a test reader',
    async createConnector(ns) {
      const c = new MemoryConnector({ persistPath: join(dir, `${ns}.json`), capabilities });
      if (!first.has(ns)) first.set(ns, c);
      return c;
    },
    connectorSpec: () => {
      throw new Error('not used');
    },
    async stop() {},
  };
  const withReader: LangChainReaderTarget = {
    ...base,
    async langchainReader(ns) {
      const c = first.get(ns)!;
      return {
        search: async (vector, k, view) =>
          (await search!(c, vector, k, view)).map((h) => ({
            pageContent: h.text,
            metadata: h.metadata,
          })),
        close: async () => {},
      };
    },
  };
  return {
    target: search === undefined ? base : withReader,
    capabilities: new MemoryConnector({ capabilities }).capabilities,
  };
}

const CLASS = 'TestStore (@example/langchain-test)';

describe('langchain-reader', () => {
  it('does not apply when the manifest names no LangChain class', async () => {
    const t = target(undefined, exact);
    const report = await runCase(langchainCase, t.target, t.capabilities);
    expect(report.status).toBe('skipped');
  });

  it("passes a faithful reader declared 'complete': every current chunk found, before and after the retired duplicates are deleted", async () => {
    const t = target({ class: CLASS, recall: 'complete' }, exact);
    const report = await runCase(langchainCase, t.target, t.capabilities);
    expect(report.failures).toEqual([]);
    expect(report.observations).toMatchObject({
      'retired-stored-epoch-found': 60,
      'retired-stored-flag-found': 60,
      'retired-deleted-epoch-found': 60,
      'retired-deleted-flag-found': 60,
      'retired-deleted-epoch-leaked': 0,
      currentChunks: 60,
      // v2 keeps chunks 0 and 1 of v1 word for word: 2 of 3 vectors reused per document.
      duplicateVectors: 40,
    });
  });

  // A reader that, like vector_top_k after retirement, no longer reaches the chunks whose
  // vector a deleted row shared (ordinals 0 and 1 here) once the epoch moved past the grace.
  const losesReusedAfterDelete: Search = async (c, vector, k, view) => {
    const hits = await exact(c, vector, k, view);
    return (await c.readEpoch()) >= 3 ? hits.filter((h) => h.metadata[FIELDS.ordinal] === 2) : hits;
  };

  it("fails a lossy reader declared 'complete', naming the class and the count", async () => {
    const t = target({ class: CLASS, recall: 'complete' }, losesReusedAfterDelete);
    const report = await runCase(langchainCase, t.target, t.capabilities);
    expect(report.status).toBe('failed');
    expect(report.failures).toEqual([
      `retired-deleted, epoch filter: ${CLASS} found 20 of 60 current chunks by their own vector (k = 4); recall 'complete' requires all`,
      `retired-deleted, flag filter: ${CLASS} found 20 of 60 current chunks by their own vector (k = 4); recall 'complete' requires all`,
    ]);
  });

  it("passes the same reader declared 'lossy' and reports what it found", async () => {
    const t = target({ class: CLASS, recall: 'lossy' }, losesReusedAfterDelete);
    const report = await runCase(langchainCase, t.target, t.capabilities);
    expect(report.status).toBe('passed');
    expect(report.observations['retired-deleted-epoch-found']).toBe(20);
    expect(report.observed).toContain('retired-deleted epoch 20/60');
  });

  it("fails a reader whose filter leaks retired chunks, even declared 'lossy'", async () => {
    const leaky: Search = (c, vector, k) => c.query(vector, k, { view: { kind: 'all' } });
    const t = target({ class: CLASS, recall: 'lossy' }, leaky);
    const report = await runCase(langchainCase, t.target, t.capabilities);
    expect(report.status).toBe('failed');
    expect(
      report.failures.some((f) =>
        /retired-stored, epoch filter: \d+ hit\(s\) outside the current view/.test(f),
      ),
    ).toBe(true);
  });

  it('fails a manifest that names a class when the fixture supplies no langchainReader', async () => {
    const t = target({ class: CLASS, recall: 'complete' }, undefined);
    const report = await runCase(langchainCase, t.target, t.capabilities);
    expect(report.failures).toEqual([
      `the manifest names ${CLASS}, but the fixture's target has no langchainReader(namespace); add one that opens the class on the namespace's data`,
    ]);
  });
});

describe('metadata-types-after-patch', () => {
  it('passes the reference connector', async () => {
    const t = target(undefined, undefined);
    const report = await runCase(typesCase, t.target, t.capabilities);
    expect(report.failures).toEqual([]);
  });

  it('catches a patch that stores rf_current as 1/0, as a SQLite driver binding a boolean does', async () => {
    const t = target(undefined, undefined);
    const broken: StoreTarget = {
      ...t.target,
      createConnector: async () => new NumericFlagsConnector({}),
    };
    const report = await runCase(typesCase, broken, t.capabilities);
    expect(report.status).toBe('failed');
    expect(report.failures[0]).toMatch(/rf_current: wrote boolean true, read number 1/);
  });
});
