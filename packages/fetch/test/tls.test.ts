import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolver } from '../src/index.js';
import { testFetcher } from './helpers.js';

let dir: string;
let server: Server;
let port: number;
let cert: Buffer;
const hostsSeen: string[] = [];
const resolver: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ragfresh-tls-'));
  // A self-signed certificate for secure.test (openssl is part of the base system here).
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-subj',
      '/CN=secure.test',
      '-addext',
      'subjectAltName=DNS:secure.test',
    ],
    { stdio: 'ignore' },
  );
  cert = await readFile(join(dir, 'cert.pem'));
  server = createServer({ key: await readFile(join(dir, 'key.pem')), cert }, (req, res) => {
    hostsSeen.push(req.headers.host ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<p>over tls</p>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

describe('https', () => {
  it('fetches over TLS with an extra trust root, connecting through the checked address', async () => {
    const f = testFetcher({ resolver, network: { allow: ['secure.test'] }, tls: { ca: cert } });
    const r = await f.fetch(`https://secure.test:${port}/page`);
    expect(r.outcome).toBe('ok');
    if (r.outcome === 'ok') expect(r.text).toBe('<p>over tls</p>');
    expect(hostsSeen.at(-1)).toBe(`secure.test:${port}`);
    await f.close();
  });

  it('an untrusted certificate is a network-error, not an exception', async () => {
    const f = testFetcher({
      resolver,
      network: { allow: ['secure.test'] },
      retry: { maxAttempts: 1 },
    });
    const r = await f.fetch(`https://secure.test:${port}/page`);
    expect(r.outcome).toBe('network-error');
    if (r.outcome === 'network-error') expect(r.error.code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    await f.close();
  });
});
