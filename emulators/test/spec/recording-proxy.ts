import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request and its answer as they crossed the proxy. */
export interface Exchange {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly requestBody: unknown;
  readonly status: number;
  readonly responseBody: unknown;
}

export interface RecordingProxy {
  readonly url: string;
  readonly exchanges: Exchange[];
  close(): Promise<void>;
}

async function read(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const parse = (b: Buffer): unknown => {
  if (b.length === 0) return undefined;
  try {
    return JSON.parse(b.toString('utf8'));
  } catch {
    return b.toString('utf8');
  }
};

/**
 * A recording HTTP proxy on 127.0.0.1 in front of `target`: forwards every request unchanged
 * and keeps a copy of it and of the answer, for validating a whole suite's traffic.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const exchanges: Exchange[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    void (async () => {
      const body = await read(req);
      const url = new URL(req.url ?? '/', target);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) {
        if (v === undefined || k === 'host' || k === 'content-length' || k === 'connection')
          continue;
        headers.set(k, Array.isArray(v) ? v.join(', ') : v);
      }
      try {
        const answer = await fetch(url, {
          method: req.method ?? 'GET',
          headers,
          ...(body.length > 0 ? { body } : {}),
        });
        const out = Buffer.from(await answer.arrayBuffer());
        exchanges.push({
          method: req.method ?? 'GET',
          path: url.pathname,
          query: url.searchParams,
          requestBody: parse(body),
          status: answer.status,
          responseBody: parse(out),
        });
        const h: Record<string, string> = {};
        answer.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection') h[k] = v;
        });
        res.writeHead(answer.status, { ...h, 'content-length': out.length });
        res.end(out);
      } catch {
        // The target dropped the connection (an injected fault): drop ours too.
        req.socket.destroy();
      }
    })();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
