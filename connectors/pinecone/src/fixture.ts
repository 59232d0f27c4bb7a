import {
  containerEngineAvailable,
  startContainer,
  startPineconeEmulator,
} from '@ragfresh/conformance/emulators';
import type { JsonValue, StoreFixture, StoreTarget } from '@ragfresh/core';
import { createPineconeConnector, type PineconeConnectorOptions } from './connector.js';

/**
 * Image of the container target. Pinecone Local serves the control plane on 5080 and the
 * indexes it creates on 5081-5090:
 * `docker run -d -p 5080-5090:5080-5090 -e PORT=5080 -e PINECONE_HOST=localhost ghcr.io/pinecone-io/pinecone-local:latest`
 */
export const PINECONE_LOCAL_IMAGE = 'ghcr.io/pinecone-io/pinecone-local:latest';

/** One index per case namespace (index names: lower-case letters, digits, '-', <= 45 chars). */
export function indexNameFor(ns: string): string {
  const base = ns
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  let h = 0;
  for (const ch of ns) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0;
  return `rf-${base.slice(0, 32)}-${h.toString(36)}`
    .replace(/-+/g, '-')
    .slice(0, 45)
    .replace(/-+$/g, '');
}

function target(
  kind: StoreTarget['kind'],
  description: string,
  base: Omit<PineconeConnectorOptions, 'namespace' | 'indexName' | 'host'>,
  stop: () => Promise<void>,
  faults?: StoreTarget['faults'],
): StoreTarget {
  const options = (ns: string): PineconeConnectorOptions => ({
    ...base,
    indexName: indexNameFor(ns),
    namespace: 'ragfresh',
  });
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
 * wire-level emulator (the only target that injects faults). Each case gets its own index,
 * created on open with the case's dimensions; chunks live in namespace `ragfresh`.
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
      return target(
        'container',
        `${PINECONE_LOCAL_IMAGE} container ${c.id.slice(0, 12)} at ${url}`,
        { apiKey: 'pclocal', controllerHostUrl: url, createIndex: CREATE },
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
