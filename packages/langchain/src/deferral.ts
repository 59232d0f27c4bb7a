import type { Fetcher, FetchOptions, FetchResult } from '@ragfresh/fetch';

/** A host that asked (Retry-After, 429/503) to be left alone for longer than the loader waits. */
export interface DeferredHost {
  readonly host: string;
  /** How long the host asked to wait, from when the loader deferred it. */
  readonly retryAfterMs: number;
  /** Requests to it are not sent before this time (the fetcher's host block). */
  readonly until: string;
}

/** Thrown inside one load when a URL's host is deferred: the page keeps its last good copy. */
export class HostDeferred extends Error {
  constructor(readonly host: string) {
    super(`host ${host} deferred for this run (Retry-After)`);
  }
}

/**
 * One load's view of the fetcher: every request carries the loader's bound on waiting out a
 * Retry-After, and once a host answers with a longer one, its queued requests are aborted and
 * its remaining URLs are not requested at all in this run. Nothing sleeps through the wait.
 */
export class HostDeferrals {
  readonly #fetcher: Pick<Fetcher, 'fetch' | 'hostState'>;
  readonly #maxWaitMs: number;
  readonly #controllers = new Map<string, AbortController>();
  readonly #deferred = new Map<string, DeferredHost>();

  constructor(fetcher: Pick<Fetcher, 'fetch' | 'hostState'>, maxWaitMs: number) {
    this.#fetcher = fetcher;
    this.#maxWaitMs = maxWaitMs;
  }

  get deferred(): DeferredHost[] {
    return [...this.#deferred.values()];
  }

  isDeferred(url: string): boolean {
    return this.#deferred.has(hostOf(url));
  }

  /** The `fetch` that `acquirePage` is given. */
  readonly fetch = async (url: string, options: FetchOptions = {}): Promise<FetchResult> => {
    const host = hostOf(url);
    if (this.#deferred.has(host)) throw new HostDeferred(host);
    const controller = this.#controller(host);
    const signal =
      options.signal === undefined
        ? controller.signal
        : AbortSignal.any([options.signal, controller.signal]);
    let result: FetchResult;
    try {
      result = await this.#fetcher.fetch(url, {
        ...options,
        signal,
        maxRetryAfterMs: this.#maxWaitMs,
      });
    } catch (err) {
      if (controller.signal.aborted && options.signal?.aborted !== true)
        throw new HostDeferred(host);
      throw err;
    }
    if (result.outcome !== 'ok' && result.outcome !== 'not-modified') this.#check(host);
    return result;
  };

  #controller(host: string): AbortController {
    let c = this.#controllers.get(host);
    if (c === undefined) {
      c = new AbortController();
      this.#controllers.set(host, c);
    }
    return c;
  }

  #check(host: string): void {
    const blockedUntil = this.#fetcher.hostState(host).blockedUntil;
    const waitMs = blockedUntil - Date.now();
    if (waitMs <= this.#maxWaitMs || this.#deferred.has(host)) return;
    this.#deferred.set(host, {
      host,
      retryAfterMs: waitMs,
      until: new Date(blockedUntil).toISOString(),
    });
    this.#controller(host).abort(new HostDeferred(host));
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
