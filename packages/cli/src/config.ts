import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  assertSourceId,
  type Canary,
  canonicalKey,
  isRagfreshError,
  type PublishContract,
  RagfreshError,
  type UrlIdentityPolicy,
} from '@ragfresh/core';
import type { AcquisitionSetting } from '@ragfresh/engine';
import { type CanaryConfig, resolveCanaries } from './canaries.js';
import { parseDuration } from './duration.js';

export type { AcquisitionSetting } from '@ragfresh/engine';
export type { CanaryConfig } from './canaries.js';

export interface SourceConfig {
  /** Stable id chosen by you; part of every documentId. Letters, digits, `_`, `.`, `-`. */
  readonly id: string;
  readonly urls?: readonly string[];
  readonly sitemaps?: readonly string[];
  readonly llmsTxt?: readonly string[];
  /** Label carried into provenance, e.g. `official`. */
  readonly authority?: string;
  /** How often the source is due: ms or `"6h"`. Default `"24h"`. */
  readonly every?: number | string;
  /** Alert as "frozen" when nothing changed for longer than this. */
  readonly expectedChangeEvery?: number | string;
  /** Freshness objective: the largest acceptable age of the last good observation. Default 2x `every`. */
  readonly freshnessObjective?: number | string;
  readonly contract?: PublishContract;
  readonly acquisition?: AcquisitionSetting;
  /** Prefer a page's Markdown twin (`page.md`) when the site publishes one. Default false. */
  readonly markdownTwin?: boolean;
  readonly proxy?: { readonly url: string; readonly region?: string };
  readonly identity?: UrlIdentityPolicy;
  /** Publication canaries: questions whose answer must stay retrievable (see docs/cli.md). */
  readonly canaries?: readonly CanaryConfig[];
}

export type ConnectorConfig =
  | { readonly store: 'lancedb'; readonly path?: string; readonly table?: string }
  | { readonly store: 'memory'; readonly persistPath?: string }
  | { readonly store: 'chroma'; readonly url: string; readonly collection?: string }
  | { readonly store: 'pgvector'; readonly connectionString: string; readonly table?: string }
  | {
      readonly store: 'qdrant';
      readonly url: string;
      readonly collection?: string;
      readonly apiKey?: string;
    }
  | { readonly store: 'pinecone'; readonly [key: string]: unknown };

export interface RagfreshConfig {
  /** Sent on every request; must contain a contact URL, e.g. `mybot/1.0 (+https://example.org/bot)`. */
  readonly userAgent: string;
  readonly sources: readonly SourceConfig[];
  /** Where ragfresh keeps its state, raw snapshots and the embedded index. Default `.ragfresh`. */
  readonly dataDir?: string;
  readonly identity?: UrlIdentityPolicy;
  readonly connector?: ConnectorConfig;
  /** Any LangChain embeddings, or the offline lexical hashing embedder. Default hashing, 256 dims. */
  readonly embeddings?:
    | EmbeddingsInterface
    | { readonly kind: 'hashing'; readonly dimensions?: number };
  /** State store: `sqlite:<path>` (default `<dataDir>/state.sqlite`), `redis://…`, `postgres://…`. */
  readonly state?: string;
  readonly gates?: { readonly maxRetireShare?: number };
  readonly deletion?: {
    /** Gone (404/410) observations needed. Default 3. */
    readonly goneChecks?: number;
    /** Time the gone observations must span. Default `"48h"`. */
    readonly minGoneAge?: number | string;
    /** Approve deletions without review. Default false (explicit policy). */
    readonly autoApprove?: boolean;
  };
  /** What readers get from degraded or quarantined documents. Default `label`. */
  readonly staleReaders?: 'label' | 'exclude';
  readonly fetch?: {
    readonly minIntervalMs?: number;
    readonly perHostConcurrency?: number;
    readonly globalConcurrency?: number;
    /**
     * Opens exactly what it lists to the SSRF guard: `host`, `host:port` or CIDR entries, e.g.
     * `['127.0.0.1:8080', 'docs.internal', '10.1.2.0/24']`. Metadata addresses (169.254.169.254,
     * fd00:ec2::254) open only when listed one by one, never through a range or a host name.
     */
    readonly allow?: readonly string[];
    /** Allow every loopback/private address (tests). Prefer `allow`. Default false. */
    readonly allowPrivateNetworks?: boolean;
    /** Obey robots.txt. Default true. */
    readonly robots?: boolean;
    readonly timeoutMs?: number;
    /** Per-host circuit breaker: open after this many consecutive failures, for this long. */
    readonly circuitBreaker?: { readonly failureThreshold?: number; readonly cooldownMs?: number };
  };
  readonly chunking?: { readonly maxTokens?: number; readonly encoding?: string };
  /** Prometheus metrics port for `watch` (opt-in). */
  readonly metricsPort?: number;
}

/** Typed helper for `ragfresh.config.ts`. */
export function defineConfig(config: RagfreshConfig): RagfreshConfig {
  return config;
}

export interface ResolvedSource extends SourceConfig {
  readonly everyMs: number;
  readonly freshnessObjectiveMs: number;
  readonly expectedChangeMs?: number;
  readonly identity: UrlIdentityPolicy;
  /** Canaries with expected URLs resolved to documentIds under the source's identity policy. */
  readonly canaries: readonly Canary[];
}

export interface ResolvedConfig extends RagfreshConfig {
  readonly dataDir: string;
  readonly sources: readonly ResolvedSource[];
  readonly connector: ConnectorConfig;
  readonly state: string;
  readonly goneChecks: number;
  readonly minGoneAgeMs: number;
  readonly autoApproveDeletions: boolean;
  readonly maxRetireShare: number;
  readonly staleReaders: 'label' | 'exclude';
}

export const KNOWN_STORES = [
  'lancedb',
  'memory',
  'chroma',
  'pgvector',
  'qdrant',
  'pinecone',
] as const;

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

function list(value: unknown, field: string): readonly unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw bad(field, 'expected a list', 'write it as an array');
  return value;
}

/** Validates a config object; every problem is one line naming the field and the fix. */
export function resolveConfig(raw: unknown, baseDir: string = process.cwd()): ResolvedConfig {
  if (typeof raw !== 'object' || raw === null)
    throw bad('(root)', 'the config is not an object', 'export default defineConfig({ ... })');
  const c = raw as RagfreshConfig;
  if (typeof c.userAgent !== 'string' || c.userAgent.trim() === '') {
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
  const identity = c.identity ?? { mode: 'normalize' };
  if (identity.mode !== 'strict' && identity.mode !== 'normalize') {
    throw bad(
      'identity.mode',
      `${JSON.stringify((identity as { mode: unknown }).mode)} is unknown`,
      'use "strict" or "normalize"',
    );
  }
  if (!Array.isArray(c.sources) || c.sources.length === 0) {
    throw bad(
      'sources',
      'is missing or empty',
      'list at least one source with an id and urls or sitemaps',
    );
  }
  const ids = new Set<string>();
  const sources = c.sources.map((s, i): ResolvedSource => {
    const f = `sources[${i}]`;
    if (typeof s !== 'object' || s === null) throw bad(f, 'is not an object', 'write { id, urls }');
    if (s.id === undefined)
      throw bad(`${f}.id`, 'is missing', 'give every source a stable id such as "docs"');
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
    const urls = list(s.urls, `${f}.urls`);
    const sitemaps = list(s.sitemaps, `${f}.sitemaps`);
    const llms = list(s.llmsTxt, `${f}.llmsTxt`);
    if (urls.length + sitemaps.length + llms.length === 0) {
      throw bad(f, `source "${s.id}" has no urls, sitemaps or llmsTxt`, 'list what to fetch');
    }
    const listed = { mode: 'normalize', unknownParams: 'keep' } as const;
    for (const [j, u] of urls.entries()) checkUrl(u, `${f}.urls[${j}]`, policy);
    for (const [j, u] of sitemaps.entries()) checkUrl(u, `${f}.sitemaps[${j}]`, listed);
    for (const [j, u] of llms.entries()) checkUrl(u, `${f}.llmsTxt[${j}]`, listed);
    if (s.acquisition !== undefined && !['raw', 'rendered', 'auto'].includes(s.acquisition)) {
      throw bad(
        `${f}.acquisition`,
        `${JSON.stringify(s.acquisition)} is unknown`,
        'use "raw", "rendered" or "auto"',
      );
    }
    const everyMs = duration(s.every, `${f}.every`, 86_400_000);
    const contract = s.contract;
    if (
      contract?.maxShrink !== undefined &&
      !(contract.maxShrink >= 0 && contract.maxShrink <= 1)
    ) {
      throw bad(
        `${f}.contract.maxShrink`,
        `${contract.maxShrink} is not a share`,
        'use a number between 0 and 1, e.g. 0.5',
      );
    }
    if (
      contract?.minChars !== undefined &&
      !(Number.isInteger(contract.minChars) && contract.minChars >= 0)
    ) {
      throw bad(
        `${f}.contract.minChars`,
        `${contract.minChars} is not a count`,
        'use a non-negative integer',
      );
    }
    return {
      ...s,
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
  const given: ConnectorConfig = c.connector ?? { store: 'lancedb' };
  if (!(KNOWN_STORES as readonly string[]).includes(given.store)) {
    throw bad(
      'connector.store',
      `${JSON.stringify(given.store)} is not a known connector`,
      `use one of ${KNOWN_STORES.join(', ')}`,
    );
  }
  const connector = withConnectorDefaults(given, dataDir);
  const state = c.state ?? `sqlite:${resolve(dataDir, 'state.sqlite')}`;
  if (!/^(sqlite:|redis:\/\/|rediss:\/\/|postgres:\/\/|postgresql:\/\/)/.test(state)) {
    throw bad(
      'state',
      `${JSON.stringify(state)} is not a state store`,
      'use "sqlite:<path>", "redis://…" or "postgres://…"',
    );
  }
  const goneChecks = c.deletion?.goneChecks ?? 3;
  if (!Number.isInteger(goneChecks) || goneChecks < 1) {
    throw bad(
      'deletion.goneChecks',
      `${goneChecks} is not a positive integer`,
      'use 1 or more (default 3)',
    );
  }
  const maxRetireShare = c.gates?.maxRetireShare ?? 0.2;
  if (!(maxRetireShare > 0 && maxRetireShare <= 1)) {
    throw bad(
      'gates.maxRetireShare',
      `${maxRetireShare} is not a share`,
      'use a number in (0, 1], e.g. 0.2',
    );
  }
  if (c.staleReaders !== undefined && c.staleReaders !== 'label' && c.staleReaders !== 'exclude') {
    throw bad(
      'staleReaders',
      `${JSON.stringify(c.staleReaders)} is unknown`,
      'use "label" or "exclude"',
    );
  }
  for (const [i, entry] of list(c.fetch?.allow, 'fetch.allow').entries()) {
    if (typeof entry !== 'string' || entry.trim() === '')
      throw bad(
        `fetch.allow[${i}]`,
        `${JSON.stringify(entry)} is not an entry`,
        'use a host, host:port or CIDR string, e.g. "127.0.0.1:8080", "docs.internal", "10.1.2.0/24"',
      );
  }
  if (
    c.metricsPort !== undefined &&
    !(Number.isInteger(c.metricsPort) && c.metricsPort >= 0 && c.metricsPort < 65536)
  ) {
    throw bad('metricsPort', `${c.metricsPort} is not a port`, 'use an integer 0-65535');
  }
  return {
    ...c,
    dataDir,
    sources,
    connector,
    state,
    goneChecks,
    minGoneAgeMs:
      c.deletion?.minGoneAge === undefined
        ? 172_800_000
        : duration(c.deletion.minGoneAge, 'deletion.minGoneAge', 0, true),
    autoApproveDeletions: c.deletion?.autoApprove === true,
    maxRetireShare,
    staleReaders: c.staleReaders ?? 'label',
  };
}

function withConnectorDefaults(c: ConnectorConfig, dataDir: string): ConnectorConfig {
  const need = (field: string, value: unknown, example: string) => {
    if (typeof value !== 'string' || value === '') {
      throw bad(`connector.${field}`, 'is missing', `set it, e.g. ${example}`);
    }
  };
  switch (c.store) {
    case 'lancedb':
      return { ...c, path: c.path ?? resolve(dataDir, 'lancedb'), table: c.table ?? 'ragfresh' };
    case 'chroma':
      need('url', c.url, '"http://localhost:8000"');
      return { ...c, collection: c.collection ?? 'ragfresh' };
    case 'pgvector':
      need('connectionString', c.connectionString, '"postgres://localhost:5432/app"');
      return { ...c, table: c.table ?? 'ragfresh_chunks' };
    case 'qdrant':
      need('url', c.url, '"http://localhost:6333"');
      return { ...c, collection: c.collection ?? 'ragfresh' };
    default:
      return c;
  }
}

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
      mod = (await import(pathToFileURL(file).href)) as { default?: unknown };
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
