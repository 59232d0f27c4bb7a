/**
 * A wire-level Pinecone emulator: node:http on 127.0.0.1 with a control plane (create /
 * describe / list / delete index, API 2026-07 shapes as in `@pinecone-database/pinecone@9`'s
 * generated `db_control` models) and one data-plane server per index (`/vectors/upsert`,
 * `/vectors/update`, `/vectors/delete`, `/vectors/fetch`, `/vectors/list`, `/query`,
 * `/describe_index_stats`, shapes of the generated `db_data` models). Limits are Pinecone's
 * published ones: 40 KB of metadata per record, 1000 vectors and 2 MB per upsert, 1000 ids per
 * fetch/delete, topK <= 10000, list limit <= 100; metadata values are strings, numbers,
 * booleans or lists of strings, never null. Writes become readable after the injected
 * visibility lag (eventual consistency). It is a test double, not Pinecone.
 */

import { IndexPlane } from './pinecone/plane.js';
import { CONTROL_ROUTES, ControlPlane, DATA_ROUTES } from './pinecone/routes.js';
import {
  control,
  type Index,
  invalid,
  PINECONE_LIMITS,
  type PineconeEmulator,
  type PineconeEmulatorOptions,
  rpc,
} from './pinecone/wire.js';
import { findRoute } from './routes.js';
import { type EmulatorHandlers, type EmulatorRequest, Faults, startJsonServer } from './server.js';

export { matchPineconeFilter, validatePineconeFilter } from './pinecone/filter.js';
export {
  PINECONE_LIMITS,
  type PineconeEmulator,
  type PineconeEmulatorOptions,
  type PineconeLags,
} from './pinecone/wire.js';

export async function startPineconeEmulator(
  options: PineconeEmulatorOptions = {},
): Promise<PineconeEmulator> {
  const faults = new Faults(options.seed ?? 1);
  const requests = new Map<string, number>();
  const local = options.mode === 'local-2025-01';
  const settings = {
    local,
    updateByFilter: options.updateByFilter ?? (local ? 501 : true),
    lsnHeaders: options.lsnHeaders ?? !local,
    lags: options.lags,
    maxNamespaces: options.maxNamespaces,
    faults,
  };
  const count = (key: string) => requests.set(key, (requests.get(key) ?? 0) + 1);

  function requireKey(req: EmulatorRequest, plane: 'control' | 'data'): void {
    const key = req.headers['api-key'];
    if (typeof key !== 'string' || key === '') {
      if (plane === 'control') throw control(401, 'UNAUTHENTICATED', 'Invalid API Key');
      throw rpc(401, 16, 'Request unauthenticated: missing Api-Key header');
    }
  }

  const controlPlane: ControlPlane = new ControlPlane(local, async (spec) => {
    const name = spec.name;
    const ix: Index = {
      ...spec,
      readyAt: Date.now() + (options.indexReadyAfterMs ?? 0),
      namespaces: new Map(),
      server: undefined as unknown as Index['server'],
    };
    ix.server = await startJsonServer(dataHandlers(new IndexPlane(ix, settings)), faults);
    controlPlane.indexes.set(name, ix);
    return ix;
  });
  const indexes = controlPlane.indexes;

  function dataHandlers(plane: IndexPlane): EmulatorHandlers {
    return {
      maxBodyBytes: PINECONE_LIMITS.requestBytes,
      parseError: (msg: string) => invalid(`Invalid request: malformed JSON body: ${msg}`),
      tooLarge: (size: number) =>
        invalid(
          `Request size ${(size / 1024 / 1024).toFixed(2)}MB exceeds the maximum supported size of 2MB`,
        ),
      faultBody: (status: number) =>
        status === 429
          ? {
              code: 8,
              message:
                'Request failed. You have exceeded the request rate limit (injected by the ragfresh emulator).',
              details: [],
            }
          : {
              code: 14,
              message: 'Service unavailable (injected by the ragfresh emulator).',
              details: [],
            },
      handle(req) {
        requireKey(req, 'data');
        const found = findRoute(DATA_ROUTES, req);
        count(found?.request.route ?? `${req.method} ${req.path}`);
        if (found === undefined) throw rpc(404, 5, `Not Found: ${req.method} ${req.path}`);
        return found.route.handler(found.request, plane);
      },
    };
  }

  function controlRoute(req: EmulatorRequest): unknown {
    requireKey(req, 'control');
    const found = findRoute(CONTROL_ROUTES, req);
    if (found === undefined) throw control(404, 'NOT_FOUND', `Resource ${req.path} not found`);
    count(found.request.route);
    return found.route.handler(found.request, controlPlane);
  }

  const controlServer = await startJsonServer(
    {
      maxBodyBytes: PINECONE_LIMITS.requestBytes,
      parseError: (msg) =>
        control(400, 'INVALID_ARGUMENT', `Bad request: malformed JSON body: ${msg}`),
      tooLarge: () => control(413, 'INVALID_ARGUMENT', 'Request too large'),
      faultBody: (status) =>
        status === 429
          ? {
              error: {
                code: 'RESOURCE_EXHAUSTED',
                message: 'Too many requests (injected by the ragfresh emulator)',
              },
              status,
            }
          : {
              error: {
                code: 'UNAVAILABLE',
                message: 'Service unavailable (injected by the ragfresh emulator)',
              },
              status,
            },
      handle: controlRoute,
    },
    faults,
    options.port,
  );

  return {
    url: controlServer.url,
    faults,
    requests,
    async createIndex(name, dimension) {
      const existing = indexes.get(name);
      if (existing) return existing.server.url;
      const spec = { metric: 'cosine', cloud: 'aws', region: 'us-east-1' } as const;
      return (
        await controlPlane.addIndex({
          ...spec,
          name,
          dimension,
          tags: {},
          deletionProtection: 'disabled',
        })
      ).server.url;
    },
    async close() {
      for (const ix of indexes.values()) await ix.server.close();
      indexes.clear();
      await controlServer.close();
    },
  };
}
