import type { AuditLog } from './audit.js';
import { type IsoTime, type Reason, type ReviewItem, reasonLine, type Tombstone } from './model.js';
import type {
  DocumentRecord,
  FetchValidators,
  JournalDocument,
  StateStore,
  VersionHistoryEntry,
} from './state/types.js';

/** Events kept per document (the newest win): enough to explain a month of daily changes. */
export const DOCUMENT_HISTORY_LIMIT = 50;

/** 304s written per transaction by `observedLater` (a batch, not one write per page). */
export const OBSERVATION_BATCH = 256;

/** When gone evidence becomes proposable (the engine's deletion policy, as the ledger needs it). */
export interface GonePolicy {
  /** 404/410 observations needed. */
  readonly goneChecks: number;
  /** Time those observations must span. */
  readonly minGoneAgeMs: number;
}

/** A good observation that publishes nothing: a 304, or a 200 whose content did not change. */
export interface GoodObservation {
  readonly validators: FetchValidators;
  readonly retrievedAt: string;
  readonly rawDigest?: string;
}

export interface GoneEvidence {
  readonly record: DocumentRecord;
  /** Why, typed: `gone`, the status, the checks so far and what the evidence still waits for. */
  readonly why: Reason;
  /** `reasonLine(why)`, as the record's status reason and history keep it. */
  readonly reason: string;
  readonly goneCount: number;
  readonly goneSince: string;
  /** Enough observations over enough time to propose deleting a live document. */
  readonly proposable: boolean;
}

/** Where approved tombstones are mirrored outside the state store (read back by `recover`). */
export interface TombstoneMirror {
  put(t: Tombstone): Promise<void>;
  delete(documentId: string): Promise<void>;
  list(): Promise<Tombstone[]>;
}

/** A version the loader made current on LangChain's `index()` path (it has no publisher). */
export interface LoadedVersion {
  readonly url: string;
  readonly versionId: string;
  readonly chunkIds: readonly string[];
  readonly chunkHashes: readonly string[];
  readonly contentHash: string;
  readonly textChars: number;
  readonly validators: FetchValidators;
  readonly rawDigest?: string;
  readonly retrievedAt: string;
  readonly sourceModifiedAt?: string;
}

/** A document a removal request takes out: what its minimal tombstone keeps. */
export interface RemovalTarget {
  readonly documentId: string;
  readonly sourceId: string;
  /** sha256 hex of the URL's canonical key. */
  readonly urlHash: string;
}

/** Appends one event to a record's history, keeping the newest `DOCUMENT_HISTORY_LIMIT`. */
function withEvent(record: DocumentRecord, entry: VersionHistoryEntry): DocumentRecord {
  return {
    ...record,
    history: [...(record.history ?? []), entry].slice(-DOCUMENT_HISTORY_LIMIT),
  };
}

/** `record` with `access` as the journal names it (absent or empty: public, no key). */
function withAccess(record: DocumentRecord, access: readonly string[] | undefined): DocumentRecord {
  const { access: _previous, ...kept } = record;
  return access === undefined || access.length === 0 ? kept : { ...kept, access };
}

function event(
  at: string,
  name: string,
  reasons: readonly string[],
  versionId?: string,
  epoch?: number,
): VersionHistoryEntry {
  return {
    at,
    event: name,
    reasons: [...reasons],
    ...(versionId === undefined ? {} : { versionId }),
    ...(epoch === undefined ? {} : { epoch }),
  };
}

function withoutValidators(record: DocumentRecord): DocumentRecord {
  const { validators: _v, ...rest } = record;
  return rest;
}

/**
 * The only writer of document records, review items and tombstones. Every change is a named
 * transition that reads like what happened to the document (observed, degraded, gone evidence,
 * quarantined, published, removed, proposed, withdrawn, approved, rejected, restored…), takes
 * the record as its caller found it, and writes the next one with one bounded history. State
 * backends store what it writes; the publisher, the engine's stages, imports, reconciliation,
 * review and the LangChain loader call it.
 */
export class DocumentLedger {
  readonly state: StateStore;
  readonly #now: () => Date;
  readonly #mirror: TombstoneMirror | undefined;
  readonly #audit: AuditLog | undefined;
  /** 304s waiting for their batch write (`observedLater`), by document. */
  readonly #pending = new Map<
    string,
    { readonly base: DocumentRecord; readonly observation: GoodObservation; readonly at: IsoTime }
  >();

  constructor(
    state: StateStore,
    options: {
      readonly now?: () => Date;
      readonly tombstones?: TombstoneMirror;
      /** Where review decisions are appended (the governance audit log). */
      readonly audit?: AuditLog;
    } = {},
  ) {
    this.state = state;
    this.#now = options.now ?? (() => new Date());
    this.#mirror = options.tombstones;
    this.#audit = options.audit;
  }

  #at(): IsoTime {
    return this.#now().toISOString();
  }

  async #put(record: DocumentRecord): Promise<DocumentRecord> {
    // A transition written now supersedes a held 304 of the same document (built on older data).
    this.#pending.delete(record.documentId);
    await this.state.putDocument(record);
    return record;
  }

  /** The record of a document never seen before (nothing is written). */
  static fresh(documentId: string, sourceId: string, url: string): DocumentRecord {
    return {
      documentId,
      sourceId,
      url,
      status: 'healthy',
      statusReasons: [],
      currentChunkIds: [],
      timestamps: {},
    };
  }

  // --- observations that publish nothing -------------------------------------------------

  /** A 304, or a 200 whose content did not change: the observation moves, nothing else. */
  observed(base: DocumentRecord, seen: GoodObservation): Promise<DocumentRecord> {
    return this.#put(this.#observedRecord(base, seen, this.#at()));
  }

  /**
   * A 304 whose record is written with the next batch of them (`OBSERVATION_BATCH`, or
   * `flushObservations`): one transaction per batch instead of one write per page. Where the
   * store has no batched update the record is written now, as `observed` writes it.
   */
  async observedLater(base: DocumentRecord, seen: GoodObservation): Promise<void> {
    if (this.state.updateDocuments === undefined) {
      await this.observed(base, seen);
      return;
    }
    this.#pending.set(base.documentId, { base, observation: seen, at: this.#at() });
    if (this.#pending.size >= OBSERVATION_BATCH) await this.flushObservations();
  }

  /** Writes the observations `observedLater` holds (a run calls it when its pages are done). */
  async flushObservations(): Promise<void> {
    if (this.#pending.size === 0) return;
    const batch = [...this.#pending.values()];
    this.#pending.clear();
    await this.#observeAll(batch);
  }

  async #observeAll(
    seen: readonly {
      readonly base: DocumentRecord;
      readonly observation: GoodObservation;
      readonly at: IsoTime;
    }[],
  ): Promise<void> {
    if (seen.length === 0) return;
    const update = this.state.updateDocuments?.bind(this.state);
    if (update === undefined) {
      for (const s of seen) await this.#put(this.#observedRecord(s.base, s.observation, s.at));
      return;
    }
    const byId = new Map(seen.map((s) => [s.base.documentId, s]));
    await update([...byId.keys()], (stored, id) => {
      const s = byId.get(id)!;
      // Gone meanwhile (deleted), or already observed later: nothing to move.
      if (stored === undefined) return undefined;
      const last = stored.lastGoodAt ?? stored.timestamps.retrievedAt;
      if (last !== undefined && last > s.observation.retrievedAt) return undefined;
      return this.#observedRecord(stored, s.observation, s.at);
    });
  }

  #observedRecord(base: DocumentRecord, seen: GoodObservation, at: IsoTime): DocumentRecord {
    return {
      ...base,
      ...(base.status === 'degraded' ? { status: 'healthy', statusReasons: [] } : {}),
      validators: seen.validators,
      ...(seen.rawDigest === undefined ? {} : { rawDigest: seen.rawDigest }),
      timestamps: { ...base.timestamps, retrievedAt: seen.retrievedAt },
      lastAttemptAt: at,
      lastGoodAt: seen.retrievedAt,
      goneCount: 0,
    };
  }

  /**
   * The per-source aggregates the store keeps beside the records (counts by status, oldest
   * observation, latest change and queryable times, pending review by kind): each record and
   * review item written through this ledger moves them in its own transaction. A state written
   * before they were kept (or rebuilt by `recover`) is recounted once here.
   */
  async ensureAggregates(): Promise<void> {
    if (this.state.hasAggregates === undefined || this.state.rebuildAggregates === undefined)
      return;
    if (!(await this.state.hasAggregates())) await this.state.rebuildAggregates();
  }

  /** A page whose version waits in review (or was rejected), unchanged since: validators only. */
  heldUnchanged(
    base: DocumentRecord,
    validators: FetchValidators,
    attemptedAt: string,
  ): Promise<DocumentRecord> {
    return this.#put({ ...base, validators, lastAttemptAt: attemptedAt });
  }

  /**
   * Never overwrite: the last good version stays current; readers are told it is stale. A page
   * judged not the document names the version it would have been (`wouldBe`) in its history, so
   * runs with the same verdict on unchanged content can be counted.
   */
  degraded(
    base: DocumentRecord,
    reasons: readonly string[],
    wouldBe?: string,
  ): Promise<DocumentRecord> {
    const at = this.#at();
    const status =
      base.status === 'quarantined' || base.status === 'tombstoned' ? base.status : 'degraded';
    return this.#put(
      withEvent(
        { ...base, status, statusReasons: [...reasons], lastAttemptAt: at },
        event(at, 'degraded', reasons, wouldBe),
      ),
    );
  }

  /** One 404/410 observation; says whether the evidence now suffices for a deletion proposal. */
  async goneEvidence(
    base: DocumentRecord,
    status: number,
    policy: GonePolicy,
  ): Promise<GoneEvidence> {
    const at = this.#at();
    const { goneChecks, minGoneAgeMs } = policy;
    const goneCount = (base.goneCount ?? 0) + 1;
    const goneSince =
      base.goneCount !== undefined && base.goneCount > 0 && base.goneSince !== undefined
        ? base.goneSince
        : at;
    // Say what the evidence still waits for: more checks, the minimum age, or nothing.
    const ageAt = new Date(Date.parse(goneSince) + minGoneAgeMs).toISOString();
    const waits = [
      ...(goneCount < goneChecks ? [`${goneChecks - goneCount} more check(s)`] : []),
      ...(Date.parse(at) < Date.parse(ageAt) ? [`minGoneAge until ${ageAt}`] : []),
    ];
    const why: Reason = {
      code: 'gone',
      detail: `HTTP ${status} (${goneCount} of ${goneChecks} checks since ${goneSince}; ${waits.length === 0 ? 'enough evidence for a deletion proposal' : `waits for ${waits.join(' and ')}`})`,
    };
    const reason = reasonLine(why);
    const record = await this.#put(
      withEvent(
        {
          ...base,
          goneCount,
          goneSince,
          lastAttemptAt: at,
          status: base.currentVersionId === undefined ? base.status : 'degraded',
          statusReasons: [reason],
        },
        event(at, 'gone', [reason]),
      ),
    );
    const ageOk = Date.parse(at) - Date.parse(goneSince) >= minGoneAgeMs;
    const proposable = base.currentVersionId !== undefined && goneCount >= goneChecks && ageOk;
    return { record, why, reason, goneCount, goneSince, proposable };
  }

  /** A tombstoned URL answered 200: observed, never published. */
  resurrectionSeen(base: DocumentRecord): Promise<DocumentRecord> {
    const at = this.#at();
    return this.#put(
      withEvent(
        { ...base, lastAttemptAt: at },
        event(at, 'alive-after-tombstone', ['HTTP 200 while tombstoned']),
      ),
    );
  }

  /** The document says the same as others (a near-duplicate group); both stay, each cited. */
  grouped(
    base: DocumentRecord,
    groupId: string,
    others: readonly string[],
  ): Promise<DocumentRecord> {
    return this.#put(withEvent(base, event(this.#at(), 'duplicate-group', [groupId, ...others])));
  }

  /** Validators re-tagged with a new pipeline key after a re-extraction gave the same version. */
  retagged(base: DocumentRecord, validators: FetchValidators): Promise<DocumentRecord> {
    return this.#put({ ...base, validators });
  }

  /** The stored copy is lost (or never was): the next fetch is a full one, not a 304. */
  async validatorsForgotten(documentId: string): Promise<DocumentRecord | undefined> {
    const record = await this.state.getDocument(documentId);
    if (record === undefined || record.validators === undefined) return record;
    return this.#put(withoutValidators(record));
  }

  // --- publication (the publisher, in its journalled steps) ------------------------------

  /** A candidate the contract (or verification) held back: its old version stays current. */
  quarantined(
    candidate: {
      readonly documentId: string;
      readonly sourceId: string;
      readonly url: string;
      readonly versionId: string;
    },
    record: DocumentRecord | undefined,
    reasons: readonly string[],
  ): Promise<DocumentRecord> {
    const at = this.#at();
    const base =
      record ?? DocumentLedger.fresh(candidate.documentId, candidate.sourceId, candidate.url);
    return this.#put(
      withEvent(
        { ...base, status: 'quarantined', statusReasons: [...reasons], lastAttemptAt: at },
        event(at, 'quarantined', reasons, candidate.versionId),
      ),
    );
  }

  /** A journalled batch made `d` current at `epoch` (or, for `remove`, took it out of the view). */
  published(
    record: DocumentRecord | undefined,
    d: JournalDocument,
    epoch: number,
    /** One time for a whole batch (its documents became queryable together). */
    now: IsoTime = this.#at(),
  ): Promise<DocumentRecord> {
    if (d.action === 'remove') {
      const { currentVersionId: _dropped, ...rest } = record!;
      const reasons = d.reason === undefined ? [] : [d.reason];
      return this.#put(
        withEvent(
          {
            ...rest,
            status: 'tombstoned',
            statusReasons: reasons,
            currentChunkIds: [],
            publishedEpoch: epoch,
          },
          event(now, 'removed', reasons, d.versionId, epoch),
        ),
      );
    }
    // A repair writes again the version the state already calls current (the store had lost
    // it): the document's lifecycle — status, gone evidence, STALE labels, validators — stays.
    // A space migration re-embedded the same content: the lifecycle stays the same way.
    // A republish also records the scope its chunks now carry (the source's, as for a publish).
    if ((d.repair === true || d.respace === true || d.republish === true) && record !== undefined)
      return this.#put(
        withEvent(
          {
            ...(d.republish === true ? withAccess(record, d.access) : record),
            currentVersionId: d.versionId,
            currentChunkIds: d.chunkIds,
            ...(d.chunkHashes === undefined ? {} : { chunkHashes: d.chunkHashes }),
            publishedEpoch: epoch,
          },
          d.respace === true
            ? event(
                now,
                'respaced',
                [`re-embedded from ${d.previousVersionId ?? 'the stored text'}`],
                d.versionId,
                epoch,
              )
            : d.republish === true
              ? event(
                  now,
                  'republished',
                  [
                    `written again from its raw snapshot in place of ${d.previousVersionId ?? 'the stored version'}, with the reserved keys it lacked`,
                  ],
                  d.versionId,
                  epoch,
                )
              : event(
                  now,
                  'repaired',
                  ['the store had lost the current version; written again'],
                  d.versionId,
                  epoch,
                ),
        ),
      );
    const changed = record?.contentHash !== d.contentHash;
    const timestamps = {
      ...(record?.timestamps ?? {}),
      ...(d.retrievedAt === undefined ? {} : { retrievedAt: d.retrievedAt }),
      ...(d.sourceModifiedAt === undefined ? {} : { sourceModifiedAt: d.sourceModifiedAt }),
      ...(changed ? { contentChangedAt: d.retrievedAt ?? now } : {}),
      queryableAt: now,
    };
    const replaced = d.previousVersionId !== undefined;
    // The record's scope is the new version's: a version that became public drops it.
    const { access: _previousScope, ...kept } = record ?? {};
    return this.#put(
      withEvent(
        {
          documentId: d.documentId,
          sourceId: d.sourceId,
          url: d.url ?? record?.url ?? '',
          ...kept,
          ...(d.access === undefined || d.access.length === 0 ? {} : { access: d.access }),
          status: 'healthy',
          statusReasons: [],
          currentVersionId: d.versionId,
          currentChunkIds: d.chunkIds,
          ...(d.contentHash === undefined ? {} : { contentHash: d.contentHash }),
          ...(d.textChars === undefined ? {} : { textChars: d.textChars }),
          ...(d.chunkHashes === undefined ? {} : { chunkHashes: d.chunkHashes }),
          ...(d.fingerprint === undefined ? {} : { fingerprint: d.fingerprint }),
          ...(d.duplicateGroup === undefined ? {} : { duplicateGroup: d.duplicateGroup }),
          timestamps,
          ...(d.retrievedAt === undefined ? {} : { lastGoodAt: d.retrievedAt, goneCount: 0 }),
          ...(d.validators === undefined ? {} : { validators: d.validators }),
          ...(d.rawDigest === undefined ? {} : { rawDigest: d.rawDigest }),
          publishedEpoch: epoch,
        },
        event(
          now,
          replaced ? 'replaced' : 'published',
          replaced ? [`replaces ${d.previousVersionId}`] : [],
          d.versionId,
          epoch,
        ),
      ),
    );
  }

  /**
   * A version the LangChain loader made current on the `index()` path, where the loader is the
   * writer of its documents' records (ragfresh's publisher is on the other path).
   */
  loaded(base: DocumentRecord, v: LoadedVersion): Promise<DocumentRecord> {
    const { goneSince: _g, ...rest } = base;
    return this.#put(
      withEvent(
        {
          ...rest,
          url: v.url,
          status: 'healthy',
          statusReasons: [],
          currentVersionId: v.versionId,
          currentChunkIds: [...v.chunkIds],
          contentHash: v.contentHash,
          textChars: v.textChars,
          chunkHashes: [...v.chunkHashes],
          validators: v.validators,
          ...(v.rawDigest === undefined ? {} : { rawDigest: v.rawDigest }),
          timestamps: {
            ...base.timestamps,
            retrievedAt: v.retrievedAt,
            contentChangedAt: v.retrievedAt,
            ...(v.sourceModifiedAt === undefined ? {} : { sourceModifiedAt: v.sourceModifiedAt }),
          },
          lastAttemptAt: this.#at(),
          lastGoodAt: v.retrievedAt,
          goneCount: 0,
        },
        event(v.retrievedAt, 'loaded', [], v.versionId),
      ),
    );
  }

  /**
   * A record rebuilt from what the store holds (`recover`: the state was lost). Written only
   * when the state has no record of the document.
   */
  async restored(record: DocumentRecord): Promise<boolean> {
    if ((await this.state.getDocument(record.documentId)) !== undefined) return false;
    await this.#put(record);
    return true;
  }

  // --- review -----------------------------------------------------------------------------

  /**
   * A pending review item (a deletion proposal, an ingestion or quarantine item). Not written
   * when `replaces` says the stored item still stands (default: one is pending).
   */
  async proposed(
    item: Omit<ReviewItem, 'status' | 'createdAt'>,
    stands: (existing: ReviewItem) => boolean = (e) => e.status === 'pending',
  ): Promise<ReviewItem | undefined> {
    const existing = await this.state.getReviewItem(item.id);
    if (existing !== undefined && stands(existing)) return undefined;
    const written: ReviewItem = { ...item, createdAt: this.#at(), status: 'pending' };
    await this.state.putReviewItem(written);
    return written;
  }

  /** The engine re-evaluated a proposal and its evidence no longer holds. */
  async withdrawn(item: ReviewItem, why: string): Promise<void> {
    const at = this.#at();
    await this.state.putReviewItem({
      ...item,
      status: 'withdrawn',
      decidedAt: at,
      decidedBy: 'engine:re-evaluated',
      evidence: [...item.evidence, `${at} withdrawn: ${why}`],
    });
    const record = await this.state.getDocument(item.documentId);
    if (record !== undefined)
      await this.#put(withEvent(record, event(at, 'proposal-withdrawn', [item.reason, why])));
  }

  /**
   * An approved deletion: the item is decided and a tombstone (mirrored, where a mirror is
   * configured) keeps the URL from coming back casually. The removal itself is published.
   */
  async deletionApproved(item: ReviewItem, by: string): Promise<Tombstone> {
    const at = this.#at();
    const t: Tombstone = {
      documentId: item.documentId,
      sourceId: item.sourceId,
      url: item.url,
      reason: item.reason,
      evidence: item.evidence,
      createdAt: at,
      approvedBy: by,
    };
    await this.state.putTombstone(t);
    await this.#mirror?.put(t);
    await this.decided(item, 'approved', by);
    return t;
  }

  /**
   * A review decision recorded on the item (what it did to the document is its own transition)
   * and appended to the audit log.
   */
  async decided(item: ReviewItem, status: 'approved' | 'rejected', by: string): Promise<void> {
    await this.state.putReviewItem({ ...item, status, decidedAt: this.#at(), decidedBy: by });
    await this.#audit?.append({
      action: status === 'approved' ? 'review-approved' : 'review-rejected',
      by,
      reason: item.reason,
      documents: [item.documentId],
      details: { item: item.id, kind: item.kind },
    });
  }

  /** A rejected deletion: the gone evidence starts over. */
  async deletionRejected(item: ReviewItem, by: string): Promise<void> {
    await this.decided(item, 'rejected', by);
    const record = await this.state.getDocument(item.documentId);
    if (record !== undefined) await this.#put({ ...record, goneCount: 0 });
  }

  /** A rejected quarantine: the old version stays current until the page changes again. */
  async quarantineRejected(item: ReviewItem, by: string): Promise<void> {
    await this.decided(item, 'rejected', by);
    const record = await this.state.getDocument(item.documentId);
    if (record === undefined || record.status !== 'quarantined') return;
    const versionless = record.currentVersionId === undefined;
    await this.#put(
      withEvent(
        {
          ...record,
          status: versionless ? 'degraded' : 'healthy',
          statusReasons: versionless
            ? [`quarantine rejected by ${by}: version ${item.versionId ?? '?'} not published`]
            : [],
        },
        event(
          this.#at(),
          'quarantine-rejected',
          [by, `version ${item.versionId ?? '?'} stays unpublished until the page changes`],
          item.versionId,
        ),
      ),
    );
  }

  /** A tombstone lifted (an approved ingestion): the next run fetches the page in full. */
  async tombstoneLifted(documentId: string, by: string): Promise<void> {
    await this.state.deleteTombstone(documentId);
    await this.#mirror?.delete(documentId);
    const record = await this.state.getDocument(documentId);
    if (record === undefined) return;
    await this.#put(
      withEvent(
        { ...withoutValidators(record), status: 'healthy', statusReasons: [] },
        event(this.#at(), 'tombstone-lifted', [by]),
      ),
    );
  }

  // --- removal requests --------------------------------------------------------------------

  /**
   * A removal request's first step: a minimal tombstone per document — the URL's hash, the
   * reason, who and when, no URL — that keeps the URL from being fetched or imported again
   * until `removalUndone`. Written before the removal is published, so a run killed half-way
   * leaves the URLs blocked.
   */
  async removalRequested(
    targets: readonly RemovalTarget[],
    act: { readonly reason: string; readonly by: string },
  ): Promise<Tombstone[]> {
    const at = this.#at();
    const out: Tombstone[] = [];
    for (const t of targets) {
      const tombstone: Tombstone = {
        documentId: t.documentId,
        sourceId: t.sourceId,
        url: '',
        reason: act.reason,
        evidence: [],
        createdAt: at,
        approvedBy: act.by,
        removal: { urlHash: t.urlHash },
      };
      await this.state.putTombstone(tombstone);
      await this.#mirror?.put(tombstone);
      out.push(tombstone);
    }
    return out;
  }

  /**
   * A removal request's last state step, once its removal was published: the records and
   * every review item of the documents are deleted; only their tombstones remain.
   */
  async removalPurged(documentIds: readonly string[]): Promise<void> {
    const ids = new Set(documentIds);
    for (const item of await this.state.listReviewItems())
      if (ids.has(item.documentId)) await this.state.deleteReviewItem(item.id);
    for (const id of ids) await this.state.deleteDocument(id);
  }

  /** A removal request undone: the URL may be fetched again (as a new document). */
  async removalUndone(documentId: string): Promise<boolean> {
    const t = await this.state.getTombstone(documentId);
    if (t?.removal === undefined) return false;
    await this.state.deleteTombstone(documentId);
    await this.#mirror?.delete(documentId);
    return true;
  }

  /** A tombstone read back from the mirror after the state was lost (`recover`). */
  async tombstoneRestored(t: Tombstone): Promise<boolean> {
    if ((await this.state.getTombstone(t.documentId)) !== undefined) return false;
    await this.state.putTombstone(t);
    const record = await this.state.getDocument(t.documentId);
    if (record !== undefined) await this.#put({ ...record, status: 'tombstoned' });
    return true;
  }
}
