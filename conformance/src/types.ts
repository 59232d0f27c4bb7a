import type {
  Connector,
  ConnectorCapabilities,
  FixtureStartOptions,
  JsonValue,
  Publisher,
  PublisherOptions,
  StateStore,
  StoreFixture,
  StoreTarget,
  TargetKind,
} from '@ragfresh/core';
import type { Corpus } from './corpus.js';

/** What a case's `run` receives. Everything it creates is cleaned up by the suite. */
export interface CaseContext {
  readonly target: StoreTarget;
  /** The manifest of the connector under test, frozen. */
  readonly capabilities: ConnectorCapabilities;
  /** A fresh random namespace no other case uses. */
  readonly namespace: string;
  /** Vector size every case uses. */
  readonly dimensions: number;
  /** Builds documents, versions and deterministic embeddings within this namespace. */
  readonly corpus: Corpus;
  /** The case's connector on its namespace, opened (created on first call). */
  connector(): Promise<Connector>;
  /** Another connector instance on the same namespace, opened (a second reader or a restart). */
  openAnotherConnector(): Promise<Connector>;
  /** A fresh in-memory state store (single-process cases). */
  memoryState(): StateStore;
  /** A Publisher over the case's connector; `state` defaults to a fresh in-memory store. */
  publisher(options?: Partial<Omit<PublisherOptions, 'connector'>>): Promise<Publisher>;
  /** A temporary directory removed after the case. */
  tempDir(): string;
  /**
   * Runs `block` (reads and checks only) once on a store with immediate visibility; on an
   * eventual store re-runs it with backoff until its checks pass or the declared lag budget
   * (maxLagMs × 2 + 1 s) is spent — measuring, never sleeping a fixed time. Only the last
   * attempt's failed checks count.
   */
  eventually(label: string, block: () => Promise<void>): Promise<void>;
  /** Records a failed expectation; the case fails but keeps running. */
  check(condition: boolean, failure: string): boolean;
  /** Records a measured value for the report. */
  observe(key: string, value: JsonValue): void;
  /** What the case saw, in the same words as the declared guarantee (shown in the table). */
  observed(summary: string): void;
  /** Times `fn` and records its duration under `label`. */
  time<T>(label: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * One conformance case: data, not a test function. Whether it applies and what it expects
 * are decided only from the connector's frozen capability manifest.
 */
export interface ConformanceCase {
  /** Stable kebab-case id (`--cases` selects by it). */
  readonly id: string;
  readonly title: string;
  /** The one guarantee this case proves, in a sentence. */
  readonly guarantee: string;
  /** What a connector author should look at when it fails. */
  readonly whenItFails: string;
  /** Whether the case applies to a connector with these capabilities. */
  appliesTo(capabilities: ConnectorCapabilities): boolean;
  /** The declared guarantee this case holds the connector to (shown beside what was observed). */
  declared(capabilities: ConnectorCapabilities): string;
  run(ctx: CaseContext): Promise<void>;
  /** Time budget for the case (the vitest timeout when registered). Default 60 s. */
  readonly timeoutMs?: number;
}

export type CaseStatus = 'passed' | 'failed' | 'skipped';

export interface CaseReport {
  readonly id: string;
  readonly title: string;
  readonly guarantee: string;
  readonly whenItFails: string;
  readonly status: CaseStatus;
  readonly declared: string;
  readonly observed: string;
  /** Failed expectations and unexpected errors, one line each (empty when passed). */
  readonly failures: readonly string[];
  readonly observations: Readonly<Record<string, JsonValue>>;
  readonly timingsMs: Readonly<Record<string, number>>;
  readonly durationMs: number;
  readonly namespace: string;
}

export interface ConformanceReport {
  readonly suite: { readonly name: string; readonly version: string };
  readonly store: string;
  readonly target: { readonly kind: TargetKind; readonly description: string };
  readonly capabilities: ConnectorCapabilities;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly passed: boolean;
  readonly counts: { readonly passed: number; readonly failed: number; readonly skipped: number };
  readonly cases: readonly CaseReport[];
  /**
   * The connector package the fixture came from, as `ragfresh-conformance` resolved it (its
   * package.json); absent when the suite runs as a library. The README's guarantees table names
   * it for a package outside the project.
   */
  readonly connector?: { readonly package: string; readonly version: string };
}

export interface SuiteOptions {
  readonly fixture: StoreFixture;
  readonly startOptions?: FixtureStartOptions;
}

export interface RunSuiteOptions extends SuiteOptions {
  /** Run only these case ids (the CLI's `--cases`); unknown ids are INVALID_ARGUMENT. */
  readonly cases?: readonly string[];
  /** Called after each case, in order. */
  readonly onCase?: (report: CaseReport) => void;
  /** Called once the target started and the manifest is known, before the first case. */
  readonly onStart?: (info: {
    readonly target: StoreTarget;
    readonly capabilities: ConnectorCapabilities;
    readonly suiteVersion: string;
  }) => void;
}

/** The subset of a test framework the suite needs (vitest, jest, node:test...). */
export interface TestRunner {
  describe(name: string, fn: () => void): void;
  it(name: string, fn: (context?: unknown) => Promise<void>, timeoutMs?: number): void;
  beforeAll(fn: () => Promise<void>, timeoutMs?: number): void;
  afterAll(fn: () => Promise<void>, timeoutMs?: number): void;
}

export interface RegisterSuiteOptions extends SuiteOptions {
  readonly runner: TestRunner;
}

/** One hit as a LangChain vector store class returns it (a `Document`, structurally). */
export interface LangChainReaderHit {
  readonly pageContent: string;
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** The view a LangChain reader filters on: the published epoch's range, or `rf_current`. */
export type LangChainReaderView =
  | { readonly kind: 'epoch'; readonly epoch: number }
  | { readonly kind: 'flag' };

/**
 * The LangChain class named in the manifest (`capabilities.langchain.class`), opened on one
 * namespace's stored data exactly as an application would open it.
 */
export interface LangChainReader {
  /**
   * The class's `similaritySearchVectorWithScore(vector, k, filter)` with the current-view
   * filter the per-store doc tells applications to use for `view`.
   */
  search(
    vector: readonly number[],
    k: number,
    view: LangChainReaderView,
  ): Promise<readonly LangChainReaderHit[]>;
  close(): Promise<void>;
}

/**
 * A target whose connector names its LangChain class: the fixture's `start()` returns it with
 * a reader factory, which the `langchain-reader` case calls after publishing into `namespace`.
 */
export interface LangChainReaderTarget extends StoreTarget {
  langchainReader(namespace: string): Promise<LangChainReader>;
}

/** Whether a target supplies a LangChain reader factory. */
export function hasLangChainReader(target: StoreTarget): target is LangChainReaderTarget {
  return typeof (target as Partial<LangChainReaderTarget>).langchainReader === 'function';
}
