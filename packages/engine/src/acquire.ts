import {
  type AcquisitionMode,
  errorMessage,
  type FetchValidators,
  type Reason,
} from '@ragfresh/core';
import type { PageInput } from '@ragfresh/extract';
import {
  type Fetcher,
  type FetchResult,
  fetchFailureReason,
  type NotModifiedResult,
  type OkResult,
} from '@ragfresh/fetch';
import { type Classified, isAppShell } from './classify.js';
import type { AcquisitionSetting, PageRenderer } from './types.js';

/** One URL to acquire, with what the last good observation left behind. */
export interface AcquireRequest {
  readonly url: string;
  /** Current pipeline key: validators recorded under another one are not sent. */
  readonly pipelineKey?: string;
  /** Stored validators for a conditional request (omit for an unconditional one). */
  readonly validators?: FetchValidators;
  readonly sourceId?: string;
  readonly acquisition?: AcquisitionSetting;
  readonly markdownTwin?: boolean;
  readonly proxy?: { readonly url: string; readonly region?: string };
  readonly signal?: AbortSignal;
}

export interface AcquireDeps {
  readonly fetcher: Pick<Fetcher, 'fetch'>;
  /** Launches (once) a headless browser for `rendered` / `auto`; absent = rendering unavailable. */
  readonly renderer?: () => Promise<PageRenderer>;
  /** Called after every successful render (metrics). */
  readonly onRender?: () => void;
}

/** Classification, extraction and chunking of a decoded page, one parse (the caller's pipeline). */
export type ProcessPage<O> = (input: PageInput, fetched: OkResult) => O | Promise<O>;

export type Acquisition<O> =
  /** 304: the stored version is still the page; nothing downstream runs. */
  | { readonly kind: 'not-modified'; readonly result: NotModifiedResult }
  /** 404/410: gone evidence for the requested URL. */
  | { readonly kind: 'gone'; readonly result: FetchResult; readonly reason: Reason }
  /** No usable answer (5xx, 429, timeout, robots, off-host redirect, ...). */
  | { readonly kind: 'failed'; readonly result: FetchResult; readonly reason: Reason }
  /** The raw answer was fine, but the page could not be read the way the source asks (render failed). */
  | { readonly kind: 'unreadable'; readonly result: OkResult; readonly reasons: readonly Reason[] }
  | {
      readonly kind: 'page';
      readonly result: OkResult;
      readonly outcome: O;
      readonly acquisition: AcquisitionMode;
    };

function fetchOptions(req: AcquireRequest) {
  return {
    ...(req.pipelineKey === undefined ? {} : { pipelineKey: req.pipelineKey }),
    ...(req.validators === undefined ? {} : { validators: req.validators }),
    ...(req.sourceId === undefined ? {} : { sourceId: req.sourceId }),
    ...(req.markdownTwin === true ? { markdownTwin: true } : {}),
    ...(req.signal === undefined ? {} : { signal: req.signal }),
    ...(req.proxy === undefined
      ? {}
      : {
          proxy: {
            url: req.proxy.url,
            ...(req.proxy.region === undefined ? {} : { label: req.proxy.region }),
          },
        }),
  };
}

function rawInput(req: AcquireRequest, result: OkResult): PageInput {
  return {
    text: result.text,
    contentType: result.contentType,
    url: req.url,
    finalUrl: result.finalUrl,
    acquisition: result.acquisition,
  };
}

/**
 * Fetch or render, one decision. The conditional raw fetch (polite, robots, SSRF guard)
 * always decides whether anything changed: a 304 renders and parses nothing. Rendering only
 * replaces how a changed page is read: always (`rendered`), or when classification calls the
 * raw page an empty app shell (`auto`). The engine, the LangChain loader and live refresh all
 * come through here, each with its own `process`.
 */
export async function acquirePage<O extends Classified>(
  deps: AcquireDeps,
  req: AcquireRequest,
  process: ProcessPage<O>,
): Promise<Acquisition<O>> {
  const result = await deps.fetcher.fetch(req.url, fetchOptions(req));
  if (result.outcome === 'not-modified') return { kind: 'not-modified', result };
  if (result.outcome === 'gone')
    return { kind: 'gone', result, reason: fetchFailureReason(result) };
  if (result.outcome !== 'ok')
    return { kind: 'failed', result, reason: fetchFailureReason(result) };
  const mode = req.acquisition ?? 'raw';
  if (mode !== 'rendered') {
    const outcome = await process(rawInput(req, result), result);
    if (mode === 'raw' || !isAppShell(outcome))
      return { kind: 'page', result, outcome, acquisition: result.acquisition };
  }
  if (deps.renderer === undefined) {
    return {
      kind: 'unreadable',
      result,
      reasons: [
        { code: 'render-unavailable', detail: `acquisition "${mode}" needs @ragfresh/render` },
      ],
    };
  }
  let html: string;
  let finalUrl: string;
  try {
    ({ html, finalUrl } = await (await deps.renderer()).render(req.url));
  } catch (err) {
    return {
      kind: 'unreadable',
      result,
      reasons: [{ code: 'render-failed', detail: errorMessage(err) }],
    };
  }
  deps.onRender?.();
  const input: PageInput = {
    text: html,
    contentType: 'text/html',
    url: req.url,
    finalUrl,
    acquisition: 'rendered',
  };
  return { kind: 'page', result, outcome: await process(input, result), acquisition: 'rendered' };
}
