import { Pinecone } from '@pinecone-database/pinecone';
import { runSuite } from '@ragfresh/conformance';
import type { JsonValue, StoreFixture } from '@ragfresh/core';
import { startPineconeEmulator } from '@ragfresh/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RecordingProxy,
  startRecordingProxy,
} from '../../../emulators/test/spec/recording-proxy.js';
import { createPineconeConnector, type PineconeConnectorOptions } from '../src/index.js';
import { pineconeViolations } from './pinecone-models.js';

const INDEX = 'ragfresh-conformance';
let controlProxy: RecordingProxy;
let dataProxy: RecordingProxy;
let emulatorUrl: string;
let stopEmulator: () => Promise<void>;
const bare = (url: string) => url.replace(/^https?:\/\//, '');

beforeAll(async () => {
  const emu = await startPineconeEmulator({ lags: { fetchMs: 20, listMs: 30, queryMs: 80 } });
  const dataUrl = await emu.createIndex(INDEX, 12);
  emulatorUrl = emu.url;
  controlProxy = await startRecordingProxy(emu.url);
  dataProxy = await startRecordingProxy(dataUrl);
  stopEmulator = () => emu.close();
});
afterAll(async () => {
  await controlProxy.close();
  await dataProxy.close();
  await stopEmulator();
});

const throughProxies: StoreFixture = {
  store: 'pinecone',
  async start() {
    const options = (ns: string): PineconeConnectorOptions => ({
      apiKey: `spec-${new URL(emulatorUrl).port}`,
      controllerHostUrl: controlProxy.url,
      indexName: INDEX,
      namespace: ns,
      // The control plane reports the index's own address: route data-plane calls via the proxy.
      hostAliases: { [bare(dataProxyUrl())]: bare(dataProxy.url) },
      maxLagMs: 3_000,
      timeoutMs: 5_000,
    });
    return {
      kind: 'emulator',
      description: `ragfresh Pinecone emulator behind recording proxies (${controlProxy.url}, ${dataProxy.url})`,
      async createConnector(ns) {
        return createPineconeConnector(options(ns));
      },
      connectorSpec(ns) {
        return {
          module: new URL('../dist/index.js', import.meta.url).href,
          exportName: 'createPineconeConnector',
          options: options(ns) as unknown as { [key: string]: JsonValue },
        };
      },
      async stop() {},
    };
  },
};

let dataTarget = '';
const dataProxyUrl = () => dataTarget;

describe("spec conformance: the suite's Pinecone traffic against the models in @pinecone-database/pinecone", () => {
  it('every request and every successful answer conforms', async () => {
    const pc = new Pinecone({ apiKey: 'spec', controllerHostUrl: controlProxy.url, maxRetries: 0 });
    dataTarget = (await pc.describeIndex(INDEX)).host;
    // The v9 create body (API 2026-07) goes through the control-plane models too.
    await pc.createIndex({
      name: 'spec-created',
      dimension: 12,
      metric: 'cosine',
      spec: { serverless: { cloud: 'aws', region: 'us-east-1' } },
    });
    const report = await runSuite({
      fixture: throughProxies,
      cases: [
        'sentinel-empty',
        'staged-invisible',
        'restage-idempotent',
        'verify-within-lag',
        'shorter-replacement',
        'retire-after-grace',
        'delete-tombstone',
        'epoch-race',
        'metadata-roundtrip',
        'list-by-document-version',
        'crash-at-promoting',
      ],
    });
    expect(report.cases.filter((c) => c.status === 'failed').map((c) => c.failures)).toEqual([]);
    const exchanges = [...controlProxy.exchanges, ...dataProxy.exchanges];
    expect(exchanges.length).toBeGreaterThan(200);
    const routes = new Set(
      exchanges.map((x) => `${x.method} ${x.path.replace(/\/indexes\/.+/, '/indexes/{name}')}`),
    );
    for (const r of [
      'POST /vectors/upsert',
      'POST /vectors/update',
      'POST /vectors/delete',
      'POST /query',
      'GET /vectors/fetch',
      'GET /vectors/list',
      'POST /indexes',
      'GET /indexes/{name}',
    ])
      expect(routes).toContain(r);
    expect(exchanges.flatMap(pineconeViolations).slice(0, 20)).toEqual([]);
  }, 600_000);

  it('fails loudly on a malformed request', async () => {
    const before = dataProxy.exchanges.length;
    const post = (path: string, body: unknown) =>
      fetch(`${dataProxy.url}${path}`, {
        method: 'POST',
        headers: { 'Api-Key': 'x', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    await post('/query', { namespace: 'x', vector: [1], topk: 3 });
    await post('/vectors/update', { id: 'a', namespace: 'x', metadata: { a: 1 } });
    const found = dataProxy.exchanges.slice(before).flatMap(pineconeViolations).join('\n');
    expect(found).toMatch(/POST \/query request: a required field of QueryRequest is missing/);
    expect(found).toMatch(/QueryRequest\.topk: unknown field/);
    expect(found).toMatch(/UpdateRequest\.metadata: unknown field/);
  });
});
