import type { Readable } from 'node:stream';
import {
  type AcquisitionMode,
  decodeBody,
  type FetchValidators,
  isRagfreshError,
  parseHttpUrl,
  RagfreshError,
  sha256Hex,
} from '@ragfresh/core';
import { Agent, type Dispatcher, ProxyAgent } from 'undici';
import { discard, isSupportedEncoding, parseContentEncoding, readBody } from './body.js';
import { conditionalHeaders, usableValidators, validatorsFrom } from './conditional.js';
import {
  type BackoffPolicy,
  backoffDelay,
  type CircuitBreakerOptions,
  HostGate,
  type Permit,
  parseRetryAfter,
  sleep,
} from './politeness.js';
import type { PolitenessGate } from './politeness-shared.js';
import type {
  FetchOutcome,
  FetchResult,
  FetchResultBase,
  FetchTimings,
  RedirectHop,
  TimeoutResult,
} from './result.js';
import { RobotsCache, type RobotsDecision, type RobotsOptions } from './robots.js';
import type { RawSnapshotStore } from './snapshots/index.js';
import { type NetworkPolicy, type Resolver, SsrfGuard } from './ssrf.js';

/** Content types fetched and decoded by default; anything else is `unsupported-type`. */
export const DEFAULT_CONTENT_TYPES: readonly string[] = Object.freeze([
  'text/html',
  'application/xhtml+xml',
  'text/markdown',
  'text/x-markdown',
  'text/plain',
  'application/xml',
  'text/xml',
]);

/** A forward proxy (undici ProxyAgent) and the exit/region label reported in results. */
export interface ProxyConfig {
  /** Proxy URL, e.g. `http://proxy.internal:3128`. */
  readonly url: string;
  /** Exit/region label for provenance (`eu-west`, `residential-de`). */
  readonly label?: string;
  /** Value of Proxy-Authorization, if the proxy needs one. */
  readonly token?: string;
}

export interface RetryOptions extends BackoffPolicy {
  /** Requests per URL including the first. Default 3. */
  readonly maxAttempts?: number;
  /** A Retry-After longer than this is not waited for: the result is returned (the host stays blocked). Default 120 s. */
  readonly maxRetryAfterMs?: number;
}

export interface MarkdownTwinOptions {
  /** Candidate twin URLs for a page. Default: `<path>.md`, or `<path>index.md` for a path ending in `/`. */
  readonly candidates?: (url: URL) => readonly string[];
  /** Content types accepted as a twin. Default text/markdown, text/x-markdown, text/plain. */
  readonly contentTypes?: readonly string[];
  /** After this many misses on an origin without a hit, stop trying twins there. Default 3. */
  readonly giveUpAfterMisses?: number;
}

export interface FetcherOptions {
  /**
   * Required. Sent on every request and matched against robots.txt; must name a contact URL,
   * e.g. `ragfresh/0.1 (+https://example.org/bot)`.
   */
  readonly userAgent: string;
  /** Product token matched against robots.txt groups. Default: the User-Agent's first token. */
  readonly robotsToken?: string;
  /** robots.txt handling; `false` ignores robots.txt (only for your own sites and benchmarks). */
  readonly robots?: RobotsOptions | false;
  /** Requests in flight across all hosts. Default 16. */
  readonly globalConcurrency?: number;
  /** Requests in flight per host. Default 2 (1 is effectively forced while an interval applies). */
  readonly perHostConcurrency?: number;
  /** Minimum time between request starts on one host. Default 1000 ms; 0 turns politeness off. */
  readonly minIntervalMs?: number;
  readonly connectTimeoutMs?: number;
  /** Time to response headers. Default 30 s. */
  readonly headersTimeoutMs?: number;
  /** Longest silence while reading the body. Default 30 s. */
  readonly bodyTimeoutMs?: number;
  /** Whole attempt (headers and body). Default 120 s. */
  readonly totalTimeoutMs?: number;
  readonly retry?: RetryOptions;
  readonly circuitBreaker?: CircuitBreakerOptions;
  /** Cap on DECODED body bytes. Default 10 MiB. */
  readonly maxBytes?: number;
  readonly allowedContentTypes?: readonly string[];
  readonly network?: NetworkPolicy;
  /** DNS resolver for the SSRF guard and the connect hook. Default `dns.lookup(all)`. */
  readonly resolver?: Resolver;
  readonly redirects?: {
    /** Redirects followed before giving up with `redirect-loop` (reason max-hops). Default 5. */
    readonly maxHops?: number;
    /** What to do when a redirect leaves the requested host. Default `refuse`. */
    readonly offHost?: 'refuse' | 'follow';
  };
  /** Where successful bodies are kept, content-addressed. Default: not kept. */
  readonly snapshots?: RawSnapshotStore;
  /** [0, 1) source for backoff jitter (inject `seededRandom(n)` in tests). Default Math.random. */
  readonly random?: () => number;
  /** Extra headers on every request. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Proxy for every request unless a request (or its source) names its own. */
  readonly proxy?: ProxyConfig;
  /** Proxy per source id, used for requests that pass `sourceId`. */
  readonly sourceProxies?: Readonly<Record<string, ProxyConfig>>;
  /** Extra trust roots for https (an intranet CA, a test certificate). */
  readonly tls?: { readonly ca?: string | Buffer | ReadonlyArray<string | Buffer> };
  /** Markdown-twin settings used when a request asks for `markdownTwin: true`. */
  readonly markdownTwin?: MarkdownTwinOptions;
  /**
   * Per-host politeness shared with other fetchers (e.g. `RedisPolitenessGate`): interval,
   * per-host concurrency and Retry-After blocks hold across all of them. Default: this process only.
   */
  readonly politeness?: PolitenessGate;
}

export interface FetchOptions {
  /** Stored validators; sent as If-None-Match / If-Modified-Since. */
  readonly validators?: FetchValidators;
  /** Current pipeline key (extractor/chunker versions); validators recorded under another key are dropped. */
  readonly pipelineKey?: string;
  readonly signal?: AbortSignal;
  /** Proxy for this request; `null` forces a direct connection. */
  readonly proxy?: ProxyConfig | null;
  /** The source this request belongs to; selects `sourceProxies[sourceId]`. */
  readonly sourceId?: string;
  readonly allowedContentTypes?: readonly string[];
  readonly maxBytes?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** Override the fetcher's off-host redirect policy. */
  readonly offHostRedirects?: 'refuse' | 'follow';
  /** Try a Markdown twin (`page.md`, `dir/index.md`) first; acquisition `markdown-twin` when it exists. */
  readonly markdownTwin?: boolean;
  /** How the stored validators were acquired; they are sent to the twin only when it was `markdown-twin`. */
  readonly lastAcquisition?: AcquisitionMode;
  /**
   * This request's bound on waiting out a Retry-After (or a host block), instead of the
   * fetcher's `retry.maxRetryAfterMs`: a longer one is reported (`retryAfterMs`), not waited for.
   */
  readonly maxRetryAfterMs?: number;
}

const CONTACT_URL = /\bhttps?:\/\/[^\s)>"]+/i;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const DRAIN_LIMIT = 64 * 1024;

function positiveInt(name: string, value: number | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < min || Math.floor(value) !== value) {
    throw new RagfreshError(
      'INVALID_CONFIG',
      `fetch option ${name} must be an integer >= ${min}, got ${value}.`,
      { scope: 'fetch' },
    );
  }
  return value;
}

function flattenHeaders(
  raw: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function essence(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * Same host: equal `host` (name and explicit port) after dropping a leading `www.`, so
 * http://example.org -> https://www.example.org stays on host (default ports are implicit) but a
 * different port is another host, as it is for politeness and robots.txt.
 */
function sameHost(a: URL, b: URL): boolean {
  const strip = (h: string): string => h.toLowerCase().replace(/^www\./, '');
  return strip(a.host) === strip(b.host);
}

function errorCode(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  if (typeof e?.code === 'string') return e.code;
  if (typeof e?.cause?.code === 'string') return e.cause.code;
  return err instanceof Error ? err.name : 'UNKNOWN';
}

function findSsrf(err: unknown): RagfreshError | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e !== undefined && e !== null; i++) {
    if (isRagfreshError(e, 'SSRF_REFUSED')) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** What one attempt ended with, before the result is assembled. */
type AttemptEnd =
  | {
      readonly kind: 'redirect';
      readonly status: number;
      readonly location: string;
      readonly headers: Record<string, string>;
    }
  | {
      readonly kind: 'final';
      readonly outcome: FetchOutcome;
      readonly status: number;
      readonly headers: Record<string, string>;
      readonly extra: Record<string, unknown>;
      readonly headersMs?: number;
      readonly bodyMs?: number;
      /** Block every request to the host for this long (Retry-After, 429/503 backoff). */
      readonly hostBlockMs?: number;
      /** Set when the attempt may be retried, after sleeping this long (and any host block). */
      readonly retry?: { readonly sleepMs: number };
    };

interface Ctx {
  queuedMs: number;
  attempts: number;
  fetchedAt: number;
}

interface Resolved {
  readonly signal: AbortSignal | undefined;
  readonly dispatcher: Dispatcher;
  readonly region: string | undefined;
  readonly contentTypes: readonly string[];
  readonly maxBytes: number;
  readonly headers: Record<string, string>;
  readonly validators: FetchValidators | undefined;
  readonly pipelineKey: string | undefined;
  readonly offHost: 'refuse' | 'follow';
  readonly validatorsDropped: boolean;
  readonly maxRetryAfterMs: number;
}

/**
 * Polite, conditional, safe HTTP GETs on one undici Agent (a connection pool per origin).
 * Every ordinary HTTP ending is a typed `FetchResult`; `fetch` throws only for a bad URL
 * (INVALID_URL, URL_CREDENTIALS), an aborted signal (its reason) or a failing snapshot store.
 */
export class Fetcher {
  readonly userAgent: string;
  readonly robotsToken: string;
  readonly #agent: Agent;
  readonly #proxies = new Map<string, ProxyAgent>();
  readonly #gate: HostGate;
  readonly #politeness: PolitenessGate | undefined;
  readonly #guard: SsrfGuard;
  readonly #robots: RobotsCache | undefined;
  /** Origins whose robots.txt the network policy refused (a redirect elsewhere): why, for the page's refusal. */
  readonly #robotsRefusals = new Map<string, string>();
  readonly #robotsOptions: RobotsOptions;
  readonly #random: () => number;
  readonly #maxAttempts: number;
  readonly #retry: RetryOptions;
  readonly #maxBytes: number;
  readonly #maxHops: number;
  readonly #headersTimeout: number;
  readonly #bodyTimeout: number;
  readonly #totalTimeout: number;
  readonly #twinMisses = new Map<string, { misses: number; hits: number }>();
  #closed = false;
  readonly #ca: string | Buffer | Array<string | Buffer> | undefined;

  constructor(readonly options: FetcherOptions) {
    const ua = options?.userAgent;
    if (typeof ua !== 'string' || ua.trim() === '' || /[\r\n]/.test(ua) || !CONTACT_URL.test(ua)) {
      throw new RagfreshError(
        'INVALID_CONFIG',
        `userAgent ${JSON.stringify(ua)} must name a contact URL, e.g. "ragfresh/0.1 (+https://example.org/bot)"; site owners need a way to reach you.`,
        { scope: 'fetch' },
      );
    }
    this.userAgent = ua.trim();
    this.robotsToken = (
      options.robotsToken ??
      this.userAgent.split(/[\s/]/)[0] ??
      'ragfresh'
    ).toLowerCase();
    const perHost = positiveInt('perHostConcurrency', options.perHostConcurrency, 2);
    this.#politeness = options.politeness;
    this.#gate = new HostGate({
      globalConcurrency: positiveInt('globalConcurrency', options.globalConcurrency, 16),
      perHostConcurrency: perHost,
      minIntervalMs: positiveInt('minIntervalMs', options.minIntervalMs, 1000, 0),
      ...(options.politeness === undefined
        ? {}
        : {
            shared: options.politeness,
            sharedMaxHoldMs: 2 * positiveInt('totalTimeoutMs', options.totalTimeoutMs, 120_000),
          }),
      breaker: {
        failureThreshold: positiveInt(
          'circuitBreaker.failureThreshold',
          options.circuitBreaker?.failureThreshold,
          5,
        ),
        cooldownMs: positiveInt(
          'circuitBreaker.cooldownMs',
          options.circuitBreaker?.cooldownMs,
          60_000,
          0,
        ),
      },
    });
    this.#guard = new SsrfGuard(options.network ?? {}, options.resolver);
    this.#robotsOptions = options.robots === false ? {} : (options.robots ?? {});
    this.#robots =
      options.robots === false ? undefined : new RobotsCache(this.#robotsOptions, this.robotsToken);
    this.#random = options.random ?? Math.random;
    this.#retry = options.retry ?? {};
    this.#maxAttempts = positiveInt('retry.maxAttempts', options.retry?.maxAttempts, 3);
    this.#maxBytes = positiveInt('maxBytes', options.maxBytes, 10 * 1024 * 1024);
    this.#maxHops = positiveInt('redirects.maxHops', options.redirects?.maxHops, 5, 0);
    this.#headersTimeout = positiveInt('headersTimeoutMs', options.headersTimeoutMs, 30_000);
    this.#bodyTimeout = positiveInt('bodyTimeoutMs', options.bodyTimeoutMs, 30_000);
    this.#totalTimeout = positiveInt('totalTimeoutMs', options.totalTimeoutMs, 120_000);
    const connectTimeout = positiveInt('connectTimeoutMs', options.connectTimeoutMs, 10_000);
    const ca = options.tls?.ca;
    this.#ca =
      ca === undefined ? undefined : typeof ca === 'string' || Buffer.isBuffer(ca) ? ca : [...ca];
    this.#agent = new Agent({
      connections: perHost,
      headersTimeout: this.#headersTimeout,
      bodyTimeout: this.#bodyTimeout,
      connect: {
        timeout: connectTimeout,
        ...(this.#ca === undefined ? {} : { ca: this.#ca }),
        // The connect hook re-checks the addresses the socket will use, so a DNS answer that changed
        // since the pre-check (rebinding) is refused too; it also routes connects through `resolver`.
        lookup: this.#guard.lookup,
      },
    });
  }

  /** Politeness state of a host (`host:port`), for reports and tests. */
  hostState(host: string): {
    readonly intervalMs: number;
    readonly blockedUntil: number;
    readonly requests: number;
  } {
    const s = this.#gate.host(host);
    return {
      intervalMs: this.#gate.intervalOf(host),
      blockedUntil: s.blockedUntil,
      requests: s.requests,
    };
  }

  /** Fetches `url`. Never throws for HTTP or network outcomes; see `FetchResult`. */
  async fetch(url: string, options: FetchOptions = {}): Promise<FetchResult> {
    if (this.#closed) {
      throw new RagfreshError('NOT_OPEN', 'this Fetcher was closed; create a new one.', {
        scope: 'fetch',
      });
    }
    const target = parseHttpUrl(url);
    options.signal?.throwIfAborted();
    if (options.markdownTwin === true) {
      const twin = await this.#tryMarkdownTwin(target, options);
      if (twin !== undefined) return twin;
      const useValidators = options.lastAcquisition !== 'markdown-twin';
      return this.#fetchUrl(
        target,
        useValidators ? options : { ...options, validators: undefined },
        'raw',
      );
    }
    return this.#fetchUrl(target, options, 'raw');
  }

  async #tryMarkdownTwin(target: URL, options: FetchOptions): Promise<FetchResult | undefined> {
    const cfg = this.options.markdownTwin ?? {};
    const stats = this.#twinMisses.get(target.origin) ?? { misses: 0, hits: 0 };
    this.#twinMisses.set(target.origin, stats);
    if (stats.hits === 0 && stats.misses >= (cfg.giveUpAfterMisses ?? 3)) return undefined;
    const candidates = (cfg.candidates ?? defaultTwinCandidates)(target);
    for (const candidate of candidates) {
      let twinUrl: URL;
      try {
        twinUrl = parseHttpUrl(candidate);
      } catch {
        continue;
      }
      const r = await this.#fetchUrl(
        twinUrl,
        {
          ...options,
          allowedContentTypes: cfg.contentTypes ?? [
            'text/markdown',
            'text/x-markdown',
            'text/plain',
          ],
          validators: options.lastAcquisition === 'markdown-twin' ? options.validators : undefined,
          offHostRedirects: 'refuse',
        },
        'markdown-twin',
      );
      const looksLikeHtml =
        r.outcome === 'ok' && /^\s*(<!doctype html|<html[\s>])/i.test(r.text.slice(0, 512));
      if ((r.outcome === 'ok' && !looksLikeHtml) || r.outcome === 'not-modified') {
        stats.hits++;
        return { ...r, url: target.href };
      }
    }
    stats.misses++;
    return undefined;
  }

  #resolve(options: FetchOptions): Resolved {
    const bySource =
      options.sourceId === undefined ? undefined : this.options.sourceProxies?.[options.sourceId];
    const proxy =
      options.proxy === null ? undefined : (options.proxy ?? bySource ?? this.options.proxy);
    const { validators, dropped } = usableValidators(options.validators, options.pipelineKey);
    return {
      signal: options.signal,
      dispatcher: proxy === undefined ? this.#agent : this.#proxyAgent(proxy),
      region: proxy?.label,
      contentTypes: (
        options.allowedContentTypes ??
        this.options.allowedContentTypes ??
        DEFAULT_CONTENT_TYPES
      ).map((t) => t.toLowerCase()),
      maxBytes: options.maxBytes ?? this.#maxBytes,
      headers: {
        'user-agent': this.userAgent,
        'accept-encoding': 'gzip, deflate, br',
        ...lowerKeys(this.options.headers),
        ...lowerKeys(options.headers),
        ...conditionalHeaders(validators),
      },
      validators: dropped ? undefined : validators,
      pipelineKey: options.pipelineKey,
      offHost: options.offHostRedirects ?? this.options.redirects?.offHost ?? 'refuse',
      validatorsDropped: dropped,
      maxRetryAfterMs: options.maxRetryAfterMs ?? this.#retry.maxRetryAfterMs ?? 120_000,
    };
  }

  #proxyAgent(proxy: ProxyConfig): ProxyAgent {
    const key = `${proxy.url}\u0000${proxy.token ?? ''}`;
    let agent = this.#proxies.get(key);
    if (agent === undefined) {
      agent = new ProxyAgent({
        uri: proxy.url,
        ...(proxy.token === undefined ? {} : { token: proxy.token }),
        connections: this.#gate.options.perHostConcurrency,
        ...(this.#ca === undefined ? {} : { requestTls: { ca: this.#ca } }),
        headersTimeout: this.#headersTimeout,
        bodyTimeout: this.#bodyTimeout,
      });
      this.#proxies.set(key, agent);
    }
    return agent;
  }

  async #fetchUrl(
    requested: URL,
    options: FetchOptions,
    acquisition: AcquisitionMode,
  ): Promise<FetchResult> {
    const startedAt = Date.now();
    const r = this.#resolve(options);
    const ctx: Ctx = { queuedMs: 0, attempts: 0, fetchedAt: startedAt };
    const redirects: RedirectHop[] = [];
    const seen = new Set<string>([requested.href]);
    let current = requested;
    let offHost = false;

    const finish = (
      outcome: FetchOutcome,
      status: number,
      headers: Record<string, string>,
      extra: Record<string, unknown>,
      t: { headersMs?: number; bodyMs?: number } = {},
    ): FetchResult => {
      const timings: FetchTimings = {
        queuedMs: ctx.queuedMs,
        ...(t.headersMs === undefined ? {} : { headersMs: t.headersMs }),
        ...(t.bodyMs === undefined ? {} : { bodyMs: t.bodyMs }),
        totalMs: Date.now() - startedAt,
      };
      const base: FetchResultBase = {
        outcome,
        url: requested.href,
        finalUrl: current.href,
        status,
        headers,
        redirects,
        offHost,
        fetchedAt: new Date(ctx.fetchedAt).toISOString(),
        timings,
        attempts: ctx.attempts,
        acquisition,
        ...(r.region === undefined ? {} : { region: r.region }),
        validatorsDropped: r.validatorsDropped,
      };
      return { ...base, ...extra } as FetchResult;
    };

    for (;;) {
      const end = await this.#attempts(current, r, ctx);
      if (end.kind === 'final') {
        if (end.outcome === 'ok') {
          const ok = end.extra as { body: Uint8Array; contentType: string };
          const digest = sha256Hex(ok.body);
          const snapshots = this.options.snapshots;
          if (snapshots !== undefined) {
            await snapshots.put(ok.body, {
              url: requested.href,
              finalUrl: current.href,
              status: end.status,
              fetchedAt: new Date(ctx.fetchedAt).toISOString(),
              headers: end.headers,
              contentType: ok.contentType,
              ...(r.region === undefined ? {} : { region: r.region }),
            });
          }
          const decoded = decodeBody(ok.body, ok.contentType);
          const lm = end.headers['last-modified'];
          const lmTime = lm === undefined ? Number.NaN : Date.parse(lm);
          return finish(
            'ok',
            end.status,
            end.headers,
            {
              ...end.extra,
              text: decoded.text,
              charset: decoded.charset,
              charsetSource: decoded.charsetSource,
              rawDigest: digest,
              validators: validatorsFrom(end.headers, r.pipelineKey),
              ...(Number.isNaN(lmTime) ? {} : { lastModifiedAt: new Date(lmTime).toISOString() }),
            },
            end,
          );
        }
        if (end.outcome === 'not-modified') {
          return finish(
            'not-modified',
            end.status,
            end.headers,
            {
              validators: validatorsFrom(end.headers, r.pipelineKey, r.validators),
            },
            end,
          );
        }
        return finish(end.outcome, end.status, end.headers, end.extra, end);
      }
      let next: URL;
      try {
        next = parseHttpUrl(new URL(end.location, current).href);
      } catch {
        redirects.push({ url: current.href, status: end.status, location: end.location });
        return finish('redirect-loop', end.status, end.headers, { reason: 'invalid-location' });
      }
      redirects.push({ url: current.href, status: end.status, location: next.href });
      if (seen.has(next.href))
        return finish('redirect-loop', end.status, end.headers, { reason: 'loop' });
      if (redirects.length > this.#maxHops)
        return finish('redirect-loop', end.status, end.headers, { reason: 'max-hops' });
      if (!sameHost(requested, next)) {
        offHost = true;
        if (r.offHost === 'refuse')
          return finish('off-host-redirect', end.status, end.headers, { location: next.href });
      }
      seen.add(next.href);
      current = next;
    }
  }

  /** One URL: SSRF check, robots, circuit breaker, politeness, then the request, with retries. */
  async #attempts(url: URL, r: Resolved, ctx: Ctx): Promise<AttemptEnd> {
    const host = url.host;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#guard.check(url);
      } catch (err) {
        const refusal = findSsrf(err);
        if (refusal !== undefined) return ssrfEnd(refusal);
        return final(
          'network-error',
          0,
          {},
          { error: { code: errorCode(err), message: String((err as Error).message ?? err) } },
        );
      }
      if (this.#robots !== undefined) {
        const decision: RobotsDecision = await this.#robots.decide(
          url,
          (origin, signal) => this.#fetchRobots(origin, r, signal),
          r.signal,
        );
        if (
          decision.crawlDelayMs !== undefined &&
          this.#robotsOptions.respectCrawlDelay !== false
        ) {
          this.#gate.setCrawlDelay(
            host,
            Math.min(decision.crawlDelayMs, this.#robotsOptions.maxCrawlDelayMs ?? 60_000),
          );
        }
        if (!decision.allowed) {
          const refused =
            decision.basis === 'rules' ? undefined : this.#robotsRefusals.get(url.origin);
          return final(
            'robots-disallowed',
            0,
            {},
            {
              basis: decision.basis === 'rules' ? 'rules' : 'unreachable',
              ...(refused === undefined ? {} : { detail: `robots.txt ${refused}` }),
            },
          );
        }
      }
      // Another fetcher's Retry-After blocks this host here too.
      if (this.#politeness !== undefined)
        this.#gate.block(host, Date.now() + (await this.#politeness.blockedFor(host)));
      // A host blocked (Retry-After) for longer than we would wait is reported, not waited for.
      const blockedMs = this.#gate.host(host).blockedUntil - Date.now();
      if (blockedMs > r.maxRetryAfterMs) {
        return final('rate-limited', 0, {}, { retryAfterMs: blockedMs });
      }
      const breaker = this.#gate.breakerAllows(host);
      if (!breaker.allowed) {
        return final('circuit-open', 0, {}, { retryAt: new Date(breaker.until).toISOString() });
      }
      let end: AttemptEnd;
      try {
        const permit = await this.#gate.acquire(host, r.signal);
        ctx.queuedMs += permit.queuedMs;
        ctx.attempts++;
        ctx.fetchedAt = permit.startedAt;
        end = await this.#exchange(url, r, permit, attempt);
      } catch (err) {
        // Aborted: give back a claimed half-open trial, or the circuit would stay shut for good.
        this.#gate.releaseTrial(host);
        throw err;
      }
      if (end.kind === 'final') {
        if (['server-error', 'timeout', 'network-error'].includes(end.outcome))
          this.#gate.recordFailure(host);
        else if (end.outcome !== 'rate-limited' && end.outcome !== 'ssrf-refused')
          this.#gate.recordSuccess(host);
      } else {
        this.#gate.recordSuccess(host);
      }
      if (end.kind === 'final' && end.hostBlockMs !== undefined) {
        this.#gate.block(host, Date.now() + end.hostBlockMs);
        await this.#politeness?.block(host, end.hostBlockMs);
      }
      if (end.kind === 'final' && end.retry !== undefined && attempt + 1 < this.#maxAttempts) {
        // The host block (if any) is waited for inside acquire(), where other hosts keep going.
        const t = Date.now();
        await sleep(end.retry.sleepMs, r.signal);
        ctx.queuedMs += Date.now() - t;
        continue;
      }
      return end;
    }
  }

  /** Sends one GET and classifies the answer. Releases the permit. */
  async #exchange(url: URL, r: Resolved, permit: Permit, attempt: number): Promise<AttemptEnd> {
    const timeout = AbortSignal.timeout(this.#totalTimeout);
    const signal = r.signal === undefined ? timeout : AbortSignal.any([r.signal, timeout]);
    const t0 = Date.now();
    let res: Dispatcher.ResponseData;
    try {
      res = await r.dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { ...r.headers, accept: acceptHeader(r.contentTypes) },
        signal,
        headersTimeout: this.#headersTimeout,
        bodyTimeout: this.#bodyTimeout,
      });
    } catch (err) {
      permit.release();
      if (r.signal?.aborted === true) throw r.signal.reason;
      return this.#errorEnd(err, timeout.aborted, attempt, { headersMs: Date.now() - t0 });
    }
    permit.answered();
    const headersMs = Date.now() - t0;
    const status = res.statusCode;
    const headers = flattenHeaders(res.headers);
    const drain = async (): Promise<void> => {
      try {
        await res.body.dump({ limit: DRAIN_LIMIT });
      } catch {
        discard(res.body as unknown as Readable);
      }
    };
    try {
      if (REDIRECT_STATUSES.has(status) && headers.location !== undefined) {
        await drain();
        return { kind: 'redirect', status, location: headers.location, headers };
      }
      if (status === 304) {
        // No body exists for a 304; dump only returns the connection to the pool.
        await drain();
        return final('not-modified', status, headers, {}, { headersMs });
      }
      if (status >= 200 && status < 300) {
        return await this.#readOk(r, res, status, headers, headersMs);
      }
      await drain();
      return this.#statusEnd(status, headers, headersMs, attempt, r.maxRetryAfterMs);
    } catch (err) {
      if (r.signal?.aborted === true) throw r.signal.reason;
      return this.#errorEnd(
        err,
        timeout.aborted,
        attempt,
        { headersMs, bodyMs: Date.now() - t0 - headersMs },
        status,
        headers,
      );
    } finally {
      permit.release();
    }
  }

  async #readOk(
    r: Resolved,
    res: Dispatcher.ResponseData,
    status: number,
    headers: Record<string, string>,
    headersMs: number,
  ): Promise<AttemptEnd> {
    const contentType = headers['content-type'] ?? '';
    const type = essence(contentType);
    if (!r.contentTypes.includes(type)) {
      discard(res.body as unknown as Readable);
      return final('unsupported-type', status, headers, { contentType }, { headersMs });
    }
    const codings = parseContentEncoding(headers['content-encoding']);
    if (codings.some((c) => !isSupportedEncoding(c))) {
      discard(res.body as unknown as Readable);
      return final('unsupported-type', status, headers, { contentType }, { headersMs });
    }
    const declared = Number(headers['content-length']);
    if (codings.length === 0 && Number.isFinite(declared) && declared > r.maxBytes) {
      discard(res.body as unknown as Readable);
      return final(
        'too-large',
        status,
        headers,
        { limitBytes: r.maxBytes, seenBytes: declared },
        { headersMs },
      );
    }
    const b0 = Date.now();
    const read = await readBody(res.body as unknown as Readable, codings, r.maxBytes);
    const bodyMs = Date.now() - b0;
    if (read.kind === 'too-large') {
      return final(
        'too-large',
        status,
        headers,
        { limitBytes: r.maxBytes, seenBytes: read.decodedBytesSeen },
        { headersMs, bodyMs },
      );
    }
    return final(
      'ok',
      status,
      headers,
      {
        contentType,
        body: new Uint8Array(read.bytes.buffer, read.bytes.byteOffset, read.bytes.byteLength),
      },
      { headersMs, bodyMs },
    );
  }

  #statusEnd(
    status: number,
    headers: Record<string, string>,
    headersMs: number,
    attempt: number,
    maxWait: number,
  ): AttemptEnd {
    const t = { headersMs };
    if (status === 404 || status === 410) return final('gone', status, headers, {}, t);
    if (status === 401 || status === 403) return final('forbidden', status, headers, {}, t);
    if (status === 407) return final('proxy-auth', status, headers, {}, t);
    const retryAfter = parseRetryAfter(headers['retry-after']);
    if (status === 429 || status === 503) {
      // Retry-After (or backoff) blocks this host only; other hosts keep their pace.
      const wait = retryAfter ?? backoffDelay(attempt, this.#retry, this.#random);
      const extra = retryAfter === undefined ? {} : { retryAfterMs: retryAfter };
      const outcome: FetchOutcome = status === 429 ? 'rate-limited' : 'server-error';
      return {
        ...final(outcome, status, headers, extra, t),
        hostBlockMs: Math.min(wait, 3600_000),
        // Longer than maxRetryAfterMs: report it now, keep the host blocked, do not retry.
        ...(wait > maxWait ? {} : { retry: { sleepMs: 0 } }),
      } as AttemptEnd;
    }
    if (status >= 500) {
      const retryable = status === 502 || status === 504;
      return {
        ...final('server-error', status, headers, {}, t),
        ...(retryable
          ? { retry: { sleepMs: backoffDelay(attempt, this.#retry, this.#random) } }
          : {}),
      } as AttemptEnd;
    }
    return final('client-error', status, headers, {}, t);
  }

  #errorEnd(
    err: unknown,
    totalTimedOut: boolean,
    attempt: number,
    t: { headersMs?: number; bodyMs?: number },
    status = 0,
    headers: Record<string, string> = {},
  ): AttemptEnd {
    const refusal = findSsrf(err);
    if (refusal !== undefined) return ssrfEnd(refusal);
    const code = errorCode(err);
    const message = err instanceof Error ? err.message : String(err);
    if (totalTimedOut)
      return final(
        'timeout',
        status,
        headers,
        { phase: 'total' } satisfies Partial<TimeoutResult>,
        t,
      );
    if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
      const retry = { sleepMs: backoffDelay(attempt, this.#retry, this.#random) };
      return { ...final('timeout', status, headers, { phase: 'headers' }, t), retry } as AttemptEnd;
    }
    if (code === 'UND_ERR_BODY_TIMEOUT')
      return final('timeout', status, headers, { phase: 'body' }, t);
    if (/\(407\)/.test(message)) return final('proxy-auth', 407, headers, {}, t);
    // Only failures before any response are retried: a reset mid-body may recur identically.
    const retry =
      status === 0 ? { sleepMs: backoffDelay(attempt, this.#retry, this.#random) } : undefined;
    return {
      ...final('network-error', status, headers, { error: { code, message } }, t),
      ...(retry === undefined ? {} : { retry }),
    } as AttemptEnd;
  }

  /** GET /robots.txt for an origin, following up to 5 redirects; status 0 when unreachable. */
  async #fetchRobots(
    origin: string,
    r: Resolved,
    signal?: AbortSignal,
  ): Promise<{ status: number; body: string }> {
    let url = new URL('/robots.txt', origin);
    const maxBytes = this.#robotsOptions.maxBytes ?? 512 * 1024;
    this.#robotsRefusals.delete(origin);
    for (let hop = 0; hop <= 5; hop++) {
      try {
        await this.#guard.check(url);
      } catch (err) {
        const refusal = findSsrf(err);
        if (refusal !== undefined)
          this.#robotsRefusals.set(
            origin,
            refusal.message.replace(/^\[ragfresh\] \[[^\]]+\] /, ''),
          );
        return { status: 0, body: '' };
      }
      const permit = await this.#gate.acquire(url.host, signal);
      let res: Dispatcher.ResponseData;
      try {
        res = await r.dispatcher.request({
          origin: url.origin,
          path: url.pathname,
          method: 'GET',
          headers: {
            'user-agent': this.userAgent,
            accept: 'text/plain, */*;q=0.1',
            'accept-encoding': 'gzip, deflate, br',
          },
          signal:
            signal === undefined
              ? AbortSignal.timeout(this.#totalTimeout)
              : AbortSignal.any([signal, AbortSignal.timeout(this.#totalTimeout)]),
        });
      } catch {
        permit.release();
        if (signal?.aborted === true) throw signal.reason;
        return { status: 0, body: '' };
      }
      permit.answered();
      try {
        const headers = flattenHeaders(res.headers);
        if (REDIRECT_STATUSES.has(res.statusCode) && headers.location !== undefined) {
          await res.body.dump({ limit: DRAIN_LIMIT });
          url = new URL(headers.location, url);
          continue;
        }
        if (res.statusCode >= 200 && res.statusCode < 300) {
          const read = await readBody(
            res.body as unknown as Readable,
            parseContentEncoding(headers['content-encoding']),
            maxBytes,
            'truncate',
          );
          const bytes = read.kind === 'complete' ? read.bytes : Buffer.alloc(0);
          return { status: res.statusCode, body: new TextDecoder('utf-8').decode(bytes) };
        }
        await res.body.dump({ limit: DRAIN_LIMIT });
        return { status: res.statusCode, body: '' };
      } catch {
        if (signal?.aborted === true) throw signal.reason;
        return { status: 0, body: '' };
      } finally {
        permit.release();
      }
    }
    // Too many redirects: RFC 9309 lets a crawler treat robots.txt as unavailable.
    return { status: 310, body: '' };
  }

  /** Closes every connection pool. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([this.#agent.close(), ...[...this.#proxies.values()].map((p) => p.close())]);
  }
}

function lowerKeys(h: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) out[k.toLowerCase()] = v;
  return out;
}

function acceptHeader(types: readonly string[]): string {
  return [...types, '*/*;q=0.1'].join(', ');
}

function final(
  outcome: FetchOutcome,
  status: number,
  headers: Record<string, string>,
  extra: Record<string, unknown>,
  t: { headersMs?: number; bodyMs?: number } = {},
): AttemptEnd {
  return { kind: 'final', outcome, status, headers, extra, ...t };
}

function ssrfEnd(refusal: RagfreshError): AttemptEnd {
  const d = refusal.details as { address?: string; reason?: string };
  return final(
    'ssrf-refused',
    0,
    {},
    {
      error: {
        code: 'SSRF_REFUSED',
        message: refusal.message,
        ...(d.address === undefined ? {} : { address: d.address }),
        ...(d.reason === undefined ? {} : { reason: d.reason }),
      },
    },
  );
}

/** `<path>.md`, or `<path>index.md` when the path ends in `/`; query and fragment dropped. */
export function defaultTwinCandidates(url: URL): string[] {
  const u = new URL(url.href);
  u.search = '';
  u.hash = '';
  if (u.pathname.endsWith('/')) return [`${u.origin}${u.pathname}index.md`];
  if (u.pathname.endsWith('.md')) return [];
  const base = u.pathname.replace(/\.html?$/i, '');
  return [`${u.origin}${base}.md`];
}
