import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type Connector,
  type ConnectorFactory,
  type ConnectorFactoryContext,
  connectorPackages,
  EPOCH_PROBE_EXPORT,
  EPOCH_PROBE_SUBPATH,
  type EpochProbe,
  type EpochProbeTarget,
  RagfreshError,
  resolveFrom,
} from '@ragfresh/core';

// The open connector registry. `connector: { store: 'x', ...options }` names a package, not an
// entry of a list: `@ragfresh/connector-x`, then `ragfresh-connector-x`, resolved by an
// ordinary ESM import from the user's project (the config file's folder), never from the
// CLI's own dependencies or a package manager's hidden folder. The package's factory export:
//   export function createConnector(options, context: ConnectorFactoryContext): Connector | Promise<Connector>
// (packages written before the convention are found by `create<Store>Connector`, the store name
// in any casing, e.g. `createPgVectorConnector`). `connector:` may also be a Connector instance
// or such a factory, in a `.ts` / `.mjs` config. The package owns its defaults (LanceDB's files
// under `<dataDir>/lancedb`, table and collection names) and the checks of its options (one
// INVALID_CONFIG line naming `connector.<key>`); see docs/connectors/authoring.md.

// `ConnectorFactoryContext` and `ConnectorFactory` live in @ragfresh/core, so a connector package
// depends on nothing but core; they are re-exported here for configs and older imports.
export type { ConnectorFactory, ConnectorFactoryContext } from '@ragfresh/core';

/** `connector:` as a function in a `.ts` / `.mjs` config. */
export type ConfigConnectorFactory = (
  context: ConnectorFactoryContext,
) => Connector | Promise<Connector>;

/** `{ store, ...options }` of a config. */
export interface ConnectorConfig {
  readonly store: string;
  readonly [option: string]: unknown;
}

/** The resolved `connector:`: a package's options, or (`provided`) what the config passed as code. */
export type ResolvedConnector = ConnectorConfig & {
  readonly provided?: Connector | ConfigConnectorFactory;
};

/** The documented factory export of a connector package. */
export const CONNECTOR_FACTORY_EXPORT = 'createConnector';

/** `store` as a package-name segment: lower-case letters, digits, `-`, `.`, `_`. */
export const STORE_NAME = /^[a-z0-9][a-z0-9._-]*$/;

/** The packages `store: 'x'` may name, in the order they are tried (core's convention). */
export { connectorPackages } from '@ragfresh/core';

export function isConnector(value: unknown): value is Connector {
  const v = value as Partial<Connector> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.capabilities === 'object' &&
    typeof v.open === 'function' &&
    typeof v.query === 'function'
  );
}

function configError(message: string, cause?: unknown): RagfreshError {
  return new RagfreshError('INVALID_CONFIG', message, {
    scope: 'config',
    ...(cause === undefined ? {} : { cause }),
  });
}

function factoryOf(mod: Record<string, unknown>, store: string): ConnectorFactory | undefined {
  const named = mod[CONNECTOR_FACTORY_EXPORT];
  if (typeof named === 'function') return named as ConnectorFactory;
  const legacy = `create${store.replace(/[^a-z0-9]/g, '')}connector`;
  const key = Object.keys(mod).find((k) => k.toLowerCase() === legacy);
  return key !== undefined && typeof mod[key] === 'function'
    ? (mod[key] as ConnectorFactory)
    : undefined;
}

/**
 * Finds the package for `store` without importing it: from `baseDir` (the user's project)
 * first, then from this CLI's own install, whose dependencies include the embedded default
 * (LanceDB) and the reference store (memory), so a config in an empty folder works with
 * `npx ragfresh`.
 */
export function findConnectorPackage(
  store: string,
  baseDir: string,
): { pkg: string; url: string; parent: string } {
  const parents = [pathToFileURL(join(baseDir, 'package.json')).href, import.meta.url];
  const tried = connectorPackages(store);
  for (const pkg of tried)
    for (const parent of parents) {
      try {
        return { pkg, url: resolveFrom(pkg, parent), parent };
      } catch (err) {
        if (/Cannot find package/.test((err as Error).message)) continue;
        throw configError(
          `config connector.store: ${pkg} is installed but does not load (${(err as Error).message.split('\n')[0]}); build or reinstall it.`,
          err,
        );
      }
    }
  throw configError(
    `config connector.store: "${store}" needs the package ${tried[0]} (or ${tried[1]}), not found from ${baseDir}; install it there (npm i ${tried[0]}).`,
  );
}

/** Imports the package for `store` and returns its factory. */
export async function loadConnectorFactory(
  store: string,
  baseDir: string,
): Promise<{ factory: ConnectorFactory; pkg: string }> {
  const { pkg, url } = findConnectorPackage(store, baseDir);
  const mod = (await import(url)) as Record<string, unknown>;
  const factory = factoryOf(mod, store);
  if (factory === undefined)
    throw configError(
      `config connector.store: ${pkg} exports no ${CONNECTOR_FACTORY_EXPORT}(options, context); it is not a ragfresh connector package.`,
    );
  return { factory, pkg };
}

/**
 * `connector:` of a config as written (the store defaults to `lancedb`); the package is found
 * (not loaded) here. Option defaults and option checks belong to the package's factory, applied
 * when the connector is built: the CLI names no store's options.
 */
export function resolveConnectorSetting(
  setting: unknown,
  context: ConnectorFactoryContext,
): ResolvedConnector {
  if (isConnector(setting)) return { store: setting.capabilities.store, provided: setting };
  if (typeof setting === 'function')
    return { store: 'factory', provided: setting as ConfigConnectorFactory };
  const given = (setting ?? { store: 'lancedb' }) as ConnectorConfig;
  findConnectorPackage(given.store, context.baseDir);
  return given;
}

/** Builds the connector a resolved config names. */
export async function createConnector(
  connector: ResolvedConnector,
  context: ConnectorFactoryContext,
): Promise<Connector> {
  const { provided, store, ...options } = connector;
  if (provided !== undefined) {
    const made = isConnector(provided) ? provided : await provided(context);
    if (!isConnector(made))
      throw configError(
        'config connector: the factory did not return a Connector; return an instance of a ragfresh connector.',
      );
    return made;
  }
  const { factory, pkg } = await loadConnectorFactory(store, context.baseDir);
  const made = await factory(options, context);
  if (!isConnector(made))
    throw configError(
      `config connector.store: ${pkg}'s factory did not return a Connector; fix or update ${pkg}.`,
    );
  return made;
}

/**
 * The store's published epoch from the package's light probe (`<package>/probe`, core's
 * `EpochProbe`), or undefined: no such entry point (a connector in code, a package without one),
 * it failed to load or threw, or it cannot tell cheaply. The caller then opens the connector.
 */
export async function probeEpoch(
  connector: ResolvedConnector,
  target: EpochProbeTarget,
): Promise<number | undefined> {
  const { provided, store, ...options } = connector;
  if (provided !== undefined) return undefined;
  try {
    const { pkg, parent } = findConnectorPackage(store, target.baseDir);
    const mod = (await import(resolveFrom(`${pkg}/${EPOCH_PROBE_SUBPATH}`, parent))) as Record<
      string,
      unknown
    >;
    const probe = mod[EPOCH_PROBE_EXPORT];
    if (typeof probe !== 'function') return undefined;
    const epoch = await (probe as EpochProbe)(options, target);
    return Number.isSafeInteger(epoch) && (epoch as number) >= 0 ? epoch : undefined;
  } catch {
    // Not exported, not loadable, or the probe failed: the full read reports what is wrong.
    return undefined;
  }
}
