/**
 * Faults and serving modifiers: what a mutation does to how a path or a whole host answers
 * (deletions, outages, interstitials, redirects, slow or mis-declared bodies), checked on the
 * way in and turned into replies on the way out.
 */
import { gzipBomb } from './bomb.js';
import type { Site } from './content.js';
import { invalid } from './errors.js';
import { type Reply, redirect, text } from './http.js';
import {
  appShellHtml,
  challengeHtml,
  consentWallHtml,
  notFoundHtml,
  soft404Html,
} from './render.js';
import type { CharsetVariant, MutationKind, MutationOptions } from './types.js';

export interface Fault {
  readonly kind: MutationKind;
  readonly opts: MutationOptions;
  remaining: number | undefined;
}

export interface Modifiers {
  churn: boolean;
  slow: MutationOptions | undefined;
  charset: CharsetVariant | undefined;
}

/** What holds a fault and modifiers: one path's state, or a whole host. */
export interface Serving {
  fault: Fault | undefined;
  mods: Modifiers;
}

const FAULT_KINDS: ReadonlySet<MutationKind> = new Set<MutationKind>([
  'delete404',
  'delete410',
  'outage',
  'rateLimit',
  'consentWall',
  'challenge',
  'loginRedirect',
  'offHostRedirect',
  'soft404',
  'appShell',
  'gzipBomb',
]);
/** Mutations of a page's text rather than of how it is served. */
export const CONTENT_KINDS: ReadonlySet<MutationKind> = new Set<MutationKind>(['edit', 'shrink']);
const ALL_KINDS: ReadonlySet<MutationKind> = new Set<MutationKind>([
  ...FAULT_KINDS,
  ...CONTENT_KINDS,
  'timestampChurn',
  'slow',
  'wrongCharset',
  'restore',
]);
const CHARSET_VARIANTS: readonly CharsetVariant[] = [
  'header',
  'meta-only',
  'latin1',
  'latin1-meta-only',
];

export function noMods(): Modifiers {
  return { churn: false, slow: undefined, charset: undefined };
}

/** Throws INVALID_ARGUMENT for an unknown kind or an option out of range. */
export function checkKind(kind: MutationKind, opts: MutationOptions): void {
  if (!ALL_KINDS.has(kind)) {
    throw invalid(`unknown mutation kind "${kind}"; use one of ${[...ALL_KINDS].join(', ')}`);
  }
  if (opts.charset !== undefined && !CHARSET_VARIANTS.includes(opts.charset)) {
    throw invalid(`charset must be one of ${CHARSET_VARIANTS.join(', ')}, got "${opts.charset}"`);
  }
  const numeric: [keyof MutationOptions, number, number][] = [
    ['retryAfter', 0, 86_400 * 365],
    ['headerDelayMs', 0, 3_600_000],
    ['chunkDelayMs', 0, 3_600_000],
    ['chunkSize', 1, 1 << 30],
    ['inflatedBytes', 1, 2 ** 32],
    ['status', 100, 599],
  ];
  for (const [name, min, max] of numeric) {
    const value = opts[name];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw invalid(`${name} must be an integer in ${min}..${max}, got ${String(value)}`);
    }
  }
  if (opts.times !== undefined && (!Number.isInteger(opts.times) || opts.times < 1)) {
    throw invalid(`times must be an integer >= 1, got ${opts.times}`);
  }
}

/** Puts a serving mutation (a fault, a modifier, or `restore`) in place. */
export function applyServing(st: Serving, kind: MutationKind, opts: MutationOptions): void {
  if (FAULT_KINDS.has(kind)) {
    // Copied, so a caller reusing its options object cannot change a fault already in place.
    st.fault = { kind, opts: { ...opts }, remaining: opts.times };
  } else if (kind === 'timestampChurn') {
    st.mods = { ...st.mods, churn: true };
  } else if (kind === 'slow') {
    st.mods = { ...st.mods, slow: { ...opts } };
  } else if (kind === 'wrongCharset') {
    st.mods = { ...st.mods, charset: opts.charset ?? 'header' };
  } else if (kind === 'restore') {
    st.fault = undefined;
    st.mods = noMods();
  }
}

/** The fault in force, counting down a transient one (`times`). */
export function takeFault(holder: { fault: Fault | undefined }): Fault | undefined {
  const fault = holder.fault;
  if (fault === undefined) return undefined;
  if (fault.remaining !== undefined) {
    fault.remaining--;
    if (fault.remaining <= 0) holder.fault = undefined;
  }
  return fault;
}

export function mergeMods(host: Modifiers, path: Modifiers): Modifiers {
  return {
    churn: host.churn || path.churn,
    slow: path.slow ?? host.slow,
    charset: path.charset ?? host.charset,
  };
}

export function isDeletion(fault: Fault | undefined): boolean {
  return fault?.kind === 'delete404' || fault?.kind === 'delete410';
}

/** Where a faulting request is: its host, and the origin an off-host redirect sends it to. */
export interface FaultTarget {
  readonly site: Site;
  readonly origin: string;
  /** Another host's origin, or undefined when there is none. */
  readonly otherOrigin: string | undefined;
  readonly url: URL;
  /** The page a twin URL belongs to (an app shell renders that page). */
  readonly pagePath: string | undefined;
}

/** The reply a fault gives instead of the page. */
export async function faultReply(at: FaultTarget, fault: Fault): Promise<Reply> {
  const { site, url } = at;
  const html = 'text/html; charset=utf-8';
  const o = fault.opts;
  switch (fault.kind) {
    case 'delete404':
      return text(404, notFoundHtml(site, 404), html, true);
    case 'delete410':
      return text(410, notFoundHtml(site, 410), html, true);
    case 'outage':
      return retryLater(
        503,
        '<!DOCTYPE html>\n<html><head><title>503 Service Unavailable</title></head><body><h1>Service Unavailable</h1><p>The server is temporarily unable to handle the request.</p></body></html>\n',
        o.retryAfter === undefined ? 120 : o.retryAfter,
      );
    case 'rateLimit':
      return retryLater(
        429,
        '<!DOCTYPE html>\n<html><head><title>429 Too Many Requests</title></head><body><h1>Too Many Requests</h1><p>Slow down.</p></body></html>\n',
        o.retryAfter === undefined ? 30 : o.retryAfter,
      );
    case 'consentWall':
      return text(200, consentWallHtml(site), html, true);
    case 'challenge': {
      const r = text(o.status ?? 200, challengeHtml(), html, false);
      r.headers['cf-mitigated'] = 'challenge';
      r.headers.server = 'cloudflare';
      r.headers['cache-control'] = 'private, max-age=0, no-store, no-cache, must-revalidate';
      return r;
    }
    case 'loginRedirect':
      return redirect(302, `${at.origin}/login?next=${encodeURIComponent(url.pathname)}`);
    case 'offHostRedirect':
      return redirect(
        301,
        o.location ??
          (at.otherOrigin !== undefined
            ? `${at.otherOrigin}/`
            : `http://moved.invalid${url.pathname}`),
      );
    case 'soft404':
      return text(200, soft404Html(site), html, true);
    case 'appShell': {
      const target = at.pagePath ?? url.pathname;
      const bundle = `/assets/app.js?p=${encodeURIComponent(target)}${o.clientRender === false ? '&render=0' : ''}`;
      return text(200, appShellHtml(site, bundle), html, true);
    }
    case 'gzipBomb': {
      const body = await gzipBomb(o.inflatedBytes ?? 128 * 1024 * 1024);
      return {
        status: 200,
        headers: { 'content-type': html, 'content-encoding': 'gzip' },
        body,
        compressible: false,
      };
    }
    default:
      throw new Error(`unhandled fault ${fault.kind}`);
  }
}

/** An outage or rate-limit page: never cached, with a Retry-After unless `null` asked for none. */
function retryLater(status: 503 | 429, body: string, after: number | null): Reply {
  const r = text(status, body, 'text/html; charset=utf-8', false);
  if (after !== null) r.headers['retry-after'] = String(after);
  r.headers['cache-control'] = 'no-store';
  return r;
}
