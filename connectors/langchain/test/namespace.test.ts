import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectCode } from '@ragfresh/conformance/testing';
import { FIELDS, type StoredChunk } from '@ragfresh/core';
import { afterAll, describe, expect, it } from 'vitest';
import { fileEpochStore } from '../src/epoch.js';
import { FileMemoryVectorStore } from '../src/fixture.js';
import {
  createConnector,
  LangChainConnector,
  type LangChainConnectorOptions,
} from '../src/index.js';

// `forNamespace` on the LangChain tier: only with `namespaceStore` (the user opens the store of
// another namespace; the connector cannot copy a VectorStore instance).
const dir = mkdtempSync(join(tmpdir(), 'ragfresh-lc-namespace-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const storeAt = (name: string) => FileMemoryVectorStore.at(join(dir, `${name}.memory.json`));
const base = (name: string): LangChainConnectorOptions => ({
  store: () => storeAt(name),
  filters: 'memory',
  epoch: join(dir, `${name}.epoch.json`),
  visibility: { mode: 'immediate' },
});

/** The one message line of the RagfreshError a constructor call throws, with its code. */
function refusal(build: () => unknown): string {
  try {
    build();
  } catch (err) {
    const e = err as Error & { code?: string };
    return `${e.code}: ${e.message.replace(/^\[ragfresh\] \[langchain\] /, '')}`;
  }
  throw new Error('expected a RagfreshError');
}

function chunk(id: string, documentId: string, dims: number): StoredChunk {
  return {
    id,
    text: `text of ${id}`,
    embedding: Array.from({ length: dims }, (_, i) => (i === 0 ? 1 : 0)),
    metadata: {
      [FIELDS.documentId]: documentId,
      [FIELDS.versionId]: 'v1',
      [FIELDS.ordinal]: 0,
      [FIELDS.from]: 1,
      [FIELDS.to]: Number.MAX_SAFE_INTEGER,
      [FIELDS.current]: false,
    },
  };
}

describe('LangChainConnector namespaces (namespaceStore / namespaceEpoch)', () => {
  it('without namespaceStore: namespaces false, and forNamespace is NOT_SUPPORTED naming the option', () => {
    const c = new LangChainConnector(base('plain'));
    expect(c.capabilities.namespaces).toBe(false);
    expect(c.capabilities.dropNamespace).toBe(false);
    expect(refusal(() => c.forNamespace('es_other'))).toBe(
      'NOT_SUPPORTED: the LangChain tier opens another namespace (a migration to embeddings of other dimensions) only with the namespaceStore option: (suffix) => the VectorStore of that namespace (e.g. a collection <name>__<suffix>); pass it, or keep the dimensions.',
    );
  });

  it('refuses a bad namespaceStore / namespaceEpoch with one INVALID_CONFIG line', () => {
    const namespaceStore = (s: string) => storeAt(`bad__${s}`);
    expect(
      refusal(() => new LangChainConnector({ ...base('bad'), namespaceStore: 'x' as never })),
    ).toBe(
      'INVALID_CONFIG: namespaceStore must be a function (suffix) => the VectorStore of that namespace (e.g. a collection <name>__<suffix>).',
    );
    expect(
      refusal(
        () =>
          new LangChainConnector({ ...base('bad'), namespaceStore, namespaceEpoch: {} as never }),
      ),
    ).toBe(
      "INVALID_CONFIG: namespaceEpoch must be a function (suffix) => that namespace's epoch file path or EpochStore.",
    );
    expect(
      refusal(
        () => new LangChainConnector({ ...base('bad'), namespaceEpoch: (s) => `${dir}/e.${s}` }),
      ),
    ).toBe(
      'INVALID_CONFIG: namespaceEpoch is set without namespaceStore; add namespaceStore: (suffix) => the VectorStore of that namespace, or remove namespaceEpoch.',
    );
    const own = fileEpochStore(join(dir, 'own.epoch.json'));
    expect(
      refusal(() => new LangChainConnector({ ...base('bad'), epoch: own, namespaceStore })),
    ).toBe(
      "INVALID_CONFIG: namespaceStore with your own EpochStore needs namespaceEpoch: (suffix) => that namespace's EpochStore (only a file epoch has a default, <epoch>__<suffix>).",
    );
    // Control: the same EpochStore with namespaceEpoch is accepted and declares namespaces.
    const ok = new LangChainConnector({
      ...base('bad'),
      epoch: own,
      namespaceStore,
      namespaceEpoch: (s) => fileEpochStore(join(dir, `own.epoch.json.${s}`)),
    });
    expect(ok.capabilities.namespaces).toBe(true);
    // What namespaceEpoch returns is checked when forNamespace uses it.
    const returnsOwn = new LangChainConnector({
      ...base('bad'),
      epoch: own,
      namespaceStore,
      namespaceEpoch: () => own,
    });
    expect(refusal(() => returnsOwn.forNamespace('es_x'))).toBe(
      `INVALID_CONFIG: namespaceEpoch("es_x") returned this namespace's own epoch; give each namespace its own file or EpochStore.`,
    );
    const returnsJunk = new LangChainConnector({
      ...base('bad'),
      namespaceStore,
      namespaceEpoch: () => 7 as never,
    });
    expect(refusal(() => returnsJunk.forNamespace('es_x'))).toBe(
      'INVALID_CONFIG: namespaceEpoch("es_x") returned neither a file path nor an EpochStore; return one of them.',
    );
  });

  it('forNamespace opens the store namespaceStore gives and the epoch file <epoch>__<suffix>, apart from this one', async () => {
    const asked: string[] = [];
    const options = {
      ...base('main'),
      namespaceStore: (s: string) => {
        asked.push(s);
        return storeAt(`main__${s}`);
      },
    };
    const main = new LangChainConnector(options);
    expect(main.capabilities.namespaces).toBe(true);
    await main.open({ dimensions: 2 });
    await main.upsert([chunk('main#0', 'main-doc', 2)]);
    await main.advanceEpoch(0, 3);

    const other = main.forNamespace('es_wide');
    expect(other).toBeInstanceOf(LangChainConnector);
    expect(asked).toEqual([]); // called by open, not before
    await other.open({ dimensions: 6 });
    expect(asked).toEqual(['es_wide']);
    expect((other as LangChainConnector).epochStore.description).toBe(
      `file ${join(dir, 'main.epoch.json')}__es_wide`,
    );
    expect(await other.readEpoch()).toBe(0);
    expect(await other.listChunks('main-doc')).toEqual([]);
    await other.upsert([chunk('wide#0', 'wide-doc', 6)]);
    await other.advanceEpoch(0, 4, { space: 'es_wide' });
    expect((await other.listChunks('wide-doc')).map((c) => c.id)).toEqual(['wide#0']);
    // The namespace beside it is untouched: its chunks, its epoch, its space.
    expect(await main.listChunks('wide-doc')).toEqual([]);
    expect((await main.listChunks('main-doc')).map((c) => c.id)).toEqual(['main#0']);
    expect(await main.readEpoch()).toBe(3);
    expect(await main.readEpochSpace()).toBeUndefined();
    expect(existsSync(`${join(dir, 'main.epoch.json')}__es_wide`)).toBe(true);
    // Nested, the suffixes join as the native connectors' names do.
    const nested = other.forNamespace('b') as LangChainConnector;
    expect(nested.epochStore.description).toBe(`file ${join(dir, 'main.epoch.json')}__es_wide__b`);
    await nested.open({ dimensions: 6 });
    expect(asked).toEqual(['es_wide', 'es_wide__b']);
    await Promise.all([nested.close(), other.close(), main.close()]);
  });

  it('refuses a namespaceStore that hands back the namespace own store, when opened', async () => {
    const shared = storeAt('shared');
    const main = new LangChainConnector({
      ...base('shared'),
      store: shared,
      namespaceStore: () => shared,
    });
    const other = main.forNamespace('es_x');
    const err = await expectCode(other.open({ dimensions: 2 }), 'INVALID_CONFIG');
    expect(err.message).toContain(
      `namespaceStore("es_x") returned this namespace's own store; return the store of another collection (e.g. <name>__es_x) or a new instance.`,
    );
  });

  it('the registry factory takes both; a path namespaceEpoch returns is relative to the config folder', () => {
    const context = { dataDir: join(dir, 'data'), baseDir: join(dir, 'project') };
    const options = {
      vectorStore: () => storeAt('registry'),
      filters: 'memory',
      namespaceStore: (s: string) => storeAt(`registry__${s}`),
    };
    const byDefault = createConnector(options, context);
    expect((byDefault.forNamespace('es_x') as LangChainConnector).epochStore.description).toBe(
      `file ${join(context.dataDir, 'langchain.epoch.json')}__es_x`,
    );
    const relative = createConnector(
      { ...options, namespaceEpoch: (s: string) => `epochs/${s}.json` },
      context,
    );
    expect((relative.forNamespace('es_x') as LangChainConnector).epochStore.description).toBe(
      `file ${join(context.baseDir, 'epochs', 'es_x.json')}`,
    );
    expect(
      createConnector({ vectorStore: options.vectorStore, filters: 'memory' }, context),
    ).toHaveProperty('capabilities.namespaces', false);
  });
});
