import { RagfreshError } from '@ragfresh/core';
import type { BoilerplateLearningOptions } from './boilerplate.js';
import { DEFAULT_PAGE_LIMITS, type PageLimits } from './bounds.js';
import type { ChunkingOptions } from './chunk.js';
import { DEFAULT_MIN_COVERAGE } from './counts.js';
import { DEFAULT_DELETION_POLICY, type DeletionPolicy, type EngineSource } from './types.js';

/** How pages are fetched: what the CLI's `fetch` section says, resolved. */
export interface FetchSettings {
  /** Sent on every request and matched against robots.txt; names a contact URL. */
  readonly userAgent: string;
  /** Obey robots.txt (default true; false only for your own sites). */
  readonly robots: boolean;
  readonly minIntervalMs?: number;
  readonly perHostConcurrency?: number;
  readonly globalConcurrency?: number;
  /** Time to response headers and for the whole attempt. */
  readonly timeoutMs?: number;
  /** Destinations the SSRF guard lets through (hosts, host:port, CIDRs). */
  readonly allow?: readonly string[];
  readonly allowPrivateNetworks: boolean;
  readonly circuitBreaker?: {
    readonly failureThreshold?: number;
    readonly cooldownMs?: number;
  };
  /** Extra headers on every request (tests, a proxy that wants a marker). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** How publication is paced and guarded. */
export interface PublishSettings {
  /** Largest share of a source's live documents one run (and one batch) may remove. */
  readonly maxRetireShare: number;
  /** Replaced versions stay queryable at least this long after retirement (slow readers). */
  readonly retireGraceMs: number;
  /** The publish lease's time to live after its last renewal. */
  readonly leaseTtlMs: number;
  /**
   * How long raw snapshots and retired versions are kept when a source names no retention of
   * its own (as-of reads, `gc`). Absent: retired versions go after the grace period and `gc`
   * prunes no snapshot.
   */
  readonly retentionMs?: number;
}

/**
 * Every setting the engine runs with, resolved once (defaults filled, ranges checked) and
 * handed to `composeEngine` by every role. No role reads a raw config after this.
 */
export interface EngineSettings {
  readonly sources: readonly EngineSource[];
  readonly fetch: FetchSettings;
  readonly deletion: DeletionPolicy;
  readonly publish: PublishSettings;
  readonly chunking: ChunkingOptions;
  /** Per-host boilerplate learning (docs/extract.md § 3), or `false` for none. */
  readonly boilerplate: BoilerplateLearningOptions | false;
  readonly pageLimits: PageLimits;
  /** Pages processed at once (fetch + extract). */
  readonly concurrency: number;
  /** Documents per publish batch. */
  readonly batchSize: number;
  /**
   * The share of a source's due pages a run must answer definitively (config
   * `gates.minCoverage`): `refresh` exits 8 below it, `watch` and the queue's end-of-window job
   * raise an alert and the `ragfresh_run_coverage` gauge shows it.
   */
  readonly minCoverage: number;
  /** The user's version of the embedding space (config `embeddingsVersion`; core `space.ts`). */
  readonly embeddingsVersion?: string;
}

/** What a host writes to get `EngineSettings`: sources and a user agent, the rest optional. */
export interface EngineSettingsInput {
  readonly sources: readonly EngineSource[];
  readonly fetch: Partial<FetchSettings> & { readonly userAgent: string };
  readonly deletion?: Partial<DeletionPolicy>;
  readonly publish?: Partial<PublishSettings>;
  readonly chunking?: ChunkingOptions;
  readonly boilerplate?: BoilerplateLearningOptions | false;
  readonly pageLimits?: Partial<PageLimits>;
  /** Default: `fetch.globalConcurrency`, else 8. */
  readonly concurrency?: number;
  readonly batchSize?: number;
  /** Default `DEFAULT_MIN_COVERAGE`. */
  readonly minCoverage?: number;
  readonly embeddingsVersion?: string;
}

export const DEFAULT_MAX_RETIRE_SHARE = 0.2;
/** How long a publish lease lasts after its last renewal (the publisher renews it while it works). */
export const DEFAULT_LEASE_TTL_MS = 60_000;

function positive(value: number, field: string, integer = true): number {
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value)))
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `engine setting ${field} must be a positive ${integer ? 'integer' : 'number'}, got ${value}.`,
      { scope: 'engine' },
    );
  return value;
}

/** How pages are cut and bounded: the part of the settings a host that only observes pages reads. */
export type PageSettings = Pick<EngineSettings, 'chunking' | 'boilerplate' | 'pageLimits'>;

/** `PageSettings` with the defaults `resolveEngineSettings` fills (the LangChain loader, live refresh). */
export function resolvePageSettings(
  input: Pick<EngineSettingsInput, 'chunking' | 'boilerplate' | 'pageLimits'> = {},
): PageSettings {
  return Object.freeze({
    chunking: input.chunking ?? {},
    boilerplate: input.boilerplate ?? {},
    pageLimits: Object.freeze({ ...DEFAULT_PAGE_LIMITS, ...input.pageLimits }),
  });
}

/** Fills the defaults and checks the ranges; the result is frozen. */
export function resolveEngineSettings(input: EngineSettingsInput): EngineSettings {
  const { fetch } = input;
  const maxRetireShare = input.publish?.maxRetireShare ?? DEFAULT_MAX_RETIRE_SHARE;
  if (!(maxRetireShare > 0 && maxRetireShare <= 1))
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `engine setting publish.maxRetireShare must be in (0, 1], got ${maxRetireShare}.`,
      { scope: 'engine' },
    );
  const minCoverage = input.minCoverage ?? DEFAULT_MIN_COVERAGE;
  if (!(minCoverage >= 0 && minCoverage <= 1))
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `engine setting minCoverage must be in [0, 1], got ${minCoverage}.`,
      { scope: 'engine' },
    );
  const deletion: DeletionPolicy = { ...DEFAULT_DELETION_POLICY, ...input.deletion };
  positive(deletion.goneChecks, 'deletion.goneChecks');
  return Object.freeze({
    sources: Object.freeze([...input.sources]),
    fetch: Object.freeze({
      ...fetch,
      robots: fetch.robots ?? true,
      allowPrivateNetworks: fetch.allowPrivateNetworks ?? false,
    }),
    deletion: Object.freeze(deletion),
    publish: Object.freeze({
      maxRetireShare,
      retireGraceMs: input.publish?.retireGraceMs ?? 0,
      leaseTtlMs: positive(
        input.publish?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
        'publish.leaseTtlMs',
        false,
      ),
      ...(input.publish?.retentionMs === undefined
        ? {}
        : { retentionMs: positive(input.publish.retentionMs, 'publish.retentionMs', false) }),
    }),
    ...resolvePageSettings(input),
    ...(input.embeddingsVersion === undefined
      ? {}
      : { embeddingsVersion: input.embeddingsVersion }),
    concurrency: positive(input.concurrency ?? fetch.globalConcurrency ?? 8, 'concurrency'),
    batchSize: positive(input.batchSize ?? 25, 'batchSize'),
    minCoverage,
  });
}
