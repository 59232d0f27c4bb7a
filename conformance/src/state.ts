import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import * as core from '@ragfresh/core';
import {
  type DocumentRecord,
  type JournalEntry,
  type Lease,
  RagfreshError,
  type Retirement,
  type ReviewItem,
  type ReviewStatus,
  type RobotsVerdict,
  type RunSummary,
  type StateStore,
  type Tombstone,
} from '@ragfresh/core';

interface Snapshot {
  documents: Record<string, DocumentRecord>;
  journal?: JournalEntry;
  retirements: Record<string, Retirement>;
  review: Record<string, ReviewItem>;
  tombstones: Record<string, Tombstone>;
  robots: Record<string, RobotsVerdict>;
  runs: RunSummary[];
  leases: Record<string, Lease>;
}

const empty = (): Snapshot => ({
  documents: {},
  retirements: {},
  review: {},
  tombstones: {},
  robots: {},
  runs: [],
  leases: {},
});

const clone = <T>(value: T): T => structuredClone(value);

/**
 * A small StateStore for the suite: in memory, or written through to one JSON file (atomic
 * rename after every write) so a later process can reopen it. One process at a time; the
 * crash cases use it only when core's SQLite store is not available.
 */
export class SuiteStateStore implements StateStore {
  readonly kind: string;
  readonly #path: string | undefined;
  #data: Snapshot;

  constructor(options: { readonly path?: string } = {}) {
    this.#path = options.path;
    this.kind = options.path === undefined ? 'suite-memory' : 'suite-json-file';
    this.#data = empty();
    if (this.#path !== undefined) {
      try {
        this.#data = {
          ...empty(),
          ...(JSON.parse(readFileSync(this.#path, 'utf8')) as Partial<Snapshot>),
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }

  #save(): void {
    if (this.#path === undefined) return;
    mkdirSync(dirname(this.#path), { recursive: true });
    const tmp = `${this.#path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.#data));
    renameSync(tmp, this.#path);
  }

  async getDocument(documentId: string): Promise<DocumentRecord | undefined> {
    const r = this.#data.documents[documentId];
    return r === undefined ? undefined : clone(r);
  }
  async putDocument(record: DocumentRecord): Promise<void> {
    this.#data.documents[record.documentId] = clone(record);
    this.#save();
  }
  async deleteDocument(documentId: string): Promise<void> {
    delete this.#data.documents[documentId];
    this.#save();
  }
  async *listDocuments(filter: { readonly sourceId?: string } = {}): AsyncIterable<DocumentRecord> {
    for (const r of Object.values(this.#data.documents)) {
      if (filter.sourceId === undefined || r.sourceId === filter.sourceId) yield clone(r);
    }
  }

  async getJournal(): Promise<JournalEntry | undefined> {
    return this.#data.journal === undefined ? undefined : clone(this.#data.journal);
  }
  async putJournal(entry: JournalEntry): Promise<void> {
    const lease = Object.values(this.#data.leases).find((l) => l.fence === entry.fence);
    if (lease === undefined || lease.expiresAt <= Date.now()) {
      throw new RagfreshError(
        'LEASE_LOST',
        `journal write with fence ${entry.fence} refused: the publisher lease moved on.`,
        {
          scope: 'state',
        },
      );
    }
    this.#data.journal = clone(entry);
    this.#save();
  }
  async clearJournal(batchId: string): Promise<void> {
    if (this.#data.journal?.batchId === batchId) {
      delete this.#data.journal;
      this.#save();
    }
  }

  async putRetirement(r: Retirement): Promise<void> {
    this.#data.retirements[`${r.documentId}#${r.versionId}`] = clone(r);
    this.#save();
  }
  async listRetirements(): Promise<Retirement[]> {
    return Object.values(this.#data.retirements).map(clone);
  }
  async deleteRetirement(documentId: string, versionId: string): Promise<void> {
    delete this.#data.retirements[`${documentId}#${versionId}`];
    this.#save();
  }

  async putReviewItem(item: ReviewItem): Promise<void> {
    this.#data.review[item.id] = clone(item);
    this.#save();
  }
  async getReviewItem(id: string): Promise<ReviewItem | undefined> {
    const r = this.#data.review[id];
    return r === undefined ? undefined : clone(r);
  }
  async listReviewItems(filter: { readonly status?: ReviewStatus } = {}): Promise<ReviewItem[]> {
    return Object.values(this.#data.review)
      .filter((r) => filter.status === undefined || r.status === filter.status)
      .map(clone);
  }

  async putTombstone(t: Tombstone): Promise<void> {
    this.#data.tombstones[t.documentId] = clone(t);
    this.#save();
  }
  async getTombstone(documentId: string): Promise<Tombstone | undefined> {
    const t = this.#data.tombstones[documentId];
    return t === undefined ? undefined : clone(t);
  }
  async listTombstones(): Promise<Tombstone[]> {
    return Object.values(this.#data.tombstones).map(clone);
  }
  async deleteTombstone(documentId: string): Promise<void> {
    delete this.#data.tombstones[documentId];
    this.#save();
  }

  async getRobots(host: string): Promise<RobotsVerdict | undefined> {
    const r = this.#data.robots[host];
    return r === undefined ? undefined : clone(r);
  }
  async putRobots(verdict: RobotsVerdict): Promise<void> {
    this.#data.robots[verdict.host] = clone(verdict);
    this.#save();
  }

  async appendRun(run: RunSummary): Promise<void> {
    this.#data.runs.push(clone(run));
    this.#save();
  }
  async listRuns(sourceId: string, limit: number): Promise<RunSummary[]> {
    return this.#data.runs
      .filter((r) => r.sourceId === sourceId)
      .reverse()
      .slice(0, limit)
      .map(clone);
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | undefined> {
    const now = Date.now();
    const current = this.#data.leases[name];
    if (current !== undefined && current.expiresAt > now && current.holder !== holder)
      return undefined;
    const lease: Lease = { name, holder, fence: (current?.fence ?? 0) + 1, expiresAt: now + ttlMs };
    this.#data.leases[name] = lease;
    this.#save();
    return { ...lease };
  }
  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    const current = this.#data.leases[lease.name];
    if (current === undefined || current.fence !== lease.fence || current.holder !== lease.holder) {
      throw new RagfreshError('LEASE_LOST', `lease ${lease.name} is now held by someone else.`, {
        scope: 'state',
      });
    }
    const renewed: Lease = { ...current, expiresAt: Date.now() + ttlMs };
    this.#data.leases[lease.name] = renewed;
    this.#save();
    return { ...renewed };
  }
  async releaseLease(lease: Lease): Promise<void> {
    const current = this.#data.leases[lease.name];
    if (current === undefined || current.fence !== lease.fence || current.holder !== lease.holder)
      return;
    this.#data.leases[lease.name] = { ...current, expiresAt: 0 };
    this.#save();
  }
  async currentFence(name: string): Promise<number | undefined> {
    const l = this.#data.leases[name];
    return l !== undefined && l.expiresAt > Date.now() ? l.fence : undefined;
  }

  async close(): Promise<void> {}
}

type OpenStateStore = (url: string) => Promise<StateStore> | StateStore;

/**
 * The state store shared by a crash case's parent and child process: core's SQLite store
 * (`openStateStore('sqlite:<path>')`) when this version of core exports it, else the suite's
 * JSON file store. Both processes call this, so they always agree.
 */
export async function openSharedStateStore(path: string): Promise<StateStore> {
  const open = (core as unknown as { openStateStore?: OpenStateStore }).openStateStore;
  if (typeof open === 'function') return open(`sqlite:${path}`);
  return new SuiteStateStore({ path: `${path}.json` });
}
