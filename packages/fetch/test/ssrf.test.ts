import diagnostics from 'node:diagnostics_channel';
import { isRagfreshError } from '@ragfresh/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyAddress, Fetcher, type Resolver, SsrfGuard } from '../src/index.js';
import { html, startServer, type TestServer, UA } from './helpers.js';

/** Every outgoing connection attempt (undici's connect hook and net's client sockets). */
const connects: string[] = [];
const onUndiciConnect = (msg: unknown): void => {
  const m = msg as { connectParams?: { hostname?: string; port?: string } };
  connects.push(`undici:${m.connectParams?.hostname}:${m.connectParams?.port}`);
};
const onNetSocket = (msg: unknown): void => {
  const s = (msg as { socket?: { remoteAddress?: string } }).socket;
  connects.push(`net:${s?.remoteAddress ?? '?'}`);
};

beforeEach(() => {
  connects.length = 0;
  diagnostics.subscribe('undici:client:beforeConnect', onUndiciConnect);
  diagnostics.subscribe('net.client.socket', onNetSocket);
});
afterEach(() => {
  diagnostics.unsubscribe('undici:client:beforeConnect', onUndiciConnect);
  diagnostics.unsubscribe('net.client.socket', onNetSocket);
});

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['169.254.10.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.254', 'cgnat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['fd00:ec2::254', 'metadata'],
    ['::ffff:127.0.0.1', 'ipv4-embedded-loopback'],
    ['::ffff:7f00:1', 'ipv4-embedded-loopback'],
    ['::ffff:169.254.169.254', 'ipv4-embedded-metadata'],
    ['::ffff:10.0.0.1', 'ipv4-embedded-private'],
    ['64:ff9b::10.0.0.1', 'ipv4-embedded-private'],
    ['2002:7f00:1::', 'ipv4-embedded-loopback'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
  ])('%s is refused as %s', (addr, label) => {
    expect(classifyAddress(addr)).toBe(label);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
  ])('%s is public', (addr) => {
    expect(classifyAddress(addr)).toBeUndefined();
  });
});

describe('Fetcher SSRF guard', () => {
  const f = new Fetcher({ userAgent: UA, robots: false, minIntervalMs: 0 });
  afterEach(() => undefined);

  it.each([
    ['http://127.0.0.1/', 'loopback'],
    ['http://[::1]/', 'loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['http://10.0.0.1/', 'private'],
    ['http://localhost/', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'ipv4-embedded-loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://0x7f.0.0.1:8080/', 'loopback'],
    ['http://192.168.0.1/', 'private'],
    ['http://100.64.1.1/', 'cgnat'],
    ['http://0.0.0.0/', 'unspecified'],
  ])('refuses %s (%s) as ssrf-refused before any connection', async (url, reason) => {
    const r = await f.fetch(url);
    expect(r.outcome).toBe('ssrf-refused');
    if (r.outcome === 'ssrf-refused') {
      expect(r.error.code).toBe('SSRF_REFUSED');
      expect(r.error.reason).toBe(reason);
    }
    expect(r.attempts).toBe(0);
    expect(connects).toEqual([]);
  });

  it('throws coded SSRF_REFUSED errors from the guard itself', async () => {
    const guard = new SsrfGuard();
    for (const host of ['127.0.0.1', '[::1]', '169.254.169.254', '10.0.0.1', 'localhost']) {
      const err = await guard.resolve(host).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isRagfreshError(err, 'SSRF_REFUSED')).toBe(true);
    }
    expect(connects).toEqual([]);
  });

  it('refuses a host name whose DNS answer contains a private address, even next to a public one', async () => {
    const resolver: Resolver = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ];
    const g = new Fetcher({ userAgent: UA, robots: false, resolver });
    const r = await g.fetch('http://mixed.example/');
    expect(r.outcome).toBe('ssrf-refused');
    if (r.outcome === 'ssrf-refused') expect(r.error.address).toBe('10.1.2.3');
    expect(connects).toEqual([]);
    await g.close();
  });

  it('refuses URL credentials with a coded error', async () => {
    await expect(f.fetch('http://user:pw@example.org/')).rejects.toMatchObject({
      code: 'URL_CREDENTIALS',
    });
  });
});

describe('allowing private networks', () => {
  let s: TestServer;
  beforeEach(async () => {
    s = await startServer((_q, res) => html(res, '<p>hi</p>'));
  });
  afterEach(async () => {
    await s.close();
  });

  it('allowPrivateNetworks lets loopback through', async () => {
    const f = new Fetcher({
      userAgent: UA,
      robots: false,
      network: { allowPrivateNetworks: true },
    });
    expect((await f.fetch(`${s.origin}/`)).outcome).toBe('ok');
    expect((await f.fetch(`http://localhost:${s.port}/`)).outcome).toBe('ok');
    // The connection monitor used by the refusal cases does see real connections.
    expect(connects.filter((c) => c.startsWith('undici:'))).toHaveLength(2);
    expect(connects.filter((c) => c.startsWith('net:')).length).toBeGreaterThanOrEqual(2);
    await f.close();
  });

  it('an allow-listed CIDR lets only its addresses through', async () => {
    const f = new Fetcher({ userAgent: UA, robots: false, network: { allow: ['127.0.0.1/32'] } });
    expect((await f.fetch(`${s.origin}/`)).outcome).toBe('ok');
    const r = await f.fetch(`http://127.0.0.2:${s.port}/`);
    expect(r.outcome).toBe('ssrf-refused');
    await f.close();
  });

  it('an allow-listed host name may resolve to loopback', async () => {
    const resolver: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const f = new Fetcher({
      userAgent: UA,
      robots: false,
      resolver,
      network: { allow: ['docs.intranet.test'] },
    });
    expect((await f.fetch(`http://docs.intranet.test:${s.port}/`)).outcome).toBe('ok');
    expect((await f.fetch(`http://other.intranet.test:${s.port}/`)).outcome).toBe('ssrf-refused');
    expect(s.log[0]!.headers.host).toBe(`docs.intranet.test:${s.port}`);
    await f.close();
  });

  it('connects to the checked address: a DNS answer that changes after the check (rebinding) is refused at connect', async () => {
    let calls = 0;
    // First answer (the pre-check) is allowed; the second (the connect) points elsewhere.
    const resolver: Resolver = async () => [
      { address: calls++ === 0 ? '127.0.0.1' : '127.0.0.3', family: 4 },
    ];
    const f = new Fetcher({
      userAgent: UA,
      robots: false,
      resolver,
      network: { allow: ['127.0.0.1/32'] },
      retry: { maxAttempts: 1 },
    });
    const r = await f.fetch(`http://rebind.test:${s.port}/`);
    expect(r.outcome).toBe('ssrf-refused');
    if (r.outcome === 'ssrf-refused') expect(r.error.address).toBe('127.0.0.3');
    expect(calls).toBe(2);
    expect(s.log).toHaveLength(0);
    await f.close();
  });

  it('rejects malformed allow entries as INVALID_CONFIG', () => {
    expect(() => new Fetcher({ userAgent: UA, network: { allow: ['10.0.0.0/99'] } })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
  });
});
