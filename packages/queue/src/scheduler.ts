import type { RunSummary } from '@ragfresh/core';
import {
  EngineContext,
  type EngineDeps,
  type EngineSource,
  emptyCounts,
  takeInventory,
} from '@ragfresh/engine';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { PAGES_QUEUE } from './config.js';
import { type PageBatchJob, pageJobId, runKeyOf } from './payloads.js';

export interface ScheduleOptions {
  readonly connection: Redis;
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

/** Round-robin over sources: consecutive jobs belong to different hosts where possible. */
function interleave(perSource: readonly (readonly PageJob[])[]): PageJob[] {
  const out: PageJob[] = [];
  const longest = Math.max(0, ...perSource.map((jobs) => jobs.length));
  for (let i = 0; i < longest; i++)
    for (const jobs of perSource) if (i < jobs.length) out.push(jobs[i]!);
  return out;
}

/**
 * Enqueues due sources as URL batches with deterministic job ids: source, due window and batch
 * index (pages sorted by documentId), so enqueueing the same due work twice is a no-op. Jobs of
 * different sources are interleaved, so workers taking consecutive jobs fetch from different
 * hosts instead of queueing behind one host's politeness interval. Each enqueued source gets a
 * run summary (written after its jobs are queued), which is what makes it not due again until
 * its interval.
 */
export async function scheduleDueSources(options: ScheduleOptions): Promise<ScheduleReport> {
  const deps = options.deps as EngineDeps;
  const ctx = new EngineContext(deps);
  const due = await dueSources(ctx, options.all === true);
  const queue = new Queue<PageBatchJob>(PAGES_QUEUE, {
    connection: options.connection,
    prefix: options.prefix,
  });
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
    await queue.addBulk(interleave(planned.map((p) => p.jobs)));
    for (const { source, startedAt, runKey, inv, pages, jobs } of planned) {
      const counts = { ...emptyCounts(), urls: pages };
      const summary: RunSummary = {
        runId: `${source.id}@${startedAt}`,
        sourceId: source.id,
        startedAt,
        finishedAt: ctx.nowIso(),
        complete: inv.complete,
        counts,
        alerts: [
          ...inv.problems,
          `distributed: ${pages} pages in ${jobs.length} jobs (window ${runKey})`,
        ],
      };
      await deps.state.appendRun(summary);
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
  }
  return { sources };
}
