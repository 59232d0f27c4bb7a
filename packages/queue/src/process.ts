import {
  type Connector,
  HashingEmbeddings,
  type JournalStep,
  openStateStore,
  type StateStore,
} from '@ragfresh/core';
import {
  type EngineDeps,
  type EngineMetrics,
  type EngineSource,
  ExtractPipeline,
} from '@ragfresh/engine';
import { Fetcher, type FetcherOptions, RedisPolitenessGate } from '@ragfresh/fetch';
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
  readonly sources: readonly EngineSource[];
  readonly fetch: Omit<
    FetcherOptions,
    'politeness' | 'robots' | 'resolver' | 'random' | 'snapshots'
  >;
  /** Pages of a batch at once. Default 8. */
  readonly concurrency?: number;
  readonly batchSize?: number;
  /** BullMQ lock on taken page and publish jobs: a holder silent this long is presumed dead. */
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly leaseTtlMs?: number;
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
  await connector.open({ dimensions: spec.dimensions });
  const fetcher = new Fetcher({ ...spec.fetch, robots: { store: state }, politeness: gate });
  const embeddings = options.embeddings ?? new HashingEmbeddings({ dimensions: spec.dimensions });
  const deps: Omit<EngineDeps, 'publisher'> = {
    sources: spec.sources,
    connector,
    state,
    fetcher,
    pipeline: new ExtractPipeline({}),
    embeddings,
    concurrency: spec.concurrency ?? 8,
    ...(spec.batchSize === undefined ? {} : { batchSize: spec.batchSize }),
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
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
          ...(spec.lockDurationMs === undefined ? {} : { lockDurationMs: spec.lockDurationMs }),
          ...(spec.stalledIntervalMs === undefined
            ? {}
            : { stalledIntervalMs: spec.stalledIntervalMs }),
        });
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
  const publisher =
    spec.role === 'pages'
      ? undefined
      : new PublishConsumer({
          connection: redis,
          prefix,
          deps,
          name: `${spec.name}:publish`,
          log,
          ...(spec.lockDurationMs === undefined ? {} : { lockDurationMs: spec.lockDurationMs }),
          ...(spec.stalledIntervalMs === undefined
            ? {}
            : { stalledIntervalMs: spec.stalledIntervalMs }),
          publisher: {
            ...(spec.leaseTtlMs === undefined ? {} : { leaseTtlMs: spec.leaseTtlMs }),
            embedQuery: (text) => embeddings.embedQuery(text),
            ...(crashAt === undefined && pauseAt === undefined ? {} : { hooks: { beforeStep } }),
          },
        });
  publisher?.start();
  return {
    ...(worker === undefined ? {} : { worker }),
    ...(publisher === undefined ? {} : { publisher }),
    fetcher,
    gate,
    state,
    async close(closeOptions = {}) {
      await worker?.close(closeOptions);
      await publisher?.close();
      await fetcher.close();
      await connector.close();
      await state.close();
      await redis.quit().catch(() => {});
    },
  };
}
