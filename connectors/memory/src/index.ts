import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  buildConnector,
  Connector,
  type ConnectorCapabilities,
  type ConnectorFactoryContext,
  checkConnectorOptions,
  cosineSimilarity,
  FIELDS,
  type ListedChunk,
  matchesFilter,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  RagfreshError,
  resolveOptionPath,
  type StoredChunk,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
} from '@ragfresh/core';

export interface MemoryConnectorOptions {
  /**
   * Write-through persistence to a JSON file (atomic rename after every write), so another
   * process can reopen the same index. Used by the conformance crash cases; off by default.
   */
  readonly persistPath?: string;
  /** Override the declared capabilities (tests of the suite itself; never in production). */
  readonly capabilities?: Partial<ConnectorCapabilities>;
}

interface PersistedIndex {
  readonly format: 'ragfresh-memory/1';
  readonly dimensions: number;
  readonly epoch: number;
  /** The space the epoch record names (the last move that gave one). */
  readonly epochSpace?: string;
  readonly chunks: StoredChunk[];
}

export const MEMORY_CAPABILITIES: ConnectorCapabilities = {
  store: 'memory',
  promotion: 'snapshot',
  flagPromotion: 'overlap',
  visibility: { mode: 'immediate' },
  maxWriteBatch: 500,
  epochInStore: true,
  idForm: 'chunk-id',
  // Each write hook checks the fence and writes without yielding in between (one process).
  fencing: 'store',
  scan: true,
};

/** Epoch claim files kept beside a persisted index; older ones are removed as the epoch moves. */
const EPOCH_CLAIMS_KEPT = 64;

/** Yield to the event loop so concurrent readers interleave with writes, as with a real store. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The in-process reference connector. Declares `snapshot` promotion for epoch readers and
 * `overlap` for `rf_current` readers (flags flip one chunk at a time), immediate visibility.
 */
export class MemoryConnector extends Connector {
  readonly #chunks = new Map<string, StoredChunk>();
  /** documentId -> chunk ids, so per-document operations do not scan the whole index. */
  readonly #byDocument = new Map<string, Set<string>>();
  #epoch = 0;
  #epochSpace: string | undefined;
  #fence = 0;
  readonly #persistPath: string | undefined;
  readonly #capabilities: MemoryConnectorOptions['capabilities'];
  /** Identity of the index file as this instance last read or wrote it. */
  #seen = '';

  constructor(options: MemoryConnectorOptions = {}) {
    super({ ...MEMORY_CAPABILITIES, ...options.capabilities });
    this.#persistPath = options.persistPath;
    this.#capabilities = options.capabilities;
  }

  /** A persisted index gets its own file (`<persistPath>__<suffix>`); else a fresh index. */
  protected override _forNamespace(suffix: string): MemoryConnector {
    return new MemoryConnector({
      capabilities: this.#capabilities,
      ...(this.#persistPath === undefined
        ? {}
        : { persistPath: `${this.#persistPath}__${suffix}` }),
    });
  }

  protected async _open(options: OpenOptions): Promise<void> {
    this.#load(options.dimensions);
  }

  /**
   * Reads the persisted index when another instance (or process) wrote it since this one last
   * did, so every instance on one path sees one store. Never called inside a multi-tick write.
   */
  #load(dimensions: number): void {
    if (this.#persistPath === undefined) return;
    let raw: string;
    try {
      const seen = this.#fileIdentity();
      if (seen === this.#seen) return;
      raw = readFileSync(this.#persistPath, 'utf8');
      this.#seen = seen;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    const data = JSON.parse(raw) as PersistedIndex;
    if (data.format !== 'ragfresh-memory/1') {
      throw new RagfreshError(
        'FOREIGN_DATA',
        `${this.#persistPath} is not a ragfresh memory index; choose another path.`,
        {
          scope: this.store,
        },
      );
    }
    if (data.dimensions !== dimensions) {
      throw new RagfreshError(
        'DIMENSION_MISMATCH',
        `${this.#persistPath} holds ${data.dimensions}-dimension vectors, asked for ${dimensions}; use the same embeddings or a new path.`,
        { scope: this.store },
      );
    }
    this.#epoch = data.epoch;
    this.#epochSpace = data.epochSpace;
    this.#chunks.clear();
    this.#byDocument.clear();
    for (const c of data.chunks) this.#set(c);
  }

  #fileIdentity(): string {
    const st = statSync(this.#persistPath!, { bigint: true });
    return `${st.ino}:${st.size}:${st.mtimeNs}`;
  }

  /** One event-loop turn (readers interleave with writes), then the store as persisted. */
  async #turn(): Promise<void> {
    await tick();
    if (this.dimensions !== undefined) this.#load(this.dimensions);
  }

  #set(c: StoredChunk): void {
    const doc = String(c.metadata[FIELDS.documentId]);
    const previous = this.#chunks.get(c.id);
    if (previous !== undefined)
      this.#byDocument.get(String(previous.metadata[FIELDS.documentId]))?.delete(c.id);
    this.#chunks.set(c.id, c);
    let ids = this.#byDocument.get(doc);
    if (ids === undefined) {
      ids = new Set();
      this.#byDocument.set(doc, ids);
    }
    ids.add(c.id);
  }

  #delete(id: string): void {
    const c = this.#chunks.get(id);
    if (c === undefined) return;
    this.#chunks.delete(id);
    const doc = String(c.metadata[FIELDS.documentId]);
    const ids = this.#byDocument.get(doc);
    ids?.delete(id);
    if (ids?.size === 0) this.#byDocument.delete(doc);
  }

  #ofDocument(documentId: string): StoredChunk[] {
    const out: StoredChunk[] = [];
    for (const id of this.#byDocument.get(documentId) ?? []) {
      const c = this.#chunks.get(id);
      if (c !== undefined) out.push(c);
    }
    return out;
  }

  #persist(): void {
    if (this.#persistPath === undefined) return;
    const data: PersistedIndex = {
      format: 'ragfresh-memory/1',
      dimensions: this.dimensions ?? 0,
      epoch: this.#epoch,
      ...(this.#epochSpace === undefined ? {} : { epochSpace: this.#epochSpace }),
      chunks: [...this.#chunks.values()],
    };
    mkdirSync(dirname(this.#persistPath), { recursive: true });
    const tmp = `${this.#persistPath}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(data));
    renameSync(tmp, this.#persistPath);
    this.#seen = this.#fileIdentity();
  }

  protected async _upsert(chunks: readonly StoredChunk[], fence?: number): Promise<void> {
    await this.#turn();
    this.#checkFence(fence);
    for (const c of chunks) {
      this.#set({
        id: c.id,
        text: c.text,
        embedding: [...c.embedding],
        metadata: { ...c.metadata },
      });
    }
    this.#persist();
  }

  protected async _patchValidity(
    documentId: string,
    versionId: string,
    patch: ValidityPatch,
    fence?: number,
  ): Promise<void> {
    await this.#turn();
    this.#checkFence(fence);
    await this.#patchChunks(documentId, versionId, patch);
    this.#persist();
  }

  /**
   * One pass for the whole batch, still one chunk per tick: concurrent flag readers interleave
   * with the flip chunk by chunk (the conformance suite relies on it to show `overlap`).
   */
  protected override async _patchValidityMany(
    patches: readonly VersionPatch[],
    fence?: number,
  ): Promise<void> {
    await this.#turn();
    this.#checkFence(fence);
    for (const p of patches) await this.#patchChunks(p.documentId, p.versionId, p.patch);
    this.#persist();
  }

  async #patchChunks(documentId: string, versionId: string, patch: ValidityPatch): Promise<void> {
    for (const c of this.#ofDocument(documentId)) {
      if (c.metadata[FIELDS.versionId] !== versionId) continue;
      await tick();
      const metadata = { ...c.metadata };
      if (patch.to !== undefined) metadata[FIELDS.to] = patch.to;
      if (patch.current !== undefined) metadata[FIELDS.current] = patch.current;
      this.#set({ ...c, metadata });
    }
  }

  protected async _readEpoch(): Promise<number> {
    await this.#turn();
    return this.#sharedEpoch();
  }

  /**
   * With a persist path, the epoch is shared by every instance on that path (another process,
   * or a second connector in this one): it lives in `<path>.epoch`, and each move from E is
   * claimed by creating `<path>.claim-E` exclusively (`wx`), so of two racers exactly one wins.
   */
  protected async _advanceEpoch(
    expected: number,
    next: number,
    fence?: number,
    space?: string,
  ): Promise<void> {
    await this.#turn();
    this.#checkFence(fence);
    const current = this.#sharedEpoch();
    if (current !== expected) throw this.#conflict(current, expected);
    // A move without a space keeps the space the record names.
    const named = space ?? this.#epochSpace;
    if (this.#persistPath !== undefined) {
      try {
        mkdirSync(dirname(this.#persistPath), { recursive: true });
        writeFileSync(`${this.#persistPath}.claim-${expected}`, String(next), { flag: 'wx' });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST')
          throw this.#conflict(this.#sharedEpoch(), expected);
        throw err;
      }
      const tmp = `${this.#persistPath}.epoch.${process.pid}.tmp`;
      // `<epoch>` or `<epoch>\n<space>`: one rename moves both.
      writeFileSync(tmp, named === undefined ? String(next) : `${next}\n${named}`);
      renameSync(tmp, `${this.#persistPath}.epoch`);
      rmSync(`${this.#persistPath}.claim-${expected - EPOCH_CLAIMS_KEPT}`, { force: true });
    }
    this.#epoch = next;
    this.#epochSpace = named;
    this.#persist();
    if (fence !== undefined) this.#writeFence(fence);
  }

  protected override async _readFence(): Promise<number> {
    await this.#turn();
    return this.#sharedFence();
  }

  protected override async _readEpochSpace(): Promise<string | undefined> {
    await this.#turn();
    this.#sharedEpoch();
    return this.#epochSpace;
  }

  protected override async _raiseFence(fence: number): Promise<void> {
    await this.#turn();
    this.#checkFence(fence);
    this.#writeFence(fence);
  }

  /** The fence is shared like the epoch: `<path>.fence` beside a persisted index. */
  #sharedFence(): number {
    if (this.#persistPath === undefined) return this.#fence;
    try {
      this.#fence = Number(readFileSync(`${this.#persistPath}.fence`, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    return this.#fence;
  }

  #writeFence(fence: number): void {
    this.#fence = fence;
    if (this.#persistPath === undefined) return;
    mkdirSync(dirname(this.#persistPath), { recursive: true });
    const tmp = `${this.#persistPath}.fence.${process.pid}.tmp`;
    writeFileSync(tmp, String(fence));
    renameSync(tmp, `${this.#persistPath}.fence`);
  }

  /** Synchronous: callers write right after it, without yielding, so no raise comes between. */
  #checkFence(fence: number | undefined): void {
    if (fence === undefined) return;
    const held = this.#sharedFence();
    if (held > fence) throw this.staleFence(fence, held);
  }

  #sharedEpoch(): number {
    if (this.#persistPath === undefined) return this.#epoch;
    try {
      const [epoch, space] = readFileSync(`${this.#persistPath}.epoch`, 'utf8').split('\n');
      this.#epoch = Number(epoch);
      this.#epochSpace = space === undefined || space === '' ? undefined : space;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    return this.#epoch;
  }

  #conflict(current: number, expected: number): RagfreshError {
    return new RagfreshError(
      'EPOCH_CONFLICT',
      `published epoch is ${current}, expected ${expected}; another publisher moved it.`,
      { scope: this.store },
    );
  }

  protected async _deleteVersion(
    documentId: string,
    versionId: string,
    fence?: number,
  ): Promise<void> {
    await this.#turn();
    this.#checkFence(fence);
    for (const c of this.#ofDocument(documentId)) {
      if (c.metadata[FIELDS.versionId] === versionId) this.#delete(c.id);
    }
    this.#persist();
  }

  protected async _deleteDocuments(documentIds: readonly string[], fence?: number): Promise<void> {
    await this.#turn();
    this.#checkFence(fence);
    for (const doc of documentIds) for (const c of this.#ofDocument(doc)) this.#delete(c.id);
    this.#persist();
  }

  protected override async _deleteVersions(
    refs: readonly VersionRef[],
    fence?: number,
  ): Promise<void> {
    await this.#turn();
    this.#checkFence(fence);
    for (const r of refs) {
      for (const c of this.#ofDocument(r.documentId)) {
        if (c.metadata[FIELDS.versionId] === r.versionId) this.#delete(c.id);
      }
    }
    this.#persist();
  }

  protected async _list(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    await this.#turn();
    return this.#listed(documentId, versionId, withEmbeddings);
  }

  protected override async _listMany(
    documentIds: readonly string[],
    withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
    await this.#turn();
    return documentIds.flatMap((id) => this.#listed(id, undefined, withEmbeddings));
  }

  #listed(
    documentId: string,
    versionId: string | undefined,
    withEmbeddings: boolean,
  ): ListedChunk[] {
    const out: ListedChunk[] = [];
    for (const c of this.#ofDocument(documentId)) {
      if (versionId !== undefined && c.metadata[FIELDS.versionId] !== versionId) continue;
      out.push(
        withEmbeddings
          ? { id: c.id, text: c.text, metadata: { ...c.metadata }, embedding: [...c.embedding] }
          : { id: c.id, text: c.text, metadata: { ...c.metadata } },
      );
    }
    return out;
  }

  protected override async _countMany(refs: readonly VersionRef[]): Promise<number[]> {
    await this.#turn();
    return refs.map((r) => {
      let n = 0;
      for (const c of this.#ofDocument(r.documentId))
        if (c.metadata[FIELDS.versionId] === r.versionId) n++;
      return n;
    });
  }

  protected async _query(
    vector: readonly number[],
    k: number,
    filter: QueryFilter,
  ): Promise<QueryHit[]> {
    await this.#turn();
    const hits: QueryHit[] = [];
    const pool =
      filter.documentId === undefined ? this.#chunks.values() : this.#ofDocument(filter.documentId);
    for (const c of pool) {
      if (!matchesFilter(c.metadata, filter)) continue;
      hits.push({
        id: c.id,
        text: c.text,
        metadata: { ...c.metadata },
        score: cosineSimilarity(vector, c.embedding),
      });
    }
    hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
    return hits.slice(0, k);
  }

  protected override async _scan(
    cursor: string | undefined,
    pageSize: number,
  ): Promise<{ chunks: ListedChunk[]; next?: string }> {
    await this.#turn();
    // Ids in sorted order; the cursor is the last id of the previous page.
    const ids = [...this.#chunks.keys()].sort();
    let start = 0;
    if (cursor !== undefined) {
      while (start < ids.length && ids[start]! <= cursor) start++;
    }
    const page = ids.slice(start, start + pageSize);
    const chunks = page.map((id) => {
      const c = this.#chunks.get(id)!;
      return { id: c.id, text: c.text, metadata: { ...c.metadata } };
    });
    return start + pageSize < ids.length ? { chunks, next: page[page.length - 1]! } : { chunks };
  }

  /**
   * Empties the index; a persisted one also loses its file and the `.epoch`, `.fence` and
   * `.claim-<n>` files beside it.
   */
  protected override async _dropNamespace(): Promise<void> {
    await this.#turn();
    this.#chunks.clear();
    this.#byDocument.clear();
    this.#epoch = 0;
    this.#epochSpace = undefined;
    this.#fence = 0;
    const path = this.#persistPath;
    if (path === undefined) return;
    const own = new Set([`${basename(path)}.epoch`, `${basename(path)}.fence`]);
    let beside: string[] = [];
    try {
      beside = readdirSync(dirname(path)).filter(
        (f) => own.has(f) || f.startsWith(`${basename(path)}.claim-`),
      );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    for (const f of beside) rmSync(join(dirname(path), f), { force: true });
    rmSync(path, { force: true });
  }

  protected async _close(): Promise<void> {}

  /** Number of stored chunks of any validity (tests and benchmarks). */
  get size(): number {
    return this.#chunks.size;
  }
}

/** JSON-options factory used by `ConnectorSpec` (child processes). */
export function createMemoryConnector(options: { persistPath?: string } = {}): MemoryConnector {
  return new MemoryConnector(
    options.persistPath === undefined ? {} : { persistPath: options.persistPath },
  );
}

/**
 * The registry factory (`connector: { store: 'memory', ...options }` in a ragfresh config): an
 * in-process index, gone when the process exits, unless `persistPath` names a JSON file (a
 * relative path is relative to the config file's folder). Unknown keys and wrong types are one
 * INVALID_CONFIG line naming `connector.<key>`.
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  context: ConnectorFactoryContext,
): MemoryConnector {
  const spec = {
    persistPath: 'string',
  } as const;
  const given = checkConnectorOptions<{ persistPath: string }>('memory', options, spec);
  return buildConnector(
    'memory',
    Object.keys(spec),
    () =>
      new MemoryConnector(
        given.persistPath === undefined
          ? {}
          : { persistPath: resolveOptionPath(context, given.persistPath) },
      ),
  );
}
