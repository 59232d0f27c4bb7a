import { type JsonValue, RagfreshError, type StoreFixture, type StoreTarget } from '@ragfresh/core';
// An optional peer: only the container and emulator targets load it, at start.
import type { PineconeEmulatorOptions } from '@ragfresh/emulators';
import { createPineconeConnector, type PineconeConnectorOptions } from './connector.js';
import { createLocalIndex as createLocal } from './control-plane.js';

/** The optional peer, or one line saying how to get it. */
const emulators = () =>
  import('@ragfresh/emulators').catch((err: unknown) => {
    if (!String(err).includes("package '@ragfresh/emulators'")) throw err;
    throw new RagfreshError(
      'NOT_SUPPORTED',
      '@ragfresh/connector-pinecone/fixture starts Pinecone Local or the emulator with @ragfresh/emulators, which is not installed; install it (npm install -D @ragfresh/emulators) or give a control plane with --url.',
    );
  });

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

/** Vector size of every conformance case (`DIMENSIONS` of @ragfresh/conformance). */
const SUITE_DIMENSIONS = 12;

const indexName = () => process.env.RAGFRESH_PINECONE_INDEX ?? CONFORMANCE_INDEX;

function target(
  kind: StoreTarget['kind'],
  description: string,
  base: Omit<PineconeConnectorOptions, 'namespace' | 'indexName' | 'host'>,
  stop: () => Promise<void>,
  faults?: StoreTarget['faults'],
): StoreTarget {
  const name = indexName();
  const options = (ns: string): PineconeConnectorOptions => ({
    ...base,
    indexName: name,
    namespace: ns,
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
 * Creates the conformance index on Pinecone Local with the API 2025-01 body it speaks (the v9
 * client sends the 2026-07 schema-only body, which Pinecone Local refuses). 409 = it exists.
 */
export function createLocalIndex(
  controllerUrl: string,
  name: string,
  dimension: number,
  apiKey = 'pclocal',
): Promise<void> {
  return createLocal(controllerUrl, apiKey, { name, dimension });
}

/**
 * Pinecone targets, in order: `--url` (a Pinecone Local control plane, or Pinecone itself with
 * PINECONE_API_KEY set), a Pinecone Local container when `docker info` succeeds, else the
 * wire-level emulator (the only target that injects faults) started with `emulator` options.
 * All cases share one index, created on the first open with the suite's dimensions (Pinecone
 * Local: pre-created with the 2025-01 body; see `createLocalIndex`); each case uses its own
 * namespace. Pinecone Local sends no LSN headers, so its connectors declare
 * `epochClaim: 'lease-only'`.
 */
export function pineconeFixture(emulator: PineconeEmulatorOptions = {}): StoreFixture {
  return {
    store: 'pinecone',
    async start(options = {}): Promise<StoreTarget> {
      if (options.url !== undefined) {
        const apiKey = process.env.PINECONE_API_KEY ?? 'pclocal';
        // A plain-HTTP control plane is Pinecone Local (Pinecone itself is HTTPS only).
        const local = options.url.startsWith('http://');
        return target(
          'url',
          `Pinecone ${local ? 'Local ' : ''}control plane at ${options.url} (given with --url)`,
          {
            apiKey,
            controllerHostUrl: options.url,
            ...(local ? { epochClaim: 'lease-only' as const } : { createIndex: CREATE }),
          },
          async () => {},
        );
      }
      const { containerEngineAvailable, startContainer, startPineconeEmulator } = await emulators();
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
        await createLocalIndex(url, indexName(), SUITE_DIMENSIONS);
        // Index hosts are reported as localhost:508x; map them to the published host ports.
        const hostAliases: Record<string, string> = {};
        for (const [inner, outer] of c.ports)
          hostAliases[`localhost:${inner}`] = `127.0.0.1:${outer}`;
        return target(
          'container',
          `${PINECONE_LOCAL_IMAGE} container ${c.id.slice(0, 12)} at ${url}`,
          { apiKey: 'pclocal', controllerHostUrl: url, hostAliases, epochClaim: 'lease-only' },
          c.stop,
        );
      }
      const running = await startPineconeEmulator(emulator);
      const local = emulator.mode === 'local-2025-01';
      if (local) await createLocalIndex(running.url, indexName(), SUITE_DIMENSIONS, 'x');
      const lags =
        typeof emulator.lags === 'object'
          ? `fetch ${emulator.lags.fetchMs ?? 0} / list ${emulator.lags.listMs ?? 0} / query ${emulator.lags.queryMs ?? 0} ms`
          : 'lag from faults';
      return target(
        'emulator',
        `ragfresh Pinecone wire emulator at ${running.url} (${local ? 'Pinecone Local 2025-01 mode' : `serverless, ${lags}`}; no Pinecone engine, see docs/connectors/pinecone.md)`,
        {
          // The client caches index hosts per api key + index name: one key per emulator.
          apiKey: `emulator-${new URL(running.url).port}`,
          controllerHostUrl: running.url,
          ...(local ? { epochClaim: 'lease-only' as const } : { createIndex: CREATE }),
          // Local loopback: a short timeout turns an injected hang into a quick retry.
          maxLagMs: 3_000,
          timeoutMs: 1_000,
          retry: { attempts: 10, baseDelayMs: 20, maxDelayMs: 500 },
        },
        () => running.close(),
        running.faults,
      );
    },
  };
}

/** Default target: a serverless emulator whose query path trails fetch and list. */
export const fixture: StoreFixture = pineconeFixture({
  lags: { fetchMs: 40, listMs: 60, queryMs: 150 },
});
