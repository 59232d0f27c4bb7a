import { type JsonValue, RagfreshError, type StoreFixture, type StoreTarget } from '@ragfresh/core';
// An optional peer: only the container and emulator targets load it, at start.
import type { QdrantEmulatorOptions } from '@ragfresh/emulators';
import { createQdrantConnector, type QdrantConnectorOptions } from './connector.js';

/** Qdrant Cloud's strict mode for new collections (`CLOUD_STRICT_MODE` of the emulators). */
const CLOUD_STRICT_MODE = Object.freeze({
  enabled: true,
  unindexed_filtering_retrieve: false,
  unindexed_filtering_update: false,
});

/** The optional peer, or one line saying how to get it. */
const emulators = () =>
  import('@ragfresh/emulators').catch((err: unknown) => {
    if (!String(err).includes("package '@ragfresh/emulators'")) throw err;
    throw new RagfreshError(
      'NOT_SUPPORTED',
      '@ragfresh/connector-qdrant/fixture starts a container or the emulator with @ragfresh/emulators, which is not installed; install it (npm install -D @ragfresh/emulators) or give a running server with --url.',
    );
  });

/** Image the container target runs (`docker run -p 6333:6333 qdrant/qdrant:<tag>`). */
export const QDRANT_IMAGE = 'qdrant/qdrant:v1.19.0';

const collectionName = (ns: string) => `rf_${ns.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 200);

function target(
  kind: StoreTarget['kind'],
  description: string,
  url: string | readonly string[],
  extra: Partial<QdrantConnectorOptions>,
  stop: () => Promise<void>,
  faults?: StoreTarget['faults'],
): StoreTarget {
  // Several URLs: nodes of one cluster; each new connector talks to the next node.
  const urls = typeof url === 'string' ? [url] : url;
  let turn = 0;
  const options = (ns: string): QdrantConnectorOptions => ({
    ...extra,
    url: urls[turn++ % urls.length]!,
    collection: collectionName(ns),
  });
  return {
    kind,
    description,
    ...(faults === undefined ? {} : { faults }),
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
    stop,
  };
}

/**
 * Strict mode for collections the suite creates on a real server when
 * `RAGFRESH_QDRANT_STRICT=1`: Qdrant Cloud's default (unindexed filters refused).
 */
function strictFromEnv(): Partial<QdrantConnectorOptions> {
  return process.env.RAGFRESH_QDRANT_STRICT === '1' ? { strictMode: { ...CLOUD_STRICT_MODE } } : {};
}

/**
 * Qdrant targets, in order: `--url` (a running server), a `qdrant/qdrant` container when
 * `docker info` succeeds, else the wire-level emulator from `@ragfresh/emulators` (the only
 * target that can inject faults) started with `emulator` options. A child process given the
 * spec reaches the same server: the URL is part of the options.
 */
export function qdrantFixture(emulator: QdrantEmulatorOptions = {}): StoreFixture {
  return {
    store: 'qdrant',
    async start(options = {}): Promise<StoreTarget> {
      if (options.url !== undefined) {
        return target(
          'url',
          `Qdrant at ${options.url} (given with --url)${strictFromEnv().strictMode ? ', strict mode' : ''}`,
          options.url,
          strictFromEnv(),
          async () => {},
        );
      }
      const { containerEngineAvailable, startContainer, startQdrantEmulator } = await emulators();
      if (await containerEngineAvailable()) {
        const c = await startContainer({
          image: QDRANT_IMAGE,
          ports: [6333],
          ready: async (ports) => (await fetch(`http://127.0.0.1:${ports.get(6333)}/readyz`)).ok,
        });
        const url = `http://127.0.0.1:${c.ports.get(6333)}`;
        return target(
          'container',
          `${QDRANT_IMAGE} container ${c.id.slice(0, 12)} at ${url}`,
          url,
          strictFromEnv(),
          c.stop,
        );
      }
      const running = await startQdrantEmulator(emulator);
      const modes = [
        `version ${emulator.version ?? '1.19.0'}`,
        emulator.strictMode?.enabled ? 'strict mode' : 'no strict mode',
        ...((emulator.replicas ?? 1) > 1
          ? [`${emulator.replicas} replicas on ${emulator.replicas} nodes, connectors round-robin`]
          : []),
      ];
      return target(
        'emulator',
        `ragfresh Qdrant wire emulator at ${running.url} (${modes.join(', ')}; no Qdrant engine, see docs/connectors/qdrant.md)`,
        running.nodes,
        // Injected timeouts hang until the client gives up: keep that short on the emulator.
        { timeoutMs: 2_000, retry: { attempts: 8, baseDelayMs: 20, maxDelayMs: 2_000 } },
        () => running.close(),
        running.faults,
      );
    },
  };
}

/** The default target; its emulator runs in Qdrant Cloud's strict mode. */
export const fixture: StoreFixture = qdrantFixture({ strictMode: CLOUD_STRICT_MODE });
