import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RagfreshReader } from './reader.js';
import { createMcpServer, type McpServerOptions } from './server.js';

/** The one path the server answers. */
export const MCP_PATH = '/mcp';

export interface McpHttpOptions extends McpServerOptions {
  readonly reader: RagfreshReader;
  /** 0 picks a free port. */
  readonly port: number;
  /** The bearer token every request must carry (`Authorization: Bearer <token>`). */
  readonly token: string;
  /**
   * `host:port` values the Host header may carry once bound, lower-case (the DNS-rebinding guard;
   * `ragfresh mcp` passes the dashboard's `dashboardHosts`). An `Origin`, when a browser sends
   * one, must be `http://` plus one of them.
   */
  readonly allowedHosts: (port: number) => readonly string[];
}

export interface McpHttpServer {
  /** `http://127.0.0.1:<port>/mcp` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function refuse(res: ServerResponse, status: number, line: string, headers = {}): void {
  // A JSON-RPC error body with no id: what an MCP client reports for a refused request.
  res
    .writeHead(status, { 'content-type': 'application/json', ...headers })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: line }, id: null }));
}

/**
 * Why a request is refused before it reaches MCP (Host, Origin, token, path), or undefined. The
 * checks run in that order so a page in a browser learns nothing about the token.
 */
function refusal(
  req: IncomingMessage,
  allowed: readonly string[],
  token: string,
): { status: number; line: string } | undefined {
  const host = (req.headers.host ?? '').toLowerCase();
  if (!allowed.includes(host))
    return { status: 403, line: 'refused: unexpected Host header (DNS-rebinding guard).' };
  const origin = req.headers.origin;
  if (origin !== undefined && !allowed.some((h) => origin.toLowerCase() === `http://${h}`))
    return { status: 403, line: 'refused: a request from another origin (Origin header).' };
  const auth = req.headers.authorization ?? '';
  const given = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
  if (given === undefined || !equal(given, token))
    return {
      status: 401,
      line: 'refused: missing or wrong bearer token; send the token `ragfresh mcp --http` printed at start as "Authorization: Bearer <token>".',
    };
  if ((req.url ?? '').split('?')[0] !== MCP_PATH)
    return { status: 404, line: `no such path; the MCP endpoint is ${MCP_PATH}.` };
  return undefined;
}

/**
 * Streamable HTTP on 127.0.0.1, stateless: each POST gets a fresh protocol server over the same
 * reader (the tools keep no session state), answered as JSON. Loopback only, a bearer token on
 * every request, Host and Origin checked as the dashboard checks them.
 */
export async function startMcpHttp(o: McpHttpOptions): Promise<McpHttpServer> {
  let allowed: readonly string[] = [];
  const http: Server = createServer((req, res) => {
    const no = refusal(req, allowed, o.token);
    if (no !== undefined) {
      refuse(
        res,
        no.status,
        no.line,
        no.status === 401 ? { 'www-authenticate': 'Bearer realm="ragfresh"' } : {},
      );
      return;
    }
    if (req.method !== 'POST') {
      // Stateless: no server-initiated stream to GET and no session to DELETE.
      refuse(res, 405, 'method not allowed: POST JSON-RPC to this endpoint.', { allow: 'POST' });
      return;
    }
    const server = createMcpServer(o.reader, o);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: 1 << 20,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch((err: unknown) => {
        if (!res.headersSent)
          refuse(res, 500, `ragfresh mcp: ${err instanceof Error ? err.message : String(err)}`);
      });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(o.port, '127.0.0.1', () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  allowed = o.allowedHosts(port);
  return {
    url: `http://127.0.0.1:${port}${MCP_PATH}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
