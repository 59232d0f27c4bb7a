import type { AcquisitionMode, CharsetSource, FetchValidators, IsoTime } from '@ragfresh/core';

/** One redirect that was followed (or refused): the URL asked, its status and where it pointed. */
export interface RedirectHop {
  readonly url: string;
  readonly status: number;
  readonly location: string;
}

export interface FetchTimings {
  /** Waiting for slots, intervals, Retry-After blocks and backoff, all attempts together. */
  readonly queuedMs: number;
  /** From the last attempt's start to its response headers. */
  readonly headersMs?: number;
  /** Reading (and decompressing) the body. */
  readonly bodyMs?: number;
  /** The whole `fetch` call. */
  readonly totalMs: number;
}

export type FetchOutcome =
  | 'ok'
  | 'not-modified'
  | 'gone'
  | 'rate-limited'
  | 'forbidden'
  | 'proxy-auth'
  | 'server-error'
  | 'client-error'
  | 'timeout'
  | 'too-large'
  | 'unsupported-type'
  | 'redirect-loop'
  | 'off-host-redirect'
  | 'robots-disallowed'
  | 'network-error'
  | 'ssrf-refused'
  | 'circuit-open';

/** Fields every result has. */
export interface FetchResultBase {
  readonly outcome: FetchOutcome;
  /** The URL asked for. */
  readonly url: string;
  /** The URL the answer came from (after redirects), or the last URL tried. */
  readonly finalUrl: string;
  /** HTTP status of the final answer; 0 when there was none. */
  readonly status: number;
  /** Response headers of the final answer (lower-case names; repeated values joined by `, `). */
  readonly headers: Readonly<Record<string, string>>;
  readonly redirects: readonly RedirectHop[];
  /** True when a redirect left the requested host (followed or not). */
  readonly offHost: boolean;
  readonly fetchedAt: IsoTime;
  readonly timings: FetchTimings;
  /** Requests sent for the final URL (1 + retries). */
  readonly attempts: number;
  readonly acquisition: AcquisitionMode;
  /** Exit/region label of the proxy used, for provenance. */
  readonly region?: string;
  /** True when stored validators were dropped because the pipeline key changed. */
  readonly validatorsDropped: boolean;
}

export interface OkResult extends FetchResultBase {
  readonly outcome: 'ok';
  readonly contentType: string;
  /** Content-decoded body bytes (what the digest covers). */
  readonly body: Uint8Array;
  readonly text: string;
  readonly charset: string;
  readonly charsetSource: CharsetSource;
  /** sha256 hex of `body`; the raw snapshot key. */
  readonly rawDigest: string;
  /** Validators to store for the next conditional request (tagged with the pipeline key). */
  readonly validators: FetchValidators;
  /** Last-Modified as ISO time, when the header parsed. */
  readonly lastModifiedAt?: IsoTime;
}

export interface NotModifiedResult extends FetchResultBase {
  readonly outcome: 'not-modified';
  /** The validators still valid (refreshed from the 304's headers where present). */
  readonly validators: FetchValidators;
}

export interface HttpStatusResult extends FetchResultBase {
  readonly outcome: 'gone' | 'forbidden' | 'proxy-auth' | 'server-error' | 'client-error';
}

export interface RateLimitedResult extends FetchResultBase {
  readonly outcome: 'rate-limited';
  /** Retry-After as a delay, when the server sent one. */
  readonly retryAfterMs?: number;
}

export interface TimeoutResult extends FetchResultBase {
  readonly outcome: 'timeout';
  /** `headers`: no response headers in time; `body`: the body stalled; `total`: the whole attempt ran out. */
  readonly phase: 'headers' | 'body' | 'total';
}

export interface TooLargeResult extends FetchResultBase {
  readonly outcome: 'too-large';
  readonly limitBytes: number;
  /** Decoded bytes seen before stopping, or the declared Content-Length. */
  readonly seenBytes: number;
}

export interface UnsupportedTypeResult extends FetchResultBase {
  readonly outcome: 'unsupported-type';
  /** The Content-Type that was refused ('' when none was sent); the body was not read. */
  readonly contentType: string;
}

export interface RedirectLoopResult extends FetchResultBase {
  readonly outcome: 'redirect-loop';
  readonly reason: 'loop' | 'max-hops' | 'invalid-location';
}

export interface OffHostRedirectResult extends FetchResultBase {
  readonly outcome: 'off-host-redirect';
  /** Where the refused redirect pointed. */
  readonly location: string;
}

export interface RobotsDisallowedResult extends FetchResultBase {
  readonly outcome: 'robots-disallowed';
  /** `rules`: robots.txt disallows the path; `unreachable`: robots.txt answered 5xx or not at all. */
  readonly basis: 'rules' | 'unreachable';
  /** Why robots.txt was unreachable, when the network policy refused it (names the allow-list setting). */
  readonly detail?: string;
}

export interface NetworkErrorResult extends FetchResultBase {
  readonly outcome: 'network-error';
  /** Error code (`ECONNREFUSED`, `UND_ERR_SOCKET`, ...) and message. */
  readonly error: { readonly code: string; readonly message: string };
}

export interface SsrfRefusedResult extends FetchResultBase {
  readonly outcome: 'ssrf-refused';
  readonly error: {
    readonly code: 'SSRF_REFUSED';
    readonly message: string;
    readonly address?: string;
    readonly reason?: string;
  };
}

export interface CircuitOpenResult extends FetchResultBase {
  readonly outcome: 'circuit-open';
  /** When the host's circuit allows a trial request again. */
  readonly retryAt: IsoTime;
}

/** Every way a fetch ends; discriminate on `outcome`. Ordinary HTTP outcomes never throw. */
export type FetchResult =
  | OkResult
  | NotModifiedResult
  | HttpStatusResult
  | RateLimitedResult
  | TimeoutResult
  | TooLargeResult
  | UnsupportedTypeResult
  | RedirectLoopResult
  | OffHostRedirectResult
  | RobotsDisallowedResult
  | NetworkErrorResult
  | SsrfRefusedResult
  | CircuitOpenResult;
