import { RagfreshError, type StateBackend, type StateKeys, type StateStore } from '@ragfresh/core';
import type { LoadedPage } from './pages.js';

/**
 * The last good copy of each page the loader emitted: the prepared version (chunk texts, heading
 * paths, ids) and the facts of the fetch that produced it. A 304, a failure, a wall or a deferral
 * re-emits this copy, with no body and no parse, so `index()` sees the whole last-good corpus on
 * every run.
 */
export interface PageCopyStore {
  get(documentId: string): Promise<LoadedPage | undefined>;
  put(page: LoadedPage): Promise<void>;
  delete(documentId: string): Promise<void>;
}

/** Collection (under the state store's namespace) holding the loader's copies. */
export const PAGE_COPY_COLLECTION = 'lcpage';

interface KeyvLike {
  readonly backend: Pick<StateBackend, 'get' | 'set' | 'delete'>;
  readonly keys: Pick<StateKeys, 'collection'>;
}

function isKeyvLike(state: StateStore): state is StateStore & KeyvLike {
  const s = state as Partial<KeyvLike>;
  return typeof s.backend?.get === 'function' && typeof s.keys?.collection === 'function';
}

const processCopies = new WeakMap<StateStore, Map<string, string>>();

/**
 * Copies kept beside the state records: in the same SQLite file, Redis or Postgres database (one
 * key per document, `<namespace>:lcpage:<documentId>`), or — for a process-local state store —
 * in process memory, with the same lifetime as that store.
 */
export function pageCopiesFor(state: StateStore): PageCopyStore {
  if (isKeyvLike(state)) {
    const key = (documentId: string) => state.keys.collection(PAGE_COPY_COLLECTION, documentId);
    return {
      async get(documentId) {
        const raw = await state.backend.get(key(documentId));
        return raw === undefined ? undefined : decode(raw, key(documentId));
      },
      put: (page) => state.backend.set(key(page.documentId), JSON.stringify(page)),
      delete: (documentId) => state.backend.delete(key(documentId)),
    };
  }
  let map = processCopies.get(state);
  if (map === undefined) {
    map = new Map();
    processCopies.set(state, map);
  }
  const copies = map;
  return {
    async get(documentId) {
      const raw = copies.get(documentId);
      return raw === undefined ? undefined : decode(raw, documentId);
    },
    async put(page) {
      copies.set(page.documentId, JSON.stringify(page));
    },
    async delete(documentId) {
      copies.delete(documentId);
    },
  };
}

function decode(raw: string, key: string): LoadedPage {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (cause) {
    throw corrupt(key, cause);
  }
  const v = value as Partial<LoadedPage> | null;
  if (
    typeof v !== 'object' ||
    v === null ||
    typeof v.documentId !== 'string' ||
    typeof v.prepared?.versionId !== 'string' ||
    !Array.isArray(v.prepared.chunks)
  ) {
    throw corrupt(key);
  }
  return v as LoadedPage;
}

function corrupt(key: string, cause?: unknown): RagfreshError {
  return new RagfreshError(
    'STATE_CORRUPT',
    `the loader's copy at ${JSON.stringify(key)} is not a page copy; delete that key (the next load fetches the page in full).`,
    { scope: 'langchain', cause, details: { key } },
  );
}
