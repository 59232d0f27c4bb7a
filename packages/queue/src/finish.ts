import type { RunSummary, StateStore } from '@ragfresh/core';
import type { RefreshCounts } from '@ragfresh/engine';
import {
  addCounts,
  checkShape,
  coverageGateAlert,
  coverageOf,
  EngineContext,
  type EngineDeps,
  emptyCounts,
  proposeInventoryDiff,
  SourceRun,
  settleProposals,
} from '@ragfresh/engine/stages';
import { DelayedError, type Job, type Queue, UnrecoverableError } from 'bullmq';
import { FINISH_QUEUE } from './config.js';
import {
  type FinishJob,
  type PageBatchResult,
  type PublishJob,
  type PublishJobResult,
  publishJobId,
} from './payloads.js';

/** What a finish job returns (also written as the run summary). */
export interface FinishResult {
  readonly runId: string;
  readonly complete: boolean;
  readonly counts: RefreshCounts;
  readonly alerts: readonly string[];
}

/**
 * The state as the shape check must see it: the scheduler already wrote this run's scheduling
 * summary (same runId), which is not "the last run" it compares against.
 */
function withoutRun(state: StateStore, runId: string): StateStore {
  return new Proxy(state, {
    get(target, name) {
      if (name === 'listRuns')
        return async (sourceId: string, limit: number) =>
          (await target.listRuns(sourceId, limit + 1))
            .filter((r) => r.runId !== runId)
            .slice(0, limit);
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const jobIdOfKey = (key: string) => key.slice(key.lastIndexOf(':') + 1);

/**
 * The end of one source's due window, run by BullMQ after every page job of its flow completed
 * or failed for good. It waits (moves itself to delayed) until the publish jobs those page jobs
 * handed over are through, so proposals see the window's publications; then it settles the run
 * as `RefreshEngine` does at a source's end: inventory-diff proposals when the coverage was
 * complete, the run's gone-based proposals written or held by the retire gate, pending ones
 * withdrawn when contradicted, shape checks, and the run summary (same runId as the
 * scheduler's, so it replaces it) with the summed counts and alerts.
 */
export async function finishWindow(
  deps: EngineDeps,
  publish: Queue<PublishJob>,
  job: Job<FinishJob>,
  token: string | undefined,
  pollMs: number,
): Promise<FinishResult> {
  const d = job.data;
  const source = deps.sources.find((s) => s.id === d.sourceId);
  if (source === undefined)
    throw new UnrecoverableError(`source ${d.sourceId} is not configured on this worker`);
  const values = await job.getChildrenValues<PageBatchResult>();
  const failures = Object.keys(await job.getIgnoredChildrenFailures());
  const pages = Object.entries(values);
  const published: PublishJobResult[number][] = [];
  let publishFailed = 0;
  for (const [key, result] of pages) {
    if (result.candidates === 0) continue;
    const id = publishJobId(jobIdOfKey(key));
    const state = await publish.getJobState(id);
    if (state === 'failed') publishFailed++;
    else if (state === 'completed') {
      const done = await publish.getJob(id);
      for (const r of (done?.returnvalue as PublishJobResult | undefined) ?? [])
        if (r.sourceId === d.sourceId) published.push(r);
    } else if (state !== 'unknown') {
      // Not published yet: look again later (a delayed job is not an attempt).
      await job.moveToDelayed(Date.now() + pollMs, token);
      throw new DelayedError();
    }
  }

  const runId = `${d.sourceId}@${d.startedAt}`;
  const run = new SourceRun(source, d.startedAt);
  const counts = run.counts;
  counts.urls = d.pages;
  counts.listingsNotModified = d.listingsNotModified;
  run.complete = d.inventoryComplete && failures.length === 0 && publishFailed === 0;
  for (const [, r] of pages) {
    // urls is the window's page count (set above), not each batch's.
    addCounts(counts, { ...emptyCounts(), ...r.counts, urls: 0 });
    if (!r.complete) run.complete = false;
    for (const id of r.answered ?? []) run.answered.add(id);
    for (const p of r.proposals ?? [])
      if (!run.proposals.some((q) => q.subject.documentId === p.subject.documentId))
        run.proposals.push(p);
    run.alerts.push(...(r.alerts ?? []));
  }
  for (const r of published) {
    addCounts(counts, { ...emptyCounts(), ...r.counts, urls: 0 });
    run.alerts.push(...r.alerts);
  }
  run.alerts.unshift(...d.problems);
  if (failures.length > 0)
    run.alerts.push(
      `distributed: ${failures.length} of ${d.jobs} page jobs failed for good; coverage incomplete, no inventory-diff proposals`,
    );
  if (publishFailed > 0)
    run.alerts.push(
      `distributed: ${publishFailed} publish jobs failed for good; coverage incomplete, no inventory-diff proposals`,
    );

  // Approving a deletion retires chunks, which only the publish role may do: here proposals
  // wait for review even under deletion.autoApprove.
  const autoApprove = deps.deletion?.autoApprove === true;
  const ctx = new EngineContext({
    ...deps,
    ...(deps.deletion === undefined ? {} : { deletion: { ...deps.deletion, autoApprove: false } }),
  });
  // The coverage gate `refresh` exits 8 on: a distributed window has no exit code, so it is an
  // alert of the run summary (status, the dashboard) beside the gauge `watch` sets.
  const gate = coverageGateAlert(counts, d.inventoryComplete, ctx.minCoverage);
  if (gate !== undefined) run.alerts.push(gate);
  ctx.gauge(
    'ragfresh_run_coverage',
    'Pages answered definitively over pages due in the last run (gates.minCoverage).',
    { source: d.sourceId },
    coverageOf(counts, d.inventoryComplete),
  );
  const listed = new Set(d.listed);
  if (run.complete) await proposeInventoryDiff(ctx, run, listed);
  await settleProposals(ctx, run, listed);
  if (autoApprove)
    run.alerts.push(
      'distributed: deletion.autoApprove is not applied by queue workers; approve with `ragfresh review`',
    );
  await checkShape(new EngineContext({ ...deps, state: withoutRun(deps.state, runId) }), run);
  for (const a of run.alerts) ctx.log.warn('alert', { source: d.sourceId, alert: a });
  run.alerts.push(`distributed: ${d.pages} pages in ${d.jobs} jobs (window ${d.runKey})`);
  const summary: RunSummary = {
    runId,
    sourceId: d.sourceId,
    startedAt: d.startedAt,
    finishedAt: ctx.nowIso(),
    complete: run.complete,
    counts: { ...counts },
    alerts: run.alerts,
  };
  await deps.state.appendRun(summary);
  ctx.count('ragfresh_runs_total', 'Refresh runs by source and completeness.', {
    source: d.sourceId,
    complete: String(run.complete),
  });
  ctx.count('ragfresh_queue_jobs_total', 'Queue jobs processed by this worker.', {
    queue: FINISH_QUEUE,
  });
  return { runId, complete: run.complete, counts: { ...counts }, alerts: run.alerts };
}
