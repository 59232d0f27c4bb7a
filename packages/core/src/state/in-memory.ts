import { RagfreshError } from '../errors.js';
import type { ReviewItem, ReviewStatus, Tombstone } from '../model.js';
import type {
  DocumentRecord,
  EpochRecord,
  JournalEntry,
  Lease,
  Retirement,
  RobotsVerdict,
  RunSummary,
  StateStore,
} from './types.js';
import { PUBLISHER_LEASE } from './types.js';

const clone = <T>(v: T): T => structuredClone(v);

/**
 * A process-local StateStore: nothing survives the process. For unit tests, benchmarks and
 * throwaway runs; use the SQLite store for anything that must resume after a crash.
 */
export class InMemoryStateStore implements StateStore {
  readonly kind = 'in-memory';
  readonly #docs = new Map<string, DocumentRecord>();
  #journal: JournalEntry | undefined;
  readonly #retirements = new Map<string, Retirement>();
  readonly #review = new Map<string, ReviewItem>();
  readonly #tombstones = new Map<string, Tombstone>();
  readonly #robots = new Map<string, RobotsVerdict>();
  readonly #runs = new Map<string, RunSummary[]>();
  readonly #leases = new Map<string, Lease>();
  readonly #fences = new Map<string, number>();
  readonly #learned = new Map<string, unknown>();
  readonly #epochs = new Map<number, EpochRecord>();

  async getDocument(id: string) {
    const r = this.#docs.get(id);
    return r === undefined ? undefined : clone(r);
  }
  async putDocument(record: DocumentRecord) {
    this.#docs.set(record.documentId, clone(record));
  }
  async putDocuments(records: readonly DocumentRecord[]) {
    for (const r of records) this.#docs.set(r.documentId, clone(r));
  }
  async updateDocuments(
    documentIds: readonly string[],
    update: (stored: DocumentRecord | undefined, documentId: string) => DocumentRecord | undefined,
  ) {
    for (const id of new Set(documentIds)) {
      const stored = this.#docs.get(id);
      const next = update(stored === undefined ? undefined : clone(stored), id);
      if (next !== undefined) this.#docs.set(id, clone(next));
    }
  }
  async deleteDocument(id: string) {
    this.#docs.delete(id);
  }
  async *listDocuments(filter: { readonly sourceId?: string } = {}): AsyncIterable<DocumentRecord> {
    for (const r of [...this.#docs.values()]) {
      if (filter.sourceId === undefined || r.sourceId === filter.sourceId) yield clone(r);
    }
  }

  async getJournal() {
    return this.#journal === undefined ? undefined : clone(this.#journal);
  }
  async putJournal(entry: JournalEntry) {
    const fence = await this.currentFence(PUBLISHER_LEASE);
    if (fence !== entry.fence) {
      throw new RagfreshError(
        'LEASE_LOST',
        `journal write with fence ${entry.fence}, current fence is ${fence ?? 'none'}; another publisher took over.`,
      );
    }
    this.#journal = clone(entry);
  }
  async clearJournal(batchId: string) {
    if (this.#journal?.batchId === batchId) this.#journal = undefined;
  }

  async putRetirement(r: Retirement) {
    this.#retirements.set(`${r.documentId}#${r.versionId}`, clone(r));
  }
  async listRetirements() {
    return [...this.#retirements.values()].map(clone);
  }
  async deleteRetirement(documentId: string, versionId: string) {
    this.#retirements.delete(`${documentId}#${versionId}`);
  }

  async putReviewItem(item: ReviewItem) {
    this.#review.set(item.id, clone(item));
  }
  async getReviewItem(id: string) {
    const r = this.#review.get(id);
    return r === undefined ? undefined : clone(r);
  }
  async listReviewItems(filter: { readonly status?: ReviewStatus } = {}) {
    return [...this.#review.values()]
      .filter((r) => filter.status === undefined || r.status === filter.status)
      .map(clone);
  }

  async deleteReviewItem(id: string) {
    this.#review.delete(id);
  }

  async putEpochRecord(r: EpochRecord) {
    if (!this.#epochs.has(r.epoch)) this.#epochs.set(r.epoch, clone(r));
  }
  async listEpochRecords() {
    return [...this.#epochs.values()].sort((a, b) => a.epoch - b.epoch).map(clone);
  }

  async putTombstone(t: Tombstone) {
    this.#tombstones.set(t.documentId, clone(t));
  }
  async getTombstone(id: string) {
    const t = this.#tombstones.get(id);
    return t === undefined ? undefined : clone(t);
  }
  async listTombstones() {
    return [...this.#tombstones.values()].map(clone);
  }
  async deleteTombstone(id: string) {
    this.#tombstones.delete(id);
  }

  async getRobots(host: string) {
    const r = this.#robots.get(host);
    return r === undefined ? undefined : clone(r);
  }
  async putRobots(v: RobotsVerdict) {
    this.#robots.set(v.host, clone(v));
  }

  async appendRun(run: RunSummary) {
    const list = this.#runs.get(run.sourceId) ?? [];
    list.push(clone(run));
    this.#runs.set(run.sourceId, list.slice(-100));
  }
  async listRuns(sourceId: string, limit: number) {
    return (this.#runs.get(sourceId) ?? []).slice(-limit).reverse().map(clone);
  }

  async acquireLease(
    name: string,
    holder: string,
    ttlMs: number,
    options: { readonly minFence?: number } = {},
  ) {
    const now = Date.now();
    const held = this.#leases.get(name);
    if (held !== undefined && held.expiresAt > now && held.holder !== holder) return undefined;
    const fence = Math.max((this.#fences.get(name) ?? 0) + 1, options.minFence ?? 0);
    this.#fences.set(name, fence);
    const lease: Lease = { name, holder, fence, expiresAt: now + ttlMs };
    this.#leases.set(name, lease);
    return { ...lease };
  }
  async renewLease(lease: Lease, ttlMs: number) {
    const held = this.#leases.get(lease.name);
    if (held === undefined || held.fence !== lease.fence || held.expiresAt <= Date.now()) {
      throw new RagfreshError(
        'LEASE_LOST',
        `lease ${lease.name} (fence ${lease.fence}) is no longer held.`,
      );
    }
    const next = { ...held, expiresAt: Date.now() + ttlMs };
    this.#leases.set(lease.name, next);
    return { ...next };
  }
  async releaseLease(lease: Lease) {
    const held = this.#leases.get(lease.name);
    if (held?.fence === lease.fence) this.#leases.delete(lease.name);
  }
  async currentFence(name: string) {
    const held = this.#leases.get(name);
    return held !== undefined && held.expiresAt > Date.now() ? held.fence : undefined;
  }

  async getLearned(kind: string, id: string) {
    const v = this.#learned.get(`${kind}\u0000${id}`);
    return v === undefined ? undefined : clone(v);
  }
  async putLearned(kind: string, id: string, value: unknown) {
    if (value === undefined) this.#learned.delete(`${kind}\u0000${id}`);
    else this.#learned.set(`${kind}\u0000${id}`, clone(value));
  }

  async close() {}
}
