import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  type Connector,
  HashingEmbeddings,
  isRagfreshError,
  openStateStore,
  Publisher,
  RagfreshError,
  type StateStore,
  type Tombstone,
} from '@ragfresh/core';
import {
  type EngineSource,
  ExtractPipeline,
  type PagePipeline,
  type PageRenderer,
  RefreshEngine,
  type TombstoneMirror,
} from '@ragfresh/engine';
import { Fetcher, FileRawSnapshotStore, type RawSnapshotStore } from '@ragfresh/fetch';
import type { ResolvedConfig } from './config.js';
import { createConnector } from './connectors.js';
import { type Logger, silentLogger } from './log.js';
import { Metrics } from './metrics.js';

export { createConnector } from './connectors.js';

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
  const connector = await createConnector(config.connector, {
    dataDir: config.dataDir,
    baseDir: config.configDir,
  });
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
    network: {
      settingName: 'fetch.allow',
      ...(config.fetch?.allow === undefined ? {} : { allow: config.fetch.allow }),
      ...(config.fetch?.allowPrivateNetworks === true ? { allowPrivateNetworks: true } : {}),
    },
    ...(config.fetch?.circuitBreaker === undefined
      ? {}
      : { circuitBreaker: config.fetch.circuitBreaker }),
    snapshots,
  });
  const pipeline = options.pipeline ?? new ExtractPipeline(config.chunking ?? {});
  const holder = new HolderFile(join(config.dataDir, 'publisher.json'));
  let publisher: Publisher | undefined;
  if (!options.readOnly) {
    try {
      publisher = await Publisher.open({
        connector,
        state,
        maxRetireShare: config.maxRetireShare,
        graceMs: config.retireGraceMs,
        contracts: (sourceId) => config.sources.find((s) => s.id === sourceId)?.contract,
        canaries: (sourceId) => config.sources.find((s) => s.id === sourceId)?.canaries ?? [],
        embedQuery: (text) => embeddings.embedQuery(text),
        leaseTtlMs: LEASE_TTL_MS,
        ...(options.now === undefined ? {} : { now: options.now }),
      });
    } catch (err) {
      await connector.close().catch(() => {});
      await state.close().catch(() => {});
      if (isRagfreshError(err, 'LEASE_HELD')) throw holder.busyError(err);
      throw err;
    }
    holder.claim();
  }
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
    maxRetireShare: config.maxRetireShare,
    tombstones: new FileTombstoneMirror(join(config.dataDir, 'tombstones.json')),
    deletion: {
      goneChecks: config.goneChecks,
      minGoneAgeMs: config.minGoneAgeMs,
      autoApprove: config.autoApproveDeletions,
      redirectedGone: config.redirectedGone,
    },
    concurrency: config.fetch?.globalConcurrency ?? 8,
    connector,
    state,
    publisher: publisher ?? readOnlyPublisher(),
    fetcher,
    pipeline,
    embeddings,
    snapshots,
    ...(config.boilerplate === undefined ? {} : { boilerplate: config.boilerplate }),
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
      holder.release();
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

/**
 * Tombstones mirrored in `<dataDir>/tombstones.json`, beside the raw snapshots, so a lost state
 * file does not take them all: `ragfresh recover` reads them back. Written whole to a temporary
 * file and renamed, so a crash leaves the old or the new file, never half of one.
 */
export class FileTombstoneMirror implements TombstoneMirror {
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  async list(): Promise<Tombstone[]> {
    try {
      const parsed = JSON.parse(readFileSync(this.#path, 'utf8')) as { tombstones?: Tombstone[] };
      return parsed.tombstones ?? [];
    } catch {
      return [];
    }
  }

  async put(t: Tombstone): Promise<void> {
    const all = (await this.list()).filter((x) => x.documentId !== t.documentId);
    this.#write([...all, t]);
  }

  async delete(documentId: string): Promise<void> {
    this.#write((await this.list()).filter((x) => x.documentId !== documentId));
  }

  #write(tombstones: readonly Tombstone[]): void {
    const tmp = `${this.#path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ version: 1, tombstones }, null, 1)}\n`);
    renameSync(tmp, this.#path);
  }
}

/**
 * How long the publish lease lasts after its last renewal (the publisher renews it while it
 * works). `RAGFRESH_LEASE_TTL_MS` overrides it (crash tests; a host that wants faster takeover).
 */
const LEASE_TTL_MS =
  Number(process.env.RAGFRESH_LEASE_TTL_MS) > 0
    ? Number(process.env.RAGFRESH_LEASE_TTL_MS)
    : 60_000;

/**
 * Who holds the publish lease, in `<dataDir>/publisher.json` (pid, host, start, last seen), so a
 * second run can say whom it waits for and until when. The lease in the state store is the
 * lock; this file only explains it.
 */
class HolderFile {
  readonly #path: string;
  #timer: NodeJS.Timeout | undefined;
  readonly #startedAt = new Date().toISOString();

  constructor(path: string) {
    this.#path = path;
  }

  claim(): void {
    this.#write();
    this.#timer = setInterval(() => this.#write(), LEASE_TTL_MS / 4);
    this.#timer.unref();
  }

  release(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    rmSync(this.#path, { force: true });
  }

  #write(): void {
    const info = {
      pid: process.pid,
      host: hostname(),
      command: process.argv.slice(2).join(' '),
      startedAt: this.#startedAt,
      seenAt: new Date().toISOString(),
    };
    try {
      writeFileSync(this.#path, `${JSON.stringify(info)}\n`);
    } catch {
      // Only an explanation for other runs; the lease itself is in the state store.
    }
  }

  busyError(cause: unknown): RagfreshError {
    let who = 'another ragfresh run';
    let until = new Date(Date.now() + LEASE_TTL_MS).toISOString();
    try {
      const info = JSON.parse(readFileSync(this.#path, 'utf8')) as Record<string, string>;
      who = `another ragfresh run (pid ${info.pid} on ${info.host}, \`ragfresh ${info.command}\`, started ${info.startedAt})`;
      until = new Date(Date.parse(info.seenAt ?? '') + LEASE_TTL_MS).toISOString();
    } catch {
      // No holder file: the holder may be another machine sharing the state store.
    }
    return new RagfreshError(
      'LEASE_HELD',
      `${who} holds the publish lease: nothing was done. It is released when that run ends; if that run died, the lease expires by ${until}. Retry after that (exit code 6 means busy, not failed).`,
      { scope: 'cli', cause },
    );
  }
}
