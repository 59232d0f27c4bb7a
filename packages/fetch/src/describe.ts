import type { FetchResult } from './result.js';

/**
 * One line per fetch failure, naming the outcome and what the server said. An SSRF refusal keeps
 * the guard's message, which names the allow-list setting (`fetch.allow` in the CLI).
 */
export function describeFetchFailure(r: FetchResult): string {
  switch (r.outcome) {
    case 'rate-limited':
      return `rate-limited: HTTP 429${r.retryAfterMs === undefined ? '' : `, retry after ${Math.round(r.retryAfterMs / 1000)}s`}`;
    case 'server-error':
      return `server-error: HTTP ${r.status}`;
    case 'off-host-redirect':
      return `off-host-redirect: to ${r.location}`;
    case 'timeout':
      return `timeout: ${r.phase}`;
    case 'network-error':
      return `network-error: ${r.error.code}`;
    case 'robots-disallowed':
      return `robots-disallowed: ${r.basis}${r.detail === undefined ? '' : ` (${r.detail})`}`;
    case 'unsupported-type':
      return `unsupported-type: ${r.contentType || 'none'}`;
    case 'too-large':
      return `too-large: over ${r.limitBytes} bytes`;
    case 'ssrf-refused':
      // The guard's message names the setting that would allow the address.
      return `ssrf-refused: ${r.error.message.replace(/^\[ragfresh\] \[[^\]]+\] /, '')}`;
    case 'circuit-open':
      return `circuit-open: the host failed repeatedly; next trial at ${r.retryAt}`;
    default:
      return `${r.outcome}: HTTP ${r.status}`;
  }
}
