import type { StateBackend, StateKeys, StateStore } from '@ragfresh/core';
import type { DiscoveryCache, DiscoveryCacheEntry } from '@ragfresh/fetch';

/** Collection (under the state store's namespace) holding the remembered listings. */
export const LISTING_COLLECTION = 'listing';

interface KeyvLike {
  readonly backend: Pick<StateBackend, 'get' | 'set'>;
  readonly keys: Pick<StateKeys, 'collection'>;
}

function isKeyvLike(state: StateStore): state is StateStore & KeyvLike {
  const s = state as Partial<KeyvLike>;
  return typeof s.backend?.get === 'function' && typeof s.keys?.collection === 'function';
}

const processListings = new WeakMap<StateStore, Map<string, DiscoveryCacheEntry>>();

function isEntry(v: unknown): v is DiscoveryCacheEntry {
  const e = v as Partial<DiscoveryCacheEntry> | null;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.text === 'string' &&
    typeof e.finalUrl === 'string' &&
    typeof e.validators === 'object'
  );
}

/**
 * Sitemaps, sitemap indexes and llms.txt files as last read, beside the state records, so the
 * inventory asks for them conditionally and a 304 costs no download. A missing or unreadable
 * entry only means the next read is unconditional.
 */
export function listingCacheFor(state: StateStore): DiscoveryCache {
  if (isKeyvLike(state)) {
    const key = (url: string) => state.keys.collection(LISTING_COLLECTION, url);
    return {
      async get(url) {
        const raw = await state.backend.get(key(url));
        if (raw === undefined) return undefined;
        try {
          const v: unknown = JSON.parse(raw);
          return isEntry(v) ? v : undefined;
        } catch {
          return undefined;
        }
      },
      set: (url, entry) => state.backend.set(key(url), JSON.stringify(entry)),
    };
  }
  let map = processListings.get(state);
  if (map === undefined) {
    map = new Map();
    processListings.set(state, map);
  }
  const listings = map;
  return {
    get: async (url) => listings.get(url),
    set: async (url, entry) => {
      listings.set(url, entry);
    },
  };
}
