import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { connectorPackages, errorMessage, resolveFrom } from '@ragfresh/core';

/** Where `--store` found the fixture module, and the package that holds it (for the report). */
export interface FixtureModule {
  readonly url: string;
  /** What was resolved, for messages: `@ragfresh/connector-x/fixture`, a path… */
  readonly specifier: string;
  /** The connector package's name and version, when the module is inside one. */
  readonly package?: { readonly name: string; readonly version: string };
}

/** A `--store` problem the user fixes (exit 2). */
export class FixtureNotFound extends Error {}

/** A path rather than a store name: `.`, `./x`, `../x`, `/abs/x`. */
export function isStorePath(store: string): boolean {
  return store === '.' || store === '..' || /^\.\.?\//.test(store) || isAbsolute(store);
}

/** The nearest package.json at or above `file`'s folder, with a name and version. */
export function packageOf(file: string): FixtureModule['package'] {
  for (let at = dirname(file); ; at = dirname(at)) {
    const path = join(at, 'package.json');
    if (existsSync(path)) {
      const pkg = JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown; version?: unknown };
      return typeof pkg.name === 'string' && typeof pkg.version === 'string'
        ? { name: pkg.name, version: pkg.version }
        : undefined;
    }
    if (dirname(at) === at) return undefined;
  }
}

function found(url: string, specifier: string): FixtureModule {
  const pkg = url.startsWith('file:') ? packageOf(fileURLToPath(url)) : undefined;
  return { url, specifier, ...(pkg === undefined ? {} : { package: pkg }) };
}

function notLoadable(specifier: string, from: string, err: unknown): FixtureNotFound {
  return new FixtureNotFound(
    `${specifier} does not resolve to a file from ${from} (${errorMessage(err).split('\n')[0]}); build the connector package first.`,
  );
}

/**
 * A connector package folder (its `./fixture` export, resolved by the package's own name as a
 * self-reference, so `exports` and conditions apply) or a fixture file.
 */
function fromPath(store: string, cwd: string): FixtureModule {
  const path = resolve(cwd, store);
  if (!existsSync(path))
    throw new FixtureNotFound(
      `--store ${store}: ${path} does not exist; give a connector package folder or its built fixture file.`,
    );
  if (statSync(path).isFile()) return found(pathToFileURL(path).href, path);
  const manifest = join(path, 'package.json');
  const name = existsSync(manifest)
    ? (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name
    : undefined;
  if (typeof name !== 'string')
    throw new FixtureNotFound(
      `--store ${store}: ${path} has no package.json with a name; give a connector package folder (exports "./fixture") or its built fixture file.`,
    );
  const specifier = `${name}/fixture`;
  try {
    return found(resolveFrom(specifier, pathToFileURL(manifest).href), specifier);
  } catch (err) {
    throw notLoadable(specifier, path, err);
  }
}

/**
 * Resolves `--store`: a store name is `@ragfresh/connector-<store>/fixture`, then
 * `ragfresh-connector-<store>/fixture`, each with an ordinary ESM import from `cwd` (as the
 * user's project sees it, never NODE_PATH); a path is a package folder or a fixture file.
 */
export function resolveFixtureModule(store: string, cwd: string): FixtureModule {
  if (isStorePath(store)) return fromPath(store, cwd);
  const parent = pathToFileURL(join(cwd, 'package.json')).href;
  const tried = connectorPackages(store).map((pkg) => `${pkg}/fixture`);
  for (const specifier of tried) {
    try {
      return found(resolveFrom(specifier, parent), specifier);
    } catch (err) {
      if (/Cannot find package/.test(errorMessage(err))) continue;
      throw notLoadable(specifier, cwd, err);
    }
  }
  const [scoped, plain] = connectorPackages(store);
  throw new FixtureNotFound(
    `cannot resolve ${tried[0]} (nor ${tried[1]}) from ${cwd}; install ${scoped} or ${plain} in this project (npm i -D ${plain}), or give the package's folder: --store ./path/to/connector.`,
  );
}
