import { isRagfreshError, type Reason } from '@ragfresh/core';
import { classifyAddress, type NetworkPolicy, type Resolver, SsrfGuard } from '@ragfresh/fetch';
import { chunkCountRefusal, EMPTY_BODY, type PageLimits, screenPage } from '../bounds.js';
import type { EngineSource } from '../types.js';
import type { ImportRow } from './row.js';
import { rowBody } from './version.js';

/**
 * How far in the future a row's fetch time may lie: a crawler's clock and this machine's
 * disagree by seconds to a few minutes. A later time is refused (`future-fetch-time`) and
 * never becomes a document's latest observation, which would make every later correct row
 * count as stale.
 */
export const MAX_FUTURE_SKEW_MS = 5 * 60_000;

/** Why a stage refused a row: a stable code, then the detail. */
export const ROW_REFUSALS = Object.freeze({
  metadata: 'metadata-address',
  offSource: 'off-source-host',
  ssrf: 'ssrf-refused',
  future: 'future-fetch-time',
});

/**
 * Cloud metadata services reached by name (their addresses are `classifyAddress`'s `metadata`):
 * GCP's `metadata.google.internal`, `metadata.goog` and the bare `metadata`, AWS's
 * `instance-data` names. A row for one is never imported, whatever `fetch.allow` says.
 */
const METADATA_HOSTS: ReadonlySet<string> = new Set([
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** The network policy's verdict on a host: metadata addresses carry their own code. */
interface NetworkRefusal {
  readonly code?: string;
  readonly detail: string;
}

// A DNS answer an import waits for at most; an unresolved host is judged by its name only.
const RESOLVE_TIMEOUT_MS = 5_000;

const bare = (hostname: string) =>
  hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
// The fetcher's same-host rule: equal `host` (name and explicit port) after a leading `www.`.
const sameHostKey = (url: URL) => url.host.toLowerCase().replace(/^www\./, '');

function httpUrl(text: string | undefined): URL | undefined {
  if (text === undefined) return undefined;
  try {
    const u = new URL(text);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : undefined;
  } catch {
    return undefined;
  }
}

/** The hosts a source's pages live on: those of its urls, sitemaps and llms.txt files. */
export function sourceHosts(source: EngineSource): Set<string> {
  const hosts = new Set<string>();
  for (const u of [...(source.urls ?? []), ...(source.sitemaps ?? []), ...(source.llmsTxt ?? [])]) {
    const url = httpUrl(u);
    if (url !== undefined) hosts.add(sameHostKey(url));
  }
  return hosts;
}

/**
 * The host policy of import rows: a row is imported only for its source's own hosts, only
 * where the fetcher's network policy (`fetch.allow`, `allowPrivateNetworks`, the same
 * `SsrfGuard`) would have fetched it, and never for a cloud metadata address. It applies to
 * the row's URL and to its `loadedUrl` (the final URL, which provenance cites).
 */
export class RowHostPolicy {
  readonly #sourceId: string;
  readonly #hosts: Set<string>;
  readonly #guard: SsrfGuard;
  readonly #verdicts = new Map<string, Promise<NetworkRefusal | undefined>>();

  constructor(source: EngineSource, network: NetworkPolicy = {}, resolver?: Resolver) {
    this.#sourceId = source.id;
    this.#hosts = sourceHosts(source);
    this.#guard = new SsrfGuard({ settingName: 'fetch.allow', ...network }, resolver);
  }

  /** Why the row is refused, or undefined. A URL that is not http(s) is left to the identity rules. */
  async refusal(row: ImportRow): Promise<Reason | undefined> {
    const url = httpUrl(row.url);
    if (url === undefined) return undefined;
    const own = await this.#urlRefusal(url, 'url');
    if (own !== undefined || row.loadedUrl === undefined) return own;
    const loaded = httpUrl(row.loadedUrl);
    if (loaded === undefined)
      return {
        code: ROW_REFUSALS.offSource,
        detail: `loadedUrl ${JSON.stringify(row.loadedUrl.slice(0, 200))} is not an http(s) URL`,
      };
    return this.#urlRefusal(loaded, 'loadedUrl');
  }

  async #urlRefusal(url: URL, field: string): Promise<Reason | undefined> {
    const host = bare(url.hostname);
    const kind = classifyAddress(host);
    const literal = kind !== 'not-an-ip';
    if (METADATA_HOSTS.has(host) || /metadata/.test(kind ?? ''))
      return {
        code: ROW_REFUSALS.metadata,
        detail: `${field} ${url.host} is a cloud metadata address; rows for it are never imported, whatever fetch.allow says`,
      };
    // An address is judged by the network policy first; a name only once it is the source's own,
    // so a row never makes the import look up a name it chose.
    if (literal) {
      const refused = await this.#networkRefusal(url);
      if (refused !== undefined)
        return { code: refused.code ?? ROW_REFUSALS.ssrf, detail: `${field} ${refused.detail}` };
    }
    if (this.#hosts.size > 0 && !this.#hosts.has(sameHostKey(url)))
      return {
        code: ROW_REFUSALS.offSource,
        detail: `${field} host ${url.host} is not a host of source ${this.#sourceId} (${[...this.#hosts].join(', ')}); rows are imported only for their source's own hosts`,
      };
    if (!literal) {
      const refused = await this.#networkRefusal(url);
      if (refused !== undefined)
        return { code: refused.code ?? ROW_REFUSALS.ssrf, detail: `${field} ${refused.detail}` };
    }
    return undefined;
  }

  /** The guard's verdict on a host (one DNS lookup per host and port per import). */
  #networkRefusal(url: URL): Promise<NetworkRefusal | undefined> {
    const key = url.host;
    let verdict = this.#verdicts.get(key);
    if (verdict === undefined) {
      verdict = this.#judge(url);
      this.#verdicts.set(key, verdict);
    }
    return verdict;
  }

  async #judge(url: URL): Promise<NetworkRefusal | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), RESOLVE_TIMEOUT_MS);
      timer.unref();
    });
    try {
      const addresses = await Promise.race([this.#guard.check(url), timeout]);
      if (addresses === 'timeout') return undefined;
      // The guard opens an exactly listed metadata address; an import never does.
      const metadata = addresses.find((a) => /metadata/.test(classifyAddress(a.address) ?? ''));
      return metadata === undefined
        ? undefined
        : {
            code: ROW_REFUSALS.metadata,
            detail: `${url.host} resolves to the cloud metadata address ${metadata.address}`,
          };
    } catch (err) {
      if (isRagfreshError(err, 'SSRF_REFUSED')) {
        const address = err.details.address;
        const metadata = typeof address === 'string' && classifyAddress(address) === 'metadata';
        return {
          ...(metadata ? { code: ROW_REFUSALS.metadata } : {}),
          detail: err.message.replace(/^\[ragfresh\] (\[\w+\] )?/, ''),
        };
      }
      // No address (offline, unknown name): nothing for the network policy to refuse.
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** `future-fetch-time` when `at` lies beyond the allowed skew after `now`. */
export function futureRefusal(at: string, now: Date): Reason | undefined {
  const ahead = Date.parse(at) - now.getTime();
  return ahead > MAX_FUTURE_SKEW_MS
    ? {
        code: ROW_REFUSALS.future,
        detail: `fetched ${at}, ${Math.round(ahead / 60_000)} minutes after this machine's clock (${now.toISOString()}); more than ${MAX_FUTURE_SKEW_MS / 60_000} minutes ahead is refused`,
      }
    : undefined;
}

/** True when a stored observation time lies beyond the skew: it is no mark to be stale against. */
export function isFutureMark(at: string | undefined, now: Date): boolean {
  return at !== undefined && futureRefusal(at, now) !== undefined;
}

/**
 * The per-page limits a fetched page gets, applied to a row before anything parses it: the
 * body through `screenPage` (as Markdown, as a fetched Markdown twin is), every provided chunk
 * too, and the number of provided chunks. Rows the export did not chunk meet the chunk limit
 * in `processBounded`, after the engine's chunker cut them.
 */
export function rowLimitRefusals(row: ImportRow, limits: PageLimits): Reason[] {
  const body = rowBody(row);
  const input = {
    text: body,
    contentType: 'text/markdown',
    url: row.url,
    finalUrl: row.url,
    acquisition: 'export' as const,
  };
  const refused = screenPage(input, limits).filter((r) => r.code !== EMPTY_BODY);
  if (refused.length > 0) return refused;
  const chunks = row.chunks ?? [];
  const tooMany = chunkCountRefusal(chunks.length, limits);
  if (tooMany !== undefined) return [tooMany];
  let total = 0;
  for (const c of chunks) {
    total += c.text.length;
    if (total > limits.maxChars)
      return [
        {
          code: 'page-too-large',
          detail: `the provided chunks hold more than ${limits.maxChars} chars, over the page limit`,
        },
      ];
  }
  for (const c of chunks) {
    const r = screenPage({ ...input, text: c.text }, limits).filter((x) => x.code !== EMPTY_BODY);
    if (r.length > 0) return r;
  }
  return [];
}
