import { runSuite } from '@ragfresh/conformance';
import type { JsonValue, StoreFixture } from '@ragfresh/core';
import { CLOUD_STRICT_MODE, startQdrantEmulator } from '@ragfresh/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QdrantOpenApi } from '../../../emulators/test/spec/qdrant-openapi.js';
import {
  type RecordingProxy,
  startRecordingProxy,
} from '../../../emulators/test/spec/recording-proxy.js';
import { createQdrantConnector, type QdrantConnectorOptions } from '../src/index.js';

const spec = new QdrantOpenApi();
let proxy: RecordingProxy;
let stopEmulator: () => Promise<void>;

beforeAll(async () => {
  const emu = await startQdrantEmulator({ strictMode: CLOUD_STRICT_MODE });
  proxy = await startRecordingProxy(emu.url);
  stopEmulator = () => emu.close();
});
afterAll(async () => {
  await proxy.close();
  await stopEmulator();
});

/** The connector pointed at the recording proxy, for the suite and its crash children. */
const throughProxy: StoreFixture = {
  store: 'qdrant',
  async start() {
    const options = (ns: string): QdrantConnectorOptions => ({
      url: proxy.url,
      collection: `rf_${ns}`,
      timeoutMs: 5_000,
    });
    return {
      kind: 'emulator',
      description: `ragfresh Qdrant emulator (strict mode) behind a recording proxy at ${proxy.url}`,
      async createConnector(ns) {
        return createQdrantConnector(options(ns));
      },
      connectorSpec(ns) {
        return {
          module: new URL('../dist/index.js', import.meta.url).href,
          exportName: 'createQdrantConnector',
          options: options(ns) as unknown as { [key: string]: JsonValue },
        };
      },
      async stop() {},
    };
  },
};

describe("spec conformance: the suite's Qdrant traffic against Qdrant's OpenAPI (v1.19.0)", () => {
  it('every request the suite sends and every emulator answer conforms', async () => {
    const report = await runSuite({ fixture: throughProxy });
    expect(report.counts.failed).toBe(0);
    expect(proxy.exchanges.length).toBeGreaterThan(500);
    const violations = proxy.exchanges.flatMap((x) => spec.violations(x));
    expect(violations.slice(0, 20)).toEqual([]);
    // Every operation the connector uses was seen and checked.
    const seen = new Set(
      proxy.exchanges.map((x) => `${x.method} ${spec.operation(x.method, x.path)?.template}`),
    );
    for (const op of [
      'GET /',
      'PUT /collections/{collection_name}/points',
      'POST /collections/{collection_name}/points/payload',
      'POST /collections/{collection_name}/points/delete',
      'POST /collections/{collection_name}/points/scroll',
      'POST /collections/{collection_name}/points/count',
      'POST /collections/{collection_name}/points/query',
      'PUT /collections/{collection_name}/index',
    ])
      expect(seen).toContain(op);
  }, 600_000);

  it('fails loudly on a malformed request', async () => {
    const before = proxy.exchanges.length;
    await fetch(`${proxy.url}/collections/anything/points?wait=yes&waitt=true`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ points: 'not a list' }),
    });
    await fetch(`${proxy.url}/collections/anything/points/payload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ points: [1], payload: 'not an object' }),
    });
    const violations = proxy.exchanges.slice(before).flatMap((x) => spec.violations(x));
    expect(violations.join('\n')).toMatch(/\?wait: /);
    expect(violations.join('\n')).toMatch(/query parameter waitt is not in PUT/);
    expect(violations.join('\n')).toMatch(/PUT \/collections\/anything\/points request /);
    expect(violations.join('\n')).toMatch(/points\/payload request /);
  });
});
