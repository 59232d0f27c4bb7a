import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryVectorStore } from '@langchain/classic/vectorstores/memory';
import { Embeddings } from '@langchain/core/embeddings';
import type { StoreFixture, StoreTarget } from '@ragfresh/core';
import { createLangChainConnector, type LangChainConnector } from './index.js';

/** ragfresh always passes vectors; a store asking its embeddings for one is a bug. */
class NoEmbeddings extends Embeddings {
  constructor() {
    super({});
  }
  async embedDocuments(): Promise<number[][]> {
    throw new Error('ragfresh passes vectors; the store must not embed text');
  }
  async embedQuery(): Promise<number[]> {
    throw new Error('ragfresh passes vectors; the store must not embed text');
  }
}

/**
 * LangChain's own `MemoryVectorStore` (its similarity search and predicate filter), plus the
 * two things the test target needs and the class lacks: `delete({ ids })` (the base class
 * throws "Not implemented") and persistence to a JSON file, so a crash-case child process and
 * its parent share one store. `addVectors` still appends, as LangChain's does. Instances are
 * shared per file within a process and reload when another process rewrote the file.
 */
export class FileMemoryVectorStore extends MemoryVectorStore {
  static readonly #open = new Map<string, FileMemoryVectorStore>();
  readonly #file: string;
  #stamp = '';

  static at(file: string): FileMemoryVectorStore {
    let store = FileMemoryVectorStore.#open.get(file);
    if (store === undefined) {
      store = new FileMemoryVectorStore(file);
      FileMemoryVectorStore.#open.set(file, store);
    }
    return store;
  }

  private constructor(file: string) {
    super(new NoEmbeddings());
    this.#file = file;
  }

  #stampOf(): string {
    try {
      const s = statSync(this.#file, { bigint: true });
      return `${s.mtimeNs}:${s.size}:${s.ino}`;
    } catch {
      return '';
    }
  }

  #load(): void {
    const stamp = this.#stampOf();
    if (stamp === this.#stamp) return;
    this.memoryVectors = stamp === '' ? [] : JSON.parse(readFileSync(this.#file, 'utf8'));
    this.#stamp = stamp;
  }

  #save(): void {
    const tmp = `${this.#file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.memoryVectors));
    renameSync(tmp, this.#file);
    this.#stamp = this.#stampOf();
  }

  override async addVectors(...args: Parameters<MemoryVectorStore['addVectors']>): Promise<void> {
    this.#load();
    await super.addVectors(...args);
    this.#save();
  }

  override async delete(params: { ids?: string[] }): Promise<void> {
    this.#load();
    const ids = new Set(params.ids ?? []);
    this.memoryVectors = this.memoryVectors.filter((v) => v.id === undefined || !ids.has(v.id));
    this.#save();
  }

  override async similaritySearchVectorWithScore(
    ...args: Parameters<MemoryVectorStore['similaritySearchVectorWithScore']>
  ) {
    this.#load();
    return super.similaritySearchVectorWithScore(...args);
  }
}

/** JSON factory for child processes: the LangChain tier over a file-backed MemoryVectorStore. */
export function createMemoryTierConnector(options: {
  readonly file: string;
  readonly epoch: string;
}): LangChainConnector {
  return createLangChainConnector({
    store: () => FileMemoryVectorStore.at(options.file),
    // Another namespace (forNamespace): a store of its own in the file `<file>__<suffix>`; its
    // epoch the default `<epoch>__<suffix>`.
    namespaceStore: (suffix) => FileMemoryVectorStore.at(`${options.file}__${suffix}`),
    filters: 'memory',
    epoch: options.epoch,
    upsert: 'appends',
    visibility: { mode: 'immediate' },
  });
}

/** JSON factory for child processes: the LangChain tier over LangChain's `Chroma` class. */
export function createChromaTierConnector(options: {
  readonly url: string;
  readonly collection: string;
  readonly epoch: string;
}): LangChainConnector {
  // Loaded on use, so the default (memory) fixture needs neither Chroma package.
  const chroma = async (collectionName: string) => {
    const { Chroma } = await import('@langchain/community/vectorstores/chroma');
    return new Chroma(new NoEmbeddings(), {
      url: options.url,
      collectionName,
      collectionMetadata: { 'hnsw:space': 'cosine' },
    });
  };
  return createLangChainConnector({
    store: () => chroma(options.collection),
    // Another namespace (forNamespace): the collection `<collection>__<suffix>`; its epoch the
    // default `<epoch>__<suffix>`.
    namespaceStore: (suffix) => chroma(`${options.collection}__${suffix}`),
    filters: 'chroma',
    epoch: options.epoch,
    upsert: 'replaces',
    visibility: { mode: 'immediate' },
  });
}

const spec = (exportName: string, options: Record<string, string>) => ({
  // Resolves to dist/fixture.js both from src/ (under vitest) and from dist/.
  module: new URL('../dist/fixture.js', import.meta.url).href,
  exportName,
  options,
});

/** Default target: LangChain's MemoryVectorStore (file-backed, see FileMemoryVectorStore), in process. */
export const fixture: StoreFixture = {
  store: 'langchain',
  async start(): Promise<StoreTarget> {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-langchain-'));
    const options = (ns: string) => ({
      file: join(dir, `${ns}.memory.json`),
      epoch: join(dir, `${ns}.epoch.json`),
    });
    return {
      kind: 'embedded',
      description: `LangChain MemoryVectorStore (@langchain/classic 1.0) with delete({ ids }) and a JSON file per namespace added by the fixture, epoch files, in ${dir}`,
      async createConnector(ns) {
        return createMemoryTierConnector(options(ns));
      },
      connectorSpec(ns) {
        return spec('createMemoryTierConnector', options(ns));
      },
      async stop() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

/** LangChain's `Chroma` class against a real local Chroma server (connector-chroma's fixture starts it), or `--url`. */
export const chromaFixture: StoreFixture = {
  store: 'langchain',
  async start(startOptions): Promise<StoreTarget> {
    const { collectionForNamespace, startLocalChroma } = await import(
      '@ragfresh/connector-chroma/fixture'
    );
    const server = startOptions?.url === undefined ? await startLocalChroma() : undefined;
    const url = startOptions?.url ?? server!.url;
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-langchain-chroma-'));
    const options = (ns: string) => ({
      url,
      collection: collectionForNamespace(ns),
      epoch: join(dir, `${ns}.epoch.json`),
    });
    return {
      kind: server === undefined ? 'url' : 'local-server',
      description: `LangChain Chroma class (@langchain/community 1.1) against Chroma at ${url}${server === undefined ? '' : ' started by the fixture'}, epoch files in ${dir}`,
      async createConnector(ns) {
        return createChromaTierConnector(options(ns));
      },
      connectorSpec(ns) {
        return spec('createChromaTierConnector', options(ns));
      },
      async stop() {
        await server?.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};
