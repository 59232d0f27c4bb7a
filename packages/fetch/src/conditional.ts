import type { FetchValidators } from '@ragfresh/core';

/** An entity tag as sent on the wire: `"abc"` or weak `W/"abc"`; a bare token gets quoted. */
export function normalizeEtag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  const weak = /^w\//i.test(v);
  const opaque = weak ? v.slice(2) : v;
  const quoted =
    opaque.startsWith('"') && opaque.endsWith('"') && opaque.length >= 2
      ? opaque
      : `"${opaque.replace(/"/g, '')}"`;
  return weak ? `W/${quoted}` : quoted;
}

/** True for a weak entity tag (`W/"…"`); If-None-Match compares weakly, so it is still sent. */
export function isWeakEtag(etag: string): boolean {
  return /^w\//i.test(etag.trim());
}

/**
 * The validators usable for this request: none when they were recorded under another pipeline
 * key (a new extractor/chunker must see the full body again).
 */
export function usableValidators(
  validators: FetchValidators | undefined,
  pipelineKey: string | undefined,
): { readonly validators: FetchValidators | undefined; readonly dropped: boolean } {
  if (validators === undefined) return { validators: undefined, dropped: false };
  if (pipelineKey !== undefined && validators.pipelineKey !== pipelineKey) {
    return {
      validators: undefined,
      dropped: validators.etag !== undefined || validators.lastModified !== undefined,
    };
  }
  return { validators, dropped: false };
}

/** If-None-Match / If-Modified-Since for stored validators. */
export function conditionalHeaders(
  validators: FetchValidators | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (validators === undefined) return headers;
  const etag = normalizeEtag(validators.etag);
  if (etag !== undefined) headers['if-none-match'] = etag;
  // RFC 9110: a recipient must ignore If-Modified-Since when If-None-Match is present, but sending
  // both helps servers that only implement dates. An unparseable date is not sent.
  if (validators.lastModified !== undefined && !Number.isNaN(Date.parse(validators.lastModified))) {
    headers['if-modified-since'] = validators.lastModified;
  }
  return headers;
}

/** Validators from a response's headers, tagged with the pipeline key; `fallback` fills gaps (304s). */
export function validatorsFrom(
  headers: Readonly<Record<string, string>>,
  pipelineKey: string | undefined,
  fallback?: FetchValidators,
): FetchValidators {
  const etag = normalizeEtag(headers.etag) ?? fallback?.etag;
  const lm = headers['last-modified'];
  const lastModified =
    lm !== undefined && !Number.isNaN(Date.parse(lm)) ? lm : fallback?.lastModified;
  const key = pipelineKey ?? fallback?.pipelineKey;
  return {
    ...(etag === undefined ? {} : { etag }),
    ...(lastModified === undefined ? {} : { lastModified }),
    ...(key === undefined ? {} : { pipelineKey: key }),
  };
}
