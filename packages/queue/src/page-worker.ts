import type { DocumentRecord } from '@ragfresh/core';
import {
  CandidateBatch,
  EngineContext,
  type EngineDeps,
  InFlightPages,
  mapLimit,
  refreshPage,
  SourceRun,
} from '@ragfresh/engine/stages';
import { type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { QueueRedis } from './config.js';
import { FINISH_QUEUE, isConnectionError, PAGES_QUEUE, PUBLISH_QUEUE } from './config.js';
import { finishWindow } from './finish.js';
import {
  type FinishJob,
  type PageBatchJob,
  type PageBatchResult,
  type PublishJob,
  publishJobId,
} from './payloads.js';

export interface PageWorkerOptions {
  readonly connection: QueueRedis;
  readonly prefix: string;
  /** The engine's dependencies without a publisher (sources, state, connector, fetcher, pipeline, embeddings…). */
  readonly deps: Omit<EngineDeps, 'publisher'>;
  /** Page batches processed at once by this process. Default 1 (pages of a batch run `deps.concurrency` at once). */
  readonly jobConcurrency?: number;
  /** BullMQ lock duration; a worker silent this long is presumed dead and its job retried. Default 30 s. */
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  /** How long a finish job waits before looking again at its window's publish jobs. Default 1 s. */
  readonly finishPollMs?: number;
  /** Name shown by `ragfresh status` (BullMQ client name). */
  readonly name?: string;
  readonly onError?: (message: string) => void;
}

/**
 * `ragfresh worker`'s page role: takes URL batches from the `pages` queue, runs each page
 * through the engine's page stage (acquire, classify, extract, chunk, embed; evidence written
 * to the shared state store) and adds one publish job holding every candidate of the batch —
 * all or nothing, so a worker never hands over half a batch. A job of a worker that died is
 * retried elsewhere by BullMQ's stalled-job check; the retry is idempotent (deterministic ids).
 */
export class PageWorker {
  readonly #worker: Worker<PageBatchJob, PageBatchResult>;
  readonly #finisher: Worker<FinishJob>;
  readonly #publish: Queue<PublishJob>;
  readonly #ctx: EngineContext;
  readonly #abort = new AbortController();
  readonly #onError: (message: string) => void;

  constructor(options: PageWorkerOptions) {
    this.#ctx = new EngineContext(options.deps);
    this.#onError = options.onError ?? (() => {});
    this.#publish = new Queue<PublishJob>(PUBLISH_QUEUE, {
      connection: options.connection,
      prefix: options.prefix,
    });
    this.#worker = new Worker<PageBatchJob, PageBatchResult>(
      PAGES_QUEUE,
      (job) => this.#process(job),
      {
        connection: options.connection,
        prefix: options.prefix,
        concurrency: options.jobConcurrency ?? 1,
        lockDuration: options.lockDurationMs ?? 30_000,
        ...(options.stalledIntervalMs === undefined
          ? {}
          : { stalledInterval: options.stalledIntervalMs }),
        maxStalledCount: 3,
        ...(options.name === undefined ? {} : { name: options.name }),
        autorun: false,
      },
    );
    // A window's end (inventory diff, proposals, shape checks, run summary), once its page jobs
    // are through: it needs the same state, sources and policies as the pages.
    this.#finisher = new Worker<FinishJob>(
      FINISH_QUEUE,
      (job, token) =>
        finishWindow(options.deps, this.#publish, job, token, options.finishPollMs ?? 1000),
      {
        connection: options.connection,
        prefix: options.prefix,
        lockDuration: options.lockDurationMs ?? 30_000,
        ...(options.stalledIntervalMs === undefined
          ? {}
          : { stalledInterval: options.stalledIntervalMs }),
        maxStalledCount: 3,
        ...(options.name === undefined ? {} : { name: `${options.name}:finish` }),
        autorun: false,
      },
    );
    this.#finisher.on('error', (err) => {
      if (!isConnectionError(err)) this.#onError(`finish worker: ${err.message}`);
    });
    this.#finisher.on('failed', (job, err) =>
      this.#onError(`finish job ${job?.id ?? '?'} failed: ${err.message}`),
    );
    // Connection problems are said once per outage by connectRedis; the rest are worth a line.
    this.#worker.on('error', (err) => {
      if (!isConnectionError(err)) this.#onError(`page worker: ${err.message}`);
    });
    this.#worker.on('failed', (job, err) =>
      this.#onError(`page job ${job?.id ?? '?'} failed: ${err.message}`),
    );
    void this.#warmUp().then(() => {
      this.#worker.run().catch((err: unknown) => this.#onError(`page worker: ${String(err)}`));
      this.#finisher.run().catch((err: unknown) => this.#onError(`finish worker: ${String(err)}`));
    });
  }

  /**
   * One tiny page through the pipeline before the first job is taken: the tokenizer's ranks
   * and the parsers load on first use (~0.8 s of CPU, several seconds on a loaded machine), and
   * spent inside a job that time starved the lock renewal, so the batch ran twice.
   */
  async #warmUp(): Promise<void> {
    const url = 'https://warm-up.invalid/';
    try {
      await this.#ctx.deps.pipeline.process(
        {
          text: '<!doctype html><html><head><title>Warm-up</title></head><body><main><h1>Warm-up</h1><p>One paragraph of text, so the extractor and the tokenizer both run once.</p></main></body></html>',
          contentType: 'text/html; charset=utf-8',
          url,
          finalUrl: url,
          acquisition: 'raw',
        },
        { documentId: 'warm-up', sourceId: 'warm-up', retrievedAt: this.#ctx.nowIso() },
      );
    } catch {
      // A pipeline that refuses the page still loaded what it needed; the jobs will tell.
    }
  }

  get ctx(): EngineContext {
    return this.#ctx;
  }

  async #process(job: Job<PageBatchJob, PageBatchResult>): Promise<PageBatchResult> {
    const ctx = this.#ctx;
    const { sourceId, pages } = job.data;
    const source = ctx.deps.sources.find((s) => s.id === sourceId);
    if (source === undefined)
      throw new UnrecoverableError(`source ${sourceId} is not configured on this worker`);
    const run = new SourceRun(source, ctx.nowIso());
    // The page stages end at a publish candidate: instead of publishing, the batch's candidates
    // are collected and handed to the publish queue together, once the whole batch is through.
    const collector = new CandidateBatch();
    const records = new Map<string, DocumentRecord | undefined>();
    for (const p of pages)
      records.set(p.documentId, await ctx.deps.state.getDocument(p.documentId));
    let done = 0;
    const inFlight = new InFlightPages(ctx.log, () => ({ done, total: pages.length }));
    inFlight.start();
    try {
      await mapLimit(pages, ctx.concurrency, async (p) => {
        const entry = { ...p, record: records.get(p.documentId) };
        const page = { run, entry };
        const definitive = await inFlight.track(p.url, sourceId, () =>
          refreshPage(ctx, collector, page, this.#abort.signal),
        );
        if (!definitive) run.complete = false;
        done++;
      });
    } finally {
      inFlight.stop();
      // The batch's 304s, one transaction (the ledger holds them until here).
      await ctx.ledger.flushObservations();
    }
    if (this.#abort.signal.aborted)
      throw new Error('worker stopping; the batch goes back to the queue');
    if (collector.collected.length > 0) {
      await this.#publish.add(
        'publish',
        {
          pageJobId: job.id!,
          candidates: collector.collected.map((p) => ({
            candidate: p.candidate,
            ...(p.mode === undefined ? {} : { mode: p.mode }),
          })),
        },
        {
          jobId: publishJobId(job.id!),
          attempts: 5,
          backoff: { type: 'exponential', delay: 1000 },
          removeOnComplete: { age: 24 * 3600 },
          removeOnFail: { age: 7 * 24 * 3600 },
        },
      );
    }
    ctx.count('ragfresh_queue_jobs_total', 'Queue jobs processed by this worker.', {
      queue: PAGES_QUEUE,
    });
    ctx.count('ragfresh_queue_pages_total', 'Pages processed by this worker.', {}, pages.length);
    return {
      pages: pages.length,
      candidates: collector.collected.length,
      complete: run.complete,
      counts: { ...run.counts },
      answered: [...run.answered],
      proposals: run.proposals,
      alerts: run.alerts,
    };
  }

  /**
   * Graceful stop (SIGTERM): takes no new jobs and lets in-flight batches finish (BullMQ waits
   * for them). `abandon` aborts in-flight pages instead; their jobs fail and are retried.
   */
  async close(options: { readonly abandon?: boolean } = {}): Promise<void> {
    if (options.abandon === true) this.#abort.abort(new Error('worker stopping'));
    await this.#worker.close();
    await this.#finisher.close();
    await this.#publish.close();
  }
}
