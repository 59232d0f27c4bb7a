import { type NetworkInterfaceInfo, networkInterfaces } from 'node:os';

/*
 * The Host values a local HTTP surface answers (the DNS-rebinding guard) and the Origin it
 * accepts (`http://` plus one of them): the dashboard (`ragfresh ui`) and the MCP server
 * (`ragfresh mcp --http`) check the same list. Loaded without the dashboard's server.
 */

const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);
const hostPort = (address: string, port: number) =>
  `${address.includes(':') ? `[${address}]` : address}:${port}`;

/**
 * The `Host` values the dashboard answers (the DNS-rebinding guard), each with the bound port:
 * the bound address (127.0.0.1 and localhost together); bound to a wildcard (`0.0.0.0`, `::`), every
 * address of the machine's interfaces plus localhost, 127.0.0.1 and ::1; and each `--allowed-host`
 * name, with the port and bare (a reverse proxy on port 80/443 sends it bare), or exactly as
 * given when it names its own port. Compared lower-cased.
 */
export function dashboardHosts(
  bindHost: string,
  port: number,
  allowed: readonly string[] = [],
  interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces(),
): string[] {
  // The bound address itself always (the URL `ragfresh ui` prints).
  const addresses = new Set<string>([bindHost.replace(/^\[(.*)\]$/, '$1')]);
  if (WILDCARD.has(bindHost)) {
    for (const a of ['127.0.0.1', 'localhost', '::1']) addresses.add(a);
    for (const list of Object.values(interfaces))
      for (const i of list ?? []) if (!i.address.includes('%')) addresses.add(i.address);
  } else if (bindHost === '127.0.0.1' || bindHost === 'localhost') {
    addresses.add('127.0.0.1');
    addresses.add('localhost');
  }
  const out = [...addresses].map((a) => hostPort(a, port));
  for (const name of allowed) {
    const n = name.toLowerCase();
    if (/:\d+$/.test(n)) out.push(n);
    else out.push(hostPort(n, port), n);
  }
  return [...new Set(out.map((h) => h.toLowerCase()))];
}

/** Why an `--allowed-host` value is not a host name (or `name:port`); undefined when it is. */
export function badAllowedHost(name: string): string | undefined {
  return /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?(?::\d{1,5})?$/i.test(
    name,
  )
    ? undefined
    : `ui --allowed-host ${JSON.stringify(name)} is not a host name; give a name like dash.internal (optionally with :port).`;
}
