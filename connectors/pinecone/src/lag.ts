import { Pinecone } from '@pinecone-database/pinecone';
import { RagfreshError } from '@ragfresh/core';
import { type PineconeConnectorOptions, retryingFetch } from './connector.js';

export interface LagMeasurement {
  /** Time from an acknowledged upsert until both fetch and a filtered query returned it, per sample. */
  readonly samplesMs: readonly number[];
  readonly maxMs: number;
  /** What to declare as `maxLagMs`: three times the worst sample, at least one second. */
  readonly recommendedMaxLagMs: number;
}

/**
 * Measures the visibility lag of an index: upserts a probe vector into a scratch namespace and
 * polls `fetch` and a metadata-filtered `query` until both return it. Run it against your own
 * index (it writes and deletes only in `<namespace>.ragfresh-lag-probe`) and pass the
 * recommendation as `maxLagMs`.
 */
export async function measureVisibilityLag(
  options: Pick<
    PineconeConnectorOptions,
    'apiKey' | 'controllerHostUrl' | 'timeoutMs' | 'retry'
  > & {
    readonly host: string;
    readonly namespace: string;
    readonly dimensions: number;
  },
  run: { readonly samples?: number; readonly giveUpMs?: number } = {},
): Promise<LagMeasurement> {
  const pc = new Pinecone({
    apiKey: options.apiKey,
    ...(options.controllerHostUrl === undefined
      ? {}
      : { controllerHostUrl: options.controllerHostUrl }),
    fetchApi: retryingFetch(options.timeoutMs ?? 30_000, options.retry ?? {}),
    maxRetries: 0,
  });
  const index = pc.index({
    host: options.host,
    namespace: `${options.namespace || '__default__'}.ragfresh-lag-probe`,
  });
  const samples: number[] = [];
  const giveUp = run.giveUpMs ?? 120_000;
  for (let i = 0; i < (run.samples ?? 5); i++) {
    const id = `probe-${Date.now().toString(36)}-${i}`;
    const values = Array.from({ length: options.dimensions }, (_, j) =>
      j === i % options.dimensions ? 1 : 0.01,
    );
    await index.upsert({ records: [{ id, values, metadata: { probe: id } }] });
    const t0 = performance.now();
    for (let delay = 5; ; delay = Math.min(delay * 2, 200)) {
      const [f, q] = await Promise.all([
        index.fetch({ ids: [id] }),
        index.query({ vector: values, topK: 1, filter: { probe: { $eq: id } } }),
      ]);
      if (f.records?.[id] !== undefined && q.matches.some((m) => m.id === id)) break;
      if (performance.now() - t0 > giveUp) {
        throw new RagfreshError(
          'VERIFY_FAILED',
          `probe ${id} was not visible after ${giveUp} ms.`,
          { scope: 'pinecone' },
        );
      }
      await new Promise((r) => setTimeout(r, delay));
    }
    samples.push(Math.round(performance.now() - t0));
    await index.deleteOne({ id });
  }
  const maxMs = Math.max(...samples);
  return { samplesMs: samples, maxMs, recommendedMaxLagMs: Math.max(1_000, Math.ceil(maxMs * 3)) };
}
