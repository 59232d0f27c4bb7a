import { randomUUID } from 'node:crypto';
import { accessNarrows, normalizeAccess } from '../access.js';
import type { CompactReport, Connector, VersionPatch } from '../connector.js';
import { errorMessage, isRagfreshError, RagfreshError } from '../errors.js';
import { chunkId } from '../identity.js';
import { DocumentLedger } from '../ledger.js';
import { FIELDS, OPEN_EPOCH, toStoredChunk } from '../metadata.js';
import {
  type DocumentPublishResult,
  type DocumentVersion,
  type IsoTime,
  type PublishContract,
  type PublishReport,
  type Reason,
  reasonLine,
} from '../model.js';
import { finishSpaceMigration, sameContentVersion } from '../space.js';
import {
  type DocumentRecord,
  type FetchValidators,
  type JournalDocument,
  type JournalEntry,
  type JournalStep,
  type Lease,
  PUBLISHER_LEASE,
  type Retirement,
  type StateStore,
} from '../state/types.js';
import { type Canary, type CanaryResult, canaryMiss, runCanary } from './canary.js';
import { defaultVerifyTimeoutMs, verifyQueryableBatch } from './verify.js';

/**
 * A new version to publish, plus the observation that produced it. The publisher records the
 * observation in the same journalled document-record write that makes the version current, so
 * the caller never writes the record a second time.
 */
export interface PublishCandidate extends DocumentVersion {
  readonly retrievedAt?: IsoTime;
  readonly sourceModifiedAt?: IsoTime;
  /** HTTP validators of the response the version came from (kept only once it is current). */
  readonly validators?: FetchValidators;
  /** Raw snapshot digest of that response (lets the version be re-extracted without refetching). */
  readonly rawDigest?: string;
}

/** Retire a document's current version without replacement (an approved deletion). */
export interface RemovalRequest {
  readonly documentId: string;
  readonly reason: string;
  /**
   * A removal a person requested by name (`ragfresh remove`): the run's retire-share gate,
   * which guards against removals inferred from weak evidence, does not apply.
   */
  readonly requested?: boolean;
}

export interface PublisherHooks {
  /**
   * Called after the journal records `step` and before the step's work runs. The conformance
   * crash cases kill the process here.
   */
  readonly beforeStep?: (step: JournalStep, entry: JournalEntry) => void | Promise<void>;
}

export interface PublisherOptions {
  readonly connector: Connector;
  readonly state: StateStore;
  /** Lease holder id; defaults to a random id per process. */
  readonly holder?: string;
  /**
   * The publish lease's time to live (default 60 s). It is renewed at each journal step and
   * between the requests of a write split into several and the attempts of a verification,
   * so a long batch that keeps making progress keeps it; a publisher stuck in one request (or
   * paused) longer than this loses it to the next.
   */
  readonly leaseTtlMs?: number;
  /**
   * Retired versions are deleted once the published epoch is this many epochs past their
   * retirement, so a reader that read the previous epoch just before a promotion can still
   * finish its query. Default 1.
   */
  readonly graceEpochs?: number;
  /**
   * And at least this long after their retirement: batched publications can move the epoch
   * several times within one slow reader's query, so a count of epochs alone does not protect
   * a reader that read the epoch just before. Default 0 (epochs only).
   */
  readonly graceMs?: number;
  /** Publish contract per source (min chars, required phrases, max shrink, chunk-count change). */
  readonly contracts?: (sourceId: string) => PublishContract | undefined;
  /** Largest share of a source's current documents one batch may remove. Default 0.5. */
  readonly maxRetireShare?: number;
  readonly verifyTimeoutMs?: number;
  /** Documents per batch that get a smoke query during verification. Default 3. */
  readonly smokeSample?: number;
  /**
   * Publication canaries per source. A canary with a `documentId` (or an `expect.url` equal to a
   * candidate's url) runs before promotion against the view the batch would publish, and holds
   * the batch when it fails; every canary of a source in the batch runs again after promotion.
   * Needs `embedQuery`.
   */
  readonly canaries?: (sourceId: string) => readonly Canary[];
  /** Embeds a canary query with the same embeddings as the chunks. */
  readonly embedQuery?: (text: string) => Promise<readonly number[]>;
  /**
   * How long a retired version of a source's documents stays in the store after its
   * retirement, for as-of reads (beside the grace period; undefined: the grace period only).
   */
  readonly retentionMs?: (sourceId: string) => number | undefined;
  readonly hooks?: PublisherHooks;
  readonly now?: () => Date;
  /**
   * The embedding space (`EmbeddingSpace.id`) of the chunks this publisher stages: written on
   * every staged chunk as `rf_space`.
   */
  readonly spaceId?: string;
  /**
   * The namespace suffix of `connector` when it is not the configured one
   * (`Connector.forNamespace`, a space migration to other dimensions): recorded in the journal,
   * and a journal of another namespace is never recovered here.
   */
  readonly namespace?: string;
}

/** The source id a documentId starts with (`<sourceId>:<hash>`). */
function sourceOfDocument(documentId: string): string {
  return documentId.slice(0, documentId.indexOf(':'));
}

/** What `Publisher.purge` deleted. */
export interface PurgeReport {
  /** Chunks deleted, every version counted. */
  readonly chunks: number;
  /** What the store's compaction did physically. */
  readonly compaction: CompactReport;
}

export interface RecoveryReport {
  readonly batchId: string;
  readonly action: 'rolled-back' | 'rolled-forward';
  readonly fromStep: JournalStep;
  readonly documents: number;
}

interface PlannedDocument {
  readonly candidate?: PublishCandidate;
  readonly journal: JournalDocument;
}

/** The validity of a version withdrawn from every view: `[rf_from, 0)` is empty, flag off. */
const WITHDRAWN = Object.freeze({ to: 0, current: false });

export interface PublishOptions {
  readonly removals?: readonly RemovalRequest[];
  /**
   * Documents whose current version is to be written again although the state already calls
   * it current (the store lost it: reconciliation repair). Without this, such a candidate is
   * `unchanged` and nothing is written.
   */
  readonly repair?: ReadonlySet<string>;
  /**
   * Documents a reviewer accepted although their source's publish contract rejected them
   * (a quarantined candidate approved through review): the contract is not applied to them.
   */
  readonly accept?: ReadonlySet<string>;
  /**
   * A space migration: every candidate is its document's current content re-embedded into
   * the publisher's space (its versionId carries the space suffix). Contracts do not apply,
   * the version replaces the current one and the document's lifecycle stays.
   */
  readonly respace?: boolean;
  /**
   * A republish in place: a candidate with its document's current content under another stored
   * version id (`republishedVersionId`) replaces the current version so its chunks carry the
   * reserved keys they lacked. Contracts do not apply and the lifecycle stays, as for a space
   * migration; a candidate of other content is published as usual.
   */
  readonly republish?: boolean;
}

/** One batch on its way through the steps: its epochs, the results so far, the step timings. */
interface Batch {
  readonly batchId: string;
  readonly baseEpoch: number;
  readonly targetEpoch: number;
  readonly results: DocumentPublishResult[];
  readonly timings: Record<string, number>;
  /** Canary results of the staged view (step 4). */
  canaries?: CanaryResult[];
}

/** A promoted document's result. */
function publishedResult(d: JournalDocument): DocumentPublishResult {
  return {
    documentId: d.documentId,
    versionId: d.versionId,
    ...(d.previousVersionId === undefined ? {} : { previousVersionId: d.previousVersionId }),
    outcome: d.action === 'publish' ? 'published' : 'removed',
    reasons: d.reason === undefined ? [] : [{ code: 'removed', detail: d.reason }],
    chunks: d.chunkIds.length,
  };
}

function elapsed(start: number): number {
  return Math.round((performance.now() - start) * 100) / 100;
}

/**
 * Runs the publish protocol: validate, manifest, stage, verify queryable, promote (advance
 * the snapshot epoch), flag, retire, confirm — journalling each step before it runs, so a
 * process killed anywhere resumes or rolls back on the next `open`. One writer at a time:
 * the publisher holds a lease whose fencing token guards every journal write, and the epoch
 * advance is a compare-and-set in the store.
 */
export class Publisher {
  readonly connector: Connector;
  readonly state: StateStore;
  readonly #options: PublisherOptions;
  readonly #ledger: DocumentLedger;
  #lease: Lease;
  #closed = false;

  private constructor(options: PublisherOptions, lease: Lease) {
    this.connector = options.connector;
    this.state = options.state;
    this.#options = options;
    this.#ledger = new DocumentLedger(options.state, { now: () => this.#now() });
    this.#lease = lease;
  }

  /**
   * Takes the publisher lease (LEASE_HELD when another live publisher has it) and recovers
   * any journalled publication a previous process left behind. The connector must be open.
   */
  static async open(options: PublisherOptions): Promise<Publisher> {
    if (options.connector.dimensions === undefined) {
      throw new RagfreshError(
        'NOT_OPEN',
        'open the connector (connector.open({ dimensions })) before the publisher.',
      );
    }
    const holder = options.holder ?? `publisher-${process.pid}-${randomUUID()}`;
    const ttl = options.leaseTtlMs ?? 60_000;
    const acquire = async (minFence?: number): Promise<Lease> => {
      const lease = await options.state.acquireLease(
        PUBLISHER_LEASE,
        holder,
        ttl,
        minFence === undefined ? undefined : { minFence },
      );
      if (lease === undefined) {
        throw new RagfreshError(
          'LEASE_HELD',
          'another publisher holds the publish lease; wait for it to finish or for its lease to expire.',
        );
      }
      return lease;
    };
    let lease = await acquire();
    // The store's fence only grows: a state store that was reset or rebuilt (`ragfresh
    // recover`) grants fences from 1 again, so the lease is taken again above the store's.
    const held = await options.connector.readFence();
    if (held >= lease.fence) lease = await acquire(held + 1);
    if (held >= lease.fence) {
      throw new RagfreshError(
        'LEASE_LOST',
        `the store holds fence ${held} but the ${options.state.kind} state store granted ${lease.fence} and ignores minFence; use a state store that supports it.`,
      );
    }
    // From here on, every write of a publisher with an older fence is refused by the store.
    await options.connector.raiseFence(lease.fence);
    const publisher = new Publisher(options, lease);
    await publisher.recover();
    // A state written before the ledger kept aggregates gets them once, under the lease.
    await publisher.#ledger.ensureAggregates();
    return publisher;
  }

  get fence(): number {
    return this.#lease.fence;
  }

  /**
   * The fence every store write of this publisher carries, and the lease renewal a write split
   * into several requests runs between them (progress keeps the lease; a hung request does not).
   */
  get #write(): { readonly fence: number; readonly progress: () => Promise<void> } {
    return { fence: this.#lease.fence, progress: () => this.#renew() };
  }

  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  async #renew(): Promise<void> {
    if (this.#closed) throw new RagfreshError('NOT_OPEN', 'publisher is closed.');
    const ttl = this.#options.leaseTtlMs ?? 60_000;
    // Renewed whenever a tenth of it has run: each step (and each request of a long one) starts
    // with nearly a whole lease, so one long step cannot start with half of it already spent.
    if (this.#lease.expiresAt - Date.now() < ttl * 0.9) {
      this.#lease = await this.state.renewLease(this.#lease, ttl);
    }
  }

  async #step(entry: JournalEntry, step: JournalStep): Promise<JournalEntry> {
    await this.#renew();
    const next: JournalEntry = { ...entry, step, fence: this.#lease.fence };
    await this.state.putJournal(next);
    await this.#options.hooks?.beforeStep?.(step, next);
    return next;
  }

  /** Checks a candidate against its source's contract; returns reasons it must not replace the current version. */
  #gate(candidate: PublishCandidate, record: DocumentRecord | undefined): Reason[] {
    const contract = this.#options.contracts?.(candidate.sourceId);
    const reasons: Reason[] = [];
    if (candidate.chunks.length === 0) reasons.push({ code: 'empty', detail: 'no chunks' });
    if (contract === undefined) return reasons;
    if (contract.minChars !== undefined && candidate.textChars < contract.minChars) {
      reasons.push({
        code: 'too-small',
        detail: `${candidate.textChars} chars < minimum ${contract.minChars}`,
      });
    }
    if (contract.requiredPhrases !== undefined && contract.requiredPhrases.length > 0) {
      const text = (candidate.text ?? candidate.chunks.map((c) => c.text).join('\n')).toLowerCase();
      for (const phrase of contract.requiredPhrases) {
        if (!text.includes(phrase.toLowerCase()))
          reasons.push({ code: 'missing-phrase', detail: JSON.stringify(phrase) });
      }
    }
    if (
      contract.maxShrink !== undefined &&
      record?.textChars !== undefined &&
      record.textChars > 0
    ) {
      const shrink = 1 - candidate.textChars / record.textChars;
      if (shrink > contract.maxShrink) {
        reasons.push({
          code: 'shrink',
          detail: `${(shrink * 100).toFixed(1)}% > allowed ${(contract.maxShrink * 100).toFixed(1)}%`,
        });
      }
    }
    if (
      contract.maxChunkCountChange !== undefined &&
      record !== undefined &&
      record.currentChunkIds.length > 0
    ) {
      const before = record.currentChunkIds.length;
      const change = Math.abs(candidate.chunks.length - before) / before;
      if (change > contract.maxChunkCountChange) {
        reasons.push({
          code: 'chunk-count',
          detail: `${before} -> ${candidate.chunks.length} exceeds allowed change ${contract.maxChunkCountChange}`,
        });
      }
    }
    return reasons;
  }

  #assertWellFormed(c: PublishCandidate): void {
    const dims = this.connector.dimensions;
    c.chunks.forEach((chunk, i) => {
      if (
        chunk.documentId !== c.documentId ||
        chunk.versionId !== c.versionId ||
        chunk.ordinal !== i
      ) {
        throw new RagfreshError(
          'INVALID_ARGUMENT',
          `chunk ${i} of ${c.documentId} does not belong to version ${c.versionId} at ordinal ${i}; build chunks with the extractor.`,
        );
      }
      if (chunk.chunkId !== chunkId(c.documentId, c.versionId, i)) {
        throw new RagfreshError(
          'INVALID_ARGUMENT',
          `chunk ${i} of ${c.documentId} has a non-deterministic id ${chunk.chunkId}.`,
        );
      }
      if (chunk.embedding.length !== dims) {
        throw new RagfreshError(
          'DIMENSION_MISMATCH',
          `chunk ${chunk.chunkId} has ${chunk.embedding.length} dimensions; the index holds ${dims}.`,
          { scope: this.connector.store },
        );
      }
    });
  }

  async #markRejected(
    candidate: PublishCandidate,
    record: DocumentRecord | undefined,
    reasons: readonly Reason[],
  ): Promise<void> {
    // The record keeps the printed lines.
    await this.#ledger.quarantined(candidate, record, reasons.map(reasonLine));
  }

  /**
   * Publishes a batch: every candidate that passes its gates becomes current at one new
   * epoch, atomically for epoch readers; removals leave the view at the same epoch.
   */
  async publish(
    candidates: readonly PublishCandidate[],
    options: PublishOptions = {},
  ): Promise<PublishReport> {
    await this.#renew();
    const t0 = performance.now();
    const baseEpoch = await this.connector.readEpoch();
    const batch: Batch = {
      batchId: randomUUID(),
      baseEpoch,
      targetEpoch: baseEpoch + 1,
      results: [],
      timings: {},
    };
    const planned = await this.#validate(batch, candidates, options);
    batch.timings.validate = elapsed(t0);
    if (planned.length === 0) return this.#report(batch, baseEpoch, 0, 0);
    let entry = await this.#manifest(batch, planned, options);
    const staged = await this.#stage(batch, planned, entry);
    entry = staged.entry;
    const held = await this.#verify(batch, planned, staged.chunks);
    if (held !== undefined) return held;
    entry = await this.#step(entry, 'verified');
    entry = await this.#promote(batch, entry);
    const retiredChunks = await this.#rollForward(entry, 'promoted', batch.timings);
    for (const d of entry.documents) batch.results.push(publishedResult(d));
    const canaries = [
      ...(batch.canaries ?? []),
      ...(await this.#currentCanaries(entry, batch.targetEpoch)),
    ];
    batch.timings.total = elapsed(t0);
    return {
      ...this.#report(batch, batch.targetEpoch, staged.chunks, retiredChunks),
      ...(canaries.length === 0 ? {} : { canaries }),
    };
  }

  #report(batch: Batch, epoch: number, stagedChunks: number, retiredChunks: number): PublishReport {
    return {
      batchId: batch.batchId,
      targetEpoch: batch.targetEpoch,
      epoch,
      documents: batch.results,
      stagedChunks,
      retiredChunks,
      timingsMs: batch.timings,
    };
  }

  /**
   * Step 1, validate: each candidate well formed and once in the batch; tombstoned, unchanged
   * and contract-rejected ones get their result here (a rejection is quarantined); the rest, and
   * the removals, are planned.
   */
  async #validate(
    batch: Batch,
    candidates: readonly PublishCandidate[],
    options: PublishOptions,
  ): Promise<PlannedDocument[]> {
    const planned: PlannedDocument[] = [];
    const seen = new Set<string>();
    for (const c of candidates) {
      if (seen.has(c.documentId)) {
        throw new RagfreshError(
          'INVALID_ARGUMENT',
          `document ${c.documentId} appears twice in one batch.`,
        );
      }
      seen.add(c.documentId);
      this.#assertWellFormed(c);
      const plan = await this.#planCandidate(c, options);
      if ('journal' in plan) planned.push(plan);
      else batch.results.push(plan);
    }
    for (const removal of await this.#planRemovals(options.removals ?? [], seen, batch.results))
      planned.push(removal);
    return planned;
  }

  /** One candidate's validation: its result when it is not to be published, else its plan. */
  async #planCandidate(
    c: PublishCandidate,
    options: PublishOptions,
  ): Promise<PlannedDocument | DocumentPublishResult> {
    const record = await this.state.getDocument(c.documentId);
    const tomb = await this.state.getTombstone(c.documentId);
    const ids = { documentId: c.documentId, versionId: c.versionId };
    if (tomb !== undefined)
      return {
        ...ids,
        outcome: 'skipped',
        reasons: [{ code: 'tombstoned', detail: tomb.reason }],
        chunks: 0,
      };
    const repairing =
      options.repair?.has(c.documentId) === true &&
      sameContentVersion(record?.currentVersionId, c.versionId);
    // The same content re-embedded by a space migration (`v…~es_…`) is still unchanged.
    const respacing = options.respace === true && record?.currentVersionId !== c.versionId;
    const republishing =
      options.republish === true &&
      record?.currentVersionId !== c.versionId &&
      sameContentVersion(record?.currentVersionId, c.versionId);
    if (
      sameContentVersion(record?.currentVersionId, c.versionId) &&
      !repairing &&
      !respacing &&
      !republishing
    )
      return { ...ids, outcome: 'unchanged', reasons: [], chunks: c.chunks.length };
    // A repair restores what was already accepted: the contract compared it once.
    const gates =
      repairing || respacing || republishing || options.accept?.has(c.documentId) === true
        ? []
        : this.#gate(c, record);
    const previous =
      record?.currentVersionId === undefined ? {} : { previousVersionId: record.currentVersionId };
    if (gates.length > 0) {
      await this.#markRejected(c, record, gates);
      return {
        ...ids,
        ...previous,
        outcome: 'rejected-by-gate',
        reasons: gates,
        chunks: c.chunks.length,
      };
    }
    const access = normalizeAccess(c.chunks[0]?.provenance.access);
    const narrows =
      record?.currentVersionId !== undefined && !repairing && accessNarrows(record.access, access);
    return {
      candidate: c,
      journal: {
        ...ids,
        sourceId: c.sourceId,
        chunkIds: c.chunks.map((ch) => ch.chunkId),
        // A repaired version replaces nothing: its own ids are overwritten in place.
        ...(repairing ? {} : previous),
        action: 'publish',
        ...(repairing ? { repair: true } : {}),
        ...(respacing ? { respace: true } : {}),
        ...(republishing ? { republish: true } : {}),
        url: c.url,
        contentHash: c.contentHash,
        textChars: c.textChars,
        chunkHashes: c.chunks.map((ch) => ch.contentHash),
        ...(c.fingerprint === undefined ? {} : { fingerprint: c.fingerprint }),
        ...(c.duplicateGroup === undefined ? {} : { duplicateGroup: c.duplicateGroup }),
        ...(c.retrievedAt === undefined ? {} : { retrievedAt: c.retrievedAt }),
        ...(c.sourceModifiedAt === undefined ? {} : { sourceModifiedAt: c.sourceModifiedAt }),
        ...(c.validators === undefined ? {} : { validators: c.validators }),
        ...(c.rawDigest === undefined ? {} : { rawDigest: c.rawDigest }),
        ...(access.length === 0 ? {} : { access }),
        ...(narrows ? { narrows: true } : {}),
      },
    };
  }

  /** Step 2, manifest: the batch's documents journalled (fenced) before anything is written. */
  #manifest(
    batch: Batch,
    planned: readonly PlannedDocument[],
    options: PublishOptions,
  ): Promise<JournalEntry> {
    return this.#step(
      {
        batchId: batch.batchId,
        step: 'manifest',
        baseEpoch: batch.baseEpoch,
        targetEpoch: batch.targetEpoch,
        startedAt: this.#now().toISOString(),
        fence: this.#lease.fence,
        documents: planned.map((p) => p.journal),
        ...(this.#options.namespace === undefined ? {} : { namespace: this.#options.namespace }),
        ...(options.respace === true && this.#options.spaceId !== undefined
          ? { space: this.#options.spaceId }
          : {}),
      },
      'manifest',
    );
  }

  /** Step 3, stage: every new chunk in one write, invisible to the current view (rf_from = T > E). */
  async #stage(
    batch: Batch,
    planned: readonly PlannedDocument[],
    manifest: JournalEntry,
  ): Promise<{ readonly entry: JournalEntry; readonly chunks: number }> {
    const t = performance.now();
    const entry = await this.#step(manifest, 'staging');
    // The connector splits the write by its maxWriteBatch.
    const staged = planned.flatMap((p) =>
      p.candidate === undefined
        ? []
        : p.candidate.chunks.map((ch) =>
            toStoredChunk(ch, batch.targetEpoch, this.#options.spaceId),
          ),
    );
    await this.connector.upsert(staged, this.#write);
    const next = await this.#step(entry, 'staged');
    batch.timings.stage = elapsed(t);
    return { entry: next, chunks: staged.length };
  }

  /**
   * Step 4, verify queryable, then the canaries against the view the batch would publish
   * (replaced versions left out). The held batch's report when either fails, else undefined.
   */
  async #verify(
    batch: Batch,
    planned: readonly PlannedDocument[],
    stagedChunks: number,
  ): Promise<PublishReport | undefined> {
    const t = performance.now();
    const verifyTimeoutMs = this.#options.verifyTimeoutMs ?? defaultVerifyTimeoutMs(this.connector);
    const toVerify = planned.flatMap((p) => (p.candidate === undefined ? [] : [p.candidate]));
    const verdict = await verifyQueryableBatch(
      this.connector,
      toVerify.map((c) => ({ documentId: c.documentId, versionId: c.versionId, chunks: c.chunks })),
      {
        timeoutMs: verifyTimeoutMs,
        progress: () => this.#renew(),
        ...(this.#options.smokeSample === undefined
          ? {}
          : { smokeSample: this.#options.smokeSample }),
      },
    );
    batch.timings.verify = elapsed(t);
    const hold = {
      batchId: batch.batchId,
      baseEpoch: batch.baseEpoch,
      targetEpoch: batch.targetEpoch,
      planned,
      results: batch.results,
      stagedChunks,
      timings: batch.timings,
    };
    if (!verdict.ok) {
      const failures = new Map(
        [...verdict.failures].map(([id, why]) => [
          id,
          why.map((f): Reason => ({ code: 'verify-failed', detail: f })),
        ]),
      );
      return this.#holdBatch({ ...hold, failures, outcome: 'verify-failed' });
    }
    const canaryCheck = await this.#stagedCanaries(planned, batch.targetEpoch);
    batch.canaries = canaryCheck.results;
    if (canaryCheck.failures.size === 0) return undefined;
    const report = await this.#holdBatch({
      ...hold,
      failures: canaryCheck.failures,
      outcome: 'canary-failed',
    });
    return { ...report, canaries: canaryCheck.results };
  }

  /**
   * Step 5, promote: close the replaced versions at T, then advance the epoch (compare-and-set).
   * A version whose successor narrows its access scope is withdrawn instead (rf_to = 0, not
   * current): closed at T, it would stay readable to every reader still holding epoch E, and
   * so to a group that just lost access. Its document shows nothing until the move (a gap, for
   * narrowing documents only), never the wider scope.
   */
  async #promote(batch: Batch, verified: JournalEntry): Promise<JournalEntry> {
    const t = performance.now();
    const entry = await this.#step(verified, 'promoting');
    await this.connector.patchValidityMany(
      entry.documents.flatMap((d) => {
        const closing = d.action === 'publish' ? d.previousVersionId : d.versionId;
        if (closing === undefined) return [];
        const patch = d.narrows === true ? WITHDRAWN : { to: batch.targetEpoch };
        return [{ documentId: d.documentId, versionId: closing, patch }];
      }),
      this.#write,
    );
    await this.connector.advanceEpoch(batch.baseEpoch, batch.targetEpoch, {
      ...this.#write,
      ...(this.#options.spaceId === undefined ? {} : { space: this.#options.spaceId }),
    });
    batch.timings.promote = elapsed(t);
    return entry;
  }

  /**
   * A batch is the unit of publication: when one document fails (not queryable, or its canary
   * cannot retrieve the expected passage), none of the batch is promoted. Staged chunks are
   * deleted, failing documents are quarantined, the others are held (state untouched) so the
   * caller can publish them again in another batch.
   */
  async #holdBatch(h: {
    readonly batchId: string;
    readonly baseEpoch: number;
    readonly targetEpoch: number;
    readonly planned: readonly PlannedDocument[];
    readonly failures: ReadonlyMap<string, readonly Reason[]>;
    readonly outcome: 'verify-failed' | 'canary-failed';
    readonly results: DocumentPublishResult[];
    readonly stagedChunks: number;
    readonly timings: Record<string, number>;
  }): Promise<PublishReport> {
    const staged = h.planned.flatMap((p) => (p.candidate === undefined ? [] : [p.candidate]));
    await this.connector.deleteVersions(
      staged.map((c) => ({ documentId: c.documentId, versionId: c.versionId })),
      this.#write,
    );
    const failedIds = [...h.failures.keys()];
    const what = h.outcome === 'verify-failed' ? 'failed verification' : 'failed a canary';
    for (const p of h.planned) {
      const c = p.candidate;
      const previous =
        p.journal.previousVersionId === undefined
          ? {}
          : { previousVersionId: p.journal.previousVersionId };
      const reasons = h.failures.get(p.journal.documentId);
      if (c !== undefined && reasons !== undefined) {
        await this.#markRejected(c, await this.state.getDocument(c.documentId), reasons);
        h.results.push({
          documentId: c.documentId,
          versionId: c.versionId,
          ...previous,
          outcome: h.outcome,
          reasons,
          chunks: c.chunks.length,
        });
      } else {
        h.results.push({
          documentId: p.journal.documentId,
          versionId: p.journal.versionId,
          ...previous,
          outcome: 'held',
          reasons: [
            {
              code: 'batch-held',
              detail: `${failedIds.length} document(s) of the batch ${what}, e.g. ${failedIds[0]}`,
            },
          ],
          chunks: p.journal.chunkIds.length,
        });
      }
    }
    await this.state.clearJournal(h.batchId);
    return {
      batchId: h.batchId,
      targetEpoch: h.targetEpoch,
      epoch: h.baseEpoch,
      documents: h.results,
      stagedChunks: h.stagedChunks,
      retiredChunks: 0,
      timingsMs: h.timings,
    };
  }

  #canaryRun() {
    const embedQuery = this.#options.embedQuery;
    if (embedQuery === undefined) return undefined;
    return { connector: this.connector, embedQuery, now: () => this.#now() };
  }

  /** Canaries guarding a document of the batch, run against the epoch-T view before promotion. */
  async #stagedCanaries(
    planned: readonly PlannedDocument[],
    targetEpoch: number,
  ): Promise<{ results: CanaryResult[]; failures: Map<string, Reason[]> }> {
    const results: CanaryResult[] = [];
    const failures = new Map<string, Reason[]>();
    const run = this.#canaryRun();
    const canaries = this.#options.canaries;
    if (run === undefined || canaries === undefined) return { results, failures };
    // Versions the batch replaces or removes are still open until promotion: leave them out.
    const hidden = new Set<string>();
    let hiddenChunks = 0;
    for (const p of planned) {
      const replaced =
        p.journal.action === 'publish' ? p.journal.previousVersionId : p.journal.versionId;
      if (replaced === undefined) continue;
      hidden.add(`${p.journal.documentId}\u0000${replaced}`);
      const record = await this.state.getDocument(p.journal.documentId);
      hiddenChunks += record?.currentChunkIds.length ?? 0;
    }
    for (const p of planned) {
      const c = p.candidate;
      if (c === undefined) continue;
      for (const canary of canaries(c.sourceId)) {
        const guards =
          canary.documentId === c.documentId ||
          (canary.documentId === undefined && canary.expect.url === c.url);
        if (!guards) continue;
        const r = await runCanary(run, {
          canary,
          sourceId: c.sourceId,
          phase: 'staged',
          epoch: targetEpoch,
          hidden,
          hiddenChunks,
        });
        results.push(r);
        if (!r.ok)
          failures.set(c.documentId, [...(failures.get(c.documentId) ?? []), canaryMiss(canary)]);
      }
    }
    return { results, failures };
  }

  /** After promotion: every canary of each source in the batch, against the current view. */
  async #currentCanaries(entry: JournalEntry, epoch: number): Promise<CanaryResult[]> {
    const run = this.#canaryRun();
    const canaries = this.#options.canaries;
    if (run === undefined || canaries === undefined) return [];
    const out: CanaryResult[] = [];
    for (const sourceId of new Set(entry.documents.map((d) => d.sourceId))) {
      for (const canary of canaries(sourceId))
        out.push(await runCanary(run, { canary, sourceId, phase: 'current', epoch }));
    }
    return out;
  }

  async #planRemovals(
    removals: readonly RemovalRequest[],
    seen: Set<string>,
    results: DocumentPublishResult[],
  ): Promise<PlannedDocument[]> {
    const bySource = new Map<string, Array<{ removal: RemovalRequest; record: DocumentRecord }>>();
    for (const removal of removals) {
      if (seen.has(removal.documentId)) {
        throw new RagfreshError(
          'INVALID_ARGUMENT',
          `document ${removal.documentId} is both published and removed in one batch.`,
        );
      }
      seen.add(removal.documentId);
      const record = await this.state.getDocument(removal.documentId);
      if (record?.currentVersionId === undefined) {
        results.push({
          documentId: removal.documentId,
          versionId: '',
          outcome: 'skipped',
          reasons: [{ code: 'not-current', detail: 'nothing to remove' }],
          chunks: 0,
        });
        continue;
      }
      const list = bySource.get(record.sourceId) ?? [];
      list.push({ removal, record });
      bySource.set(record.sourceId, list);
    }
    const share = this.#options.maxRetireShare ?? 0.5;
    const planned: PlannedDocument[] = [];
    for (const [sourceId, list] of bySource) {
      // Removals a person requested by name are not gated; inferred ones are.
      const gated = list.filter((x) => x.removal.requested !== true);
      let live = 0;
      for await (const r of this.state.listDocuments({ sourceId }))
        if (r.currentVersionId !== undefined) live++;
      const held = live > 0 && gated.length / live > share;
      if (held) {
        const reason: Reason = {
          code: 'retire-share',
          detail: `removing ${gated.length} of ${live} documents of source ${sourceId} exceeds the ${(share * 100).toFixed(0)}% gate`,
        };
        for (const { removal, record } of gated) {
          results.push({
            documentId: removal.documentId,
            versionId: record.currentVersionId!,
            outcome: 'rejected-by-gate',
            reasons: [reason],
            chunks: 0,
          });
        }
      }
      const passed = held ? list.filter((x) => x.removal.requested === true) : list;
      for (const { removal, record } of passed) {
        planned.push({
          journal: {
            documentId: removal.documentId,
            sourceId: record.sourceId,
            versionId: record.currentVersionId!,
            chunkIds: record.currentChunkIds,
            action: 'remove',
            reason: removal.reason,
          },
        });
      }
    }
    return planned;
  }

  /** Steps after the epoch advanced: record, flag, retire, confirm. Idempotent; used by recovery. */
  async #rollForward(
    start: JournalEntry,
    fromStep: JournalStep,
    timings: Record<string, number>,
  ): Promise<number> {
    let entry = await this.#step(start, fromStep === 'promoted' ? 'promoted' : fromStep);
    let t = performance.now();
    const now = this.#now().toISOString();
    // The epoch moved: the index is in the migration's space now, whoever rolls it forward.
    if (entry.space !== undefined) await finishSpaceMigration(this.state, entry.space, now);
    for (const d of entry.documents) {
      const record = await this.state.getDocument(d.documentId);
      // Recovering from a later step: this batch recorded the document already (same version,
      // same epoch); writing it again would enter the version in its history twice.
      if (record !== undefined && record.publishedEpoch === entry.targetEpoch) {
        const recorded =
          d.action === 'publish'
            ? record.currentVersionId === d.versionId
            : record.status === 'tombstoned' && record.currentVersionId === undefined;
        if (recorded) continue;
      }
      await this.#ledger.published(record, d, entry.targetEpoch, now);
    }
    await this.state.putEpochRecord({ epoch: entry.targetEpoch, at: now });
    timings.record = elapsed(t);

    t = performance.now();
    entry = await this.#step(entry, 'flagged');
    await this.connector.patchValidityMany(
      entry.documents.flatMap((d) =>
        d.action === 'publish'
          ? [
              { documentId: d.documentId, versionId: d.versionId, patch: { current: true } },
              ...(d.previousVersionId === undefined
                ? []
                : [
                    {
                      documentId: d.documentId,
                      versionId: d.previousVersionId,
                      patch: { current: false },
                    },
                  ]),
            ]
          : [{ documentId: d.documentId, versionId: d.versionId, patch: { current: false } }],
      ),
      this.#write,
    );
    timings.flag = elapsed(t);

    t = performance.now();
    entry = await this.#step(entry, 'retired');
    for (const d of entry.documents) {
      const retiredVersion = d.action === 'publish' ? d.previousVersionId : d.versionId;
      if (retiredVersion !== undefined) {
        await this.state.putRetirement({
          documentId: d.documentId,
          versionId: retiredVersion,
          epoch: entry.targetEpoch,
          at: now,
        });
      }
    }
    const retired = await this.collectRetired();
    timings.retire = elapsed(t);

    t = performance.now();
    entry = await this.#step(entry, 'confirmed');
    await this.#confirm(entry);
    timings.confirm = elapsed(t);
    await this.state.clearJournal(entry.batchId);
    return retired;
  }

  /** Step 7: the current view returns the new version of each document and not the old. */
  async #confirm(entry: JournalEntry): Promise<void> {
    const v = this.connector.capabilities.visibility;
    const deadline = Date.now() + (v.mode === 'immediate' ? 2_000 : v.maxLagMs * 2 + 1_000);
    let pending = [...entry.documents];
    for (let delay = 20; pending.length > 0; delay = Math.min(delay * 2, 500)) {
      // One listing for every document still unconfirmed.
      const listed = await this.connector.listChunksMany(pending.map((d) => d.documentId));
      const problems = new Map<string, string>();
      for (const d of pending) {
        const problem = this.#confirmOne(d, listed.get(d.documentId) ?? [], entry.targetEpoch);
        if (problem !== undefined) problems.set(d.documentId, problem);
      }
      if (problems.size === 0) return;
      if (Date.now() + delay > deadline) {
        throw new RagfreshError(
          'CONFIRM_FAILED',
          `after promotion to epoch ${entry.targetEpoch}, ${[...problems.values()][0]}${problems.size > 1 ? ` (and ${problems.size - 1} more)` : ''}.`,
          { scope: this.connector.store },
        );
      }
      pending = pending.filter((d) => problems.has(d.documentId));
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  #confirmOne(
    d: JournalDocument,
    listed: readonly { readonly metadata: Readonly<Record<string, unknown>> }[],
    epoch: number,
  ): string | undefined {
    const visible = listed.filter((c) => {
      const from = Number(c.metadata[FIELDS.from]);
      const to = Number(c.metadata[FIELDS.to]);
      return from <= epoch && epoch < to;
    });
    const versions = new Set(visible.map((c) => String(c.metadata[FIELDS.versionId])));
    if (d.action === 'remove') {
      return visible.length === 0
        ? undefined
        : `removed document ${d.documentId} is still in the current view`;
    }
    if (versions.size !== 1 || !versions.has(d.versionId)) {
      return `document ${d.documentId} shows versions [${[...versions].join(', ')}] in the current view, expected only ${d.versionId}`;
    }
    if (visible.length !== d.chunkIds.length) {
      return `document ${d.documentId} shows ${visible.length} chunks in the current view, expected ${d.chunkIds.length}`;
    }
    return undefined;
  }

  /**
   * Deletes retired versions whose grace period has passed. Also runs at the end of every
   * publication.
   */
  async collectRetired(): Promise<number> {
    const epoch = await this.connector.readEpoch();
    const grace = this.#options.graceEpochs ?? 1;
    const graceMs = this.#options.graceMs ?? 0;
    const now = this.#now().getTime();
    const due = (await this.state.listRetirements()).filter(
      (r) =>
        r.epoch + grace <= epoch &&
        now - Date.parse(r.at) >= graceMs &&
        now - Date.parse(r.at) >= this.#retentionOf(r.documentId),
    );
    if (due.length === 0) return 0;
    const doomed = [];
    for (const r of due) {
      const record = await this.state.getDocument(r.documentId);
      // A version that became current again (re-published) is not deleted.
      if (record?.currentVersionId !== r.versionId) doomed.push(r);
    }
    const counts = await this.connector.countChunksMany(doomed);
    await this.connector.deleteVersions(doomed, this.#write);
    for (const r of due) await this.state.deleteRetirement(r.documentId, r.versionId);
    return counts.reduce((a, b) => a + b, 0);
  }

  /** How long a retired version of this document stays stored (0: the grace period only). */
  #retentionOf(documentId: string): number {
    return this.#options.retentionMs?.(sourceOfDocument(documentId)) ?? 0;
  }

  /**
   * Retired versions the retention (and grace) no longer keep, as `collectRetired` would delete
   * them now — what `ragfresh gc --dry-run` lists.
   */
  async retiredDue(): Promise<Array<Retirement & { readonly chunks: number }>> {
    const epoch = await this.connector.readEpoch();
    const grace = this.#options.graceEpochs ?? 1;
    const graceMs = this.#options.graceMs ?? 0;
    const now = this.#now().getTime();
    const due = [];
    for (const r of await this.state.listRetirements()) {
      const age = now - Date.parse(r.at);
      if (r.epoch + grace > epoch || age < graceMs || age < this.#retentionOf(r.documentId))
        continue;
      if ((await this.state.getDocument(r.documentId))?.currentVersionId === r.versionId) continue;
      due.push(r);
    }
    const counts = await this.connector.countChunksMany(due);
    return due.map((r, i) => ({ ...r, chunks: counts[i] ?? 0 }));
  }

  /**
   * Deletes every stored chunk of these documents — every version, current or retired — and
   * their retirement records, then asks the store to compact so old versions it keeps on disk
   * go too. For removal requests, after the removal was published (`publish` with
   * `removals`): nothing of these documents is in any view by then.
   */
  async purge(documentIds: readonly string[]): Promise<PurgeReport> {
    await this.#renew();
    const ids = new Set(documentIds);
    const listed = await this.connector.listChunksMany([...ids]);
    let chunks = 0;
    for (const group of listed.values()) chunks += group.length;
    await this.connector.deleteDocuments([...ids], this.#write);
    for (const r of await this.state.listRetirements())
      if (ids.has(r.documentId)) await this.state.deleteRetirement(r.documentId, r.versionId);
    const compaction = await this.connector.compact();
    return { chunks, compaction };
  }

  /**
   * Finishes or undoes a publication a previous process left in the journal. Before the epoch
   * advanced: roll back (staged chunks deleted, replaced versions reopened). After: roll forward.
   */
  async recover(): Promise<RecoveryReport | undefined> {
    const journal = await this.state.getJournal();
    if (journal === undefined) return undefined;
    if (journal.namespace !== this.#options.namespace)
      throw new RagfreshError(
        'JOURNAL_CORRUPT',
        `the journal holds batch ${journal.batchId} of a space migration into ${journal.namespace === undefined ? 'the configured namespace' : `namespace __${journal.namespace}`}, not this publisher's; run \`ragfresh migrate embeddings\` again to finish or undo it.`,
      );
    const epoch = await this.connector.readEpoch();
    const timings: Record<string, number> = {};
    if (epoch >= journal.targetEpoch) {
      await this.#rollForward({ ...journal, fence: this.#lease.fence }, 'promoted', timings);
      return {
        batchId: journal.batchId,
        action: 'rolled-forward',
        fromStep: journal.step,
        documents: journal.documents.length,
      };
    }
    if (epoch !== journal.baseEpoch) {
      throw new RagfreshError(
        'JOURNAL_CORRUPT',
        `journal batch ${journal.batchId} expected epoch ${journal.baseEpoch} or ${journal.targetEpoch}, store holds ${epoch}; inspect the store before publishing again.`,
      );
    }
    const reopen: VersionPatch[] = [];
    const unstage = [];
    for (const d of journal.documents) {
      if (d.action === 'publish') {
        // A withdrawn version (narrowing) lost its flag too: the old scope stays in force
        // until a run completes the narrowing.
        if (d.previousVersionId !== undefined)
          reopen.push({
            documentId: d.documentId,
            versionId: d.previousVersionId,
            patch: d.narrows === true ? { to: OPEN_EPOCH, current: true } : { to: OPEN_EPOCH },
          });
        const record = await this.state.getDocument(d.documentId);
        // A repair's staged chunks carry the current version's own ids: delete them too, or
        // they would surface half-written when a later batch reaches their epoch.
        if (record?.currentVersionId !== d.versionId || d.repair === true)
          unstage.push({ documentId: d.documentId, versionId: d.versionId });
      } else {
        reopen.push({
          documentId: d.documentId,
          versionId: d.versionId,
          patch: { to: OPEN_EPOCH },
        });
      }
    }
    await this.connector.patchValidityMany(reopen, this.#write);
    await this.connector.deleteVersions(unstage, this.#write);
    await this.state.clearJournal(journal.batchId);
    return {
      batchId: journal.batchId,
      action: 'rolled-back',
      fromStep: journal.step,
      documents: journal.documents.length,
    };
  }

  /** Releases the lease. In-flight work must have finished. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.state.releaseLease(this.#lease);
    } catch (err) {
      if (!isRagfreshError(err, 'LEASE_LOST'))
        throw new RagfreshError('INTERNAL', `releasing lease: ${errorMessage(err)}`, {
          cause: err,
        });
    }
  }
}
