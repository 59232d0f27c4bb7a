// One phase of the refresh bench for ragfresh, in its own process (see refresh.bench.ts):
// `refresh` runs one `refresh --all` through the CLI package's public API and reports its CPU
// and peak RSS; `inspect` opens the same data dir read-only afterwards and reads what a reader
// sees (the published epoch's chunks), so measuring the store never costs the refresh anything.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { CountingEmbeddings, FIELDS } from '@ragfresh/core';
import { addChunk, type ChunkSnapshot } from './changed-chunks.ts';
import { BENCH_DIMENSIONS } from './counting-embeddings.ts';
import { mainThreadCpuMs, threadCpuMs, threadDelta } from './cpu-stages.ts';
import {
  type PhaseCost,
  peakRssMiB,
  phaseInput,
  startPhase,
  writePhaseResult,
} from './phase-process.ts';
import { benchConfig } from './ragfresh-config.ts';

export interface RagfreshPhaseInput {
  readonly mode: 'refresh' | 'inspect';
  readonly dataDir: string;
  readonly sitemaps: readonly string[];
  /** Refresh only: record a CPU profile of the measured section into this file. */
  readonly profile?: string;
}

export interface RagfreshRefreshResult extends PhaseCost {
  /** Texts sent to `embedDocuments`, counted by the bench's wrapper. */
  readonly embedded: number;
  /** The engine's own report totals, for reference only. */
  readonly engineCounts: Record<string, number>;
  /** Sampled every 250 ms during the work: where the resident memory sat at its highest. */
  readonly memory: MemorySample;
  /** CPU of the main (JavaScript) thread alone during the work; the rest ran on other threads. */
  readonly mainThreadCpuMs: number;
  /** The other threads' CPU during the work, by thread name. */
  readonly threads: Record<string, number>;
}

/** MiB: RSS split into V8's heap, ArrayBuffers/external, and the rest (native libraries' heaps, code). */
export interface MemorySample {
  readonly rssMiB: number;
  readonly heapTotalMiB: number;
  readonly heapUsedMiB: number;
  readonly externalMiB: number;
}

/** The sample with the highest RSS while `work` runs. */
async function sampledPeak<T>(work: () => Promise<T>): Promise<{ result: T; peak: MemorySample }> {
  const MiB = 1024 * 1024;
  let peak: MemorySample = { rssMiB: 0, heapTotalMiB: 0, heapUsedMiB: 0, externalMiB: 0 };
  const sample = () => {
    const m = process.memoryUsage();
    if (m.rss / MiB > peak.rssMiB)
      peak = {
        rssMiB: m.rss / MiB,
        heapTotalMiB: m.heapTotal / MiB,
        heapUsedMiB: m.heapUsed / MiB,
        externalMiB: m.external / MiB,
      };
  };
  const timer = setInterval(sample, 250);
  try {
    const result = await work();
    sample();
    return { result, peak };
  } finally {
    clearInterval(timer);
  }
}

export interface RagfreshInspectResult {
  readonly snapshot: ChunkSnapshot;
  readonly chunks: number;
  /** Current chunks according to the state store's document records (a cross-check). */
  readonly stateChunks: number;
  /** Bytes of the current chunk rows: id + text + metadata JSON (UTF-8) + float32 vector. */
  readonly liveBytes: number;
  readonly epoch: number;
  /** Where the resolved config put the LanceDB directory and the SQLite state file. */
  readonly lancePath?: string;
  readonly statePath?: string;
}

async function open(input: RagfreshPhaseInput, readOnly: boolean) {
  const { openRuntime, resolveConfig } = await import('ragfresh');
  const embeddings = new CountingEmbeddings({ dimensions: BENCH_DIMENSIONS });
  const config = resolveConfig({ ...benchConfig(input.dataDir, input.sitemaps), embeddings });
  const rt = await openRuntime(config, { role: readOnly ? 'read' : 'refresh' });
  return { rt, embeddings };
}

async function refresh(input: RagfreshPhaseInput): Promise<RagfreshRefreshResult> {
  const { rt, embeddings } = await open(input, false);
  const before = embeddings.texts;
  const profiler = input.profile === undefined ? undefined : new Session();
  if (profiler !== undefined) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const stop = startPhase();
  const main0 = mainThreadCpuMs();
  const threads0 = threadCpuMs();
  const { result: report, peak } = await sampledPeak(() => rt.engine.refresh({ all: true }));
  const cost = stop();
  const mainMs = mainThreadCpuMs() - main0;
  const threads = threadDelta(threads0, threadCpuMs());
  if (profiler !== undefined && input.profile !== undefined) {
    const { profile } = await profiler.post('Profiler.stop');
    writeFileSync(input.profile, JSON.stringify(profile));
    profiler.disconnect();
  }
  const embedded = embeddings.texts - before;
  await rt.close();
  const engineCounts: Record<string, number> = {};
  for (const [k, v] of Object.entries(report.totals as object))
    if (typeof v === 'number') engineCounts[k] = v;
  return {
    ...cost,
    peakRssMiB: peakRssMiB(),
    embedded,
    engineCounts,
    memory: peak,
    mainThreadCpuMs: mainMs,
    threads,
  };
}

async function inspect(input: RagfreshPhaseInput): Promise<RagfreshInspectResult> {
  const { rt } = await open(input, true);
  try {
    let stateChunks = 0;
    for (const source of rt.config.sources) {
      for await (const record of rt.state.listDocuments({ sourceId: source.id }))
        stateChunks += record.chunkHashes?.length ?? 0;
    }
    // What a reader gets: the published epoch's snapshot view, every chunk of it (k = all).
    const epoch = await rt.connector.readEpoch();
    const probe = await rt.embeddings.embedQuery('ragfresh bench snapshot probe');
    let k = 2 * stateChunks + 16;
    let hits = await rt.connector.query(probe, k, { view: { kind: 'epoch', epoch } });
    while (hits.length >= k) {
      k *= 2;
      hits = await rt.connector.query(probe, k, { view: { kind: 'epoch', epoch } });
    }
    const snapshot: Record<string, string[]> = {};
    let liveBytes = 0;
    for (const hit of hits) {
      const doc = String(hit.metadata[FIELDS.documentId]);
      addChunk(snapshot, doc, hit.text);
      liveBytes +=
        Buffer.byteLength(hit.id) +
        Buffer.byteLength(hit.text) +
        Buffer.byteLength(JSON.stringify(hit.metadata)) +
        4 * BENCH_DIMENSIONS;
    }
    const connector = rt.config.connector;
    const state = rt.config.state;
    return {
      snapshot,
      chunks: hits.length,
      stateChunks,
      liveBytes,
      epoch,
      // Connector options are open-ended (any store's package reads its own); LanceDB's is a path.
      ...(connector.store === 'lancedb'
        ? {
            lancePath:
              typeof connector.path === 'string' ? connector.path : join(input.dataDir, 'lancedb'),
          }
        : {}),
      ...(state.startsWith('sqlite:') ? { statePath: state.slice('sqlite:'.length) } : {}),
    };
  } finally {
    await rt.close();
  }
}

const input = phaseInput<RagfreshPhaseInput>();
writePhaseResult(input.mode === 'refresh' ? await refresh(input) : await inspect(input));
