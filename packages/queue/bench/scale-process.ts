// One process of `pnpm bench:scale` (scale.bench.ts starts it with a JSON argument):
// - `queue`: a page worker or the publisher, through the package's own `startQueueProcess`;
//   it answers `cpu` on stdin with its CPU so far and `stop` by closing and exiting;
// - `schedule`: the scheduler (`scheduleDueSources`) once on `schedule`, reporting its CPU;
// - `single`: the single-process engine (`RefreshEngine`), one refresh per `refresh` line.
// Every answer is one JSON line on stdout. Runs built code (`tsc -b` first); Node strips types.
import { createInterface } from 'node:readline';
import { type Connector, HashingEmbeddings, openStateStore } from '@ragfresh/core';
import {
  type ComposedEngine,
  composeEngine,
  type EngineRole,
  resolveEngineSettings,
} from '@ragfresh/engine';
import { RedisPolitenessGate } from '@ragfresh/fetch';
import { connectRedis, prefixOf, scheduleDueSources } from '../dist/index.js';
import { type QueueProcessSpec, startQueueProcess } from '../dist/process.js';

export type ScaleProcessInput =
  | { readonly mode: 'queue'; readonly spec: QueueProcessSpec }
  | { readonly mode: 'schedule'; readonly spec: QueueProcessSpec }
  | { readonly mode: 'single'; readonly spec: QueueProcessSpec };

/** What every process says about its own cost. */
export interface CpuLine {
  readonly event: string;
  /** user + system CPU of the whole process since it started, ms. */
  readonly cpuMs: number;
  /** Wall time of the measured work (schedule, refresh), ms. */
  readonly wallMs?: number;
  readonly [k: string]: unknown;
}

const input = JSON.parse(process.argv[2] ?? 'null') as ScaleProcessInput;
const cpuMs = (): number => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const say = (event: string, extra: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ event, cpuMs: cpuMs(), ...extra })}\n`);
};
const lines = createInterface({ input: process.stdin });

/** The engine for `role` from the spec, through the same composition root as every process. */
async function compose(
  spec: QueueProcessSpec,
  role: EngineRole,
  politeness?: RedisPolitenessGate,
): Promise<ComposedEngine> {
  const mod = (await import(spec.connector.module)) as Record<string, unknown>;
  const connector = (mod[spec.connector.exportName] as (o: unknown) => Connector)(
    spec.connector.options,
  );
  return composeEngine(
    resolveEngineSettings(spec.settings),
    {
      connector,
      state: await openStateStore(spec.state.spec, { namespace: spec.state.namespace }),
      embeddings: new HashingEmbeddings({ dimensions: spec.dimensions }),
      ...(politeness === undefined ? {} : { politeness }),
    },
    role,
  );
}

async function queueMode(spec: QueueProcessSpec): Promise<void> {
  const running = await startQueueProcess(spec, {
    log: (message) => process.stderr.write(`[${spec.name}] ${message}\n`),
  });
  say('ready');
  for await (const line of lines) {
    if (line === 'cpu') say('cpu', { waitedMs: running.gate.waitedMs });
    if (line === 'stop') break;
  }
  await running.close();
  say('stopped');
}

async function scheduleMode(spec: QueueProcessSpec): Promise<void> {
  const redis = connectRedis(spec.queue);
  const prefix = prefixOf(spec.queue);
  const gate = new RedisPolitenessGate({ redis, prefix: `${prefix}:polite` });
  const engine = await compose(spec, 'scheduler', gate);
  const { deps } = engine;
  say('ready');
  // Timed from the command on: a deployed scheduler (`watch --distributed`) is already running.
  for await (const line of lines) if (line === 'schedule') break;
  const t0 = performance.now();
  const before = cpuMs();
  const report = await scheduleDueSources({ connection: redis, prefix, deps, all: true });
  say('scheduled', {
    wallMs: performance.now() - t0,
    workCpuMs: cpuMs() - before,
    jobs: report.sources.reduce((n, s) => n + s.jobs, 0),
    pages: report.sources.reduce((n, s) => n + s.pages, 0),
    alreadyQueued: report.sources.reduce((n, s) => n + s.alreadyQueued, 0),
  });
  await engine.close();
  await redis.quit();
}

async function singleMode(spec: QueueProcessSpec): Promise<void> {
  const { engine, close } = await compose(spec, 'refresh');
  say('ready');
  for await (const line of lines) {
    if (line !== 'refresh') break;
    const t0 = performance.now();
    const before = cpuMs();
    const report = await engine.refresh({ all: true });
    const sum = (k: 'published' | 'notModified' | 'fetched200') =>
      report.sources.reduce((n, s) => n + s.counts[k], 0);
    say('refreshed', {
      wallMs: performance.now() - t0,
      workCpuMs: cpuMs() - before,
      published: sum('published'),
      notModified: sum('notModified'),
      fetched200: sum('fetched200'),
    });
  }
  await close();
  say('stopped');
}

if (input?.mode === 'queue') await queueMode(input.spec);
else if (input?.mode === 'schedule') await scheduleMode(input.spec);
else if (input?.mode === 'single') await singleMode(input.spec);
else throw new Error('scale-process takes {"mode":"queue"|"schedule"|"single","spec":{…}}');
lines.close();
