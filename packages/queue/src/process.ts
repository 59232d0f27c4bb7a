import {
  type Connector,
  HashingEmbeddings,
  type JournalStep,
  openStateStore,
  type StateStore,
} from '@ragfresh/core';
import {
  composeEngine,
  type EngineMetrics,
  type EngineRole,
  type EngineSettingsInput,
  resolveEngineSettings,
} from '@ragfresh/engine';
import type { EngineDeps } from '@ragfresh/engine/stages';
import { type Fetcher, RedisPolitenessGate } from '@ragfresh/fetch';
import { connectRedis, prefixOf, type QueueConfig } from './config.js';
import { PageWorker } from './page-worker.js';
import { PublishConsumer } from './publish-consumer.js';

/**
 * Everything one queue process needs, as JSON (so a test, a benchmark or a container can start
 * one from an environment variable). The CLI builds the same objects from `ragfresh.config.ts`.
 */
export interface QueueProcessSpec {
  readonly role: 'pages' | 'publish' | 'both';
  readonly name: string;
  readonly queue: QueueConfig;
  readonly state: { readonly spec: string; readonly namespace: string };
  /** A connector factory module, as a conformance `connectorSpec` gives it. */
  readonly connector: {
    readonly module: string;
    readonly exportName: string;
    readonly options: unknown;
  };
  readonly dimensions: number;
  /** The engine's settings as `ragfresh.config.ts` would resolve them (sources, fetch, deletion…). */
  readonly settings: EngineSettingsInput;
  /** BullMQ lock on taken page and publish jobs: a holder silent this long is presumed dead. */
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  /** Test hook: SIGKILL this process when publish batch `batch` (1-based) reaches `step`. */
  readonly crashAt?: { readonly batch: number; readonly step: JournalStep };
  /** Test hook: hold publish batch `batch` at `step` for `ms` (a batch provably in flight). */
  readonly pauseAt?: { readonly batch: number; readonly step: JournalStep; readonly ms: number };
}

export interface QueueProcess {
  readonly worker?: PageWorker;
  readonly publisher?: PublishConsumer;
  readonly fetcher: Fetcher;
  readonly gate: RedisPolitenessGate;
  readonly state: StateStore;
  close(options?: { readonly abandon?: boolean }): Promise<void>;
}

const ROLES: Readonly<Record<QueueProcessSpec['role'], EngineRole>> = {
  pages: 'page-worker',
  publish: 'publish-worker',
  both: 'worker',
};

export async function startQueueProcess(
  spec: QueueProcessSpec,
  options: {
    readonly log?: (message: string) => void;
    readonly metrics?: EngineMetrics;
    readonly embeddings?: EngineDeps['embeddings'];
  } = {},
): Promise<QueueProcess> {
  const log = options.log ?? (() => {});
  const redis = connectRedis(spec.queue, log);
  const prefix = prefixOf(spec.queue);
  const gate = new RedisPolitenessGate({ redis, prefix: `${prefix}:polite` });
  const state = await openStateStore(spec.state.spec, { namespace: spec.state.namespace });
  const mod = (await import(spec.connector.module)) as Record<string, unknown>;
  const factory = mod[spec.connector.exportName] as (o: unknown) => Connector;
  const connector = factory(spec.connector.options);
  // Batches this process started (journalled 'manifest'), for the test hooks.
  let batches = 0;
  const { crashAt, pauseAt } = spec;
  const beforeStep = async (step: JournalStep): Promise<void> => {
    if (step === 'manifest') batches++;
    if (crashAt !== undefined && batches === crashAt.batch && step === crashAt.step) {
      log(`crash hook: SIGKILL at batch ${batches} step ${step}`);
      process.kill(process.pid, 'SIGKILL');
    }
    if (pauseAt !== undefined && batches === pauseAt.batch && step === pauseAt.step) {
      log(`pause hook: batch ${batches} step ${step} held ${pauseAt.ms} ms`);
      await new Promise((r) => setTimeout(r, pauseAt.ms));
    }
  };
  const engine = await composeEngine(
    resolveEngineSettings(spec.settings),
    {
      connector,
      state,
      embeddings: options.embeddings ?? new HashingEmbeddings({ dimensions: spec.dimensions }),
      politeness: gate,
      ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
      ...(crashAt === undefined && pauseAt === undefined ? {} : { publisherHooks: { beforeStep } }),
    },
    ROLES[spec.role],
  );
  const { deps } = engine;
  const timing = {
    ...(spec.lockDurationMs === undefined ? {} : { lockDurationMs: spec.lockDurationMs }),
    ...(spec.stalledIntervalMs === undefined ? {} : { stalledIntervalMs: spec.stalledIntervalMs }),
  };
  const worker =
    spec.role === 'publish'
      ? undefined
      : new PageWorker({
          connection: redis,
          prefix,
          deps,
          name: spec.name,
          onError: log,
          ...timing,
        });
  const publisher =
    spec.role === 'pages'
      ? undefined
      : new PublishConsumer({
          connection: redis,
          prefix,
          deps,
          name: `${spec.name}:publish`,
          log,
          ...timing,
          publisher: engine.publisherOptions,
        });
  publisher?.start();
  return {
    ...(worker === undefined ? {} : { worker }),
    ...(publisher === undefined ? {} : { publisher }),
    fetcher: engine.fetcher,
    gate,
    state,
    async close(closeOptions = {}) {
      await worker?.close(closeOptions);
      await publisher?.close();
      await engine.close();
      await redis.quit().catch(() => {});
    },
  };
}
