import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Fetcher, type FetcherOptions } from '../src/index.js';

export const UA = 'ragfresh-test/0.1 (+https://example.org/ragfresh-bot)';

export interface LoggedRequest {
  readonly path: string;
  readonly at: number;
  readonly headers: IncomingMessage['headers'];
}

export interface TestServer {
  readonly origin: string;
  readonly host: string;
  readonly port: number;
  readonly log: LoggedRequest[];
  /** Requests for paths other than /robots.txt. */
  pages(): LoggedRequest[];
  close(): Promise<void>;
  readonly server: Server;
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** A real node:http server on 127.0.0.1 with a request log (server-side timestamps). */
export async function startServer(handler: Handler): Promise<TestServer> {
  const log: LoggedRequest[] = [];
  const server = createServer((req, res) => {
    log.push({ path: req.url ?? '', at: Date.now(), headers: req.headers });
    Promise.resolve(handler(req, res)).catch((err: unknown) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });
  // Longer than the client keeps idle sockets, so a reused socket is never one being closed.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    port,
    log,
    pages: () => log.filter((r) => r.path !== '/robots.txt'),
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A Fetcher for loopback tests: private networks allowed, robots off unless given, fast retries. */
export function testFetcher(options: Partial<FetcherOptions> = {}): Fetcher {
  return new Fetcher({
    userAgent: UA,
    network: { allowPrivateNetworks: true },
    robots: false,
    minIntervalMs: 0,
    retry: { baseDelayMs: 20, maxDelayMs: 200 },
    ...options,
  });
}

export function html(
  res: ServerResponse,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
  res.end(body);
}
