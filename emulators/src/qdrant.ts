/**
 * A wire-level Qdrant emulator: node:http on 127.0.0.1 implementing the REST endpoints the
 * ragfresh Qdrant connector and `@langchain/qdrant` call, following the request/response
 * schemas of Qdrant's published OpenAPI document (as shipped in `@qdrant/js-client-rest`'s
 * generated types). Requests are validated strictly: unknown body fields, non-UUID /
 * non-unsigned-integer point ids and wrong vector sizes are refused with Qdrant's error body
 * `{ status: { error }, time }`. It is a test double, not Qdrant: no HNSW, no persistence,
 * exact cosine scoring.
 */

import { QdrantServer } from './qdrant/context.js';
import { QDRANT_ROUTES } from './qdrant/routes.js';
import {
  body,
  format,
  type QdrantEmulator,
  type QdrantEmulatorOptions,
  takeIgnored,
} from './qdrant/wire.js';
import { findRoute } from './routes.js';
import {
  type EmulatorHandlers,
  type EmulatorRequest,
  Faults,
  HttpError,
  type RunningServer,
  startJsonServer,
} from './server.js';

export {
  CLOUD_STRICT_MODE,
  parsePointId,
  type QdrantEmulator,
  type QdrantEmulatorOptions,
  type QdrantInjection,
  type StrictMode,
} from './qdrant/wire.js';

export async function startQdrantEmulator(
  options: QdrantEmulatorOptions = {},
): Promise<QdrantEmulator> {
  const faults = new Faults(options.seed ?? 1);
  const s = new QdrantServer(options, faults);

  function handle(req: EmulatorRequest): unknown {
    takeIgnored();
    try {
      const found = findRoute(QDRANT_ROUTES, req);
      if (found === undefined) throw new HttpError(404, body(`Not found: ${req.path}`));
      s.begin(found.request.route);
      return found.route.handler(found.request, s);
    } finally {
      s.ignoredFields.push(...takeIgnored());
    }
  }

  const handlers: EmulatorHandlers = {
    maxBodyBytes: 32 * 1024 * 1024,
    parseError: (msg) => format(msg),
    tooLarge: (size) =>
      new HttpError(413, body(`Payload too large: ${size} bytes, the limit is 33554432 bytes`)),
    faultBody: (status) =>
      body(
        status === 429
          ? 'Too many requests: rate limit exceeded'
          : 'Service internal error: injected by the ragfresh emulator',
      ),
    handle,
  };
  const nodes: RunningServer[] = [];
  for (let i = 0; i < Math.max(1, options.replicas ?? 1); i++) {
    nodes.push(
      await startJsonServer(
        {
          ...handlers,
          handle: (req: EmulatorRequest) => {
            s.state.node = i;
            return handle(req);
          },
        },
        faults,
        i === 0 ? options.port : 0,
      ),
    );
  }
  return {
    url: nodes[0]!.url,
    nodes: nodes.map((n) => n.url),
    faults,
    requests: s.requests,
    ignoredFields: s.ignoredFields,
    inject(injection) {
      s.injections.push({ ...injection, left: injection.times ?? 1 });
    },
    close: async () => {
      for (const n of nodes) await n.close();
    },
  };
}
