import type { Server } from 'node:http';
import { collectGarbage } from '@ragfresh/engine/governance';
import { retentionOf as engineRetentionOf } from '@ragfresh/engine/stages';
import { renderRefresh } from './commands.js';
import { coverageShortfall } from './coverage-gate.js';
import { WATCH_GC_EVERY_MS } from './governance.js';
import type { Logger } from './log.js';
import type { Runtime } from './runtime.js';
import { sourceStatuses } from './status.js';

/**
 * Long-running scheduler: refreshes each source when its interval elapses. SIGINT/SIGTERM
 * stop scheduling and wait for the in-flight refresh (and its publications) to finish.
 */
export async function watch(
  rt: Runtime,
  opts: {
    metricsPort?: number;
    log: Logger;
    print: (s: string) => void;
    signal?: AbortSignal;
    maxSleepMs?: number;
  },
): Promise<number> {
  const stop = new AbortController();
  const onSignal = (sig: string) => {
    if (stop.signal.aborted) return;
    opts.log.info('shutdown-requested', { signal: sig, note: 'finishing in-flight work' });
    stop.abort();
  };
  const handlers = { SIGINT: () => onSignal('SIGINT'), SIGTERM: () => onSignal('SIGTERM') };
  process.on('SIGINT', handlers.SIGINT);
  process.on('SIGTERM', handlers.SIGTERM);
  opts.signal?.addEventListener('abort', () => onSignal('abort'), { once: true });
  let server: Server | undefined;
  if (opts.metricsPort !== undefined) {
    const served = await rt.metrics.serve(opts.metricsPort);
    server = served.server;
    opts.log.info('metrics', { url: `http://127.0.0.1:${served.port}/metrics` });
  }
  let lastGcAt = 0;
  try {
    while (!stop.signal.aborted) {
      // In-flight pages finish and their batch publishes even when a signal arrives mid-run;
      // the engine only stops starting new pages.
      const report = await rt.engine.refresh({ signal: stop.signal });
      if (report.sources.length > 0) opts.print(renderRefresh(report));
      // watch keeps going below the gate: the line is a warning, the gauge is what alerts.
      const short = coverageShortfall(report, rt.config.settings.minCoverage);
      if (short !== undefined) opts.log.warn('coverage-below-gate', { detail: short });
      for (const s of report.sources) {
        rt.metrics.set(
          'ragfresh_run_coverage',
          'Pages answered definitively over pages due in the last run (gates.minCoverage).',
          { source: s.sourceId },
          s.coverage,
        );
        const answered = s.counts.fetched200 + s.counts.notModified;
        if (answered > 0) {
          rt.metrics.set(
            'ragfresh_not_modified_ratio',
            'Share of answered fetches that were 304 in the last run.',
            { source: s.sourceId },
            s.counts.notModified / answered,
          );
        }
      }
      await updateGauges(rt);
      if (Date.now() - lastGcAt >= WATCH_GC_EVERY_MS) {
        lastGcAt = Date.now();
        await retentionPass(rt, opts.log);
      }
      const wait = Math.max(
        250,
        Math.min(opts.maxSleepMs ?? 60_000, (await rt.engine.nextDueAt()) - Date.now()),
      );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait);
        stop.signal.addEventListener(
          'abort',
          () => {
            clearTimeout(t);
            resolve();
          },
          { once: true },
        );
      });
    }
  } finally {
    process.off('SIGINT', handlers.SIGINT);
    process.off('SIGTERM', handlers.SIGTERM);
    await new Promise<void>((resolve) =>
      server === undefined ? resolve() : server.close(() => resolve()),
    );
  }
  opts.log.info('stopped');
  return 0;
}

/** Retention on schedule: what `ragfresh gc` does, once per `WATCH_GC_EVERY_MS`, logged. */
async function retentionPass(rt: Runtime, log: Logger): Promise<void> {
  const retentionOf = (sourceId: string) => engineRetentionOf(rt.config.settings, sourceId);
  if (rt.config.sources.every((s) => retentionOf(s.id) === undefined)) return;
  const r = await collectGarbage(rt.context(), { retentionOf });
  log.info('gc', {
    snapshots: r.snapshots.length,
    bytes: r.snapshotBytes,
    retiredVersions: r.retired.length,
    retiredChunks: r.retiredChunks,
  });
}

async function updateGauges(rt: Runtime): Promise<void> {
  for (const s of await sourceStatuses(rt.config, rt.state)) {
    const l = { source: s.sourceId };
    if (s.observationAgeMs !== undefined)
      rt.metrics.set(
        'ragfresh_observation_age_seconds',
        'Age of the oldest last-good observation.',
        l,
        s.observationAgeMs / 1000,
      );
    if (s.propagationLagMs !== undefined)
      rt.metrics.set(
        'ragfresh_propagation_lag_seconds',
        'Observed change to queryable.',
        l,
        s.propagationLagMs / 1000,
      );
    rt.metrics.set(
      'ragfresh_objective_met',
      'Freshness objective met (1) or violated (0).',
      l,
      s.objectiveMet ? 1 : 0,
    );
    rt.metrics.set(
      'ragfresh_documents_exposed_stale',
      'Degraded or quarantined documents still served (exposure).',
      l,
      s.counts.degraded + s.counts.quarantined,
    );
  }
  const pending = await rt.state.listReviewItems({ status: 'pending' });
  rt.metrics.set('ragfresh_review_queue_size', 'Pending review items.', {}, pending.length);
}
