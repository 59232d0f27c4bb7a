// ragfresh in the freshness bench: the CLI package's public runtime (`openRuntime`) with its
// defaults except the store, which is the in-memory reference connector so both sides of the
// comparison keep their index in the bench process (LangChain uses MemoryVectorStore) and the
// concurrent reader can look after every store write. SQLite state in its own directory.
import { MemoryConnector } from '@ragfresh/connector-memory';
import { CountingEmbeddings, FIELDS } from '@ragfresh/core';
import { BENCH_DIMENSIONS } from './counting-embeddings.ts';
import type { ViewChunk } from './freshness-audit.ts';
import { benchConfig } from './ragfresh-config.ts';

type Runtime = Awaited<ReturnType<typeof import('ragfresh').openRuntime>>;

/** Called after every write hook of any MemoryConnector (the pipelines run one at a time). */
let onWrite: ((connector: MemoryConnector) => Promise<void>) | undefined;

const WRITE_HOOKS = [
  '_upsert',
  '_patchValidity',
  '_patchValidityMany',
  '_advanceEpoch',
  '_deleteVersion',
  '_deleteVersions',
  '_deleteDocuments',
] as const;
const proto = MemoryConnector.prototype as unknown as Record<
  string,
  (...args: unknown[]) => Promise<unknown>
>;
for (const hook of WRITE_HOOKS) {
  const original = proto[hook];
  if (typeof original !== 'function') continue;
  proto[hook] = async function (this: MemoryConnector, ...args: unknown[]) {
    const result = await original.apply(this, args);
    await onWrite?.(this);
    return result;
  };
}

/** What an ordinary reader gets: read the published epoch, then every chunk of that view. */
export async function epochView(connector: MemoryConnector): Promise<ViewChunk[]> {
  const epoch = await connector.readEpoch();
  if (epoch === 0) return [];
  const probe = new Array<number>(256).fill(0);
  probe[0] = 1;
  const hits = await connector.query(probe, 1_000_000, { view: { kind: 'epoch', epoch } });
  return hits.map((h) => ({ url: String(h.metadata[FIELDS.url]), text: h.text }));
}

export class RagfreshPipeline {
  readonly embeddings: CountingEmbeddings;
  readonly #rt: Runtime;

  private constructor(rt: Runtime, embeddings: CountingEmbeddings) {
    this.#rt = rt;
    this.embeddings = embeddings;
  }

  static async open(
    dataDir: string,
    sitemaps: readonly string[],
    autoApprove: boolean,
    progress: { onPage?: () => void },
  ): Promise<RagfreshPipeline> {
    const { openRuntime, resolveConfig } = await import('ragfresh');
    const embeddings = new CountingEmbeddings({ dimensions: BENCH_DIMENSIONS });
    const raw = benchConfig(dataDir, sitemaps);
    const config = resolveConfig({
      ...raw,
      connector: { store: 'memory' },
      embeddings,
      fetch: { ...(raw.fetch as object), globalConcurrency: 16 },
      ...(autoApprove ? { deletion: { autoApprove: true } } : {}),
    });
    const rt = await openRuntime(config, {
      log: {
        info() {},
        warn() {},
        progress: () => progress.onPage?.(),
        done() {},
        heartbeat() {},
        heartbeatMs: 60_000,
      },
    });
    return new RagfreshPipeline(rt, embeddings);
  }

  get connector(): MemoryConnector {
    return this.#rt.connector as MemoryConnector;
  }

  view(): Promise<ViewChunk[]> {
    return epochView(this.connector);
  }

  /** Reader called after every store write of this pipeline until `observe(undefined)`. */
  observe(reader: (() => Promise<void>) | undefined): void {
    onWrite =
      reader === undefined
        ? undefined
        : async (c) => {
            if (c === this.connector) await reader();
          };
  }

  async round(signal?: AbortSignal): Promise<Record<string, number>> {
    const report = await this.#rt.engine.refresh({ all: true, ...(signal ? { signal } : {}) });
    return { ...report.totals };
  }

  close(): Promise<void> {
    return this.#rt.close();
  }
}
