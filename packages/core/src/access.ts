import { RagfreshError } from './errors.js';

/**
 * Access scope. A source names the groups that may read it (`access` in the config); every chunk
 * of its documents carries them in `rf_access`. An empty scope is public. Readers pass their
 * groups; the store's own filter admits a chunk when its `rf_access` list holds any of the
 * reader's tokens (`readerAccessTokens`), so `k` counts only what the reader may see.
 */

/**
 * The token a public chunk carries in `rf_access` instead of an empty list: every store can then
 * answer "public or one of my groups" with one list-membership condition (Qdrant `match.any`,
 * Pinecone `$in`, pgvector `?|`, ...), and a chunk without `rf_access` (written before access
 * scope existed, or by another app) is visible to no reader: the scope fails closed.
 */
export const PUBLIC_ACCESS = '*';

/** A group name: starts with a letter or digit; letters, digits, `.`, `_`, `-`, `:`, `@`; at most 64. */
export const ACCESS_GROUP = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$/;

/** Checks group names and returns them sorted and de-duplicated (the stored and hashed form). */
export function normalizeAccess(groups: readonly string[] | undefined, what = 'access'): string[] {
  if (groups === undefined) return [];
  for (const g of groups) {
    if (typeof g !== 'string' || !ACCESS_GROUP.test(g)) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `${what} group ${JSON.stringify(g)} is not a group name; use letters, digits and . _ : @ - (at most 64, starting with a letter or digit).`,
      );
    }
  }
  return [...new Set(groups)].sort();
}

/** What a chunk of a document with `groups` stores in `rf_access`: its groups, or `['*']` when public. */
export function storedAccess(groups: readonly string[] | undefined): string[] {
  const g = normalizeAccess(groups);
  return g.length === 0 ? [PUBLIC_ACCESS] : g;
}

/** The tokens a reader with `groups` may match: public plus each of its groups. */
export function readerAccessTokens(groups: readonly string[]): string[] {
  return [PUBLIC_ACCESS, ...normalizeAccess(groups, 'reader')];
}

/** Whether a chunk's stored `rf_access` value admits a reader with `groups` (reference semantics). */
export function accessAdmits(stored: unknown, groups: readonly string[]): boolean {
  if (!Array.isArray(stored)) return false;
  const tokens = readerAccessTokens(groups);
  return stored.some((t) => typeof t === 'string' && tokens.includes(t));
}

/**
 * True when moving a document from scope `before` to scope `after` takes read access away from
 * someone: a group dropped, or a public document becoming scoped. Such a change must not be
 * promoted by the snapshot protocol alone (see `Publisher`): a reader still holding the previous
 * epoch would keep reading the wider scope.
 */
export function accessNarrows(
  before: readonly string[] | undefined,
  after: readonly string[] | undefined,
): boolean {
  const b = normalizeAccess(before);
  const a = new Set(normalizeAccess(after));
  if (a.size === 0) return false;
  if (b.length === 0) return true;
  return b.some((g) => !a.has(g));
}

/** Parses `g1,g2` (a CLI flag) into checked group names; empty means public only. */
export function parseAccessList(value: string): string[] {
  return normalizeAccess(
    value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
    '--access',
  );
}

/**
 * For stores whose metadata holds no lists (Chroma 1.0): `rf_access` as one boolean key per
 * token, `rf_access.<token>: true`, filtered by `$or` of `$eq true`. A missing key matches
 * nothing, so a chunk without the keys is seen by no reader, as with the list.
 */
export const ACCESS_KEY_PREFIX = 'rf_access.';

/** The key a token is stored under in the boolean-key form. */
export function accessKey(token: string): string {
  return `${ACCESS_KEY_PREFIX}${token}`;
}

/** Metadata with its `rf_access` list spelled as boolean keys (other fields untouched). */
export function accessAsKeys<V>(
  meta: Readonly<Record<string, V | readonly string[]>>,
): Record<string, V | true> {
  const out: Record<string, V | true> = {};
  for (const [k, v] of Object.entries(meta)) {
    if (k === 'rf_access' && Array.isArray(v)) for (const t of v) out[accessKey(String(t))] = true;
    else out[k] = v as V;
  }
  return out;
}

/** The inverse of `accessAsKeys`: boolean access keys gathered back into the `rf_access` list. */
export function accessFromKeys<V>(meta: Readonly<Record<string, V>>): Record<string, V | string[]> {
  const out: Record<string, V | string[]> = {};
  const tokens: string[] = [];
  for (const [k, v] of Object.entries(meta)) {
    if (k.startsWith(ACCESS_KEY_PREFIX)) {
      if (v === (true as unknown)) tokens.push(k.slice(ACCESS_KEY_PREFIX.length));
    } else out[k] = v;
  }
  if (tokens.length > 0) out.rf_access = tokens.sort();
  return out;
}
