import { type Reason, reasonLine } from '@ragfresh/core';
import type { FetchResult } from './result.js';

/**
 * Why a fetch failed, typed: the outcome as code, what the server said as detail. An SSRF refusal
 * keeps the guard's message, which names the allow-list setting (`fetch.allow` in the CLI).
 */
export function fetchFailureReason(r: FetchResult): Reason {
  switch (r.outcome) {
    case 'rate-limited':
      return {
        code: 'rate-limited',
        detail: `HTTP 429${r.retryAfterMs === undefined ? '' : `, retry after ${Math.round(r.retryAfterMs / 1000)}s`}`,
      };
    case 'server-error':
      return { code: 'server-error', detail: `HTTP ${r.status}` };
    case 'off-host-redirect':
      return { code: 'off-host-redirect', detail: `to ${r.location}` };
    case 'timeout':
      return { code: 'timeout', detail: `${r.phase}` };
    case 'network-error':
      return { code: 'network-error', detail: `${r.error.code}` };
    case 'robots-disallowed':
      return {
        code: 'robots-disallowed',
        detail: `${r.basis}${r.detail === undefined ? '' : ` (${r.detail})`}`,
      };
    case 'unsupported-type':
      return { code: 'unsupported-type', detail: `${r.contentType || 'none'}` };
    case 'too-large':
      return { code: 'too-large', detail: `over ${r.limitBytes} bytes` };
    case 'ssrf-refused':
      // The guard's message names the setting that would allow the address.
      return {
        code: 'ssrf-refused',
        detail: `${r.error.message.replace(/^\[ragfresh\] \[[^\]]+\] /, '')}`,
      };
    case 'circuit-open':
      return {
        code: 'circuit-open',
        detail: `the host failed repeatedly; next trial at ${r.retryAt}`,
      };
    default:
      return { code: r.outcome, detail: `HTTP ${r.status}` };
  }
}

/** One line per fetch failure (`reasonLine` of `fetchFailureReason`). */
export function describeFetchFailure(r: FetchResult): string {
  return reasonLine(fetchFailureReason(r));
}
