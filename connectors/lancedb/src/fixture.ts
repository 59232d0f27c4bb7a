import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoreFixture, StoreTarget } from '@ragfresh/core';
import { createLanceDbConnector } from './index.js';

/** LanceDB table names allow letters, digits, `_`, `-`, `.`. */
export function tableForNamespace(namespace: string): string {
  return `rf_${namespace.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 180);
}

/** Embedded target: one LanceDB directory in a temp dir, one table per namespace. */
export const fixture: StoreFixture = {
  store: 'lancedb',
  async start(): Promise<StoreTarget> {
    const path = mkdtempSync(join(tmpdir(), 'ragfresh-lancedb-'));
    const spec = (ns: string) => ({ path, table: tableForNamespace(ns) });
    return {
      kind: 'embedded',
      description: `embedded LanceDB (@lancedb/lancedb 0.31.0) in ${path}`,
      async createConnector(ns) {
        return createLanceDbConnector(spec(ns));
      },
      connectorSpec(ns) {
        return {
          module: new URL('../dist/index.js', import.meta.url).href,
          exportName: 'createLanceDbConnector',
          options: spec(ns),
        };
      },
      async stop() {
        rmSync(path, { recursive: true, force: true });
      },
    };
  },
};
