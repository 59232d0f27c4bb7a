import type { JsonValue, StoreFixture, StoreTarget } from '@ragfresh/core';
import {
  containerEngineAvailable,
  startContainer,
  startPineconeEmulator,
} from '@ragfresh/emulators';
import { createPineconeConnector, type PineconeConnectorOptions } from './connector.js';

/**
 * Image of the container target. Pinecone Local serves the control plane on 5080 and the
 * indexes it creates on 5081-5090:
 * `docker run -d -p 5080-5090:5080-5090 -e PORT=5080 -e PINECONE_HOST=localhost ghcr.io/pinecone-io/pinecone-local:latest`
 */
export const PINECONE_LOCAL_IMAGE = 'ghcr.io/pinecone-io/pinecone-local:latest';

/**
 * Index every case of a run shares (the suite uses one vector size); each case gets its own
 * namespace. Override with RAGFRESH_PINECONE_INDEX when running against Pinecone itself.
 */
export const CONFORMANCE_INDEX = 'ragfresh-conformance';

function target(
  kind: StoreTarget['kind'],
  description: string,
  base: Omit<PineconeConnectorOptions, 'namespace' | 'indexName' | 'host'>,
  stop: () => Promise<void>,
  faults?: StoreTarget['faults'],
): StoreTarget {
  const indexName = process.env.RAGFRESH_PINECONE_INDEX ?? CONFORMANCE_INDEX;
  const options = (ns: string): PineconeConnectorOptions => ({ ...base, indexName, namespace: ns });
  return {
    kind,
    description,
    ...(faults === undefined ? {} : { faults }),
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
    stop,
  };
}

const CREATE = { cloud: 'aws', region: 'us-east-1' } as const;

/**
 * Pinecone targets, in order: `--url` (a Pinecone Local control plane, or Pinecone itself with
 * PINECONE_API_KEY set), a Pinecone Local container when `docker info` succeeds, else the
 * wire-level emulator (the only target that injects faults). All cases share one index,
 * created on the first open with the suite's dimensions; each case uses its own namespace.
 */
export const fixture: StoreFixture = {
  store: 'pinecone',
  async start(options = {}): Promise<StoreTarget> {
    if (options.url !== undefined) {
      const apiKey = process.env.PINECONE_API_KEY ?? 'pclocal';
      return target(
        'url',
        `Pinecone control plane at ${options.url} (given with --url)`,
        { apiKey, controllerHostUrl: options.url, createIndex: CREATE },
        async () => {},
      );
    }
    if (await containerEngineAvailable()) {
      const ports = Array.from({ length: 11 }, (_, i) => 5080 + i);
      const c = await startContainer({
        image: PINECONE_LOCAL_IMAGE,
        ports,
        env: { PORT: '5080', PINECONE_HOST: 'localhost' },
        ready: async (p) =>
          (
            await fetch(`http://127.0.0.1:${p.get(5080)}/indexes`, {
              headers: { 'Api-Key': 'pclocal' },
            })
          ).ok,
      });
      const url = `http://127.0.0.1:${c.ports.get(5080)}`;
      // Index hosts are reported as localhost:508x; map them to the published host ports.
      const hostAliases: Record<string, string> = {};
      for (const [inner, outer] of c.ports)
        hostAliases[`localhost:${inner}`] = `127.0.0.1:${outer}`;
      return target(
        'container',
        `${PINECONE_LOCAL_IMAGE} container ${c.id.slice(0, 12)} at ${url}`,
        { apiKey: 'pclocal', controllerHostUrl: url, createIndex: CREATE, hostAliases },
        c.stop,
      );
    }
    const emulator = await startPineconeEmulator();
    return target(
      'emulator',
      `ragfresh Pinecone wire emulator at ${emulator.url} (no Pinecone engine; see docs/connectors/pinecone.md)`,
      {
        // The client caches index hosts per api key + index name: one key per emulator.
        apiKey: `emulator-${new URL(emulator.url).port}`,
        controllerHostUrl: emulator.url,
        createIndex: CREATE,
        // Local loopback: a short timeout turns an injected hang into a quick retry.
        maxLagMs: 3_000,
        timeoutMs: 1_000,
        retry: { attempts: 10, baseDelayMs: 20, maxDelayMs: 500 },
      },
      () => emulator.close(),
      emulator.faults,
    );
  },
};
