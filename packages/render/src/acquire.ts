import { type AcquisitionMode, RagfreshError } from '@ragfresh/core';
import { type CheckReason, detectNotDocument } from '@ragfresh/extract';
import type { Renderer, RenderOptions } from './browser.js';
import { render } from './browser.js';

/** `auto` renders only when the raw HTML looks like an empty JavaScript app shell. */
export type AcquisitionChoice = 'raw' | 'rendered' | 'auto';

export interface RawPage {
  readonly html: string;
  readonly finalUrl: string;
  readonly status: number;
}

export interface AcquireOptions extends RenderOptions {
  readonly mode?: AcquisitionChoice;
  /** Fetches the raw HTML; default is a plain `fetch` (use @ragfresh/fetch for polite crawling). */
  readonly fetchRaw?: (url: string) => Promise<RawPage>;
  /** A running renderer to reuse; otherwise one is launched for the call. */
  readonly renderer?: Renderer;
}

export interface AcquiredHtml {
  readonly html: string;
  /** Which mode produced `html`: record it as the chunk provenance `acquisition`. */
  readonly mode: Extract<AcquisitionMode, 'raw' | 'rendered'>;
  readonly finalUrl: string;
  readonly status?: number;
  /** Why `auto` rendered (the detector's reasons on the raw HTML); empty otherwise. */
  readonly renderedBecause: readonly CheckReason[];
}

async function defaultFetchRaw(url: string): Promise<RawPage> {
  const res = await fetch(url, {
    redirect: 'follow',
    headers: { accept: 'text/html,application/xhtml+xml' },
  });
  return { html: await res.text(), finalUrl: res.url || url, status: res.status };
}

/** True when the detector calls the HTML an empty app shell. */
export function looksLikeAppShell(html: string): CheckReason | undefined {
  return detectNotDocument(html).reasons.find((r) => r.code === 'EMPTY_APP_SHELL');
}

/** Gets a page's HTML raw, rendered, or rendered only if the raw page is an empty app shell. */
export async function acquireHtml(
  url: string,
  options: AcquireOptions = {},
): Promise<AcquiredHtml> {
  const mode = options.mode ?? 'auto';
  if (mode !== 'raw' && mode !== 'rendered' && mode !== 'auto') {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `acquisition mode must be raw, rendered or auto, got ${JSON.stringify(mode)}.`,
      {
        scope: 'render',
      },
    );
  }
  const doRender = async (because: readonly CheckReason[]): Promise<AcquiredHtml> => {
    const r = options.renderer
      ? await options.renderer.render(url, options)
      : await render(url, options);
    return {
      html: r.html,
      mode: 'rendered',
      finalUrl: r.finalUrl,
      ...(r.status !== undefined ? { status: r.status } : {}),
      renderedBecause: because,
    };
  };
  if (mode === 'rendered') return doRender([]);
  const raw = await (options.fetchRaw ?? defaultFetchRaw)(url);
  if (mode === 'auto') {
    const shell = looksLikeAppShell(raw.html);
    if (shell) return doRender([shell]);
  }
  return {
    html: raw.html,
    mode: 'raw',
    finalUrl: raw.finalUrl,
    status: raw.status,
    renderedBecause: [],
  };
}
