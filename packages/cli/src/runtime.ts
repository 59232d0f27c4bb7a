import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  type Connector,
  HashingEmbeddings,
  openStateStore,
  Publisher,
  RagfreshError,
  type StateStore,
} from '@ragfresh/core';
import {
  type EngineSource,
  ExtractPipeline,
  type PagePipeline,
  type PageRenderer,
  RefreshEngine,
} from '@ragfresh/engine';
import { Fetcher, FileRawSnapshotStore, type RawSnapshotStore } from '@ragfresh/fetch';
import type { ConnectorConfig, ResolvedConfig } from './config.js';
import { type Logger, silentLogger } from './log.js';
import { Metrics } from './metrics.js';

const FACTORIES: Record<ConnectorConfig['store'], string> = {
  lancedb: 'createLanceDbConnector',
  memory: 'createMemoryConnector',
  chroma: 'createChromaConnector',
  pgvector: 'createPgVectorConnector',
  qdrant: 'createQdrantConnector',
  pinecone: 'createPineconeConnector',
};

type ConnectorFactory = (options: Record<string, unknown>) => Connector | Promise<Connector>;

/** Loads `@ragfresh/connector-<store>` and builds the connector from the config's options. */
export async function createConnector(config: ConnectorConfig): Promise<Connector> {
  const pkg = `@ragfresh/connector-${config.store}`;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pkg)) as Record<string, unknown>;
  } catch (cause) {
    throw new RagfreshError(
      'INVALID_CONFIG',
      `connector "${config.store}" needs the package ${pkg}; install it (npm i ${pkg}).`,
      {
        scope: 'config',
        cause,
      },
    );
  }
  const factory = mod[FACTORIES[config.store]];
  if (typeof factory !== 'function') {
    throw new RagfreshError('INTERNAL', `${pkg} does not export ${FACTORIES[config.store]}.`, {
      scope: 'config',
    });
  }
  const { store: _store, ...options } = config;
  return (factory as ConnectorFactory)(options);
}

function isEmbeddings(v: unknown): v is EmbeddingsInterface {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as EmbeddingsInterface).embedDocuments === 'function'
  );
}

export interface Runtime {
  readonly config: ResolvedConfig;
  readonly connector: Connector;
  readonly state: StateStore;
  readonly publisher: Publisher;
  readonly fetcher: Fetcher;
  readonly embeddings: EmbeddingsInterface;
  readonly snapshots: RawSnapshotStore;
  readonly pipeline: PagePipeline;
  readonly engine: RefreshEngine;
  readonly metrics: Metrics;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  readonly log?: Logger;
  readonly now?: () => Date;
  readonly pipeline?: PagePipeline;
  /** Read-only commands (status, query, review list) do not take the publisher lease. */
  readonly readOnly?: boolean;
}

/** Everything the CLI and the engine need, built from a resolved config. */
export async function openRuntime(
  config: ResolvedConfig,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  mkdirSync(config.dataDir, { recursive: true });
  const embeddings: EmbeddingsInterface = isEmbeddings(config.embeddings)
    ? config.embeddings
    : new HashingEmbeddings({ dimensions: config.embeddings?.dimensions ?? 256 });
  const dimensions = (await embeddings.embedQuery('ragfresh dimension probe')).length;
  const state = await openStateStore(config.state);
  const connector = await createConnector(config.connector);
  try {
    await connector.open({ dimensions });
  } catch (err) {
    await state.close();
    throw err;
  }
  const snapshots = new FileRawSnapshotStore(join(config.dataDir, 'raw'));
  const metrics = new Metrics();
  const fetcher = new Fetcher({
    userAgent: config.userAgent,
    robots: config.fetch?.robots === false ? false : { store: state },
    ...(config.fetch?.minIntervalMs === undefined
      ? {}
      : { minIntervalMs: config.fetch.minIntervalMs }),
    ...(config.fetch?.perHostConcurrency === undefined
      ? {}
      : { perHostConcurrency: config.fetch.perHostConcurrency }),
    ...(config.fetch?.globalConcurrency === undefined
      ? {}
      : { globalConcurrency: config.fetch.globalConcurrency }),
    ...(config.fetch?.timeoutMs === undefined
      ? {}
      : { totalTimeoutMs: config.fetch.timeoutMs, headersTimeoutMs: config.fetch.timeoutMs }),
    ...(config.fetch?.allowPrivateNetworks === true
      ? { network: { allowPrivateNetworks: true } }
      : {}),
    ...(config.fetch?.circuitBreaker === undefined
      ? {}
      : { circuitBreaker: config.fetch.circuitBreaker }),
    snapshots,
  });
  const pipeline = options.pipeline ?? new ExtractPipeline(config.chunking ?? {});
  const publisher = options.readOnly
    ? undefined
    : await Publisher.open({
        connector,
        state,
        maxRetireShare: config.maxRetireShare,
        contracts: (sourceId) => config.sources.find((s) => s.id === sourceId)?.contract,
        canaries: (sourceId) => config.sources.find((s) => s.id === sourceId)?.canaries ?? [],
        embedQuery: (text) => embeddings.embedQuery(text),
        ...(options.now === undefined ? {} : { now: options.now }),
      });
  const log = options.log ?? silentLogger;
  // Launched on first use only, for sources that render.
  let renderer: { close(): Promise<void> } | undefined;
  const needsRender = config.sources.some(
    (s) => s.acquisition === 'rendered' || s.acquisition === 'auto',
  );
  const launchRenderer = async (): Promise<PageRenderer> => {
    let mod: typeof import('@ragfresh/render');
    try {
      mod = await import('@ragfresh/render');
    } catch (cause) {
      throw new RagfreshError(
        'INVALID_CONFIG',
        'acquisition "rendered"/"auto" needs @ragfresh/render; install it.',
        {
          scope: 'config',
          cause,
        },
      );
    }
    const launched = await mod.Renderer.launch({ userAgent: config.userAgent });
    renderer = launched;
    return launched;
  };
  const engine = new RefreshEngine({
    sources: config.sources satisfies readonly EngineSource[],
    deletion: {
      goneChecks: config.goneChecks,
      minGoneAgeMs: config.minGoneAgeMs,
      autoApprove: config.autoApproveDeletions,
    },
    concurrency: config.fetch?.globalConcurrency ?? 8,
    connector,
    state,
    publisher: publisher ?? readOnlyPublisher(),
    fetcher,
    pipeline,
    embeddings,
    snapshots,
    log,
    metrics,
    ...(needsRender ? { renderer: launchRenderer } : {}),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return {
    config,
    connector,
    state,
    publisher: publisher ?? readOnlyPublisher(),
    fetcher,
    embeddings,
    snapshots,
    pipeline,
    engine,
    metrics,
    async close() {
      await publisher?.close();
      await renderer?.close();
      await fetcher.close();
      await connector.close();
      await state.close();
    },
  };
}

function readOnlyPublisher(): Publisher {
  return new Proxy({} as Publisher, {
    get() {
      throw new RagfreshError(
        'INTERNAL',
        'this command opened ragfresh read-only; it cannot publish.',
      );
    },
  });
}
