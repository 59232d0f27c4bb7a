import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  type AuditLog,
  type Connector,
  checkEmbeddingSpace,
  describeEmbeddingSpace,
  type EmbeddingSpace,
  Publisher,
  type PublisherHooks,
  type PublisherOptions,
  RagfreshError,
  readSpaceRecord,
  type SpaceRecord,
  type StateStore,
} from '@ragfresh/core';
import {
  Fetcher,
  type FetcherOptions,
  type PolitenessGate,
  type RawSnapshotStore,
} from '@ragfresh/fetch';
import type { AcquireDeps } from './acquire.js';
import { type LearnedModels, learnedViewPipeline } from './boilerplate.js';
import type { JudgeContext } from './classify.js';
import { EngineContext, type EngineDeps } from './context.js';
import { RefreshEngine } from './engine.js';
import { ExtractPipeline, type PagePipeline } from './extract.js';
import { NoStoreConnector } from './no-store.js';
import type { PageObserver } from './observe.js';
import { judgeContextOf } from './page.js';
import type { EngineSettings, PageSettings } from './settings.js';
import type { EngineLogger, EngineMetrics, PageRenderer, TombstoneMirror } from './types.js';

/**
 * Who runs the engine. Each role takes the same settings; the role decides only which parts it
 * wires (see `ROLE_TRAITS`), never what a setting means.
 */
export type EngineRole =
  /** `refresh`, `watch`, `reextract`, review decisions, `demo`: fetches, learns, publishes. */
  | 'refresh'
  /** `watch --distributed`: lists due sources and enqueues their pages. */
  | 'scheduler'
  /** `worker --role pages`: fetches and extracts, hands candidates to the publish queue. */
  | 'page-worker'
  /** `worker --role publish`: takes the publish lease when it can and publishes queued candidates. */
  | 'publish-worker'
  /** `worker --role both`. */
  | 'worker'
  /** `import`, `reconcile`, `serve` (webhook imports): publishes rows, fetches nothing. */
  | 'import'
  /** `verify --repair`, `recover`: repairs store and state, publishes what it repairs. */
  | 'repair'
  /** `status`, `query`, `inspect`, `eval`, `verify`, `review list`, the dashboard. */
  | 'read'
  /**
   * The LangChain loader (`RagfreshLoader`, the `index()` path): fetches, judges and cuts pages
   * and keeps their records; LangChain's `index()` writes what it emits into the app's vector
   * store, so it opens no ragfresh store and no publisher.
   */
  | 'loader'
  /**
   * Live refresh (the LangChain retriever's `liveFetch`): fetches a result's page, cuts it under
   * the learned models as stored and judges it with its source's `classify`, as a refresh would,
   * and writes no record (no ragfresh store, no ledger write, no space recorded; its fetcher
   * caches robots.txt in the state, as in every role): the retriever reads its own store, and
   * only the refresh engine publishes.
   */
  | 'live'
  /**
   * `migrate embeddings`: the one role the configured embedding space may differ from the
   * index's; it opens no publisher (the migration opens its own, on the new space's namespace).
   */
  | 'migrate';

export interface RoleTraits {
  /** `now`: the publisher lease is taken at compose time; `consumer`: by the publish consumer when it can; `never`. */
  readonly publishes: 'now' | 'consumer' | 'never';
  /**
   * `learn`: per-host boilerplate models are learned (only a local refresh); `view`: pages are cut
   * under the models as stored (workers learn nothing, so they publish what a refresh would).
   */
  readonly boilerplate: 'learn' | 'view';
  /** Per-host politeness shared with other processes (a Redis gate) is required. */
  readonly sharedPoliteness: boolean;
  /**
   * The configured embedding space against the index's: `adopt` refuses a difference
   * (SPACE_MISMATCH) and records the configured one on an index that has none (a role that
   * writes chunks); `refuse` refuses a difference and records nothing; `migrate`: the
   * difference is the job.
   */
  readonly space: 'adopt' | 'refuse' | 'migrate';
  /**
   * The role opens the ragfresh store (`ports.connector`). The loader and live refresh do not:
   * LangChain's `index()` writes, and the retriever reads, the app's vector store; their
   * engine's connector refuses every verb.
   */
  readonly store: boolean;
  /**
   * The role fetches pages or sitemaps: its fetcher and engine are built (and `fetch.*`
   * validated) at compose time. Another role builds them on first use only, so `status` or the
   * dashboard does not pay for a fetcher it never calls.
   */
  readonly fetches: boolean;
}

export const ROLE_TRAITS: Readonly<Record<EngineRole, RoleTraits>> = Object.freeze({
  refresh: {
    publishes: 'now',
    boilerplate: 'learn',
    sharedPoliteness: false,
    space: 'adopt',
    store: true,
    fetches: true,
  },
  scheduler: {
    publishes: 'never',
    boilerplate: 'view',
    sharedPoliteness: true,
    space: 'refuse',
    store: true,
    fetches: true,
  },
  'page-worker': {
    publishes: 'never',
    boilerplate: 'view',
    sharedPoliteness: true,
    space: 'refuse',
    store: true,
    fetches: true,
  },
  'publish-worker': {
    publishes: 'consumer',
    boilerplate: 'view',
    sharedPoliteness: true,
    space: 'adopt',
    store: true,
    fetches: false,
  },
  worker: {
    publishes: 'consumer',
    boilerplate: 'view',
    sharedPoliteness: true,
    space: 'adopt',
    store: true,
    fetches: true,
  },
  import: {
    publishes: 'now',
    boilerplate: 'view',
    sharedPoliteness: false,
    space: 'adopt',
    store: true,
    fetches: false,
  },
  repair: {
    publishes: 'now',
    boilerplate: 'view',
    sharedPoliteness: false,
    space: 'adopt',
    store: true,
    fetches: true,
  },
  read: {
    publishes: 'never',
    boilerplate: 'view',
    sharedPoliteness: false,
    space: 'refuse',
    store: true,
    fetches: false,
  },
  migrate: {
    publishes: 'never',
    boilerplate: 'view',
    sharedPoliteness: false,
    space: 'migrate',
    store: true,
    fetches: false,
  },
  loader: {
    publishes: 'never',
    boilerplate: 'view',
    sharedPoliteness: false,
    space: 'adopt',
    store: false,
    fetches: true,
  },
  live: {
    publishes: 'never',
    boilerplate: 'view',
    sharedPoliteness: false,
    space: 'refuse',
    store: false,
    fetches: true,
  },
});

/** What the host owns and hands in: the stores, the embedder, and the outside world. */
export interface EnginePorts {
  /**
   * Opened here with the embeddings' dimensions; closed by `ComposedEngine.close`. Required by
   * every role that opens a store (`RoleTraits.store`); refused for one that does not.
   */
  readonly connector?: Connector;
  /** Closed by `ComposedEngine.close`. */
  readonly state: StateStore;
  readonly embeddings: EmbeddingsInterface;
  /** Raw snapshots, for re-extraction without network. Closed by `ComposedEngine.close`. */
  readonly snapshots?: RawSnapshotStore;
  /** Tombstones mirrored outside the state store (read back by `recover`). */
  readonly tombstones?: TombstoneMirror;
  /** The governance audit log (review decisions, removals). */
  readonly audit?: AuditLog;
  /** Per-host politeness shared across processes (`RedisPolitenessGate`); distributed roles need it. */
  readonly politeness?: PolitenessGate;
  /** Headless rendering for sources with `acquisition: 'rendered' | 'auto'`, launched on first use. */
  readonly renderer?: () => Promise<PageRenderer>;
  /** Replaces the `ExtractPipeline` built from `settings.chunking` (tests, benchmarks). */
  readonly pipeline?: PagePipeline;
  readonly log?: EngineLogger;
  readonly metrics?: EngineMetrics;
  readonly now?: () => Date;
  /** The publish lease's holder id (default: random per process). */
  readonly holder?: string;
  /** Crash and pause hooks of the publisher (conformance and crash tests). */
  readonly publisherHooks?: PublisherHooks;
}

/** What a publisher is opened with, wherever it is opened (here, or by the publish consumer). */
export type PublisherDefaults = Omit<PublisherOptions, 'connector' | 'state' | 'holder'>;

/** An engine wired for one role. */
export interface ComposedEngine {
  readonly role: EngineRole;
  readonly settings: EngineSettings;
  readonly connector: Connector;
  readonly state: StateStore;
  readonly embeddings: EmbeddingsInterface;
  /** The configured embeddings' space (the index's, except in the `migrate` role). */
  readonly space: EmbeddingSpace;
  /** The index's space record as found at compose time (undefined: none recorded yet). */
  readonly spaceRecord: SpaceRecord | undefined;
  /**
   * A new, unopened connector of the configured store for namespace `suffix`, or the
   * configured namespace itself (unopened) when undefined: what a space migration stages into
   * and retires. The caller opens and closes it.
   */
  connectorFor(suffix: string | undefined): Connector;
  /** Built at compose time for a role that fetches, on first use for another. */
  readonly fetcher: Fetcher;
  /** The options the fetcher was built with (what `fetch.*` became). */
  readonly fetcherOptions: Readonly<FetcherOptions>;
  readonly snapshots: RawSnapshotStore | undefined;
  /** The pipeline pages are cut with in this role (under the learned models where they apply). */
  readonly pipeline: PagePipeline;
  /**
   * The page step of this role for `observePage`: `pipeline`, `settings.pageLimits`, the
   * renderer, and `fetcher` unless another one is given (the loader's deferring wrapper).
   */
  observer(fetcher?: PageObserver['fetcher']): PageObserver;
  /** Present when the role publishes `now`. */
  readonly publisher: Publisher | undefined;
  /** How this role's publisher is (or would be) opened. */
  readonly publisherOptions: PublisherDefaults;
  /** The engine's dependencies, publisher aside (the queue's page and publish stages take these). */
  readonly deps: Omit<EngineDeps, 'publisher'>;
  /** Built with the fetcher (at compose time for a role that fetches, on first use for another). */
  readonly engine: RefreshEngine;
  /** A stage context over the same parts (imports and reconciles take one with their batch size). */
  context(overrides?: { readonly batchSize?: number }): EngineContext;
  /**
   * What the classify stage reads for the pages of source `sourceId` (its `classify` settings,
   * host evidence for this call's pages, asked through `fetcher`, default the engine's;
   * reviewers' acceptances), as a refresh judges them. INVALID_ARGUMENT for a source the
   * settings do not list.
   */
  judge(sourceId: string, fetcher?: JudgeContext['fetcher']): JudgeContext;
  /** Which of the lazily built parts exist so far (see `RoleTraits.fetches`). */
  built(): { readonly fetcher: boolean; readonly engine: boolean };
  /** Closes the publisher, the fetcher, the connector and the state store. */
  close(): Promise<void>;
}

/** The fetcher's options from `settings.fetch` (the one translation of `fetch.*`). */
export function fetcherOptionsOf(
  settings: EngineSettings,
  ports: Pick<EnginePorts, 'state' | 'snapshots' | 'politeness'>,
): FetcherOptions {
  const f = settings.fetch;
  return {
    userAgent: f.userAgent,
    robots: f.robots ? { store: ports.state } : false,
    ...(f.minIntervalMs === undefined ? {} : { minIntervalMs: f.minIntervalMs }),
    ...(f.perHostConcurrency === undefined ? {} : { perHostConcurrency: f.perHostConcurrency }),
    ...(f.globalConcurrency === undefined ? {} : { globalConcurrency: f.globalConcurrency }),
    ...(f.timeoutMs === undefined
      ? {}
      : { totalTimeoutMs: f.timeoutMs, headersTimeoutMs: f.timeoutMs }),
    network: {
      settingName: 'fetch.allow',
      ...(f.allow === undefined ? {} : { allow: f.allow }),
      ...(f.allowPrivateNetworks ? { allowPrivateNetworks: true } : {}),
    },
    ...(f.circuitBreaker === undefined ? {} : { circuitBreaker: f.circuitBreaker }),
    ...(f.headers === undefined ? {} : { headers: f.headers }),
    ...(ports.snapshots === undefined ? {} : { snapshots: ports.snapshots }),
    ...(ports.politeness === undefined ? {} : { politeness: ports.politeness }),
  };
}

/** How long a source's snapshots and retired versions are kept (undefined: not kept). */
export function retentionOf(settings: EngineSettings, sourceId: string): number | undefined {
  return (
    settings.sources.find((s) => s.id === sourceId)?.retentionMs ?? settings.publish.retentionMs
  );
}

/** The publisher's options from the settings and the sources' contracts and canaries. */
export function publisherDefaultsOf(
  settings: EngineSettings,
  ports: Pick<EnginePorts, 'embeddings' | 'publisherHooks' | 'now'>,
  space?: EmbeddingSpace,
): PublisherDefaults {
  const byId = new Map(settings.sources.map((s) => [s.id, s]));
  return {
    maxRetireShare: settings.publish.maxRetireShare,
    graceMs: settings.publish.retireGraceMs,
    retentionMs: (sourceId) => retentionOf(settings, sourceId),
    leaseTtlMs: settings.publish.leaseTtlMs,
    contracts: (sourceId) => byId.get(sourceId)?.contract,
    canaries: (sourceId) => byId.get(sourceId)?.canaries ?? [],
    embedQuery: (text) => ports.embeddings.embedQuery(text),
    ...(space === undefined ? {} : { spaceId: space.id }),
    ...(ports.publisherHooks === undefined ? {} : { hooks: ports.publisherHooks }),
    ...(ports.now === undefined ? {} : { now: ports.now }),
  };
}

/** A page observer's ports: how pages are fetched (and rendered), where learned models are read. */
export interface PageObserverPorts {
  readonly fetcher: AcquireDeps['fetcher'];
  /** The state a refresh learns per-host boilerplate into; absent: pages are cut without models. */
  readonly state?: LearnedModels;
  readonly renderer?: () => Promise<PageRenderer>;
  /** Replaces the `ExtractPipeline` built from `settings.chunking`. */
  readonly pipeline?: PagePipeline;
}

/** The pipeline every role but a refresh cuts with: the base one under the learned models as stored. */
function cutAsStored(
  settings: PageSettings,
  state: LearnedModels | undefined,
  base: PagePipeline,
): PagePipeline {
  return settings.boilerplate === false || state === undefined
    ? base
    : learnedViewPipeline(state, base);
}

/**
 * The page step of the root for hosts that observe pages without a store or publisher (the
 * LangChain loader, live refresh): the same pipeline, learned models (as stored: only a refresh
 * learns) and page limits a worker of `composeEngine` applies, for `observePage`.
 */
export function composePageObserver(
  settings: PageSettings,
  ports: PageObserverPorts,
): PageObserver {
  return {
    fetcher: ports.fetcher,
    pipeline: cutAsStored(
      settings,
      ports.state,
      ports.pipeline ?? new ExtractPipeline(settings.chunking),
    ),
    pageLimits: settings.pageLimits,
    ...(ports.renderer === undefined ? {} : { renderer: ports.renderer }),
  };
}

/**
 * The composition root: the only code that turns resolved settings into a wired engine —
 * fetcher (allow-list, timeouts, circuit breaker, politeness), pipeline (chunking, boilerplate
 * models), connector, publisher (gates, grace, contracts, canaries, lease), deletion policy,
 * page limits, batch size and concurrency — for every role. The CLI, the queue processes and
 * any other host build their ports and call this; none of them reads a setting itself.
 */
export async function composeEngine(
  settings: EngineSettings,
  ports: EnginePorts,
  role: EngineRole,
): Promise<ComposedEngine> {
  const traits = ROLE_TRAITS[role];
  const { state, embeddings } = ports;
  const given = ports.connector ?? new NoStoreConnector(role);
  let connector = given;
  let fetcher: Fetcher | undefined;
  let publisher: Publisher | undefined;
  try {
    if (traits.sharedPoliteness && ports.politeness === undefined)
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `the ${role} role shares per-host politeness with other processes; pass ports.politeness (a RedisPolitenessGate).`,
        { scope: 'engine' },
      );
    if (traits.store !== (ports.connector !== undefined))
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        traits.store
          ? `the ${role} role reads and writes a ragfresh store; pass ports.connector.`
          : `the ${role} role opens no ragfresh store (its LangChain host reads and writes the app's vector store); leave ports.connector out.`,
        { scope: 'engine' },
      );
    const space = await describeEmbeddingSpace(embeddings, {
      ...(settings.embeddingsVersion === undefined ? {} : { version: settings.embeddingsVersion }),
    });
    // Before the store is touched: a space mismatch reads and writes nothing.
    const spaceRecord =
      traits.space === 'migrate'
        ? await readSpaceRecord(state)
        : await checkEmbeddingSpace(state, space, { adopt: traits.space === 'adopt' });
    // A migration to other dimensions moved the index into a namespace of its own.
    if (spaceRecord?.namespace !== undefined && traits.store)
      connector = given.forNamespace(spaceRecord.namespace);
    await connector.open({
      // The migrate role reads the index in its own space, whatever the configured one.
      dimensions:
        traits.space === 'migrate'
          ? (spaceRecord?.active.dimensions ?? space.dimensions)
          : space.dimensions,
    });
    const fetcherOptions = Object.freeze(fetcherOptionsOf(settings, ports));
    const fetcherOf = (): Fetcher => {
      fetcher ??= new Fetcher(fetcherOptions);
      return fetcher;
    };
    const base = ports.pipeline ?? new ExtractPipeline(settings.chunking);
    // A refresh wraps the base pipeline in its learner itself; every other role cuts under the
    // models as stored, so a worker or an import publishes the version a refresh would.
    const asStored = cutAsStored(settings, state, base);
    const publisherOptions = publisherDefaultsOf(settings, ports, space);
    if (traits.publishes === 'now')
      publisher = await Publisher.open({
        ...publisherOptions,
        connector,
        state,
        ...(ports.holder === undefined ? {} : { holder: ports.holder }),
      });
    // Opening the publisher may have rolled a space migration forward: check again.
    if (publisher !== undefined && traits.space === 'adopt')
      await checkEmbeddingSpace(state, space, { adopt: true });
    const ownPublisher = publisher;
    const depsOf = (): Omit<EngineDeps, 'publisher'> => ({
      sources: settings.sources,
      connector,
      state,
      fetcher: fetcherOf(),
      pipeline: traits.boilerplate === 'view' ? asStored : base,
      embeddings,
      space,
      deletion: settings.deletion,
      pageLimits: settings.pageLimits,
      maxRetireShare: settings.publish.maxRetireShare,
      minCoverage: settings.minCoverage,
      batchSize: settings.batchSize,
      concurrency: settings.concurrency,
      boilerplate: traits.boilerplate === 'learn' ? settings.boilerplate : false,
      ...(ports.snapshots === undefined ? {} : { snapshots: ports.snapshots }),
      ...(ports.tombstones === undefined ? {} : { tombstones: ports.tombstones }),
      ...(ports.audit === undefined ? {} : { audit: ports.audit }),
      ...(ports.renderer === undefined ? {} : { renderer: ports.renderer }),
      ...(ports.log === undefined ? {} : { log: ports.log }),
      ...(ports.metrics === undefined ? {} : { metrics: ports.metrics }),
      ...(ports.now === undefined ? {} : { now: ports.now }),
    });
    let deps: Omit<EngineDeps, 'publisher'> | undefined;
    let engine: RefreshEngine | undefined;
    const withPublisher = (): EngineDeps => {
      deps ??= depsOf();
      return ownPublisher === undefined ? deps : { ...deps, publisher: ownPublisher };
    };
    const engineOf = (): RefreshEngine => {
      engine ??= new RefreshEngine(withPublisher());
      return engine;
    };
    if (traits.fetches) engineOf();
    return {
      role,
      settings,
      connector,
      state,
      embeddings,
      space,
      spaceRecord,
      connectorFor: (suffix) => (suffix === undefined ? given : given.forNamespace(suffix)),
      get fetcher() {
        return fetcherOf();
      },
      fetcherOptions,
      snapshots: ports.snapshots,
      // Under the learned models, learning nothing: the same cut in every role (what
      // `RefreshEngine.snapshotPipeline` is).
      pipeline: asStored,
      observer: (observerFetcher) => ({
        fetcher: observerFetcher ?? fetcherOf(),
        pipeline: asStored,
        pageLimits: settings.pageLimits,
        ...(ports.renderer === undefined ? {} : { renderer: ports.renderer }),
      }),
      publisher,
      publisherOptions,
      get deps() {
        deps ??= depsOf();
        return deps;
      },
      get engine() {
        return engineOf();
      },
      context: (overrides = {}) =>
        new EngineContext({
          ...withPublisher(),
          ...(overrides.batchSize === undefined ? {} : { batchSize: overrides.batchSize }),
        }),
      judge(sourceId, judgeFetcher) {
        const source = settings.sources.find((s) => s.id === sourceId);
        if (source === undefined)
          throw new RagfreshError(
            'INVALID_ARGUMENT',
            `no source ${JSON.stringify(sourceId)} in the settings (sources: ${settings.sources.map((s) => s.id).join(', ') || 'none'}); add it to sources or use one of those ids.`,
            { scope: 'engine' },
          );
        return judgeContextOf({ deps: { state, fetcher: judgeFetcher ?? fetcherOf() } }, source);
      },
      built: () => ({ fetcher: fetcher !== undefined, engine: engine !== undefined }),
      async close() {
        await ownPublisher?.close();
        await fetcher?.close();
        await ports.snapshots?.close();
        await connector.close();
        if (connector !== given) await given.close();
        await state.close();
      },
    };
  } catch (err) {
    await publisher?.close().catch(() => {});
    await fetcher?.close().catch(() => {});
    await ports.snapshots?.close().catch(() => {});
    await connector.close().catch(() => {});
    if (connector !== given) await given.close().catch(() => {});
    await state.close().catch(() => {});
    throw err;
  }
}
