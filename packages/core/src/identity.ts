import { normalizeAccess } from './access.js';
import { RagfreshError } from './errors.js';
import { sha256Hex, stableStringify, uuidV5 } from './hash.js';

/**
 * How a requested URL becomes the key a document is identified by.
 * - `strict`: the URL must already be canonical: no credentials, no query, no fragment.
 * - `normalize`: lower-case scheme and host (the WHATWG parser does this), drop the default
 *   port and the fragment, drop tracking parameters, keep content-selecting parameters from
 *   an allow-list, sorted by name then value.
 * Credentials in a URL are refused under every policy.
 */
export type UrlIdentityPolicy =
  | { readonly mode: 'strict' }
  | {
      readonly mode: 'normalize';
      /** Parameters that select content and therefore stay part of identity. */
      readonly contentParams?: readonly string[];
      /** What to do with a parameter that is neither tracking nor on the allow-list. */
      readonly unknownParams?: 'drop' | 'keep';
      /** Extra tracking parameters (names, or prefixes ending in `*`) beyond the defaults. */
      readonly trackingParams?: readonly string[];
    };

/** Tracking parameters dropped by `normalize`. Entries ending in `*` are prefixes. */
export const DEFAULT_TRACKING_PARAMS: readonly string[] = Object.freeze([
  'utm_*',
  'gclid',
  'gclsrc',
  'dclid',
  'gbraid',
  'wbraid',
  'fbclid',
  'msclkid',
  'mc_cid',
  'mc_eid',
  '_ga',
  '_gl',
  '_hsenc',
  '_hsmi',
  'hsCtaTracking',
  'mkt_tok',
  'igshid',
  'yclid',
  'twclid',
  'ttclid',
  'li_fat_id',
  'oly_anon_id',
  'oly_enc_id',
  'vero_id',
  'ref_src',
  'spm',
]);

/** Parameters kept by `normalize` unless the policy names its own list. */
export const DEFAULT_CONTENT_PARAMS: readonly string[] = Object.freeze([
  'id',
  'page',
  'p',
  'lang',
  'locale',
  'hl',
  'version',
  'v',
  'tab',
  'section',
]);

export const DEFAULT_IDENTITY_POLICY: UrlIdentityPolicy = Object.freeze({ mode: 'normalize' });

const SOURCE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function isTracking(name: string, extra: readonly string[]): boolean {
  const lower = name.toLowerCase();
  for (const pattern of [...DEFAULT_TRACKING_PARAMS, ...extra]) {
    const p = pattern.toLowerCase();
    if (p.endsWith('*') ? lower.startsWith(p.slice(0, -1)) : lower === p) return true;
  }
  return false;
}

/** Parses an absolute http(s) URL or throws a coded error; never returns a partial value. */
export function parseHttpUrl(input: string): URL {
  if (typeof input !== 'string' || input.trim() === '') {
    throw new RagfreshError('INVALID_URL', 'URL is empty; give an absolute http(s) URL.');
  }
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch (cause) {
    const shown = JSON.stringify(input.slice(0, 200));
    const hasScheme = /^\s*[a-z][a-z0-9+.-]*:\/\//i.test(input);
    throw new RagfreshError(
      'INVALID_URL',
      hasScheme
        ? `not a valid URL: ${shown}; check the host name (a label starting "xn--" must be valid punycode) and the characters after the scheme.`
        : `not an absolute URL: ${shown}; give an absolute http(s) URL.`,
      { cause },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RagfreshError(
      'INVALID_URL',
      `unsupported scheme ${url.protocol} in ${JSON.stringify(input.slice(0, 200))}; only http and https are fetched.`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new RagfreshError(
      'URL_CREDENTIALS',
      `URL carries credentials (${url.host}); remove user:password@ and configure auth headers instead.`,
    );
  }
  if (url.hostname === '') {
    throw new RagfreshError(
      'INVALID_URL',
      `URL has no host: ${JSON.stringify(input.slice(0, 200))}.`,
    );
  }
  return url;
}

/**
 * The canonical key of a requested URL under `policy`. Deterministic: the same input and
 * policy give the same key on any machine. Throws INVALID_URL, URL_CREDENTIALS or
 * URL_NOT_CANONICAL (strict mode only).
 */
export function canonicalKey(
  input: string,
  policy: UrlIdentityPolicy = DEFAULT_IDENTITY_POLICY,
): string {
  const url = parseHttpUrl(input);
  if (policy.mode === 'strict') {
    if (url.search !== '' || input.includes('?')) {
      throw new RagfreshError(
        'URL_NOT_CANONICAL',
        `strict identity policy refuses query strings: ${url.href}; remove the query or use the normalize policy.`,
      );
    }
    if (url.hash !== '' || input.includes('#')) {
      throw new RagfreshError(
        'URL_NOT_CANONICAL',
        `strict identity policy refuses fragments: ${url.href}; remove the #fragment or use the normalize policy.`,
      );
    }
    return url.href;
  }
  const content = new Set(
    (policy.contentParams ?? DEFAULT_CONTENT_PARAMS).map((p) => p.toLowerCase()),
  );
  const unknown = policy.unknownParams ?? 'drop';
  const tracking = policy.trackingParams ?? [];
  const kept: Array<[string, string]> = [];
  for (const [name, value] of url.searchParams) {
    if (isTracking(name, tracking)) continue;
    if (content.has(name.toLowerCase()) || unknown === 'keep') kept.push([name, value]);
  }
  kept.sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  url.hash = '';
  url.search = '';
  for (const [name, value] of kept) url.searchParams.append(name, value);
  return url.href;
}

export function assertSourceId(sourceId: string): void {
  if (typeof sourceId !== 'string' || !SOURCE_ID.test(sourceId)) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `source id ${JSON.stringify(sourceId)} is invalid; use 1-64 characters of letters, digits, '_', '.', '-', starting with a letter or digit.`,
    );
  }
}

/** `documentId` of a requested URL within a source: `<sourceId>:<24 hex of sha256(canonical key)>`. */
export function documentId(
  sourceId: string,
  url: string,
  policy: UrlIdentityPolicy = DEFAULT_IDENTITY_POLICY,
): string {
  assertSourceId(sourceId);
  return `${sourceId}:${sha256Hex(canonicalKey(url, policy)).slice(0, 24)}`;
}

/** Versions of everything that decides how content is cut; part of every versionId. */
export interface PipelineVersions {
  readonly extractor: string;
  readonly chunker: string;
  /** ragfresh's stored-schema version; bump when the chunk layout changes. */
  readonly schema: string;
}

export const SCHEMA_VERSION = '1';

export interface VersionInput {
  /** Normalised document text (Markdown). NFC normalisation is applied here again. */
  readonly text: string;
  /** How the text was cut: one entry per chunk, in order. */
  readonly chunks: ReadonlyArray<{
    readonly text: string;
    readonly headingPath: readonly string[];
  }>;
  readonly versions: PipelineVersions;
  /**
   * Groups that may read the version (normalised; see `access.ts`). Hashed only when non-empty,
   * so public versions keep the ids they had before access scope existed, and a change of scope
   * is a new version published through the protocol, never a reuse of the old one.
   */
  readonly access?: readonly string[];
}

/**
 * `versionId`: hash of the NFC-normalised content, of how it was cut (chunk texts and heading
 * paths) and of the extractor/chunker/schema versions. Volatile values never enter it.
 */
export function versionId(input: VersionInput): string {
  const digest = sha256Hex(
    stableStringify({
      text: input.text.normalize('NFC'),
      cut: input.chunks.map((c) => [
        sha256Hex(c.text.normalize('NFC')),
        c.headingPath.map((h) => h.normalize('NFC')),
      ]),
      v: [input.versions.extractor, input.versions.chunker, input.versions.schema],
      ...(input.access === undefined || input.access.length === 0
        ? {}
        : { a: normalizeAccess(input.access) }),
    }),
  );
  return `v${digest.slice(0, 24)}`;
}

/** `chunkId`: `<documentId>#<versionId>#<ordinal>`; listing by the `<documentId>#<versionId>#` prefix finds a version. */
export function chunkId(docId: string, verId: string, ordinal: number): string {
  if (!Number.isSafeInteger(ordinal) || ordinal < 0) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `chunk ordinal must be a non-negative integer, got ${ordinal}.`,
    );
  }
  if (docId.includes('#') || verId.includes('#') || docId === '' || verId === '') {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `documentId and versionId must be non-empty and contain no '#'.`,
    );
  }
  return `${docId}#${verId}#${ordinal}`;
}

export function chunkIdPrefix(docId: string, verId?: string): string {
  return verId === undefined ? `${docId}#` : `${docId}#${verId}#`;
}

/** Namespace for ragfresh's UUID v5 chunk ids (a fixed random UUID; never change it). */
export const RAGFRESH_UUID_NAMESPACE = '6f1c3a52-7c1e-4b5e-9d0a-2a8e4d7b9c13';

/** UUID v5 of a chunkId, for stores that require UUID point ids (Qdrant, LangChain pgvector). */
export function chunkUuid(id: string): string {
  return uuidV5(id, RAGFRESH_UUID_NAMESPACE);
}
