import { isAbsolute, resolve } from 'node:path';
import type { Connector } from './connector.js';
import { RagfreshError } from './errors.js';
import { suggestKey } from './suggest.js';

// The registry factory every connector package exports as `createConnector(options, context)`:
// a config's `connector: { store: 'x', ...options }` reaches `@ragfresh/connector-x` through it.
// The package owns its defaults (where an embedded store keeps its files, the table or collection
// name) and the checks of its options, so the CLI names no store. Lives in core so a connector
// depends on nothing but core.

/** What the caller (the CLI) hands a connector factory beside the user's options. */
export interface ConnectorFactoryContext {
  /** The config's `dataDir` (absolute): where an embedded store keeps its files by default. */
  readonly dataDir: string;
  /** The config file's folder (absolute): relative paths in options are relative to it. */
  readonly baseDir: string;
}

/** `createConnector(options, context)` of a connector package. */
export type ConnectorFactory = (
  options: Readonly<Record<string, unknown>>,
  context: ConnectorFactoryContext,
) => Connector | Promise<Connector>;

/**
 * The light epoch probe a connector package may offer beside its factory, as the export
 * `probeEpoch` of its `./probe` subpath (e.g. `@ragfresh/connector-lancedb/probe`): the store's
 * published epoch read without loading the store's driver, for commands that need only that
 * number (`ragfresh status`'s STORE_LOST check). That entry point imports no native library and
 * no driver. It answers the epoch `readEpoch()` of an opened connector would answer, or
 * `undefined` when it cannot tell cheaply and for certain (the caller then opens the connector
 * and reads it); it must never answer an epoch the store does not hold. It gets the config's
 * options as written (the factory's defaults apply; options the factory would refuse:
 * `undefined`, so the factory's own error is what the user sees).
 */
export type EpochProbe = (
  options: Readonly<Record<string, unknown>>,
  target: EpochProbeTarget,
) => number | undefined | Promise<number | undefined>;

/** Where the probe looks: the factory's context, and the namespace the index lives in. */
export interface EpochProbeTarget extends ConnectorFactoryContext {
  /** The `forNamespace` suffix the state's space record names (a migration moved the index). */
  readonly namespace?: string;
}

/** The package subpath of the light epoch probe, and the function it exports. */
export const EPOCH_PROBE_SUBPATH = 'probe';
export const EPOCH_PROBE_EXPORT = 'probeEpoch';

/**
 * The type an option must have: JSON kinds, `integer` (a safe integer), or `any` (code configs
 * only, e.g. an instance). A trailing `!` marks it required.
 */
export type ConnectorOptionKind =
  | 'string'
  | 'number'
  | 'integer'
  | 'boolean'
  | 'object'
  | 'any'
  | `${'string' | 'number' | 'integer' | 'boolean' | 'object' | 'any'}!`;

const EXPECTED: Record<string, readonly [string, string]> = {
  string: ['a string', 'quote it'],
  number: ['a number', 'write a number'],
  integer: ['an integer', 'write a whole number'],
  boolean: ['a boolean', 'write true or false'],
  object: ['an object', 'write { … }'],
};

function kindOk(kind: string, value: unknown): boolean {
  switch (kind) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isSafeInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      return true;
  }
}

function shown(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value) ?? String(value)}`;
}

function configError(store: string, key: string, problem: string): RagfreshError {
  return new RagfreshError('INVALID_CONFIG', `config connector.${key}: ${problem}`, {
    scope: 'config',
    details: { field: `connector.${key}`, store },
  });
}

/**
 * Checks a config's connector options against the keys a store accepts, before any default is
 * applied: an unknown key (with a suggestion), a missing required key or a value of the wrong
 * type is one INVALID_CONFIG line naming `connector.<key>`. Returns the options, typed.
 */
export function checkConnectorOptions<T extends object>(
  store: string,
  options: Readonly<Record<string, unknown>>,
  spec: { readonly [K in keyof T]-?: ConnectorOptionKind },
): Partial<T> {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw configError(store, '(options)', 'expected an object of options; write { … }.');
  const known = Object.keys(spec);
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = suggestKey(key, known);
    throw configError(
      store,
      key,
      near === undefined
        ? `is not a known ${store} option; remove it (known here: ${known.join(', ')}).`
        : `is not a known ${store} option; did you mean connector.${near}?`,
    );
  }
  for (const [key, declared] of Object.entries(spec) as [string, ConnectorOptionKind][]) {
    const required = declared.endsWith('!');
    const kind = required ? declared.slice(0, -1) : declared;
    const value = options[key];
    if (value === undefined) {
      if (required) throw configError(store, key, `is missing; set it (${store} needs it).`);
      continue;
    }
    if (!kindOk(kind, value)) {
      const [want, fix] = EXPECTED[kind] ?? [kind, 'fix the value'];
      throw configError(store, key, `expected ${want}, got ${shown(value)}; ${fix}.`);
    }
  }
  return options as Partial<T>;
}

/** A path option as the user meant it: a relative path is relative to the config's folder. */
export function resolveOptionPath(context: ConnectorFactoryContext, path: string): string {
  return isAbsolute(path) ? path : resolve(context.baseDir, path);
}

/**
 * Builds the connector and words the constructor's own option checks (a table name's form, a
 * URL, a range) like the others: an INVALID_CONFIG whose message starts with an option name
 * becomes `config connector.<key>: <message>`, any other `config connector: <message>`.
 */
export function buildConnector<C>(store: string, keys: readonly string[], build: () => C): C {
  try {
    return build();
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown } | null;
    if (e?.code !== 'INVALID_CONFIG' || typeof e.message !== 'string') throw err;
    const text = e.message.replace(/^\[ragfresh\] \[[^\]]+\] /, '');
    if (text.startsWith('config ')) throw err;
    const key = keys.find((k) => new RegExp(`^${k}\\b`).test(text));
    throw new RagfreshError(
      'INVALID_CONFIG',
      `config connector${key === undefined ? '' : `.${key}`}: ${text}`,
      {
        scope: 'config',
        cause: err,
        details: { field: `connector${key === undefined ? '' : `.${key}`}`, store },
      },
    );
  }
}
