import { createMemoryConnector, type MemoryConnector } from '@ragfresh/connector-memory';
import { CountingEmbeddings, InMemoryStateStore, Publisher, type StateStore } from '@ragfresh/core';
import { Fetcher, MemoryRawSnapshotStore } from '@ragfresh/fetch';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import {
  type DeletionPolicy,
  type EngineSource,
  ExtractPipeline,
  type PagePipeline,
  RefreshEngine,
} from './internals.js';

/** Counts what is sent to the embedder, so "nothing re-embedded" is measured. */
export const countingEmbeddings = (): CountingEmbeddings =>
  new CountingEmbeddings({ dimensions: 64 });

export function source(id: string, urls: readonly string[], extra: Partial<EngineSource> = {}) {
  return { id, urls, everyMs: 3_600_000, identity: { mode: 'normalize' }, ...extra } as const;
}

export interface Harness {
  readonly sim: SimWeb;
  readonly connector: MemoryConnector;
  readonly state: StateStore;
  readonly publisher: Publisher;
  readonly fetcher: Fetcher;
  readonly snapshots: MemoryRawSnapshotStore;
  readonly embeddings: CountingEmbeddings;
  /** Publish calls and the documents (by source) of each batch. */
  readonly batches: string[][];
  engine(
    sources: readonly EngineSource[],
    extra?: {
      pipeline?: PagePipeline;
      deletion?: DeletionPolicy;
      batchSize?: number;
      maxRetireShare?: number;
    },
  ): RefreshEngine;
  stop(): Promise<void>;
}

/** A simulated web, the memory connector, in-memory state and a real publisher. */
export async function harness(
  sim?: { hosts?: number; pagesPerHost?: number; seed?: number },
  maxRetireShare = 0.5,
  contracts?: Parameters<typeof Publisher.open>[0]['contracts'],
): Promise<Harness> {
  const web = await startSimWeb({ seed: 5, hosts: 2, pagesPerHost: 4, ...sim });
  const connector = createMemoryConnector();
  const embeddings = countingEmbeddings();
  await connector.open({ dimensions: 64 });
  const state = new InMemoryStateStore();
  const publisher = await Publisher.open({
    connector,
    state,
    maxRetireShare,
    ...(contracts === undefined ? {} : { contracts }),
  });
  const batches: string[][] = [];
  const publish = publisher.publish.bind(publisher);
  publisher.publish = (candidates, options) => {
    if (candidates.length > 0) batches.push(candidates.map((c) => c.sourceId));
    return publish(candidates, options);
  };
  const snapshots = new MemoryRawSnapshotStore();
  const fetcher = new Fetcher({
    userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
    robots: false,
    minIntervalMs: 0,
    retry: { maxAttempts: 1 },
    network: { allowPrivateNetworks: true },
    snapshots,
  });
  return {
    sim: web,
    connector,
    state,
    publisher,
    fetcher,
    snapshots,
    embeddings,
    batches,
    engine: (sources, extra = {}) =>
      new RefreshEngine({
        sources,
        connector,
        state,
        publisher,
        fetcher,
        snapshots,
        embeddings,
        pipeline: extra.pipeline ?? new ExtractPipeline({ maxTokens: 200 }),
        ...(extra.deletion === undefined ? {} : { deletion: extra.deletion }),
        ...(extra.batchSize === undefined ? {} : { batchSize: extra.batchSize }),
        maxRetireShare: extra.maxRetireShare ?? maxRetireShare,
      }),
    async stop() {
      await publisher.close();
      await fetcher.close();
      await connector.close();
      await web.stop();
    },
  };
}
