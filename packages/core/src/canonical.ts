/**
 * Whose word a page's `<link rel="canonical">` (or an export row's `canonicalUrl`) is. The
 * canonical is the page's own claim: a page fetched from one host can name any URL, including
 * another company's or a `javascript:` one. Citations are the fetched URL; a canonical replaces
 * it only when the source's policy accepts it:
 *
 * - `same-site` (default): accepted when it is http(s) on the same site as the fetched URL;
 *   a canonical on another site is kept as the page's claim (`canonical_claim`) only.
 * - `trust`: any http(s) canonical is accepted (your own sites spread over several hosts).
 * - `ignore`: no canonical is kept at all.
 *
 * "Same site" is the same host name, compared without case, a trailing dot and one leading
 * `www.` label, on the same explicit port (http and https both count). It is not the same
 * eTLD+1: without a public-suffix list `a.github.io` and `b.github.io` would pass, and they
 * belong to different people. `docs.example.com` and `example.com` are therefore two sites; a
 * source whose pages name canonicals on a sibling host sets `canonical: 'trust'`.
 *
 * Anything that is not an absolute (or page-relative) http(s) URL without credentials, or is
 * longer than {@link MAX_CANONICAL_CHARS}, is dropped: neither accepted nor kept as a claim.
 */
export type CanonicalPolicy = 'same-site' | 'trust' | 'ignore';

export const CANONICAL_POLICIES: readonly CanonicalPolicy[] = Object.freeze([
  'same-site',
  'trust',
  'ignore',
]);

export const DEFAULT_CANONICAL_POLICY: CanonicalPolicy = 'same-site';

/** Longest canonical kept (longer ones are dropped): it rides on every chunk's metadata. */
export const MAX_CANONICAL_CHARS = 2048;

/** What a canonical claim became under a policy: the accepted URL, or the claim kept aside. */
export interface CanonicalJudgement {
  /** Accepted: may be cited instead of the fetched URL. */
  readonly canonicalUrl?: string;
  /** Not accepted (another site under `same-site`): the page's claim, never cited. */
  readonly canonicalClaim?: string;
}

/** `href` (resolved against `base` when relative) as an http(s) URL without credentials. */
export function httpUrl(href: string, base?: string): URL | undefined {
  let u: URL;
  try {
    u = base === undefined ? new URL(href) : new URL(href, base);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
  if (u.username !== '' || u.password !== '') return undefined;
  return u;
}

function siteHost(u: URL): string {
  let h = u.hostname.toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h.startsWith('www.') ? h.slice(4) : h;
}

/** Whether two URLs are on the same site (see {@link CanonicalPolicy}). */
export function sameSite(a: URL, b: URL): boolean {
  return siteHost(a) === siteHost(b) && a.port === b.port;
}

/** Judges a page's canonical claim against the URL it was fetched from. */
export function judgeCanonical(
  claim: string | undefined,
  fetchedUrl: string,
  policy: CanonicalPolicy = DEFAULT_CANONICAL_POLICY,
): CanonicalJudgement {
  if (claim === undefined || policy === 'ignore') return {};
  const trimmed = claim.trim();
  if (trimmed === '' || trimmed.length > MAX_CANONICAL_CHARS) return {};
  const fetched = httpUrl(fetchedUrl);
  const canonical = httpUrl(trimmed, fetched?.href);
  if (canonical === undefined || canonical.href.length > MAX_CANONICAL_CHARS) return {};
  if (policy === 'trust' || (fetched !== undefined && sameSite(canonical, fetched)))
    return { canonicalUrl: canonical.href };
  return { canonicalClaim: canonical.href };
}

/**
 * The URL a chunk is cited by: its accepted canonical, else the URL it was fetched from (after
 * redirects), else the requested URL. Only http(s) URLs are cited, so a value written before
 * these rules (or by hand) cannot make a `javascript:` citation.
 */
export function citationUrl(p: {
  readonly url?: string | undefined;
  readonly finalUrl?: string | undefined;
  readonly canonicalUrl?: string | undefined;
}): string | undefined {
  for (const candidate of [p.canonicalUrl, p.finalUrl, p.url]) {
    if (candidate !== undefined && httpUrl(candidate) !== undefined) return candidate;
  }
  return undefined;
}
