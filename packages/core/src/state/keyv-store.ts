import { isRagfreshError, RagfreshError } from '../errors.js';
import type { ReviewItem, ReviewStatus, Tombstone } from '../model.js';
import {
  aggregateFrom,
  documentOps,
  reviewOps,
  type SourceAggregate,
  type StateAggregates,
  type StateOp,
} from './aggregates.js';
import { corrupt, type StateBackend, type StateGuard } from './backend.js';
import { StateKeys } from './keys.js';
import {
  type DocumentRecord,
  type EpochRecord,
  JOURNAL_STEPS,
  type JournalEntry,
  type Lease,
  PUBLISHER_LEASE,
  type Retirement,
  type RobotsVerdict,
  type RunSummary,
  type StateStore,
} from './types.js';

type FieldType = 'string' | 'number' | 'boolean' | 'array' | 'object';

/**
 * The one `StateStore` implementation: records are JSON values in a keyv store adapter, one key
 * per record (so each single-record write is atomic on every backend); the backend supplies the
 * atomic lease and fenced-journal operations and a paged prefix scan for listings.
 *
 * Key layout under `<namespace>:` (`{<namespace>}:` on a backend that asks for a hash tag, a
 * Redis Cluster) — `doc:<documentId>`, `docsrc:<sourceId>:<documentId>` (the
 * per-source index), `journal`, `retire:<documentId>:<versionId>`, `review:<id>`,
 * `tomb:<documentId>`, `robots:<host>`, `run:<sourceId>:<runId>`, `lease:<name>`,
 * `learned:<kind>:<id>`.
 */
/** Records read per round trip when a listing goes through the per-source index. */
const LIST_PAGE = 256;
/** A guarded write retried this often when other writers keep changing its records. */
const MAX_COMMIT_ATTEMPTS = 50;
/** Aggregate writes per transaction of a rebuild. */
const REBUILD_PAGE = 2000;

export class KeyvStateStore implements StateStore {
  readonly kind: string;
  readonly namespace: string;
  /** The backend underneath, for tools and tests that need raw keys. */
  readonly backend: StateBackend;
  /** The key layout of this store's namespace. */
  readonly keys: StateKeys;
  private closed = false;

  constructor(backend: StateBackend, namespace: string) {
    this.backend = backend;
    this.kind = backend.kind;
    this.namespace = namespace;
    this.keys = new StateKeys(namespace, { hashTag: backend.hashTagged === true });
  }

  // Documents ---------------------------------------------------------------------------

  async getDocument(documentId: string): Promise<DocumentRecord | undefined> {
    requireId(documentId, 'documentId');
    const key = this.keys.document(documentId);
    const raw = await this.call('getDocument', () => this.backend.get(key));
    return raw === undefined ? undefined : decodeDocument(raw, key);
  }

  async putDocument(record: DocumentRecord): Promise<void> {
    await this.putDocuments([record]);
  }

  /**
   * Writes records, each with its per-source index entry and its aggregate contribution, in one
   * transaction where the backend has them (guarded by the records as read, retried when
   * another writer changed one meanwhile); else one record at a time, index entry first.
   */
  async putDocuments(records: readonly DocumentRecord[]): Promise<void> {
    const byId = new Map<string, DocumentRecord>();
    for (const record of records) {
      requireId(record?.documentId, 'record.documentId');
      requireId(record.sourceId, 'record.sourceId');
      byId.set(record.documentId, record);
    }
    await this.updateDocuments([...byId.keys()], (_stored, id) => byId.get(id));
  }

  /**
   * Read-modify-write of several records in one transaction: `update` gets each stored record
   * (undefined: none) and returns the record to write (undefined: leave it). Guarded by the
   * records it was given and run again on fresh ones when another writer changed one meanwhile,
   * so an update is never built on a stale record.
   */
  async updateDocuments(
    documentIds: readonly string[],
    update: (stored: DocumentRecord | undefined, documentId: string) => DocumentRecord | undefined,
  ): Promise<void> {
    const ids = [...new Set(documentIds)];
    for (const id of ids) requireId(id, 'documentId');
    if (ids.length === 0) return;
    const keys = ids.map((id) => this.keys.document(id));
    const writeOf = (raw: string | undefined, i: number) => {
      const stored = readableDocument(raw, keys[i]!);
      const record = update(stored, ids[i]!);
      if (record === undefined) return undefined;
      if (record.documentId !== ids[i])
        throw invalid(`update of ${ids[i]} returned the record of ${String(record.documentId)}.`);
      requireId(record.sourceId, 'record.sourceId');
      return { key: keys[i]!, value: encode(record, 'document record'), record, stored };
    };
    if (this.backend.commit === undefined) {
      for (const [i, key] of keys.entries())
        await this.call('putDocument', async () => {
          const w = writeOf(await this.backend.get(key), i);
          if (w !== undefined) await this.putUnguarded(w);
        });
      return;
    }
    await this.call('putDocument', () =>
      this.guarded(keys, (raws) => {
        const ops: StateOp[] = [];
        for (const [i, raw] of raws.entries()) {
          const w = writeOf(raw, i);
          if (w === undefined) continue;
          const previousSource = w.stored?.sourceId ?? sourceIdOf(raw);
          if (previousSource !== w.record.sourceId)
            ops.push({
              op: 'set',
              key: this.keys.documentSourceIndex(w.record.sourceId, w.record.documentId),
              value: JSON.stringify(w.record.documentId),
            });
          ops.push({ op: 'set', key: w.key, value: w.value });
          if (previousSource !== undefined && previousSource !== w.record.sourceId)
            ops.push({
              op: 'del',
              key: this.keys.documentSourceIndex(previousSource, w.record.documentId),
            });
          ops.push(...documentOps(this.keys.aggregates, w.record.documentId, w.stored, w.record));
        }
        return ops;
      }),
    );
  }

  private async putUnguarded(w: {
    key: string;
    value: string;
    record: DocumentRecord;
  }): Promise<void> {
    const previousSource = sourceIdOf(await this.backend.get(w.key));
    // Index first: a crash between the two writes leaves an index entry whose document is
    // missing or elsewhere, which listings skip; never a document its source cannot list.
    // A stored record of the same source proves its index entry was written before it.
    if (previousSource !== w.record.sourceId) {
      await this.backend.set(
        this.keys.documentSourceIndex(w.record.sourceId, w.record.documentId),
        JSON.stringify(w.record.documentId),
      );
    }
    await this.backend.set(w.key, w.value);
    if (previousSource !== undefined && previousSource !== w.record.sourceId) {
      await this.backend.delete(this.keys.documentSourceIndex(previousSource, w.record.documentId));
    }
  }

  /**
   * Reads `keys`, builds the transaction's writes from what they hold, and commits them guarded
   * by those values; a writer that changed one of them meanwhile makes it read and build again.
   */
  private async guarded(
    keys: readonly string[],
    build: (raws: readonly (string | undefined)[]) => StateOp[],
  ): Promise<void> {
    // Nothing to write (every update declined): no transaction.
    const commit = this.backend.commit!.bind(this.backend);
    for (let attempt = 1; ; attempt++) {
      const raws =
        this.backend.getMany === undefined || keys.length === 1
          ? await Promise.all(keys.map((k) => this.backend.get(k)))
          : await this.backend.getMany(keys);
      const guards: StateGuard[] = keys.map((key, i) => ({ key, value: raws[i] }));
      const ops = build(raws);
      if (ops.length === 0 || (await commit(guards, ops))) return;
      if (attempt >= MAX_COMMIT_ATTEMPTS)
        throw new RagfreshError(
          'STORE_REJECTED',
          `state write lost ${attempt} races in a row for ${keys.length} key(s) (first ${JSON.stringify(keys[0])}); too many writers on the same records, retry later.`,
          { scope: 'state' },
        );
    }
  }

  async deleteDocument(documentId: string): Promise<void> {
    requireId(documentId, 'documentId');
    const key = this.keys.document(documentId);
    if (this.backend.commit !== undefined) {
      await this.call('deleteDocument', () =>
        this.guarded([key], ([raw]) => {
          const sourceId = sourceIdOf(raw);
          return [
            { op: 'del', key },
            ...(sourceId === undefined
              ? []
              : [{ op: 'del', key: this.keys.documentSourceIndex(sourceId, documentId) } as const]),
            ...documentOps(this.keys.aggregates, documentId, readableDocument(raw, key), undefined),
          ];
        }),
      );
      return;
    }
    await this.call('deleteDocument', async () => {
      const sourceId = sourceIdOf(await this.backend.get(key));
      await this.backend.delete(key);
      if (sourceId !== undefined) {
        await this.backend.delete(this.keys.documentSourceIndex(sourceId, documentId));
      }
    });
  }

  /** Streams records page by page; with `sourceId`, reads that source's index only. */
  async *listDocuments(filter?: { readonly sourceId?: string }): AsyncIterable<DocumentRecord> {
    const sourceId = filter?.sourceId;
    if (sourceId === undefined) {
      for await (const [key, raw] of this.scan('listDocuments', this.keys.collection('doc'))) {
        yield decodeDocument(raw, key);
      }
      return;
    }
    requireId(sourceId, 'filter.sourceId');
    // The index names documents; their records are read a page at a time (one round trip per
    // page where the backend can), not one read per document.
    const page: string[] = [];
    for await (const [key, raw] of this.scan(
      'listDocuments',
      this.keys.documentsOfSource(sourceId),
    )) {
      page.push(decodeIndexEntry(raw, key));
      if (page.length >= LIST_PAGE) yield* this.documentsOf(page.splice(0), sourceId);
    }
    if (page.length > 0) yield* this.documentsOf(page, sourceId);
  }

  private async *documentsOf(
    documentIds: readonly string[],
    sourceId: string,
  ): AsyncIterable<DocumentRecord> {
    const getMany = this.backend.getMany?.bind(this.backend);
    if (getMany === undefined) {
      for (const id of documentIds) {
        const record = await this.getDocument(id);
        if (record !== undefined && record.sourceId === sourceId) yield record;
      }
      return;
    }
    const keys = documentIds.map((id) => this.keys.document(id));
    const values = await this.call('listDocuments', () => getMany(keys));
    for (const [i, raw] of values.entries()) {
      if (raw === undefined) continue;
      const record = decodeDocument(raw, keys[i]!);
      if (record.sourceId === sourceId) yield record;
    }
  }

  // Journal -----------------------------------------------------------------------------

  async getJournal(): Promise<JournalEntry | undefined> {
    const key = this.keys.journal();
    const raw = await this.call('getJournal', () => this.backend.get(key));
    return raw === undefined ? undefined : decodeJournal(raw, key);
  }

  async putJournal(entry: JournalEntry): Promise<void> {
    requireId(entry?.batchId, 'entry.batchId');
    if (!Number.isSafeInteger(entry.fence) || entry.fence < 1) {
      throw invalid(
        `journal entry fence ${String(entry.fence)} is not a lease fence; pass the fence of the publisher lease you hold.`,
      );
    }
    if (!JOURNAL_STEPS.includes(entry.step)) {
      throw invalid(
        `journal step ${JSON.stringify(entry.step)} is unknown; use one of ${JOURNAL_STEPS.join(', ')}.`,
      );
    }
    const value = encode(entry, 'journal entry');
    const written = await this.call('putJournal', () =>
      this.backend.putFenced(
        this.keys.lease(PUBLISHER_LEASE),
        entry.fence,
        this.keys.journal(),
        value,
      ),
    );
    if (!written) {
      throw new RagfreshError(
        'LEASE_LOST',
        `publisher lease fence ${entry.fence} is no longer current (expired or taken over); stop publishing this batch, the current holder resumes it.`,
        { scope: 'state', details: { fence: entry.fence, batchId: entry.batchId } },
      );
    }
  }

  /** Removes the journal if it is still the entry of `batchId` (compare-and-delete). */
  async clearJournal(batchId: string): Promise<void> {
    requireId(batchId, 'batchId');
    const key = this.keys.journal();
    await this.call('clearJournal', async () => {
      const raw = await this.backend.get(key);
      if (raw === undefined || decodeJournal(raw, key).batchId !== batchId) return;
      await this.backend.deleteIfEquals(key, raw);
    });
  }

  // Retirements -------------------------------------------------------------------------

  async putRetirement(r: Retirement): Promise<void> {
    requireId(r?.documentId, 'retirement.documentId');
    requireId(r.versionId, 'retirement.versionId');
    const value = encode(r, 'retirement');
    await this.call('putRetirement', () =>
      this.backend.set(this.keys.retirement(r.documentId, r.versionId), value),
    );
  }

  /** Ordered by epoch, then documentId and versionId. */
  async listRetirements(): Promise<Retirement[]> {
    const out: Retirement[] = [];
    for await (const [key, raw] of this.scan('listRetirements', this.keys.collection('retire'))) {
      out.push(
        decode<Retirement>(raw, key, 'retirement', {
          documentId: 'string',
          versionId: 'string',
          epoch: 'number',
        }),
      );
    }
    return out.sort(
      (a, b) =>
        a.epoch - b.epoch || cmp(a.documentId, b.documentId) || cmp(a.versionId, b.versionId),
    );
  }

  async deleteRetirement(documentId: string, versionId: string): Promise<void> {
    requireId(documentId, 'documentId');
    requireId(versionId, 'versionId');
    await this.call('deleteRetirement', () =>
      this.backend.delete(this.keys.retirement(documentId, versionId)),
    );
  }

  // Review queue ------------------------------------------------------------------------

  async putReviewItem(item: ReviewItem): Promise<void> {
    requireId(item?.id, 'item.id');
    const value = encode(item, 'review item');
    const key = this.keys.reviewItem(item.id);
    if (this.backend.commit === undefined) {
      await this.call('putReviewItem', () => this.backend.set(key, value));
      return;
    }
    await this.call('putReviewItem', () =>
      this.guarded([key], ([raw]) => {
        let before: ReviewItem | undefined;
        try {
          before = raw === undefined ? undefined : decodeReviewItem(raw, key);
        } catch {
          before = undefined; // a damaged item being replaced counted nothing readable
        }
        return [{ op: 'set', key, value }, ...reviewOps(this.keys.aggregates, before, item)];
      }),
    );
  }

  async getReviewItem(id: string): Promise<ReviewItem | undefined> {
    requireId(id, 'id');
    const key = this.keys.reviewItem(id);
    const raw = await this.call('getReviewItem', () => this.backend.get(key));
    return raw === undefined ? undefined : decodeReviewItem(raw, key);
  }

  /** Oldest first (createdAt, then id). */
  async listReviewItems(filter?: { readonly status?: ReviewStatus }): Promise<ReviewItem[]> {
    const out: ReviewItem[] = [];
    for await (const [key, raw] of this.scan('listReviewItems', this.keys.collection('review'))) {
      const item = decodeReviewItem(raw, key);
      if (filter?.status === undefined || item.status === filter.status) out.push(item);
    }
    return out.sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id));
  }

  async deleteReviewItem(id: string): Promise<void> {
    requireId(id, 'id');
    const key = this.keys.reviewItem(id);
    if (this.backend.commit === undefined) {
      await this.call('deleteReviewItem', () => this.backend.delete(key));
      return;
    }
    // A pending item leaves its source's pending count in the same transaction.
    await this.call('deleteReviewItem', () =>
      this.guarded([key], ([raw]) => {
        if (raw === undefined) return [];
        let before: ReviewItem | undefined;
        try {
          before = decodeReviewItem(raw, key);
        } catch {
          before = undefined; // a damaged item counted nothing readable
        }
        return [{ op: 'del', key }, ...reviewOps(this.keys.aggregates, before, undefined)];
      }),
    );
  }

  // Epoch history ------------------------------------------------------------------------

  async putEpochRecord(r: EpochRecord): Promise<void> {
    if (!Number.isSafeInteger(r?.epoch) || r.epoch < 0)
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        'an epoch record needs a non-negative integer epoch.',
        {
          scope: 'state',
        },
      );
    const key = this.keys.epochRecord(r.epoch);
    const value = encode(r, 'epoch record');
    await this.call('putEpochRecord', async () => {
      // Recovery may roll a batch forward twice: the first record of an epoch stays.
      if ((await this.backend.get(key)) === undefined) await this.backend.set(key, value);
    });
  }

  /** Ordered by epoch. */
  async listEpochRecords(): Promise<EpochRecord[]> {
    const out: EpochRecord[] = [];
    for await (const [key, raw] of this.scan('listEpochRecords', this.keys.collection('epoch')))
      out.push(decode<EpochRecord>(raw, key, 'epoch record', { epoch: 'number', at: 'string' }));
    return out.sort((a, b) => a.epoch - b.epoch);
  }

  // Tombstones --------------------------------------------------------------------------

  async putTombstone(t: Tombstone): Promise<void> {
    requireId(t?.documentId, 'tombstone.documentId');
    const value = encode(t, 'tombstone');
    await this.call('putTombstone', () =>
      this.backend.set(this.keys.tombstone(t.documentId), value),
    );
  }

  async getTombstone(documentId: string): Promise<Tombstone | undefined> {
    requireId(documentId, 'documentId');
    const key = this.keys.tombstone(documentId);
    const raw = await this.call('getTombstone', () => this.backend.get(key));
    return raw === undefined ? undefined : decodeTombstone(raw, key);
  }

  /** Ordered by documentId. */
  async listTombstones(): Promise<Tombstone[]> {
    const out: Tombstone[] = [];
    for await (const [key, raw] of this.scan('listTombstones', this.keys.collection('tomb'))) {
      out.push(decodeTombstone(raw, key));
    }
    return out.sort((a, b) => cmp(a.documentId, b.documentId));
  }

  async deleteTombstone(documentId: string): Promise<void> {
    requireId(documentId, 'documentId');
    await this.call('deleteTombstone', () => this.backend.delete(this.keys.tombstone(documentId)));
  }

  // Robots ------------------------------------------------------------------------------

  async getRobots(host: string): Promise<RobotsVerdict | undefined> {
    requireId(host, 'host');
    const key = this.keys.robots(host);
    const raw = await this.call('getRobots', () => this.backend.get(key));
    return raw === undefined
      ? undefined
      : decode<RobotsVerdict>(raw, key, 'robots verdict', {
          host: 'string',
          expiresAt: 'string',
          status: 'number',
          body: 'string',
        });
  }

  async putRobots(verdict: RobotsVerdict): Promise<void> {
    requireId(verdict?.host, 'verdict.host');
    const value = encode(verdict, 'robots verdict');
    await this.call('putRobots', () => this.backend.set(this.keys.robots(verdict.host), value));
  }

  // Runs --------------------------------------------------------------------------------

  async appendRun(run: RunSummary): Promise<void> {
    requireId(run?.runId, 'run.runId');
    requireId(run.sourceId, 'run.sourceId');
    const value = encode(run, 'run summary');
    await this.call('appendRun', () =>
      this.backend.set(this.keys.run(run.sourceId, run.runId), value),
    );
  }

  /** Newest first by startedAt (then runId); keeps only `limit` runs in memory while scanning. */
  async listRuns(sourceId: string, limit: number): Promise<RunSummary[]> {
    requireId(sourceId, 'sourceId');
    if (!Number.isSafeInteger(limit) || limit < 0) {
      throw invalid(`listRuns limit ${String(limit)} is not a non-negative integer.`);
    }
    const newestFirst = (a: RunSummary, b: RunSummary) =>
      cmp(b.startedAt, a.startedAt) || cmp(b.runId, a.runId);
    const top: RunSummary[] = [];
    for await (const [key, raw] of this.scan('listRuns', this.keys.runsOfSource(sourceId))) {
      const run = decode<RunSummary>(raw, key, 'run summary', {
        runId: 'string',
        sourceId: 'string',
        startedAt: 'string',
      });
      if (limit === 0) continue;
      if (top.length === limit && newestFirst(run, top[limit - 1]!) >= 0) continue;
      let at = top.length;
      while (at > 0 && newestFirst(run, top[at - 1]!) < 0) at -= 1;
      top.splice(at, 0, run);
      if (top.length > limit) top.pop();
    }
    return top;
  }

  // Aggregates --------------------------------------------------------------------------

  async hasAggregates(): Promise<boolean> {
    if (this.backend.commit === undefined) return false;
    const key = this.keys.aggregatesBuilt();
    return (await this.call('hasAggregates', () => this.backend.get(key))) !== undefined;
  }

  /** Counters, five index ends and the attention members per source, then the records they name. */
  async aggregates(sourceIds: readonly string[]): Promise<StateAggregates | undefined> {
    const b = this.backend;
    if (b.zrange === undefined || b.zall === undefined || !(await this.hasAggregates()))
      return undefined;
    const zrange = b.zrange.bind(b);
    const zall = b.zall.bind(b);
    const k = this.keys.aggregates;
    return this.call('aggregates', async () => {
      const pending = await zall(k.pendingDocuments());
      const sources = new Map<string, SourceAggregate>();
      for (const sourceId of sourceIds) {
        requireId(sourceId, 'sourceId');
        const end = async (index: 'obs' | 'mod' | 'qry' | 'chg' | 'epoch', e: 'low' | 'high') =>
          (await zrange(k.index(sourceId, index), e, 1))[0];
        const [counters, obs, mod, qry, chg, epoch, attn] = await Promise.all([
          zall(k.counters(sourceId)),
          end('obs', 'low'),
          end('mod', 'high'),
          end('qry', 'high'),
          end('chg', 'high'),
          end('epoch', 'high'),
          zall(k.index(sourceId, 'attn')),
        ]);
        const ids = [
          ...new Set(
            [obs, mod, qry, chg, ...attn].flatMap((e) => (e === undefined ? [] : [e.member])),
          ),
        ];
        const records = new Map<string, DocumentRecord>();
        for await (const r of this.documentsOf(ids, sourceId)) records.set(r.documentId, r);
        const record = (e: { member: string } | undefined) =>
          e === undefined ? undefined : records.get(e.member);
        sources.set(
          sourceId,
          aggregateFrom({
            sourceId,
            counters: new Map(counters.map((c) => [c.member, c.score])),
            publishedEpoch: epoch?.score ?? 0,
            oldest: record(obs),
            latestModified: record(mod),
            latestQueryable: record(qry),
            latestChange: record(chg),
            attention: attn.flatMap((e) => records.get(e.member) ?? []),
          }),
        );
      }
      return {
        sources,
        pendingDocuments: new Set(pending.filter((e) => e.score > 0).map((e) => e.member)),
      };
    });
  }

  /**
   * Recounts every aggregate from the records and review items: the marker goes first (readers
   * recount meanwhile), the indexes are cleared and written again in pages, the marker last.
   * Run it while no other process writes records (`recover`, a state's first publisher).
   */
  async rebuildAggregates(): Promise<void> {
    const b = this.backend;
    if (b.commit === undefined || b.zclear === undefined) return;
    const commit = b.commit.bind(b);
    const k = this.keys.aggregates;
    await this.call('rebuildAggregates', () => b.delete(this.keys.aggregatesBuilt()));
    await this.call('rebuildAggregates', async () => {
      await b.zclear!(this.keys.collection('agg'));
      await b.zclear!(this.keys.collection('aggrev'));
    });
    let ops: StateOp[] = [];
    const flush = async () => {
      const page = ops;
      ops = [];
      if (page.length > 0) await this.call('rebuildAggregates', () => commit([], page));
    };
    for await (const [key, raw] of this.scan('rebuildAggregates', this.keys.collection('doc'))) {
      const r = decodeDocument(raw, key);
      ops.push(...documentOps(k, r.documentId, undefined, r));
      if (ops.length >= REBUILD_PAGE) await flush();
    }
    for (const item of await this.listReviewItems({ status: 'pending' })) {
      ops.push(...reviewOps(k, undefined, item));
      if (ops.length >= REBUILD_PAGE) await flush();
    }
    ops.push({
      op: 'set',
      key: this.keys.aggregatesBuilt(),
      value: JSON.stringify({ version: 1, builtAt: new Date().toISOString() }),
    });
    await flush();
  }

  // Lease -------------------------------------------------------------------------------

  async acquireLease(
    name: string,
    holder: string,
    ttlMs: number,
    options: { readonly minFence?: number } = {},
  ): Promise<Lease | undefined> {
    requireId(name, 'name');
    requireId(holder, 'holder');
    requireTtl(ttlMs);
    const minFence = options.minFence ?? 0;
    if (!Number.isSafeInteger(minFence) || minFence < 0)
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        `minFence must be a non-negative integer, got ${minFence}.`,
        { scope: 'state' },
      );
    return this.call('acquireLease', () =>
      this.backend.acquireLease(this.keys.lease(name), name, holder, ttlMs, minFence),
    );
  }

  /**
   * Extends `lease` while it is still the latest grant: also after it expired, if nobody took it
   * meanwhile (safe: the fence did not move, so no one else can have written). LEASE_LOST once
   * another grant happened.
   */
  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    requireId(lease?.name, 'lease.name');
    requireTtl(ttlMs);
    const renewed = await this.call('renewLease', () =>
      this.backend.renewLease(this.keys.lease(lease.name), lease, ttlMs),
    );
    if (renewed === undefined) {
      throw new RagfreshError(
        'LEASE_LOST',
        `lease ${JSON.stringify(lease.name)} with fence ${lease.fence} was taken over by another holder; stop the work it guarded.`,
        { scope: 'state', details: { name: lease.name, fence: lease.fence, holder: lease.holder } },
      );
    }
    return renewed;
  }

  async releaseLease(lease: Lease): Promise<void> {
    requireId(lease?.name, 'lease.name');
    await this.call('releaseLease', () =>
      this.backend.releaseLease(this.keys.lease(lease.name), lease),
    );
  }

  async currentFence(name: string): Promise<number | undefined> {
    requireId(name, 'name');
    return this.call('currentFence', () => this.backend.currentFence(this.keys.lease(name)));
  }

  // Learned data ------------------------------------------------------------------------

  async getLearned(kind: string, id: string): Promise<unknown> {
    requireId(kind, 'kind');
    requireId(id, 'id');
    const key = this.keys.learned(kind, id);
    const raw = await this.call('getLearned', () => this.backend.get(key));
    if (raw === undefined) return undefined;
    try {
      return JSON.parse(raw);
    } catch (cause) {
      throw corrupt(key, 'is not JSON', cause);
    }
  }

  async putLearned(kind: string, id: string, value: unknown): Promise<void> {
    requireId(kind, 'kind');
    requireId(id, 'id');
    const key = this.keys.learned(kind, id);
    if (value === undefined) {
      await this.call('putLearned', () => this.backend.delete(key));
      return;
    }
    const raw = encode(value, 'learned value');
    await this.call('putLearned', () => this.backend.set(key, raw));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.backend.close();
  }

  // Plumbing ----------------------------------------------------------------------------

  private async call<T>(op: string, fn: () => Promise<T>): Promise<T> {
    this.assertOpen(op);
    try {
      return await fn();
    } catch (error) {
      throw this.wrap(op, error);
    }
  }

  private async *scan(op: string, prefix: string): AsyncIterable<readonly [string, string]> {
    this.assertOpen(op);
    const seen = this.backend.scanMayRepeat ? new Set<string>() : undefined;
    const iterator = this.backend.scan(prefix)[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<readonly [string, string]>;
      try {
        next = await iterator.next();
      } catch (error) {
        throw this.wrap(op, error);
      }
      if (next.done) return;
      if (seen !== undefined) {
        if (seen.has(next.value[0])) continue;
        seen.add(next.value[0]);
      }
      yield next.value;
    }
  }

  private assertOpen(op: string): void {
    if (this.closed) {
      throw new RagfreshError(
        'NOT_OPEN',
        `state store (${this.kind}) is closed; ${op} needs an open store.`,
        { scope: 'state' },
      );
    }
  }

  private wrap(op: string, error: unknown): unknown {
    if (isRagfreshError(error)) return error;
    const message = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: unknown })?.code;
    const unreachable =
      /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|closed|not connected|after calling end|terminat|timeout/i.test(
        `${String(code)} ${message}`,
      );
    return new RagfreshError(
      unreachable ? 'STORE_UNREACHABLE' : 'STORE_REJECTED',
      `state ${op} failed on ${this.kind}: ${message.split('\n')[0]}${unreachable ? '; check that the state store is running.' : ''}`,
      { scope: 'state', cause: error },
    );
  }
}

function encode(value: unknown, what: string): string {
  try {
    return JSON.stringify(value);
  } catch (cause) {
    throw invalid(
      `${what} cannot be stored as JSON (${(cause as Error).message}); pass plain data.`,
    );
  }
}

function decode<T>(
  raw: string,
  key: string,
  what: string,
  fields: Readonly<Record<string, FieldType>>,
): T {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (cause) {
    throw corrupt(key, 'is not JSON', cause);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw corrupt(key, `is not a ${what}`);
  }
  for (const [field, type] of Object.entries(fields)) {
    const v = (value as Record<string, unknown>)[field];
    const ok =
      type === 'array'
        ? Array.isArray(v)
        : type === 'object'
          ? typeof v === 'object' && v !== null
          : typeof v === type;
    if (!ok) throw corrupt(key, `is not a ${what} (field ${field} is not a ${type})`);
  }
  return value as T;
}

const decodeDocument = (raw: string, key: string) =>
  decode<DocumentRecord>(raw, key, 'document record', {
    documentId: 'string',
    sourceId: 'string',
    status: 'string',
    currentChunkIds: 'array',
    timestamps: 'object',
  });

const decodeReviewItem = (raw: string, key: string) =>
  decode<ReviewItem>(raw, key, 'review item', {
    id: 'string',
    status: 'string',
    documentId: 'string',
  });

const decodeTombstone = (raw: string, key: string) =>
  decode<Tombstone>(raw, key, 'tombstone', { documentId: 'string', reason: 'string' });

function decodeJournal(raw: string, key: string): JournalEntry {
  const entry = decode<JournalEntry>(raw, key, 'journal entry', {
    batchId: 'string',
    step: 'string',
    fence: 'number',
    baseEpoch: 'number',
    targetEpoch: 'number',
    documents: 'array',
  });
  if (!JOURNAL_STEPS.includes(entry.step))
    throw corrupt(key, `has unknown journal step ${JSON.stringify(entry.step)}`);
  return entry;
}

function decodeIndexEntry(raw: string, key: string): string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (cause) {
    throw corrupt(key, 'is not JSON', cause);
  }
  if (typeof value !== 'string') throw corrupt(key, 'is not a document index entry');
  return value;
}

/** The stored record, when it is one (a damaged record being replaced contributed nothing readable). */
function readableDocument(raw: string | undefined, key: string): DocumentRecord | undefined {
  if (raw === undefined) return undefined;
  try {
    return decodeDocument(raw, key);
  } catch {
    return undefined;
  }
}

/** sourceId of a stored document, if it is readable (a damaged record is being replaced). */
function sourceIdOf(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  try {
    const sourceId = (JSON.parse(raw) as { sourceId?: unknown } | null)?.sourceId;
    return typeof sourceId === 'string' ? sourceId : undefined;
  } catch {
    return undefined;
  }
}

function requireId(value: unknown, name: string): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw invalid(`${name} must be a non-empty string, got ${JSON.stringify(value)}.`);
  }
}

function requireTtl(ttlMs: number): void {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw invalid(`lease ttlMs ${String(ttlMs)} must be a positive number of milliseconds.`);
  }
}

function invalid(message: string): RagfreshError {
  return new RagfreshError('INVALID_ARGUMENT', message, { scope: 'state' });
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
