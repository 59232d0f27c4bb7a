import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { RagfreshError } from '@ragfresh/core';

/** One resolved address of a host name. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to every address it has (`dns.lookup(host, { all: true })` by default). */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/**
 * Which destinations the fetcher may connect to. By default only public unicast addresses:
 * loopback, private, link-local, CGNAT, unspecified, multicast, reserved and cloud metadata
 * addresses are refused, including their IPv4-mapped / NAT64 / 6to4 IPv6 spellings.
 */
export interface NetworkPolicy {
  /**
   * Allow every destination except cloud metadata addresses (tests, intranets). Default false.
   * Prefer `allow`, which opens only what is listed.
   */
  readonly allowPrivateNetworks?: boolean;
  /**
   * Exceptions: CIDRs (`10.1.2.0/24`, `fd00::/8`), single addresses (`127.0.0.1`), addresses or
   * host names with a port (`127.0.0.1:8080`, `[::1]:8080`, `docs.internal:8443`: that port
   * only), host names (`docs.internal`) or host-name suffixes starting with a dot
   * (`.corp.example`). An allowed host name may resolve to a private address; an allowed CIDR
   * lets addresses inside it through for any host name. Cloud metadata addresses
   * (169.254.169.254 and its kin) are never opened by a CIDR, a host name or
   * `allowPrivateNetworks`: only by listing that exact address.
   */
  readonly allow?: readonly string[];
  /** Name of the allow-list setting, used in refusal messages. Default `network.allow`. */
  readonly settingName?: string;
}

type Bytes = readonly number[];

interface Range {
  readonly bytes: Bytes;
  readonly prefix: number;
  readonly label: string;
}

function parseIPv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

function parseIPv6(text: string): number[] | undefined {
  let s = text;
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = v4;
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const parseGroups = (h: string): number[] | undefined => {
    if (h === '') return [];
    const groups: number[] = [];
    for (const g of h.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      groups.push(Number.parseInt(g, 16));
    }
    return groups;
  };
  const head = parseGroups(halves[0] ?? '');
  const rest = halves.length === 2 ? parseGroups(halves[1] ?? '') : [];
  if (head === undefined || rest === undefined) return undefined;
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [
    ...head,
    ...new Array<number>(halves.length === 2 ? missing : 0).fill(0),
    ...rest,
  ];
  const bytes: number[] = [];
  for (const g of groups) bytes.push(g >> 8, g & 0xff);
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** Address bytes (4 or 16) of an IP literal, with or without IPv6 brackets; undefined if not an IP. */
export function parseIp(text: string): number[] | undefined {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const kind = isIP(t);
  if (kind === 4) return parseIPv4(t);
  if (kind === 6) return parseIPv6(t);
  return undefined;
}

function range(cidr: string, label: string): Range {
  const [addr, len] = cidr.split('/');
  const bytes = parseIp(addr ?? '');
  if (bytes === undefined) throw new Error(`bad built-in CIDR ${cidr}`);
  return { bytes, prefix: len === undefined ? bytes.length * 8 : Number(len), label };
}

/**
 * Instance metadata endpoints (credentials live there): AWS/GCP/Azure/OpenStack 169.254.169.254,
 * AWS ECS task and EKS pod-identity agents, Alibaba Cloud, AWS's IPv6 endpoints.
 */
const METADATA: readonly Range[] = [
  range('169.254.169.254/32', 'metadata'),
  range('169.254.170.2/32', 'metadata'),
  range('169.254.170.23/32', 'metadata'),
  range('100.100.100.200/32', 'metadata'),
  range('fd00:ec2::254/128', 'metadata'),
  range('fd00:ec2::23/128', 'metadata'),
];

const DENIED_V4: readonly Range[] = [
  range('0.0.0.0/8', 'unspecified'),
  range('10.0.0.0/8', 'private'),
  range('100.64.0.0/10', 'cgnat'),
  range('100.100.100.200/32', 'metadata'),
  range('127.0.0.0/8', 'loopback'),
  range('169.254.169.254/32', 'metadata'),
  range('169.254.0.0/16', 'link-local'),
  range('172.16.0.0/12', 'private'),
  range('192.0.0.0/24', 'reserved'),
  range('192.0.2.0/24', 'documentation'),
  range('192.88.99.0/24', 'reserved'),
  range('192.168.0.0/16', 'private'),
  range('198.18.0.0/15', 'benchmarking'),
  range('198.51.100.0/24', 'documentation'),
  range('203.0.113.0/24', 'documentation'),
  range('224.0.0.0/4', 'multicast'),
  range('240.0.0.0/4', 'reserved'),
];

const DENIED_V6: readonly Range[] = [
  range('::/128', 'unspecified'),
  range('::1/128', 'loopback'),
  range('fd00:ec2::254/128', 'metadata'),
  range('fc00::/7', 'private'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'site-local'),
  range('ff00::/8', 'multicast'),
  range('100::/64', 'discard'),
  range('2001:db8::/32', 'documentation'),
  range('64:ff9b:1::/48', 'nat64-local'),
];

function inRange(bytes: Bytes, r: Range): boolean {
  if (bytes.length !== r.bytes.length) return false;
  let bits = r.prefix;
  for (let i = 0; i < bytes.length && bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[i] ?? 0) & mask) !== ((r.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

function startsWith(bytes: Bytes, prefix: Bytes): boolean {
  return prefix.every((b, i) => bytes[i] === b);
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any. */
function embeddedIPv4(bytes: Bytes): number[] | undefined {
  if (bytes.length !== 16) return undefined;
  const zeros10 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  if (startsWith(bytes, [...zeros10, 0xff, 0xff])) return bytes.slice(12) as number[];
  // IPv4-compatible (deprecated) ::a.b.c.d, but not :: or ::1 which are handled as IPv6.
  if (startsWith(bytes, [...zeros10, 0, 0]) && (bytes[12] ?? 0) + (bytes[13] ?? 0) > 0) {
    return bytes.slice(12) as number[];
  }
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]))
    return bytes.slice(12) as number[];
  if (startsWith(bytes, [0x20, 0x02])) return bytes.slice(2, 6) as number[];
  return undefined;
}

/** The refusals of a cloud metadata address: an allowed host name or range never opens these. */
const METADATA_REFUSALS: ReadonlySet<string> = new Set(['metadata', 'ipv4-embedded-metadata']);

/**
 * Why `address` is refused by the default policy (`loopback`, `private`, `link-local`, `cgnat`,
 * `metadata`, ...), or undefined when it is a public unicast address. Throws nothing; a string
 * that is not an IP address yields `not-an-ip`.
 */
export function classifyAddress(address: string): string | undefined {
  const bytes = parseIp(address);
  if (bytes === undefined) return 'not-an-ip';
  if (METADATA.some((r) => inRange(bytes, r))) return 'metadata';
  if (bytes.length === 4) return DENIED_V4.find((r) => inRange(bytes, r))?.label;
  const v4 = embeddedIPv4(bytes);
  if (v4 !== undefined) {
    const label = DENIED_V4.find((r) => inRange(v4, r))?.label;
    return label === undefined ? undefined : `ipv4-embedded-${label}`;
  }
  return DENIED_V6.find((r) => inRange(bytes, r))?.label;
}

function sameBytes(a: Bytes, b: Bytes): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** `host:port`, `[v6]:port` -> parts; undefined for anything else (CIDRs, bare hosts, bare v6). */
function splitHostPort(entry: string): { host: string; port: number } | undefined {
  const m = /^\[([0-9a-f:.]+)\]:(\d{1,5})$/.exec(entry) ?? /^([a-z0-9.-]+):(\d{1,5})$/.exec(entry);
  if (m === null) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: bareHost(m[1]!), port };
}

function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

const defaultResolver: Resolver = async (hostname) => {
  const all = await dnsLookup(hostname, { all: true, verbatim: true });
  return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Host name as used for DNS: lower case, IPv6 brackets and a trailing dot removed. */
function bareHost(hostname: string): string {
  let h = hostname.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

type AllowEntry =
  | { readonly kind: 'host-port'; readonly host: string; readonly port: number }
  | { readonly kind: 'range'; readonly bytes: Bytes; readonly prefix: number }
  | { readonly kind: 'suffix'; readonly suffix: string }
  | { readonly kind: 'host'; readonly host: string }
  | { readonly problem: string };

function parseAllowEntry(entry: string): AllowEntry {
  const e = entry.trim().toLowerCase();
  const withPort = splitHostPort(e);
  if (withPort !== undefined) return { kind: 'host-port', ...withPort };
  const [addr, len] = e.split('/');
  const bytes = parseIp(addr ?? '');
  if (bytes !== undefined) {
    const prefix = len === undefined ? bytes.length * 8 : Number(len);
    if (!/^\d+$/.test(len ?? '0') || prefix > bytes.length * 8)
      return { problem: 'has a bad prefix length; use a CIDR like 10.0.0.0/8' };
    return { kind: 'range', bytes, prefix };
  }
  if (e.startsWith('.') && e.length > 1 && /^[a-z0-9.-]+$/.test(e))
    return { kind: 'suffix', suffix: e };
  if (/^[a-z0-9.-]+$/.test(e)) return { kind: 'host', host: bareHost(e) };
  return {
    problem:
      'is neither a CIDR, an address, a host name nor host:port; use e.g. 10.1.2.0/24, 127.0.0.1:8080 or docs.internal',
  };
}

/**
 * Why one `allow` entry of a {@link NetworkPolicy} is invalid ("<problem>; <fix>"), or undefined
 * when the guard accepts it: the check the guard's constructor makes, for config validation.
 */
export function allowEntryProblem(entry: string): string | undefined {
  const parsed = parseAllowEntry(entry);
  return 'problem' in parsed ? parsed.problem : undefined;
}

/**
 * The SSRF guard. `check` resolves a URL's host and refuses it (SSRF_REFUSED) unless every
 * address is allowed; `lookup` is the same check as a `net.connect` lookup hook, so the socket
 * connects only to an address that passed it (no DNS rebinding between check and connect).
 */
export class SsrfGuard {
  readonly #allowAll: boolean;
  readonly #allowRanges: Range[] = [];
  readonly #allowHosts: string[] = [];
  readonly #allowSuffixes: string[] = [];
  /** Port-scoped entries: `host:port` (host a name or an address) -> allowed ports. */
  readonly #allowHostPorts = new Map<string, Set<number>>();
  /** Exact single addresses listed (the only way to open a metadata address). */
  readonly #exactAddresses: Bytes[] = [];
  readonly #setting: string;
  readonly #resolver: Resolver;

  constructor(policy: NetworkPolicy = {}, resolver: Resolver = defaultResolver) {
    this.#allowAll = policy.allowPrivateNetworks === true;
    this.#setting = policy.settingName ?? 'network.allow';
    this.#resolver = resolver;
    for (const entry of policy.allow ?? []) {
      const parsed = parseAllowEntry(entry);
      if ('problem' in parsed) {
        throw new RagfreshError(
          'INVALID_CONFIG',
          `${this.#setting} entry ${JSON.stringify(entry)} ${parsed.problem}.`,
          { scope: 'fetch' },
        );
      }
      if (parsed.kind === 'host-port') {
        const ports = this.#allowHostPorts.get(parsed.host) ?? new Set<number>();
        ports.add(parsed.port);
        this.#allowHostPorts.set(parsed.host, ports);
      } else if (parsed.kind === 'range') {
        this.#allowRanges.push({ bytes: parsed.bytes, prefix: parsed.prefix, label: 'allowed' });
        if (parsed.prefix === parsed.bytes.length * 8) this.#exactAddresses.push(parsed.bytes);
      } else if (parsed.kind === 'suffix') {
        this.#allowSuffixes.push(parsed.suffix);
      } else {
        this.#allowHosts.push(parsed.host);
      }
    }
  }

  /** True when the policy lets everything through (no lookup hook needed). */
  get allowsEverything(): boolean {
    return this.#allowAll;
  }

  /**
   * Whether a host name (or literal) is allowed as such. `port` undefined means "some port":
   * the connect hook knows no port, and every request was pre-checked with its port.
   */
  #hostAllowed(hostname: string, port: number | undefined): boolean {
    const h = bareHost(hostname);
    if (this.#allowHosts.includes(h) || this.#allowSuffixes.some((s) => h.endsWith(s))) return true;
    const ports = this.#allowHostPorts.get(h);
    return ports !== undefined && (port === undefined || ports.has(port));
  }

  /**
   * Why `address` is refused under this policy, or undefined when it may be connected to. A
   * cloud metadata address is refused as one of `METADATA_REFUSALS`, whatever else allows it.
   */
  refusal(address: string): string | undefined {
    const bytes = parseIp(address);
    if (bytes !== undefined && METADATA.some((r) => inRange(bytes, r))) {
      // Only an exact listing opens a metadata address: never a CIDR, a host name or allow-all.
      return this.#exactAddresses.some((x) => sameBytes(x, bytes)) ? undefined : 'metadata';
    }
    const embedded = bytes === undefined ? undefined : embeddedIPv4(bytes);
    if (embedded !== undefined && METADATA.some((r) => inRange(embedded, r))) {
      return this.#exactAddresses.some((x) => sameBytes(x, embedded))
        ? undefined
        : 'ipv4-embedded-metadata';
    }
    if (this.#allowAll) return undefined;
    if (bytes !== undefined && this.#allowRanges.some((r) => inRange(bytes, r))) return undefined;
    if (bytes !== undefined && bytes.length === 16) {
      const v4 = embeddedIPv4(bytes);
      if (v4 !== undefined && this.#allowRanges.some((r) => inRange(v4, r))) return undefined;
    }
    return classifyAddress(address);
  }

  #refuse(host: string, address: string, reason: string, port?: number): RagfreshError {
    const target = port === undefined ? host : formatHostPort(host, port);
    const fix = METADATA_REFUSALS.has(reason)
      ? `cloud metadata addresses open only when listed one by one: add "${address}" to ${this.#setting} if this is truly intended`
      : `if this is intended, add "${target}" (or a CIDR such as "${address}/32") to ${this.#setting}`;
    return new RagfreshError(
      'SSRF_REFUSED',
      `refusing to connect to ${target} (${address}: ${reason}); ${fix}.`,
      { scope: 'fetch', details: { host, address, reason, setting: this.#setting } },
    );
  }

  /** Resolves `hostname` and returns its addresses, or throws SSRF_REFUSED when any is refused. */
  async resolve(hostname: string, port?: number): Promise<readonly ResolvedAddress[]> {
    const host = bareHost(hostname);
    const literal = parseIp(host);
    if (literal !== undefined) {
      const reason = this.refusal(host);
      if (reason !== undefined && (METADATA_REFUSALS.has(reason) || !this.#hostAllowed(host, port)))
        throw this.#refuse(host, host, reason, port);
      return [{ address: host, family: literal.length === 4 ? 4 : 6 }];
    }
    const addresses = await this.#resolver(host);
    if (addresses.length === 0) {
      throw new RagfreshError(
        'FETCH_FAILED',
        `host ${host} resolved to no address; check the URL.`,
        { scope: 'fetch' },
      );
    }
    const hostAllowed = this.#hostAllowed(host, port);
    // A host answering with any refused address is refused whole: mixed answers are a rebinding trick.
    for (const a of addresses) {
      const reason = this.refusal(a.address);
      if (reason === undefined) continue;
      if (hostAllowed && !METADATA_REFUSALS.has(reason)) continue;
      throw this.#refuse(host, a.address, reason, port);
    }
    return addresses;
  }

  /** `check` for a URL: resolves its host name and throws SSRF_REFUSED if it is not allowed. */
  async check(url: URL): Promise<readonly ResolvedAddress[]> {
    const port =
      url.port !== ''
        ? Number(url.port)
        : url.protocol === 'https:'
          ? 443
          : url.protocol === 'http:'
            ? 80
            : undefined;
    return this.resolve(url.hostname, port);
  }

  /** A `net.connect` lookup hook connecting only to addresses that pass the policy. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (addresses) => {
        const family = typeof options.family === 'number' ? options.family : 0;
        const usable =
          family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
        const list = usable.length > 0 ? usable : addresses;
        if (options.all === true) {
          (callback as unknown as (err: Error | null, addresses: ResolvedAddress[]) => void)(null, [
            ...list,
          ]);
        } else {
          const first = list[0]!;
          callback(null, first.address, first.family);
        }
      },
      (err: unknown) => {
        const e = err instanceof Error ? err : new Error(String(err));
        (callback as unknown as (err: Error) => void)(e);
      },
    );
  };
}
