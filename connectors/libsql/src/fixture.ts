import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoreFixture, StoreTarget } from '@ragfresh/core';
import { createLibSqlConnector, type LibSqlConnectorOptions } from './index.js';

/** Table names: `rf_` + the namespace with anything but letters, digits and `_` replaced. */
export function tableForNamespace(namespace: string): string {
  return `rf_${namespace.replace(/[^A-Za-z0-9_]/g, '_')}`.slice(0, 48);
}

/**
 * Embedded target: one libSQL database file in a temp dir, one table per namespace.
 * `start({ url })` takes another `file:` URL; `options.search: 'approximate'` is not a start
 * option — build a fixture with `libSqlFixture({ search: 'approximate' })` for that.
 */
export function libSqlFixture(
  extra: Pick<LibSqlConnectorOptions, 'search' | 'vectorIndex'> = {},
): StoreFixture {
  return {
    store: 'libsql',
    async start(options): Promise<StoreTarget> {
      const dir =
        options?.url === undefined ? mkdtempSync(join(tmpdir(), 'ragfresh-libsql-')) : undefined;
      const url = options?.url ?? `file:${join(dir as string, 'index.db')}`;
      const spec = (ns: string): LibSqlConnectorOptions => ({
        url,
        table: tableForNamespace(ns),
        ...extra,
      });
      const search = extra.search ?? 'exact';
      return {
        kind: options?.url === undefined ? 'embedded' : 'url',
        description: `embedded libSQL (@libsql/client 0.17, libsql 0.5, SQLite 3.45.1) at ${url}, ${search} search`,
        async createConnector(ns) {
          return createLibSqlConnector(spec(ns));
        },
        connectorSpec(ns) {
          return {
            // Resolves to dist/index.js both from src/ (under vitest) and from dist/.
            module: new URL('../dist/index.js', import.meta.url).href,
            exportName: 'createLibSqlConnector',
            options: spec(ns),
          };
        },
        async stop() {
          if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

export const fixture: StoreFixture = libSqlFixture();
