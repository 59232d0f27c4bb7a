import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import {
  assertSourceId,
  type Canary,
  canonicalKey,
  isRagfreshError,
  normalizeAccess,
  RagfreshError,
  type UrlIdentityPolicy,
} from '@ragfresh/core';
import {
  DEFAULT_LEASE_TTL_MS,
  DEFAULT_MAX_RETIRE_SHARE,
  type EngineSettings,
  resolveEngineSettings,
} from '@ragfresh/engine/settings';
import { resolveCanaries } from './canaries.js';
import { importConfigModule } from './config-loader.js';
import { assertConfigShape, type RagfreshConfig, type SourceConfig } from './config-schema.js';
import { type ResolvedConnector, resolveConnectorSetting } from './connectors.js';
import { parseDuration } from './duration.js';

export type { AcquisitionSetting } from '@ragfresh/engine';
export type { CanaryConfig } from './canaries.js';

export type {
  ConnectorConfig,
  ConnectorSetting,
  RagfreshConfig,
  SourceConfig,
} from './config-schema.js';
export { configJsonSchema } from './config-schema.js';
export type {
  ConfigConnectorFactory,
  ConnectorFactory,
  ConnectorFactoryContext,
  ResolvedConnector,
} from './connectors.js';

/** Typed helper for `ragfresh.config.ts`. */
export function defineConfig(config: RagfreshConfig): RagfreshConfig {
  return config;
}

export interface ResolvedSource extends Omit<SourceConfig, 'canaries' | 'identity' | 'access'> {
  readonly everyMs: number;
  /** Groups that may read the source, checked, sorted and de-duplicated; empty: public. */
  readonly access: readonly string[];
  readonly freshnessObjectiveMs: number;
  readonly expectedChangeMs?: number;
  readonly identity: UrlIdentityPolicy;
  /** Canaries with expected URLs resolved to documentIds under the source's identity policy. */
  readonly canaries: readonly Canary[];
  /** The source's own retention (`sources[].retention`), when it names one. */
  readonly retentionMs?: number;
}

/**
 * A config resolved once: where things live, what the CLI itself reads, and the engine's
 * settings (`settings`), which every role hands to `composeEngine` unchanged.
 */
export interface ResolvedConfig {
  readonly dataDir: string;
  /** The config file's folder: connector packages are resolved from here. */
  readonly configDir: string;
  /** The sources with what the CLI reads beside the engine (freshness objective, canary config). */
  readonly sources: readonly ResolvedSource[];
  /** `{ store, ...options }` (a named package), or what the config passed as code. */
  readonly connector: ResolvedConnector;
  readonly state: string;
  readonly embeddings?: RagfreshConfig['embeddings'];
  readonly queue?: RagfreshConfig['queue'];
  readonly metricsPort?: number;
  readonly staleReaders: 'label' | 'exclude';
  /** Everything the engine runs with, in every role. */
  readonly settings: EngineSettings;
}

/**
 * How long a replaced version stays in the store after its retirement (besides the publisher's
 * one epoch): a reader that read the epoch just before a promotion finishes its query on the
 * version it started with, even when batched publishing moves the epoch several times meanwhile.
 */
export const DEFAULT_RETIRE_GRACE_MS = 30_000;

function bad(field: string, problem: string, fix: string): RagfreshError {
  return new RagfreshError('INVALID_CONFIG', `config ${field}: ${problem}; ${fix}.`, {
    scope: 'config',
    details: { field },
  });
}

function duration(value: unknown, field: string, fallback: number, allowZero = false): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(value);
  if (ms === undefined || ms < 0 || (ms === 0 && !allowZero)) {
    throw bad(
      field,
      `${JSON.stringify(value)} is not a duration`,
      'use milliseconds (a number) or a string like "90s", "6h", "30d"',
    );
  }
  return ms;
}

function checkUrl(value: unknown, field: string, policy: UrlIdentityPolicy): void {
  if (typeof value !== 'string')
    throw bad(field, `expected a URL string, got ${typeof value}`, 'give an absolute http(s) URL');
  try {
    canonicalKey(value, policy);
  } catch (err) {
    if (isRagfreshError(err)) {
      const detail = err.message.replace(/^\[ragfresh\] \[[^\]]+\] /, '').replace(/\.$/, '');
      throw bad(field, detail, 'fix the URL');
    }
    throw err;
  }
}

/** Validates a config object; every problem is one line naming the field and the fix. */
export function resolveConfig(raw: unknown, baseDir: string = process.cwd()): ResolvedConfig {
  // Shape, types, ranges and unknown keys: every problem at once, one line each.
  assertConfigShape(raw);
  const c = raw;
  if (c.userAgent.trim() === '') {
    throw bad(
      'userAgent',
      'is missing',
      'set userAgent to something like "mybot/1.0 (+https://example.org/bot)"',
    );
  }
  if (!/https?:\/\/\S+/.test(c.userAgent)) {
    throw bad(
      'userAgent',
      `${JSON.stringify(c.userAgent)} names no contact URL`,
      'add one, e.g. "(+https://example.org/bot)"',
    );
  }
  const identity: UrlIdentityPolicy = c.identity ?? { mode: 'normalize' };
  const ids = new Set<string>();
  const sources = c.sources.map((s, i): ResolvedSource => {
    const f = `sources[${i}]`;
    try {
      assertSourceId(s.id);
    } catch {
      throw bad(
        `${f}.id`,
        `${JSON.stringify(s.id)} is not a valid id`,
        "use 1-64 letters, digits, '_', '.', '-'",
      );
    }
    if (ids.has(s.id))
      throw bad(`${f}.id`, `"${s.id}" is used twice`, 'give each source its own id');
    ids.add(s.id);
    const policy = s.identity ?? identity;
    const urls = s.urls ?? [];
    const sitemaps = s.sitemaps ?? [];
    const llms = s.llmsTxt ?? [];
    if (urls.length + sitemaps.length + llms.length === 0) {
      throw bad(f, `source "${s.id}" has no urls, sitemaps or llmsTxt`, 'list what to fetch');
    }
    const listed = { mode: 'normalize', unknownParams: 'keep' } as const;
    for (const [j, u] of urls.entries()) checkUrl(u, `${f}.urls[${j}]`, policy);
    for (const [j, u] of sitemaps.entries()) checkUrl(u, `${f}.sitemaps[${j}]`, listed);
    for (const [j, u] of llms.entries()) checkUrl(u, `${f}.llmsTxt[${j}]`, listed);
    const everyMs = duration(s.every, `${f}.every`, 86_400_000);
    if (s.permission?.basis === 'other' && (s.permission.note ?? '').trim() === '') {
      throw bad(
        `${f}.permission.note`,
        'is missing for basis "other"',
        'say on what grounds the source is indexed',
      );
    }
    return {
      ...s,
      access: normalizeAccess(s.access, `${f}.access`),
      ...(s.retention === undefined
        ? {}
        : { retentionMs: duration(s.retention, `${f}.retention`, 0) }),
      identity: policy,
      canaries: resolveCanaries(s.canaries, s, policy, `${f}.canaries`),
      everyMs,
      freshnessObjectiveMs: duration(s.freshnessObjective, `${f}.freshnessObjective`, everyMs * 2),
      ...(s.expectedChangeEvery === undefined
        ? {}
        : { expectedChangeMs: duration(s.expectedChangeEvery, `${f}.expectedChangeEvery`, 0) }),
    };
  });
  const dataDir = isAbsolute(c.dataDir ?? '.ragfresh')
    ? (c.dataDir ?? '.ragfresh')
    : resolve(baseDir, c.dataDir ?? '.ragfresh');
  const connector = resolveConnectorSetting(c.connector, { dataDir, baseDir });
  const state = c.state ?? `sqlite:${resolve(dataDir, 'state.sqlite')}`;
  if (!/^(sqlite:|redis:\/\/|rediss:\/\/|postgres:\/\/|postgresql:\/\/)/.test(state)) {
    throw bad(
      'state',
      `${JSON.stringify(state)} is not a state store`,
      'use "sqlite:<path>", "redis://…" or "postgres://…"',
    );
  }
  const f = c.fetch;
  const settings = resolveEngineSettings({
    sources,
    fetch: {
      userAgent: c.userAgent,
      robots: f?.robots !== false,
      allowPrivateNetworks: f?.allowPrivateNetworks === true,
      ...(f?.minIntervalMs === undefined ? {} : { minIntervalMs: f.minIntervalMs }),
      ...(f?.perHostConcurrency === undefined ? {} : { perHostConcurrency: f.perHostConcurrency }),
      ...(f?.globalConcurrency === undefined ? {} : { globalConcurrency: f.globalConcurrency }),
      ...(f?.timeoutMs === undefined ? {} : { timeoutMs: f.timeoutMs }),
      ...(f?.allow === undefined ? {} : { allow: f.allow }),
      ...(f?.circuitBreaker === undefined ? {} : { circuitBreaker: f.circuitBreaker }),
    },
    deletion: {
      goneChecks: c.deletion?.goneChecks ?? 3,
      minGoneAgeMs:
        c.deletion?.minGoneAge === undefined
          ? 172_800_000
          : duration(c.deletion.minGoneAge, 'deletion.minGoneAge', 0, true),
      autoApprove: c.deletion?.autoApprove === true,
      redirectedGone: c.deletion?.redirectedGone === true,
    },
    publish: {
      maxRetireShare: c.gates?.maxRetireShare ?? DEFAULT_MAX_RETIRE_SHARE,
      retireGraceMs: duration(c.retireGrace, 'retireGrace', DEFAULT_RETIRE_GRACE_MS, true),
      leaseTtlMs: LEASE_TTL_MS,
      ...(c.retention === undefined ? {} : { retentionMs: duration(c.retention, 'retention', 0) }),
    },
    ...(c.chunking === undefined ? {} : { chunking: c.chunking }),
    ...(c.boilerplate === undefined ? {} : { boilerplate: c.boilerplate }),
    ...(c.embeddingsVersion === undefined ? {} : { embeddingsVersion: c.embeddingsVersion }),
    // The share of its due pages a run must answer definitively (per source and overall): a
    // refresh below it exits 8; `watch` and the queue's end-of-window job raise an alert.
    ...(c.gates?.minCoverage === undefined ? {} : { minCoverage: c.gates.minCoverage }),
  });
  return {
    dataDir,
    configDir: baseDir,
    sources,
    connector,
    state,
    ...(c.embeddings === undefined ? {} : { embeddings: c.embeddings }),
    ...(c.queue === undefined ? {} : { queue: c.queue }),
    ...(c.metricsPort === undefined ? {} : { metricsPort: c.metricsPort }),
    staleReaders: c.staleReaders ?? 'label',
    settings,
  };
}

/** The governance audit log of a project: `<dataDir>/audit.jsonl` (docs/governance.md). */
export function auditLogPath(config: Pick<ResolvedConfig, 'dataDir'>): string {
  return resolve(config.dataDir, 'audit.jsonl');
}

/**
 * How long the publish lease lasts after its last renewal (the publisher renews it while it
 * works). `RAGFRESH_LEASE_TTL_MS` overrides it (crash tests; a host that wants faster takeover).
 */
export const LEASE_TTL_MS =
  Number(process.env.RAGFRESH_LEASE_TTL_MS) > 0
    ? Number(process.env.RAGFRESH_LEASE_TTL_MS)
    : DEFAULT_LEASE_TTL_MS;

export const CONFIG_FILES = [
  'ragfresh.config.ts',
  'ragfresh.config.mjs',
  'ragfresh.config.js',
  'ragfresh.config.json',
];

/** Finds and imports the config file (TypeScript is loaded with Node's type stripping). */
export async function loadConfig(
  path?: string,
  cwd: string = process.cwd(),
): Promise<ResolvedConfig> {
  const file =
    path !== undefined
      ? resolve(cwd, path)
      : CONFIG_FILES.map((f) => resolve(cwd, f)).find((f) => existsSync(f));
  if (file === undefined) {
    throw new RagfreshError(
      'INVALID_CONFIG',
      'no ragfresh.config.ts here; run `ragfresh init` to write one, or pass --config <file>.',
      {
        scope: 'config',
      },
    );
  }
  if (!existsSync(file)) {
    throw new RagfreshError(
      'INVALID_CONFIG',
      `config file ${file} does not exist; check --config.`,
      { scope: 'config' },
    );
  }
  let mod: { default?: unknown };
  try {
    if (file.endsWith('.json')) {
      const { readFileSync } = await import('node:fs');
      mod = { default: JSON.parse(readFileSync(file, 'utf8')) };
    } else {
      mod = await importConfigModule(file);
    }
  } catch (err) {
    throw new RagfreshError(
      'INVALID_CONFIG',
      `cannot load ${file}: ${(err as Error).message.split('\n')[0]}; fix the file.`,
      {
        scope: 'config',
        cause: err,
      },
    );
  }
  if (mod.default === undefined) {
    throw new RagfreshError(
      'INVALID_CONFIG',
      `${file} has no default export; write \`export default defineConfig({ ... })\`.`,
      {
        scope: 'config',
      },
    );
  }
  return resolveConfig(mod.default, resolve(file, '..'));
}
