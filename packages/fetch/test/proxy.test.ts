import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fetcher } from '../src/index.js';
import { html, startServer, type TestServer, testFetcher } from './helpers.js';

/** A minimal CONNECT proxy on loopback; `requireAuth` answers 407 without the right token. */
async function startProxy(
  requireAuth?: string,
): Promise<{ url: string; tunnels: string[]; close: () => Promise<void> }> {
  const tunnels: string[] = [];
  const server: Server = createServer((_req, res) => {
    res.writeHead(405);
    res.end();
  });
  // Tunnelled sockets leave the HTTP server's bookkeeping (closeAllConnections does not see
  // them), and the client keeps them alive: close destroys them so the server stops at once.
  const open = new Set<{ destroy(): void }>();
  server.on('connect', (req, clientSocket, head) => {
    open.add(clientSocket);
    clientSocket.on('close', () => open.delete(clientSocket));
    if (requireAuth !== undefined && req.headers['proxy-authorization'] !== requireAuth) {
      clientSocket.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n',
      );
      return;
    }
    tunnels.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = connect(Number(port), host, () => {
      clientSocket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(clientSocket);
      clientSocket.pipe(upstream);
    });
    upstream.on('error', () => clientSocket.destroy());
    clientSocket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
        for (const socket of open) socket.destroy();
      }),
  };
}

let origin: TestServer;
let f: Fetcher;
beforeAll(async () => {
  origin = await startServer((req, res) => html(res, `<p>${req.headers['user-agent']}</p>`));
  f = testFetcher({ retry: { maxAttempts: 1 } });
});
afterAll(async () => {
  await f.close();
  await origin.close();
});

describe('per-source proxy', () => {
  it('sends the request through the proxy and reports its exit/region label', async () => {
    const proxy = await startProxy();
    const r = await f.fetch(`${origin.origin}/via-proxy`, {
      proxy: { url: proxy.url, label: 'eu-west' },
    });
    expect(r.outcome).toBe('ok');
    expect(r.region).toBe('eu-west');
    expect(proxy.tunnels).toEqual([origin.host]);
    const direct = await f.fetch(`${origin.origin}/direct`);
    expect(direct.region).toBeUndefined();
    expect(proxy.tunnels).toHaveLength(1);
    await proxy.close();
  });

  it('a proxy answering 407 gives outcome proxy-auth; the right token gets through', async () => {
    const proxy = await startProxy('Bearer s3cret');
    const denied = await f.fetch(`${origin.origin}/x`, { proxy: { url: proxy.url, label: 'us' } });
    expect(denied.outcome).toBe('proxy-auth');
    expect(denied.status).toBe(407);
    expect(denied.region).toBe('us');
    const allowed = await f.fetch(`${origin.origin}/x`, {
      proxy: { url: proxy.url, label: 'us', token: 'Bearer s3cret' },
    });
    expect(allowed.outcome).toBe('ok');
    await proxy.close();
  });

  it('a fetcher-wide proxy applies unless a request opts out with proxy: null', async () => {
    const proxy = await startProxy();
    const g = testFetcher({ proxy: { url: proxy.url, label: 'default-exit' } });
    expect((await g.fetch(`${origin.origin}/a`)).region).toBe('default-exit');
    const direct = await g.fetch(`${origin.origin}/b`, { proxy: null });
    expect(direct.outcome).toBe('ok');
    expect(direct.region).toBeUndefined();
    expect(proxy.tunnels).toHaveLength(1);
    await g.close();
    await proxy.close();
  });

  it('a per-source proxy applies to requests naming that source', async () => {
    const eu = await startProxy();
    const us = await startProxy();
    const g = testFetcher({
      sourceProxies: { 'docs-eu': { url: eu.url, label: 'eu' } },
      proxy: { url: us.url, label: 'us' },
    });
    expect((await g.fetch(`${origin.origin}/1`, { sourceId: 'docs-eu' })).region).toBe('eu');
    expect((await g.fetch(`${origin.origin}/2`, { sourceId: 'other' })).region).toBe('us');
    expect(
      (await g.fetch(`${origin.origin}/3`, { sourceId: 'docs-eu', proxy: null })).region,
    ).toBeUndefined();
    expect(eu.tunnels).toHaveLength(1);
    expect(us.tunnels).toHaveLength(1);
    await g.close();
    await eu.close();
    await us.close();
  });
});
