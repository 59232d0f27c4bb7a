import { randomUUID } from 'node:crypto';
import {
  errorMessage,
  isRagfreshError,
  type Lease,
  PUBLISHER_LEASE,
  Publisher,
  type PublisherOptions,
} from '@ragfresh/core';
import { EngineContext, type EngineDeps, PublishQueue, SourceRun } from '@ragfresh/engine/stages';
import { type Job, Worker } from 'bullmq';
import type { QueueRedis } from './config.js';
import { isConnectionError, PUBLISH_QUEUE } from './config.js';
import type { PublishJob, PublishJobResult } from './payloads.js';

export interface PublishConsumerOptions {
  readonly connection: QueueRedis;
  readonly prefix: string;
  /** The engine's dependencies; the publisher is opened here, under the fenced lease. */
  readonly deps: Omit<EngineDeps, 'publisher'>;
  /** How the publisher is opened (contracts, canaries, lease TTL…); connector and state come from deps. */
  readonly publisher?: Omit<PublisherOptions, 'connector' | 'state'>;
  /** Candidates per publish batch (several publish jobs share one). Default `deps.batchSize` or 25. */
  readonly batchSize?: number;
  /** How often a standby retries the lease while another publisher holds it. Default 2 s. */
  readonly standbyRetryMs?: number;
  /** Lock on taken publish jobs; extended every third of it while they are held. Default 120 s. */
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  readonly name?: string;
  readonly log?: (message: string) => void;
}

/**
 * Keeps the publisher lease alive while this process leads, also while it waits for jobs: the
 * publisher renews only inside `publish`, so an idle leader would otherwise lose the lease to
 * its standby after one TTL and the two would trade it back and forth. A renewal keeps holder
 * and fence, so the publisher's own renewals stay valid; `lost` is set once another publisher
 * took the lease (then this one must stop taking jobs).
 */
class LeaseHeartbeat {
  lost = false;
  readonly #timer: NodeJS.Timeout;
  #lease: Lease;
  #beating: Promise<void> | undefined;

  constructor(
    options: {
      readonly state: EngineDeps['state'];
      readonly holder: string;
      readonly fence: number;
      readonly ttlMs: number;
    },
    log: (message: string) => void,
  ) {
    this.#lease = {
      name: PUBLISHER_LEASE,
      holder: options.holder,
      fence: options.fence,
      expiresAt: 0,
    };
    let lastProblem = '';
    this.#timer = setInterval(
      () => {
        if (this.#beating !== undefined || this.lost) return;
        this.#beating = options.state
          .renewLease(this.#lease, options.ttlMs)
          .then((lease) => {
            this.#lease = lease;
            lastProblem = '';
          })
          .catch((err: unknown) => {
            if (isRagfreshError(err, 'LEASE_LOST')) this.lost = true;
            else if (errorMessage(err) !== lastProblem) {
              lastProblem = errorMessage(err);
              log(`publisher lease not renewed (${lastProblem}); retrying`);
            }
          })
          .finally(() => {
            this.#beating = undefined;
          });
      },
      Math.max(50, Math.floor(options.ttlMs / 3)),
    );
  }

  /**
   * Stops renewing and waits for a renewal under way: one landing after the publisher released
   * the lease would hold it again for a TTL, keeping the standby out for nothing.
   */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#beating;
  }
}

/**
 * The publish role: one per store namespace at a time, elected by the publisher lease (a second
 * one waits as a standby and takes over when the lease expires). It takes publish jobs
 * manually from BullMQ, merges their candidates into batches through the engine's
 * `PublishQueue` (gates, stage, verify, promote, retire, confirm; held candidates once more)
 * and completes the jobs only after their candidates were published or settled. A publisher
 * killed mid-batch leaves its journal for the next one's recovery and its jobs locked until
 * BullMQ's stalled check returns them; republishing a published version is `unchanged`. A
 * batch that fails (lease lost, store or state unreachable) hands its jobs back at once.
 */
export class PublishConsumer {
  readonly #options: PublishConsumerOptions;
  readonly #worker: Worker<PublishJob>;
  readonly #token = randomUUID();
  readonly #holder = `publish-consumer-${process.pid}-${randomUUID()}`;
  readonly #log: (message: string) => void;
  readonly #lockMs: number;
  #stopping = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  /** Batches published by this process (for reports and tests). */
  batches = 0;
  /** Whether this process holds the publisher lease now. */
  leader = false;

  constructor(options: PublishConsumerOptions) {
    this.#options = options;
    this.#log = options.log ?? (() => {});
    this.#lockMs = options.lockDurationMs ?? 120_000;
    this.#worker = new Worker<PublishJob>(PUBLISH_QUEUE, null, {
      connection: options.connection,
      prefix: options.prefix,
      lockDuration: this.#lockMs,
      ...(options.stalledIntervalMs === undefined
        ? {}
        : { stalledInterval: options.stalledIntervalMs }),
      maxStalledCount: 5,
      drainDelay: 2,
      ...(options.name === undefined ? {} : { name: options.name }),
      autorun: false,
    });
    // Connection problems are said once per outage by connectRedis; the rest are worth a line.
    this.#worker.on('error', (err) => {
      if (!isConnectionError(err)) this.#log(`publish consumer: ${err.message}`);
    });
  }

  start(): void {
    this.#loop ??= this.#run().catch((err) => {
      this.#log(`publish consumer stopped: ${errorMessage(err)}`);
    });
  }

  /** Waits `ms`, or less when `close` is called. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        resolve();
      }
      this.#wake = done;
    });
  }

  /**
   * Takes the lease, retrying while another publisher holds it (`LEASE_HELD`) and, with one line
   * per distinct problem, while the state store or the vector store cannot be reached.
   */
  async #openPublisher(): Promise<Publisher | undefined> {
    const { deps } = this.#options;
    const retryMs = this.#options.standbyRetryMs ?? 2000;
    let lastProblem = '';
    while (!this.#stopping) {
      try {
        const left = await deps.state.getJournal();
        const publisher = await Publisher.open({
          ...this.#options.publisher,
          holder: this.#holder,
          connector: deps.connector,
          state: deps.state,
        });
        if (left !== undefined && (await deps.state.getJournal()) === undefined) {
          const epoch = await deps.connector.readEpoch();
          this.#log(
            `recovered the journal of batch ${left.batchId} left at step ${left.step} (${left.documents.length} documents): ${epoch >= left.targetEpoch ? 'rolled forward' : 'rolled back'}`,
          );
        }
        return publisher;
      } catch (err) {
        if (!isRagfreshError(err, 'LEASE_HELD') && errorMessage(err) !== lastProblem) {
          lastProblem = errorMessage(err);
          this.#log(`publisher not opened (${lastProblem}); retrying every ${retryMs} ms`);
        }
        await this.#pause(retryMs);
      }
    }
    return undefined;
  }

  async #run(): Promise<void> {
    await this.#worker.startStalledCheckTimer();
    const ttlMs = this.#options.publisher?.leaseTtlMs ?? 60_000;
    while (!this.#stopping) {
      const publisher = await this.#openPublisher();
      if (publisher === undefined) return;
      const heartbeat = new LeaseHeartbeat(
        { state: this.#options.deps.state, holder: this.#holder, fence: publisher.fence, ttlMs },
        this.#log,
      );
      this.leader = true;
      this.#log(`publisher lease taken (fence ${publisher.fence})`);
      try {
        await this.#consume(publisher, heartbeat);
        if (heartbeat.lost) this.#log('publisher lease lost; standing by');
      } catch (err) {
        if (isRagfreshError(err, 'LEASE_LOST')) {
          // Another publisher took over (this one paused past its lease): the jobs went back to
          // the queue; this process becomes a standby.
          this.#log('publisher lease lost; standing by');
        } else {
          this.#log(
            `publishing interrupted (${errorMessage(err)}); held jobs handed back, retrying`,
          );
          await this.#pause(this.#options.standbyRetryMs ?? 2000);
        }
      } finally {
        await heartbeat.stop();
        this.leader = false;
        await publisher.close().catch(() => {});
      }
    }
  }

  async #consume(publisher: Publisher, heartbeat: LeaseHeartbeat): Promise<void> {
    const batchSize = this.#options.batchSize ?? this.#options.deps.batchSize ?? 25;
    const ctx = new EngineContext({ ...this.#options.deps, publisher, batchSize });
    while (!this.#stopping && !heartbeat.lost) {
      const first = await this.#worker.getNextJob(this.#token, { block: true });
      if (first === undefined) continue;
      const jobs: Job<PublishJob>[] = [first];
      let size = first.data.candidates.length;
      while (size < batchSize && !this.#stopping && !heartbeat.lost) {
        const next = await this.#worker.getNextJob(this.#token, { block: false });
        if (next === undefined) break;
        jobs.push(next);
        size += next.data.candidates.length;
      }
      if (heartbeat.lost) {
        await this.#handBack(jobs, undefined);
        return;
      }
      await this.#publishJobs(ctx, jobs);
    }
  }

  /**
   * Returns jobs this consumer holds: to `wait` when the batch stopped for a reason that is not
   * the jobs' (the lease moved), else as a failed attempt (retried with backoff).
   */
  async #handBack(jobs: readonly Job<PublishJob>[], err: unknown): Promise<void> {
    for (const job of jobs) {
      try {
        if (err === undefined || isRagfreshError(err, 'LEASE_LOST'))
          await job.moveToWait(this.#token);
        else
          await job.moveToFailed(err instanceof Error ? err : new Error(String(err)), this.#token);
      } catch (e) {
        // Its lock is gone already (the stalled check returned it): nothing left to hand back.
        this.#log(`publish job ${job.id} not handed back (${errorMessage(e)})`);
      }
    }
  }

  async #publishJobs(ctx: EngineContext, jobs: readonly Job<PublishJob>[]): Promise<void> {
    const keepLocks = setInterval(
      () => {
        for (const j of jobs) void j.extendLock(this.#token, this.#lockMs).catch(() => {});
      },
      Math.max(50, Math.floor(this.#lockMs / 3)),
    );
    // One run per job and source: each job's outcome counts go back to its window's finish job
    // (the queue's gates count per source, not per run, so the batch is gated as one).
    const runs = new Map<Job<PublishJob>, Map<string, SourceRun>>();
    try {
      const queue = new PublishQueue(ctx);
      for (const job of jobs) {
        const ofJob = new Map<string, SourceRun>();
        runs.set(job, ofJob);
        for (const { candidate, mode } of job.data.candidates) {
          const source = ctx.deps.sources.find((s) => s.id === candidate.sourceId);
          if (source === undefined) continue;
          let run = ofJob.get(source.id);
          if (run === undefined) {
            run = new SourceRun(source, ctx.nowIso());
            ofJob.set(source.id, run);
          }
          await queue.add({ run, candidate, ...(mode === undefined ? {} : { mode }) });
        }
      }
      await queue.drain();
    } catch (err) {
      clearInterval(keepLocks);
      await this.#handBack(jobs, err);
      throw err;
    }
    clearInterval(keepLocks);
    this.batches++;
    const now = Date.now();
    for (const job of jobs) {
      const result: PublishJobResult = [...(runs.get(job)?.values() ?? [])].map((r) => ({
        sourceId: r.source.id,
        counts: { ...r.counts },
        alerts: r.alerts,
      }));
      ctx.gauge(
        'ragfresh_publish_lag_seconds',
        'Seconds from a batch handed to the publish queue to its publication.',
        {},
        (now - job.timestamp) / 1000,
      );
      try {
        await job.moveToCompleted(result, this.#token, false);
      } catch (err) {
        // Its lock expired meanwhile and the job is queued again: published once more, it is
        // `unchanged`.
        this.#log(`publish job ${job.id} not completed (${errorMessage(err)}); it runs again`);
      }
    }
    ctx.count(
      'ragfresh_queue_jobs_total',
      'Queue jobs processed by this worker.',
      { queue: PUBLISH_QUEUE },
      jobs.length,
    );
  }

  /** Stops after the batch in flight (a graceful SIGTERM); releases the lease. */
  async close(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    // The loop ends after the batch in flight, or when the blocking take returns (drainDelay).
    await this.#loop;
    await this.#worker.close();
  }
}
