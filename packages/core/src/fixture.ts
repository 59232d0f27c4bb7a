import type { Connector } from './connector.js';

/** What a conformance run talked to. Reports always name it. */
export type TargetKind = 'embedded' | 'local-server' | 'container' | 'url' | 'emulator';

export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * How another process builds the same connector: `import(module)[exportName](options)`.
 * `module` is an absolute file URL of built JavaScript (child processes do not load TS).
 */
export interface ConnectorSpec {
  readonly module: string;
  readonly exportName: string;
  readonly options: { readonly [key: string]: JsonValue };
}

/** Faults an emulator (or proxy) can inject; each field off when absent. */
export interface FaultConfig {
  /** Writes become visible to reads only after this many ms (eventual consistency). */
  readonly visibilityLagMs?: number;
  /** Share of requests answered 429 with `Retry-After: retryAfterSeconds`. */
  readonly rate429?: number;
  readonly retryAfterSeconds?: number;
  /** Share of requests answered with a 5xx. */
  readonly rate5xx?: number;
  /** Share of requests that hang until the client times out. */
  readonly timeoutRate?: number;
  /** Share of requests whose connection is destroyed without a response. */
  readonly dropRate?: number;
}

export interface FaultController {
  set(config: FaultConfig): void;
  reset(): void;
}

export interface StoreTarget {
  readonly kind: TargetKind;
  /** Human description: engine, version, address, how it was started. */
  readonly description: string;
  /** A connector on a fresh namespace (collection/table/index) that no other case uses. */
  createConnector(namespace: string): Promise<Connector>;
  /** The same connector, buildable in a child process (crash cases). */
  connectorSpec(namespace: string): ConnectorSpec;
  /** Present when the target can inject faults (emulators). */
  readonly faults?: FaultController;
  stop(): Promise<void>;
}

export interface FixtureStartOptions {
  /** A running server to use instead of starting one. */
  readonly url?: string;
}

/** Exported by every connector package as `fixture` from `<package>/fixture`. */
export interface StoreFixture {
  readonly store: string;
  start(options?: FixtureStartOptions): Promise<StoreTarget>;
}
