import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoreFixture, StoreTarget } from '@ragfresh/core';
import { createMemoryConnector } from './index.js';

/** Embedded target: each namespace is one JSON file in a temp directory (shared with child processes). */
export const fixture: StoreFixture = {
  store: 'memory',
  async start(): Promise<StoreTarget> {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-memory-'));
    const path = (ns: string) => join(dir, `${ns.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
    return {
      kind: 'embedded',
      description: `in-process memory connector, persisted under ${dir}`,
      async createConnector(ns) {
        return createMemoryConnector({ persistPath: path(ns) });
      },
      connectorSpec(ns) {
        return {
          module: new URL('../dist/index.js', import.meta.url).href,
          exportName: 'createMemoryConnector',
          options: { persistPath: path(ns) },
        };
      },
      async stop() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};
