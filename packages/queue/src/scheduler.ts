import type { RunSummary } from '@ragfresh/core';
import type { EngineSource } from '@ragfresh/engine';
import {
  EngineContext,
  type EngineDeps,
  emptyCounts,
  takeInventory,
} from '@ragfresh/engine/stages';
import { type FlowJob, FlowProducer, Queue } from 'bullmq';
import type { QueueRedis } from './config.js';
import { FINISH_QUEUE, PAGES_QUEUE } from './config.js';
import { type FinishJob, finishJobId, type PageBatchJob, pageJobId, runKeyOf } from './payloads.js';

export interface ScheduleOptions {
  readonly connection: QueueRedis;
  readonly prefix: string;
  /** The scheduler reads state and discovers sitemaps; it never publishes. */
  readonly deps: Omit<EngineDeps, 'publisher'>;
  /** URLs per page job. Default 25. */
  readonly urlsPerJob?: number;
  /** Every source, due or not (`refresh --all`). */
  readonly all?: boolean;
  readonly signal?: AbortSignal;
}

export interface ScheduleReport {
  readonly sources: readonly {
    readonly sourceId: string;
    readonly runKey: string;
    readonly pages: number;
    readonly jobs: number;
    /** Jobs BullMQ already had under the same id (the same due work enqueued before). */
    readonly alreadyQueued: number;
    readonly complete: boolean;
  }[];
}

/** Sources whose interval has elapsed since their last run (the engine's rule). */
async function dueSources(ctx: EngineContext, all: boolean): Promise<EngineSource[]> {
  const now = ctx.now().getTime();
  const due: EngineSource[] = [];
  for (const s of ctx.deps.sources) {
    const [last] = all ? [] : await ctx.deps.state.listRuns(s.id, 1);
    if (last === undefined || Date.parse(last.startedAt) + s.everyMs <= now) due.push(s);
  }
  return due;
}

type PageJob = {
  readonly name: string;
  readonly data: PageBatchJob;
  readonly opts: { readonly jobId: string } & Record<string, unknown>;
};

/**
 * Enqueues due sources as URL batches with deterministic job ids: source, due window and batch
 * index (pages sorted by documentId), so enqueueing the same due work twice is a no-op. Each
 * source's window is one BullMQ flow: a `finish` job whose children are its page jobs, run by
 * BullMQ once they all completed (a page job failed for good does not block it:
 * `ignoreDependencyOnFailure`). Batch `i` of every source has priority `i` (batch 0 none), so
 * workers taking consecutive jobs fetch from different hosts instead of queueing behind one
 * host's politeness interval. Each enqueued source gets a run summary written before its flow is
 * added (so the finish job's summary, same runId, always replaces it); it is what makes the
 * source not due again until its interval.
 */
export async function scheduleDueSources(options: ScheduleOptions): Promise<ScheduleReport> {
  const { deps } = options;
  const ctx = new EngineContext(deps);
  const due = await dueSources(ctx, options.all === true);
  const queue = new Queue<PageBatchJob>(PAGES_QUEUE, {
    connection: options.connection,
    prefix: options.prefix,
  });
  const flows = new FlowProducer({ connection: options.connection, prefix: options.prefix });
  const per = options.urlsPerJob ?? 25;
  const planned: {
    readonly source: EngineSource;
    readonly startedAt: string;
    readonly runKey: string;
    readonly inv: Awaited<ReturnType<typeof takeInventory>>;
    readonly pages: number;
    readonly jobs: PageJob[];
  }[] = [];
  const sources: ScheduleReport['sources'][number][] = [];
  try {
    for (const source of due) {
      if (options.signal?.aborted) break;
      const startedAt = ctx.nowIso();
      const runKey = runKeyOf(ctx.now().getTime(), source.everyMs);
      const inv = await takeInventory(ctx, source, options.signal);
      const pages = [...inv.entries]
        .sort((a, b) => (a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : 0))
        .map((e) => ({ url: e.url, documentId: e.documentId, listed: e.listed }));
      const jobs: PageJob[] = [];
      for (let i = 0; i * per < pages.length; i++) {
        jobs.push({
          name: 'pages',
          data: { sourceId: source.id, runKey, pages: pages.slice(i * per, (i + 1) * per) },
          opts: {
            jobId: pageJobId(source.id, runKey, i),
            ...(i === 0 ? {} : { priority: i }),
            ignoreDependencyOnFailure: true,
            attempts: 5,
            backoff: { type: 'exponential', delay: 1000 },
            removeOnComplete: { age: 24 * 3600 },
            removeOnFail: { age: 7 * 24 * 3600 },
          },
        });
      }
      planned.push({ source, startedAt, runKey, inv, pages: pages.length, jobs });
    }
    const queued = new Set<string>();
    for (const p of planned)
      for (const j of p.jobs)
        if ((await queue.getJob(j.opts.jobId)) !== undefined) queued.add(j.opts.jobId);
    const finishQueue = new Queue<FinishJob>(FINISH_QUEUE, {
      connection: options.connection,
      prefix: options.prefix,
    });
    const fresh: FlowJob[] = [];
    const scheduled: typeof planned = [];
    try {
      for (const plan of planned) {
        const { source, startedAt, runKey, inv, pages, jobs } = plan;
        const jobId = finishJobId(source.id, runKey);
        // The window's flow is there already (the same due work enqueued before): adds nothing.
        if ((await finishQueue.getJob(jobId)) !== undefined) continue;
        scheduled.push(plan);
        const data: FinishJob = {
          sourceId: source.id,
          runKey,
          startedAt,
          pages,
          jobs: jobs.length,
          listed: [...inv.listed].sort(),
          inventoryComplete: inv.complete,
          problems: [...inv.problems],
          listingsNotModified: inv.listingsNotModified,
        };
        fresh.push({
          name: 'finish',
          queueName: FINISH_QUEUE,
          data,
          opts: {
            jobId,
            attempts: 5,
            backoff: { type: 'exponential', delay: 1000 },
            removeOnComplete: { age: 24 * 3600 },
            removeOnFail: { age: 7 * 24 * 3600 },
          },
          children: jobs.map((j) => ({ ...j, queueName: PAGES_QUEUE })),
        });
      }
    } finally {
      await finishQueue.close();
    }
    await writeScheduled(deps, ctx, scheduled);
    if (fresh.length > 0) await flows.addBulk(fresh);
    for (const { source, runKey, inv, pages, jobs } of planned) {
      sources.push({
        sourceId: source.id,
        runKey,
        pages,
        jobs: jobs.length,
        alreadyQueued: jobs.filter((j) => queued.has(j.opts.jobId)).length,
        complete: inv.complete,
      });
    }
  } finally {
    await queue.close();
    await flows.close();
  }
  return { sources };
}

/** The scheduling summaries: the window's finish job replaces each with the run's own. */
async function writeScheduled(
  deps: EngineDeps,
  ctx: EngineContext,
  planned: readonly {
    readonly source: EngineSource;
    readonly startedAt: string;
    readonly runKey: string;
    readonly inv: { readonly complete: boolean; readonly problems: readonly string[] };
    readonly pages: number;
    readonly jobs: readonly unknown[];
  }[],
): Promise<void> {
  for (const { source, startedAt, runKey, inv, pages, jobs } of planned) {
    const summary: RunSummary = {
      runId: `${source.id}@${startedAt}`,
      sourceId: source.id,
      startedAt,
      finishedAt: ctx.nowIso(),
      complete: inv.complete,
      counts: { ...emptyCounts(), urls: pages },
      alerts: [
        ...inv.problems,
        `distributed: ${pages} pages in ${jobs.length} jobs (window ${runKey})`,
      ],
    };
    await deps.state.appendRun(summary);
  }
}
