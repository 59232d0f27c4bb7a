import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Fetcher, type Resolver, SsrfGuard } from '../src/index.js';
import { html, startServer, type TestServer, UA } from './helpers.js';

describe('fetch allow-list: host:port, CIDR, metadata addresses', () => {
  let a: TestServer;
  let b: TestServer;
  beforeEach(async () => {
    a = await startServer((_q, res) => html(res, '<p>a</p>'));
    b = await startServer((_q, res) => html(res, '<p>b</p>'));
  });
  afterEach(async () => {
    await a.close();
    await b.close();
  });

  it('an address:port entry opens that port only', async () => {
    const f = new Fetcher({
      userAgent: UA,
      robots: false,
      network: { allow: [`127.0.0.1:${a.port}`], settingName: 'fetch.allow' },
    });
    expect((await f.fetch(`http://127.0.0.1:${a.port}/`)).outcome).toBe('ok');
    const other = await f.fetch(`http://127.0.0.1:${b.port}/`);
    expect(other.outcome).toBe('ssrf-refused');
    expect(b.log).toHaveLength(0);
    if (other.outcome === 'ssrf-refused') {
      // The refusal names the setting and the entry that would allow it.
      expect(other.error.message).toContain('fetch.allow');
      expect(other.error.message).toContain(`"127.0.0.1:${b.port}"`);
    }
    await f.close();
  });

  it('a host:port entry opens that host on that port, whatever private address it resolves to', async () => {
    const resolver: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const f = new Fetcher({
      userAgent: UA,
      robots: false,
      resolver,
      network: { allow: [`docs.internal:${a.port}`] },
    });
    expect((await f.fetch(`http://docs.internal:${a.port}/`)).outcome).toBe('ok');
    expect((await f.fetch(`http://docs.internal:${b.port}/`)).outcome).toBe('ssrf-refused');
    expect((await f.fetch(`http://wiki.internal:${a.port}/`)).outcome).toBe('ssrf-refused');
    expect(a.log).toHaveLength(1);
    expect(b.log).toHaveLength(0);
    await f.close();
  });

  it('a CIDR entry opens its range for any port', async () => {
    const f = new Fetcher({ userAgent: UA, robots: false, network: { allow: ['127.0.0.0/24'] } });
    expect((await f.fetch(`http://127.0.0.1:${a.port}/`)).outcome).toBe('ok');
    expect((await f.fetch(`http://127.0.0.1:${b.port}/`)).outcome).toBe('ok');
    await f.close();
  });

  it.each([
    ['allowPrivateNetworks', { allowPrivateNetworks: true }],
    ['a link-local CIDR', { allow: ['169.254.0.0/16'] }],
    ['everything as a CIDR', { allow: ['0.0.0.0/0'] }],
    ['the metadata host name', { allow: ['metadata.google.internal'] }],
  ])('a metadata address stays refused under %s', async (_name, network) => {
    const guard = new SsrfGuard(network, async () => [{ address: '169.254.169.254', family: 4 }]);
    await expect(guard.resolve('169.254.169.254', 80)).rejects.toMatchObject({
      code: 'SSRF_REFUSED',
    });
    await expect(guard.resolve('metadata.google.internal', 80)).rejects.toMatchObject({
      code: 'SSRF_REFUSED',
    });
    // IPv4-mapped spelling of the same address.
    await expect(guard.resolve('::ffff:169.254.169.254', 80)).rejects.toMatchObject({
      code: 'SSRF_REFUSED',
    });
  });

  it('a metadata address opens only when listed one by one, and the refusal says so', async () => {
    const refused = new SsrfGuard({ allowPrivateNetworks: true, settingName: 'fetch.allow' });
    const err = await refused.resolve('169.254.169.254', 80).catch((e: unknown) => e);
    expect(String((err as Error).message)).toMatch(
      /metadata addresses open only when listed one by one: add "169\.254\.169\.254" to fetch\.allow/,
    );
    const listed = new SsrfGuard({ allow: ['169.254.169.254'] });
    await expect(listed.resolve('169.254.169.254', 80)).resolves.toEqual([
      { address: '169.254.169.254', family: 4 },
    ]);
    // Listing one metadata address does not open another.
    await expect(listed.resolve('169.254.170.2', 80)).rejects.toMatchObject({
      code: 'SSRF_REFUSED',
    });
  });

  it('allowPrivateNetworks still opens loopback and private ranges', async () => {
    const guard = new SsrfGuard({ allowPrivateNetworks: true });
    await expect(guard.resolve('127.0.0.1', 80)).resolves.toHaveLength(1);
    await expect(guard.resolve('10.1.2.3', 80)).resolves.toHaveLength(1);
  });

  it('refuses malformed entries with the setting name and an example', () => {
    expect(() => new SsrfGuard({ allow: ['docs internal'], settingName: 'fetch.allow' })).toThrow(
      /fetch\.allow entry "docs internal" is neither a CIDR, an address, a host name nor host:port/,
    );
    expect(() => new SsrfGuard({ allow: ['127.0.0.1:99999'] })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
  });
});
