import { randomUUID } from 'node:crypto';
import { errorMessage, isRagfreshError, Publisher, type PublisherOptions } from '@ragfresh/core';
import { EngineContext, type EngineDeps, PublishQueue, SourceRun } from '@ragfresh/engine';
import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { PUBLISH_QUEUE } from './config.js';
import type { PublishJob } from './payloads.js';

export interface PublishConsumerOptions {
  readonly connection: Redis;
  readonly prefix: string;
  /** The engine's dependencies; the publisher is opened here, under the fenced lease. */
  readonly deps: Omit<EngineDeps, 'publisher'>;
  /** How the publisher is opened (contracts, canaries, lease TTL…); connector and state come from deps. */
  readonly publisher?: Omit<PublisherOptions, 'connector' | 'state'>;
  /** Candidates per publish batch (several publish jobs share one). Default `deps.batchSize` or 25. */
  readonly batchSize?: number;
  /** How often a standby retries the lease while another publisher holds it. Default 2 s. */
  readonly standbyRetryMs?: number;
  /** Lock on taken publish jobs; extended while a batch runs. Default 120 s. */
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly name?: string;
  readonly log?: (message: string) => void;
}

/**
 * The publish role: one per store namespace at a time, elected by the publisher lease (a second
 * one waits as a standby and takes over when the lease expires). It takes publish jobs
 * manually from BullMQ, merges their candidates into batches through the engine's
 * `PublishQueue` (gates, stage, verify, promote, retire, confirm; held candidates once more)
 * and completes the jobs only after their candidates were published or settled. A publisher
 * killed mid-batch leaves its journal for the next one's recovery and its jobs locked until
 * BullMQ's stalled check returns them; republishing a published version is `unchanged`.
 */
export class PublishConsumer {
  readonly #options: PublishConsumerOptions;
  readonly #worker: Worker<PublishJob>;
  readonly #token = randomUUID();
  readonly #log: (message: string) => void;
  #stopping = false;
  #loop: Promise<void> | undefined;
  /** Batches published by this process (for reports and tests). */
  batches = 0;
  /** Whether this process holds the publisher lease now. */
  leader = false;

  constructor(options: PublishConsumerOptions) {
    this.#options = options;
    this.#log = options.log ?? (() => {});
    this.#worker = new Worker<PublishJob>(PUBLISH_QUEUE, null, {
      connection: options.connection,
      prefix: options.prefix,
      lockDuration: options.lockDurationMs ?? 120_000,
      ...(options.stalledIntervalMs === undefined
        ? {}
        : { stalledInterval: options.stalledIntervalMs }),
      maxStalledCount: 5,
      drainDelay: 2,
      ...(options.name === undefined ? {} : { name: options.name }),
      autorun: false,
    });
    this.#worker.on('error', (err) => this.#log(`publish consumer: ${err.message}`));
  }

  start(): void {
    this.#loop ??= this.#run().catch((err) => {
      this.#log(`publish consumer stopped: ${errorMessage(err)}`);
      throw err;
    });
  }

  async #openPublisher(): Promise<Publisher | undefined> {
    const { deps } = this.#options;
    while (!this.#stopping) {
      try {
        return await Publisher.open({
          ...this.#options.publisher,
          connector: deps.connector,
          state: deps.state,
        });
      } catch (err) {
        if (!isRagfreshError(err, 'LEASE_HELD')) throw err;
        await new Promise((r) => setTimeout(r, this.#options.standbyRetryMs ?? 2000));
      }
    }
    return undefined;
  }

  async #run(): Promise<void> {
    await this.#worker.startStalledCheckTimer();
    while (!this.#stopping) {
      const publisher = await this.#openPublisher();
      if (publisher === undefined) return;
      this.leader = true;
      this.#log(`publisher lease taken (fence ${publisher.fence})`);
      try {
        await this.#consume(publisher);
      } catch (err) {
        if (!isRagfreshError(err, 'LEASE_LOST')) throw err;
        // Another publisher took over (this one paused past its lease): its jobs return to the
        // queue through the stalled check; this process becomes a standby.
        this.#log('publisher lease lost; standing by');
      } finally {
        this.leader = false;
        await publisher.close().catch(() => {});
      }
    }
  }

  async #consume(publisher: Publisher): Promise<void> {
    const batchSize = this.#options.batchSize ?? this.#options.deps.batchSize ?? 25;
    const ctx = new EngineContext({ ...this.#options.deps, publisher, batchSize });
    while (!this.#stopping) {
      const first = await this.#worker.getNextJob(this.#token, { block: true });
      if (first === undefined) continue;
      const jobs: Job<PublishJob>[] = [first];
      let size = first.data.candidates.length;
      while (size < batchSize && !this.#stopping) {
        const next = await this.#worker.getNextJob(this.#token, { block: false });
        if (next === undefined) break;
        jobs.push(next);
        size += next.data.candidates.length;
      }
      await this.#publishJobs(ctx, jobs);
    }
  }

  async #publishJobs(ctx: EngineContext, jobs: readonly Job<PublishJob>[]): Promise<void> {
    const lock = this.#options.lockDurationMs ?? 120_000;
    const keepLocks = setInterval(() => {
      for (const j of jobs) void j.extendLock(this.#token, lock).catch(() => {});
    }, lock / 3);
    try {
      const queue = new PublishQueue(ctx);
      const runs = new Map<string, SourceRun>();
      for (const job of jobs) {
        for (const { candidate, mode } of job.data.candidates) {
          const source = ctx.deps.sources.find((s) => s.id === candidate.sourceId);
          if (source === undefined) continue;
          let run = runs.get(source.id);
          if (run === undefined) {
            run = new SourceRun(source, ctx.nowIso());
            runs.set(source.id, run);
          }
          await queue.add({ run, candidate, ...(mode === undefined ? {} : { mode }) });
        }
      }
      await queue.drain();
      this.batches++;
      const now = Date.now();
      for (const job of jobs) {
        ctx.gauge(
          'ragfresh_publish_lag_seconds',
          'Seconds from a batch handed to the publish queue to its publication.',
          {},
          (now - job.timestamp) / 1000,
        );
        const summary = [...runs.values()].map((r) => ({ sourceId: r.source.id, ...r.counts }));
        await job.moveToCompleted(summary, this.#token, false);
      }
      ctx.count(
        'ragfresh_queue_jobs_total',
        'Queue jobs processed by this worker.',
        {
          queue: PUBLISH_QUEUE,
        },
        jobs.length,
      );
    } finally {
      clearInterval(keepLocks);
    }
  }

  /** Stops after the batch in flight (a graceful SIGTERM); releases the lease. */
  async close(): Promise<void> {
    this.#stopping = true;
    // The loop ends after the batch in flight, or when the blocking take returns (drainDelay).
    await this.#loop?.catch(() => {});
    await this.#worker.close();
  }
}
