import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  type AuditLog,
  type Connector,
  DocumentLedger,
  type EmbeddingSpace,
  type Publisher,
  RagfreshError,
  type Reason,
  type StateStore,
} from '@ragfresh/core';
import type { Fetcher, RawSnapshotStore } from '@ragfresh/fetch';
import type { BoilerplateLearningOptions } from './boilerplate-sample.js';
import { DEFAULT_PAGE_LIMITS, type PageLimits } from './bounds.js';
import { Mutex } from './concurrency.js';
import {
  coverageOf,
  DEFAULT_MIN_COVERAGE,
  type DocumentEvent,
  emptyCounts,
  type RefreshCounts,
  type SourceReport,
} from './counts.js';
import type { PagePipeline } from './extract.js';
import { HostEvidence } from './interstitial-evidence.js';
import { RecordSnapshot } from './records.js';
import {
  DEFAULT_DELETION_POLICY,
  type DeletionPolicy,
  type EngineLogger,
  type EngineMetrics,
  type EngineSource,
  type PageRenderer,
  silentLogger,
  type TombstoneMirror,
} from './types.js';

/** Everything the engine is built from. Any `Connector` instance will do. */
export interface EngineDeps {
  readonly sources: readonly EngineSource[];
  readonly connector: Connector;
  readonly state: StateStore;
  /**
   * Absent for roles that never publish (page workers, the scheduler, read-only commands):
   * a stage that reaches for it there is a bug, said by `EngineContext.publisher()`.
   */
  readonly publisher?: Publisher;
  readonly fetcher: Fetcher;
  readonly pipeline: PagePipeline;
  readonly embeddings: EmbeddingsInterface;
  /**
   * The embedding space of `embeddings` (checked against the index's by `composeEngine`): stored
   * vectors are reused only from chunks of this space.
   */
  readonly space?: EmbeddingSpace;
  /** Raw snapshots, for re-extraction without network. */
  readonly snapshots?: RawSnapshotStore;
  readonly deletion?: DeletionPolicy;
  readonly log?: EngineLogger;
  readonly metrics?: EngineMetrics;
  readonly now?: () => Date;
  /** Documents per publish batch (shared by every source of a refresh). Default 25. */
  readonly batchSize?: number;
  /** Pages processed at once (fetch + extract). Default 8. */
  readonly concurrency?: number;
  /** Headless rendering for sources with `acquisition: 'rendered' | 'auto'` (launched lazily, once). */
  readonly renderer?: () => Promise<PageRenderer>;
  /** Per-page work limits checked before parsing (see `PageLimits`); each field optional. */
  readonly pageLimits?: Partial<PageLimits>;
  /**
   * Largest share of a source's live documents one run may remove or propose to remove, every
   * removal of the run counted (auto-approved ones included). Default 0.2.
   */
  readonly maxRetireShare?: number;
  /** The coverage gate of a run (`EngineSettings.minCoverage`). Default 0.9. */
  readonly minCoverage?: number;
  /** Tombstones mirrored outside the state store (read back by `recover`). */
  readonly tombstones?: TombstoneMirror;
  /** The governance audit log: review decisions and removals are appended to it. */
  readonly audit?: AuditLog;
  /**
   * Per-host boilerplate learning in `RefreshEngine` (docs/extract.md § 3): on by default with
   * the default options; `false` turns it off. Needs a pipeline with `processLearned`.
   */
  readonly boilerplate?: BoilerplateLearningOptions | false;
}

/**
 * What every stage is handed: the engine's dependencies, its policies, its clock, logger and
 * metrics, and the one publish lock. Stages take this instead of positional parameters.
 */
export class EngineContext {
  readonly deps: EngineDeps;
  /** The only writer of document records, review items and tombstones. */
  readonly ledger: DocumentLedger;
  readonly log: EngineLogger;
  readonly deletion: DeletionPolicy;
  readonly publishLock = new Mutex();
  /** Documents whose copy the store lost and that have no raw snapshot: republished when fetched. */
  readonly mustRepair = new Set<string>();
  /** The records as this refresh found them (one scan, shared by the whole-source stages). */
  readonly records: RecordSnapshot;
  readonly batchSize: number;
  readonly concurrency: number;
  readonly renderer: (() => Promise<PageRenderer>) | undefined;
  readonly pageLimits: PageLimits;
  readonly maxRetireShare: number;
  readonly minCoverage: number;
  #rendering: Promise<PageRenderer> | undefined;

  constructor(deps: EngineDeps) {
    this.deps = deps;
    this.ledger = new DocumentLedger(deps.state, {
      now: () => this.now(),
      ...(deps.tombstones === undefined ? {} : { tombstones: deps.tombstones }),
      ...(deps.audit === undefined ? {} : { audit: deps.audit }),
    });
    this.records = new RecordSnapshot(deps.state);
    this.log = deps.log ?? silentLogger;
    this.deletion = deps.deletion ?? DEFAULT_DELETION_POLICY;
    this.batchSize = deps.batchSize ?? 25;
    this.concurrency = deps.concurrency ?? 8;
    this.pageLimits = { ...DEFAULT_PAGE_LIMITS, ...deps.pageLimits };
    this.maxRetireShare = deps.maxRetireShare ?? 0.2;
    this.minCoverage = deps.minCoverage ?? DEFAULT_MIN_COVERAGE;
    const launch = deps.renderer;
    this.renderer =
      launch === undefined
        ? undefined
        : () => {
            this.#rendering ??= launch();
            return this.#rendering;
          };
  }

  /** The publisher; INTERNAL when this engine was composed for a role that does not publish. */
  publisher(): Publisher {
    const publisher = this.deps.publisher;
    if (publisher === undefined)
      throw new RagfreshError(
        'INTERNAL',
        'this engine was composed without a publisher (a page worker, the scheduler or a read-only command); only publishing roles publish.',
        { scope: 'engine' },
      );
    return publisher;
  }

  now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  nowIso(): string {
    return this.now().toISOString();
  }

  count(name: string, help: string, labels: Record<string, string> = {}, by = 1): void {
    this.deps.metrics?.inc(name, help, labels, by);
  }

  gauge(name: string, help: string, labels: Record<string, string>, value: number): void {
    this.deps.metrics?.set(name, help, labels, value);
  }
}

/** One source's share of a refresh: its counts, alerts, events and coverage. */
/** A gone-based deletion proposal a page made; the source's finish writes it (or holds it). */
export interface GoneProposal {
  readonly subject: {
    readonly sourceId: string;
    readonly documentId: string;
    readonly url: string;
  };
  readonly reason: string;
  readonly evidence: readonly string[];
}

export class SourceRun {
  readonly source: EngineSource;
  readonly startedAt: string;
  readonly counts: RefreshCounts = emptyCounts();
  readonly alerts: string[] = [];
  readonly events: DocumentEvent[] = [];
  /** Coverage: stays true only while every listing was read and every page answered definitively. */
  complete = true;
  /** Every listing (sitemap, llms.txt) was read whole: what coverage means when no page is due. */
  listingsComplete = true;
  /** Documents whose page answered 200 or 304 in this run (withdraws gone-based proposals). */
  readonly answered = new Set<string>();
  /** Deletion proposals of this run, written (or held as one alert) when the source finishes. */
  readonly proposals: GoneProposal[] = [];
  /** Host evidence for status phrases (bodies seen, probes asked), for this run only. */
  readonly hostEvidence = new HostEvidence();

  constructor(source: EngineSource, startedAt: string) {
    this.source = source;
    this.startedAt = startedAt;
  }

  event(url: string, documentId: string, event: string, reasons: readonly Reason[] = []): void {
    this.events.push({ url, documentId, event, reasons: [...reasons] });
  }

  report(): SourceReport {
    return {
      sourceId: this.source.id,
      complete: this.complete,
      coverage: coverageOf(this.counts, this.listingsComplete),
      counts: this.counts,
      alerts: this.alerts,
      events: this.events,
    };
  }
}
