import { MemoryConnector, type MemoryConnectorOptions } from '@ragfresh/connector-memory';
import {
  accessAdmits,
  FIELDS,
  type ListedChunk,
  type QueryFilter,
  type QueryHit,
  readValidity,
  type StoredChunk,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
} from '@ragfresh/core';

/**
 * Deliberately broken connectors. Each declares the reference manifest (snapshot promotion,
 * immediate visibility) and quietly breaks one guarantee; the suite must fail the case meant
 * to catch it. Never use them for anything else.
 */

type Options = Omit<MemoryConnectorOptions, 'capabilities'>;

/**
 * The memory connector with the base class's batch hooks: each loops over the single-version
 * hook, so a connector that breaks a single hook breaks the batch forms core uses too.
 */
class SingleHookMemoryConnector extends MemoryConnector {
  protected override async _patchValidityMany(
    patches: readonly VersionPatch[],
    fence?: number,
  ): Promise<void> {
    for (const p of patches) await this._patchValidity(p.documentId, p.versionId, p.patch, fence);
  }
  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const out: number[] = [];
    for (const r of refs) out.push((await this._list(r.documentId, r.versionId, false)).length);
    return out;
  }
  protected override async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    const out: ListedChunk[] = [];
    for (const id of documentIds) out.push(...(await this._list(id, undefined, withEmbeddings)));
    return out;
  }
  protected override async _deleteVersions(
    refs: readonly VersionRef[],
    fence?: number,
  ): Promise<void> {
    for (const r of refs) await this._deleteVersion(r.documentId, r.versionId, fence);
  }
}

/** (1) Answers epoch readers from rf_current flags: promotion is not a snapshot, flags flip one chunk at a time. */
export class FlagsAsEpochConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-flags-as-epoch' } });
  }
  protected override async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const view = filter.view.kind === 'epoch' ? ({ kind: 'flag' } as const) : filter.view;
    return super._query(vector, k, { ...filter, view });
  }
}

/** (2) Filters the current view on the upper bound only, so staged chunks (rf_from = E + 1) are visible. */
export class StagedVisibleConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-staged-visible' } });
  }
  protected override async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    if (filter.view.kind === 'all') return super._query(vector, k, filter);
    const published = await this._readEpoch();
    const all = await super._query(vector, Number.MAX_SAFE_INTEGER, {
      ...filter,
      view: { kind: 'all' },
    });
    const view = filter.view;
    return all
      .filter((h) => {
        const v = readValidity(h.metadata);
        const staged = v.from > published && v.current === false;
        if (view.kind === 'flag') return v.current || staged;
        return view.kind === 'epoch' && view.epoch < v.to;
      })
      .slice(0, k);
  }
}

/** (3) Inserts instead of upserting: a retried write appends duplicates under fresh ids. */
export class DuplicatingUpsertConnector extends MemoryConnector {
  readonly #written = new Map<string, number>();
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-duplicating-upsert' } });
  }
  protected override async _upsert(chunks: readonly StoredChunk[], fence?: number): Promise<void> {
    const out = chunks.map((c) => {
      const n = this.#written.get(c.id) ?? 0;
      this.#written.set(c.id, n + 1);
      return n === 0 ? c : { ...c, id: `${c.id}~dup${n}` };
    });
    await super._upsert(out, fence);
  }
}

/** How long (2) the index of (4) takes to answer queries for an acknowledged write. */
export const LAGGING_INDEX_MS = 1_000;

/**
 * (4) Counts and lists what was acknowledged while the vector index lags LAGGING_INDEX_MS
 * behind; the middle chunk of each write (the one core probes) is indexed first. Declares
 * immediate visibility, so verifyQueryable returns ok before the data is searchable.
 */
export class LaggingIndexConnector extends SingleHookMemoryConnector {
  readonly #pending = new Map<string, { chunk: StoredChunk; landsAt: number }>();
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-lagging-index' } });
  }
  async #land(): Promise<void> {
    const now = performance.now();
    const due = [...this.#pending.values()].filter((p) => p.landsAt <= now).map((p) => p.chunk);
    for (const c of due) this.#pending.delete(c.id);
    if (due.length > 0) await super._upsert(due);
  }
  protected override async _upsert(chunks: readonly StoredChunk[]): Promise<void> {
    const now = performance.now();
    const middle = Math.floor(chunks.length / 2);
    chunks.forEach((chunk, i) => {
      this.#pending.set(chunk.id, { chunk, landsAt: i === middle ? now : now + LAGGING_INDEX_MS });
    });
    await this.#land();
  }
  protected override async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
    fence?: number,
  ): Promise<void> {
    for (const p of this.#pending.values()) {
      const m = p.chunk.metadata;
      if (m[FIELDS.documentId] !== documentId || m[FIELDS.versionId] !== versionId) continue;
      const metadata = { ...m };
      if (patch.to !== undefined) metadata[FIELDS.to] = patch.to;
      if (patch.current !== undefined) metadata[FIELDS.current] = patch.current;
      p.chunk = { ...p.chunk, metadata };
    }
    await super._patchValidity(documentId, versionId, patch, fence);
  }
  protected override async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    for (const [id, p] of this.#pending) {
      if (
        p.chunk.metadata[FIELDS.documentId] === documentId &&
        p.chunk.metadata[FIELDS.versionId] === versionId
      )
        this.#pending.delete(id);
    }
    await super._deleteVersion(documentId, versionId);
  }
  protected override async _deleteDocuments(documentIds: readonly string[]): Promise<void> {
    for (const [id, p] of this.#pending) {
      if (documentIds.includes(String(p.chunk.metadata[FIELDS.documentId])))
        this.#pending.delete(id);
    }
    await super._deleteDocuments(documentIds);
  }
  protected override async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    await this.#land();
    const landed = await super._list(documentId, versionId, withEmbeddings);
    const acknowledged = [...this.#pending.values()]
      .map((p) => p.chunk)
      .filter(
        (c) =>
          c.metadata[FIELDS.documentId] === documentId &&
          (versionId === undefined || c.metadata[FIELDS.versionId] === versionId),
      )
      .map((c) =>
        withEmbeddings
          ? { id: c.id, text: c.text, metadata: c.metadata, embedding: [...c.embedding] }
          : { id: c.id, text: c.text, metadata: c.metadata },
      );
    return [...landed, ...acknowledged];
  }
  protected override async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    await this.#land();
    return super._query(vector, k, filter);
  }
}

/** (5) Deletes a version one page of 4 chunks deep: retirement leaves chunks behind. */
export class LeakyRetireConnector extends SingleHookMemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-leaky-retire' } });
  }
  protected override async _deleteVersion(documentId: string, versionId: string): Promise<void> {
    const firstPage = (await this._list(documentId, versionId, false)).filter(
      (c) => Number(c.metadata[FIELDS.ordinal]) < 4,
    );
    if (firstPage.length === 0) return;
    // Re-write everything but the first page under the same ids after deleting the version.
    const rest = await this._list(documentId, versionId, true);
    await super._deleteVersion(documentId, versionId);
    const keep = rest
      .filter((c) => Number(c.metadata[FIELDS.ordinal]) >= 4)
      .map((c) => ({ id: c.id, text: c.text, metadata: c.metadata, embedding: c.embedding ?? [] }));
    if (keep.length > 0) await this._upsert(keep);
  }
}

/**
 * (6) `_patchValidityMany` applies only the first patch of each call: a batch's promotion
 * closes one replaced version, so the others stay open next to their successors.
 */
export class FirstPatchOnlyConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-first-patch-only' } });
  }
  protected override async _patchValidityMany(
    patches: readonly VersionPatch[],
    fence?: number,
  ): Promise<void> {
    const first = patches[0];
    if (first !== undefined)
      await this._patchValidity(first.documentId, first.versionId, first.patch, fence);
  }
}

/**
 * (7) `_countMany` counts every stored chunk of the document, whatever the version: right for
 * a new document, wrong as soon as an old or staged version sits beside the one asked for.
 */
export class DocumentCountConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-document-count' } });
  }
  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    const out: number[] = [];
    for (const r of refs) out.push((await this._list(r.documentId, undefined, false)).length);
    return out;
  }
}

/**
 * (8) The validity patch writes `rf_current` as `1` / `0`, as `UPDATE … SET rf_current = ?`
 * with a bound JavaScript boolean does in SQLite-family drivers: the flag view (which matches
 * `=== true`) loses the chunks, and the metadata type changed.
 */
export class NumericFlagsConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-numeric-flags' } });
  }
  protected override async _patchValidityMany(
    patches: readonly VersionPatch[],
    fence?: number,
  ): Promise<void> {
    for (const p of patches) await this._patchValidity(p.documentId, p.versionId, p.patch, fence);
  }
  protected override async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
    fence?: number,
  ): Promise<void> {
    const { current, ...bound } = patch;
    await super._patchValidity(documentId, versionId, bound, fence);
    if (current === undefined) return;
    const rows = await this._list(documentId, versionId, true);
    await this._upsert(
      rows.map((r) => ({
        id: r.id,
        text: r.text,
        embedding: r.embedding ?? [],
        // The driver's encoding, smuggled past the type: a number where a boolean belongs.
        metadata: { ...r.metadata, [FIELDS.current]: (current ? 1 : 0) as unknown as boolean },
      })),
      fence,
    );
  }
}

/**
 * (9) Declares store fencing but never looks at the fence: a publisher paused past its lease
 * stages, patches and moves the epoch after its successor took over.
 */
export class IgnoresFenceConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-ignores-fence' } });
  }
  protected override async _upsert(chunks: readonly StoredChunk[]): Promise<void> {
    await super._upsert(chunks);
  }
  protected override async _patchValidityMany(patches: readonly VersionPatch[]): Promise<void> {
    await super._patchValidityMany(patches);
  }
  protected override async _advanceEpoch(
    expected: number,
    next: number,
    _fence?: number,
    space?: string,
  ): Promise<void> {
    await super._advanceEpoch(expected, next, undefined, space);
  }
  protected override async _deleteVersions(refs: readonly VersionRef[]): Promise<void> {
    await super._deleteVersions(refs);
  }
}

/**
 * Keeps the epoch's space in the connector instance, not in the store: the publisher's own
 * connector reads it back, a second client (a reader in another process) reads none.
 */
export class CachedEpochSpaceConnector extends MemoryConnector {
  #space: string | undefined;
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-cached-epoch-space' } });
  }
  protected override async _advanceEpoch(
    expected: number,
    next: number,
    fence?: number,
    space?: string,
  ): Promise<void> {
    await super._advanceEpoch(expected, next, fence);
    this.#space = space ?? this.#space;
  }
  protected override async _readEpochSpace(): Promise<string | undefined> {
    return this.#space;
  }
}

/** (10) `_scan` returns its first page as if it were the last: every later chunk goes unseen. */
export class FirstPageScanConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-first-page-scan' } });
  }
  protected override async _scan(
    cursor: string | undefined,
    pageSize: number,
  ): Promise<{ chunks: ListedChunk[]; next?: string }> {
    const page = await super._scan(cursor, pageSize);
    return { chunks: page.chunks };
  }
}

/**
 * (11) Reads the epoch through a "synchronous driver" that waits for an answer no timer of
 * this thread can deliver: the event loop stops, and with it every timeout in the process.
 * Used only by the watchdog test (in a child process); never in BROKEN_CONNECTORS.
 */
export class BlockingEpochConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-blocking-epoch' } });
  }
  protected override async _readEpoch(): Promise<number> {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    return super._readEpoch();
  }
}

/**
 * Applies the access scope after ranking: the top k of every chunk, then the reader's groups
 * kept. A public-only reader near scoped chunks gets fewer than k hits (k is no longer honest).
 */
export class PostFilterAccessConnector extends MemoryConnector {
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-post-filter-access' } });
  }
  protected override async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    const { access, ...rest } = filter;
    const hits = await super._query(vector, k, rest);
    return access === undefined
      ? hits
      : hits.filter((h) => accessAdmits(h.metadata[FIELDS.access], access));
  }
}

/**
 * (12) `_dropNamespace` deletes every chunk but leaves the epoch record: opened again, the
 * "dropped" namespace is empty at the epoch it had, not a fresh one at 0.
 */
export class KeptEpochDropConnector extends MemoryConnector {
  readonly #persistPath: string | undefined;
  constructor(options: Options = {}) {
    super({ ...options, capabilities: { store: 'broken-kept-epoch-drop' } });
    this.#persistPath = options.persistPath;
  }
  /** The namespace beside it is as broken (the case drops that one). */
  protected override _forNamespace(suffix: string): KeptEpochDropConnector {
    const path = this.#persistPath;
    return new KeptEpochDropConnector(
      path === undefined ? {} : { persistPath: `${path}__${suffix}` },
    );
  }
  protected override async _dropNamespace(): Promise<void> {
    const documents = new Set<string>();
    for (
      let cursor: string | undefined, first = true;
      first || cursor !== undefined;
      first = false
    ) {
      const page = await this._scan(cursor, 100);
      for (const c of page.chunks) documents.add(String(c.metadata[FIELDS.documentId]));
      cursor = page.next;
    }
    await this._deleteDocuments([...documents]);
  }
}
