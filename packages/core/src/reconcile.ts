import type { Connector, ListedChunk, VersionRef } from './connector.js';
import { DocumentLedger } from './ledger.js';
import { FIELDS, OPEN_EPOCH } from './metadata.js';
import type { IsoTime } from './model.js';
import type { DocumentRecord, StateStore } from './state/types.js';

/*
 * State and store are two halves of one truth: the state says which version of each document
 * is current, the store holds its chunks. Either can be lost on its own (a deleted LanceDB
 * folder, a zeroed SQLite file), and a pipeline that trusts one side silently serves nothing or
 * restarts from scratch. These functions compare the two; the engine decides what to do.
 */

/** A document the state calls current whose current version the store does not fully serve. */
export interface MissingDocument {
  readonly documentId: string;
  readonly sourceId: string;
  readonly url: string;
  readonly versionId: string;
  readonly expectedChunks: number;
  /** Chunks of that version visible in the store's current epoch view. */
  readonly visibleChunks: number;
}

export type StoreCheckVerdict =
  /** Both sides agree on everything that was looked at. */
  | 'ok'
  /** Nothing published yet on either side. */
  | 'empty'
  /** The store's epoch is behind the state's, or sampled current documents are gone. */
  | 'store-lost'
  /** The state holds no document at all, while the store has published epochs. */
  | 'state-lost'
  /** Some sampled documents are missing or short in the store; the rest is there. */
  | 'drift';

export interface StoreCheck {
  readonly verdict: StoreCheckVerdict;
  readonly storeEpoch: number;
  /** Highest epoch at which the state recorded a current version (0 when none). */
  readonly stateEpoch: number;
  /** Current documents the state knows (tombstoned excluded). */
  readonly currentDocuments: number;
  readonly sampled: number;
  readonly missing: readonly MissingDocument[];
  /** One line per problem, for logs and errors. */
  readonly problems: readonly string[];
}

export interface StoreCheckOptions {
  readonly connector: Connector;
  readonly state: StateStore;
  /** Records to look at (the caller usually lists them anyway); default: every record. */
  readonly records?: Iterable<DocumentRecord> | AsyncIterable<DocumentRecord>;
  /** Current documents whose chunks are checked in the store. Default 25; 0 checks none. */
  readonly sample?: number;
  /** Picks the sample; default Math.random. */
  readonly random?: () => number;
}

function isCurrent(r: DocumentRecord): boolean {
  return r.currentVersionId !== undefined && r.status !== 'tombstoned';
}

function visibleAt(c: ListedChunk, epoch: number): boolean {
  const from = Number(c.metadata[FIELDS.from]);
  const to = Number(c.metadata[FIELDS.to]);
  return from <= epoch && epoch < to;
}

/** Compares each record's current version with what the store serves at `epoch`. */
async function findMissing(
  connector: Connector,
  records: readonly DocumentRecord[],
  epoch: number,
): Promise<MissingDocument[]> {
  const missing: MissingDocument[] = [];
  for (let i = 0; i < records.length; i += 100) {
    const slice = records.slice(i, i + 100);
    const listed = await connector.listChunksMany(slice.map((r) => r.documentId));
    for (const r of slice) {
      const visible = (listed.get(r.documentId) ?? []).filter(
        (c) => c.metadata[FIELDS.versionId] === r.currentVersionId && visibleAt(c, epoch),
      );
      const ids = new Set(visible.map((c) => String(c.metadata[FIELDS.chunkId] ?? c.id)));
      const complete = r.currentChunkIds.every((id) => ids.has(id));
      if (!complete || visible.length !== r.currentChunkIds.length) {
        missing.push({
          documentId: r.documentId,
          sourceId: r.sourceId,
          url: r.url,
          versionId: r.currentVersionId!,
          expectedChunks: r.currentChunkIds.length,
          visibleChunks: visible.length,
        });
      }
    }
  }
  return missing;
}

function pickSample<T>(items: readonly T[], n: number, random: () => number): T[] {
  if (n >= items.length) return [...items];
  const pool = [...items];
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, n);
}

/**
 * The cheap check every refresh starts with: the store's published epoch against the state's,
 * and a random sample of current documents against the store's current view (one listing).
 * Cost: one epoch read and one batched listing, whatever the corpus size.
 */
export async function checkStoreAgainstState(options: StoreCheckOptions): Promise<StoreCheck> {
  const { connector, state } = options;
  const storeEpoch = await connector.readEpoch();
  let total = 0;
  let stateEpoch = 0;
  const current: DocumentRecord[] = [];
  for await (const r of options.records ?? state.listDocuments()) {
    total++;
    if (!isCurrent(r)) continue;
    current.push(r);
    stateEpoch = Math.max(stateEpoch, r.publishedEpoch ?? 0);
  }
  const base = { storeEpoch, stateEpoch, currentDocuments: current.length };
  if (total === 0) {
    if (storeEpoch > 0) {
      return {
        ...base,
        verdict: 'state-lost',
        sampled: 0,
        missing: [],
        problems: [
          `the state holds no document, but the ${connector.store} store has published ${storeEpoch} epoch(s)`,
        ],
      };
    }
    return { ...base, verdict: 'empty', sampled: 0, missing: [], problems: [] };
  }
  const problems: string[] = [];
  if (storeEpoch < stateEpoch) {
    problems.push(
      `the ${connector.store} store is at epoch ${storeEpoch}, behind the state's ${stateEpoch}: it was deleted, reset or replaced`,
    );
  }
  const sample = pickSample(current, options.sample ?? 25, options.random ?? Math.random);
  const missing = await findMissing(connector, sample, storeEpoch);
  for (const m of missing.slice(0, 3)) {
    problems.push(
      `${m.url}: ${m.visibleChunks} of ${m.expectedChunks} chunks of the current version are in the store's current view`,
    );
  }
  if (missing.length > 3) problems.push(`and ${missing.length - 3} more sampled documents`);
  const verdict: StoreCheckVerdict =
    storeEpoch < stateEpoch || (sample.length > 0 && missing.length === sample.length)
      ? 'store-lost'
      : missing.length > 0
        ? 'drift'
        : 'ok';
  return { ...base, verdict, sampled: sample.length, missing, problems };
}

/** Versions in the store that the state does not account for. */
export interface OrphanVersion extends VersionRef {
  readonly sourceId: string;
  readonly chunks: number;
  /** Whether any of its chunks is in the current epoch view (readers see it). */
  readonly visible: boolean;
}

export interface ReconcileReport {
  readonly storeEpoch: number;
  readonly currentDocuments: number;
  readonly missing: readonly MissingDocument[];
  readonly orphans: readonly OrphanVersion[];
  /** Chunks the scan read (0 when the connector cannot scan). */
  readonly scannedChunks: number;
  /** False when the connector has no scan: orphans cannot be looked for. */
  readonly scanned: boolean;
}

/**
 * The full two-way comparison behind `ragfresh verify`: every current document of the state
 * against the store's current view (batched listings), and, where the connector can scan,
 * every stored version against the state (current versions, versions awaiting retirement and
 * the in-flight journal are accounted for; anything else is an orphan).
 */
export async function reconcile(options: {
  readonly connector: Connector;
  readonly state: StateStore;
}): Promise<ReconcileReport> {
  const { connector, state } = options;
  const storeEpoch = await connector.readEpoch();
  const current: DocumentRecord[] = [];
  const known = new Set<string>();
  const key = (d: string, v: string) => `${d}\u0000${v}`;
  for await (const r of state.listDocuments()) {
    if (!isCurrent(r)) continue;
    current.push(r);
    known.add(key(r.documentId, r.currentVersionId!));
  }
  for (const r of await state.listRetirements()) known.add(key(r.documentId, r.versionId));
  const journal = await state.getJournal();
  for (const d of journal?.documents ?? []) {
    known.add(key(d.documentId, d.versionId));
    if (d.previousVersionId !== undefined) known.add(key(d.documentId, d.previousVersionId));
  }
  const missing = await findMissing(connector, current, storeEpoch);
  const groups = new Map<
    string,
    { ref: VersionRef; sourceId: string; chunks: number; visible: boolean }
  >();
  let scannedChunks = 0;
  // The manifest decides: a connector that declares `scan` is scanned, and a scan that fails
  // fails verify (it is never reported as "not checked").
  const scanned = connector.capabilities.scan === true;
  if (scanned) {
    for await (const page of connector.scanChunks()) {
      for (const c of page) {
        scannedChunks++;
        const documentId = String(c.metadata[FIELDS.documentId]);
        const versionId = String(c.metadata[FIELDS.versionId]);
        const k = key(documentId, versionId);
        if (known.has(k)) continue;
        const g = groups.get(k) ?? {
          ref: { documentId, versionId },
          sourceId: String(c.metadata[FIELDS.sourceId] ?? ''),
          chunks: 0,
          visible: false,
        };
        g.chunks++;
        g.visible ||= visibleAt(c, storeEpoch);
        groups.set(k, g);
      }
    }
  }
  const orphans = [...groups.values()].map((g) => ({
    ...g.ref,
    sourceId: g.sourceId,
    chunks: g.chunks,
    visible: g.visible,
  }));
  return {
    storeEpoch,
    currentDocuments: current.length,
    missing,
    orphans,
    scannedChunks,
    scanned,
  };
}

export interface StateRecoveryReport {
  readonly storeEpoch: number;
  /** Documents whose current version was rebuilt from the store's metadata. */
  readonly documents: number;
  /** Documents already in the state (never overwritten). */
  readonly skipped: number;
  /** Stored versions that are not current, scheduled for retirement. */
  readonly retiredVersions: number;
  /** What the store cannot tell, so it was not recovered. */
  readonly notRecovered: readonly NotRecovered[];
}

/** One kind of state a recovery could not rebuild: `what` to decide on, `line` to print. */
export interface NotRecovered {
  readonly what:
    | 'review-queue'
    | 'tombstones'
    | 'run-history'
    | 'validators'
    | 'status'
    | 'unlisted-documents';
  readonly line: string;
}

/**
 * Rebuilds document records from the store's own chunk metadata after the state was lost:
 * for each document, the version in the current epoch view becomes current (ids, chunk hashes,
 * url, source, timestamps, epoch); other stored versions are scheduled for retirement. Existing
 * records are never overwritten. Needs a connector that can scan.
 */
export async function recoverStateFromStore(options: {
  readonly connector: Connector;
  readonly state: StateStore;
  readonly now?: () => Date;
}): Promise<StateRecoveryReport> {
  const { connector, state } = options;
  const now: IsoTime = (options.now?.() ?? new Date()).toISOString();
  const ledger = new DocumentLedger(state, options.now === undefined ? {} : { now: options.now });
  const storeEpoch = await connector.readEpoch();
  const byDocument = new Map<string, ListedChunk[]>();
  for await (const page of connector.scanChunks()) {
    for (const c of page) {
      const doc = String(c.metadata[FIELDS.documentId]);
      const list = byDocument.get(doc) ?? [];
      list.push({ id: c.id, text: '', metadata: c.metadata });
      byDocument.set(doc, list);
    }
  }
  let documents = 0;
  let skipped = 0;
  let retiredVersions = 0;
  for (const [documentId, chunks] of byDocument) {
    const visible = chunks
      .filter((c) => visibleAt(c, storeEpoch))
      .sort((a, b) => Number(a.metadata[FIELDS.ordinal]) - Number(b.metadata[FIELDS.ordinal]));
    const versions = new Set(visible.map((c) => String(c.metadata[FIELDS.versionId])));
    const currentVersion = versions.size === 1 ? [...versions][0]! : undefined;
    for (const v of new Set(chunks.map((c) => String(c.metadata[FIELDS.versionId])))) {
      if (v === currentVersion) continue;
      const closed = chunks.find((c) => c.metadata[FIELDS.versionId] === v);
      const to = Number(closed?.metadata[FIELDS.to] ?? OPEN_EPOCH);
      await state.putRetirement({
        documentId,
        versionId: v,
        epoch: to === OPEN_EPOCH ? storeEpoch : Math.min(to, storeEpoch),
        at: now,
      });
      retiredVersions++;
    }
    if (currentVersion === undefined) continue;
    const first = visible[0]!.metadata;
    const str = (f: string) => (typeof first[f] === 'string' ? (first[f] as string) : undefined);
    const retrievedAt = str(FIELDS.retrievedAt);
    const contentChangedAt = str(FIELDS.contentChangedAt);
    const sourceModifiedAt = str(FIELDS.sourceModifiedAt);
    const written = await ledger.restored({
      documentId,
      sourceId: String(first[FIELDS.sourceId]),
      url: str(FIELDS.url) ?? '',
      status: 'healthy',
      statusReasons: [],
      currentVersionId: currentVersion,
      currentChunkIds: visible.map((c) => String(c.metadata[FIELDS.chunkId] ?? c.id)),
      chunkHashes: visible.map((c) => String(c.metadata[FIELDS.contentHash] ?? '')),
      timestamps: {
        ...(retrievedAt === undefined ? {} : { retrievedAt }),
        ...(contentChangedAt === undefined ? {} : { contentChangedAt }),
        ...(sourceModifiedAt === undefined ? {} : { sourceModifiedAt }),
      },
      ...(retrievedAt === undefined ? {} : { lastGoodAt: retrievedAt }),
      publishedEpoch: Math.max(...visible.map((c) => Number(c.metadata[FIELDS.from]))),
      history: [
        {
          at: now,
          versionId: currentVersion,
          event: 'recovered-from-store',
          reasons: [
            `rebuilt from ${visible.length} chunk(s) in the ${connector.store} store at epoch ${storeEpoch}`,
          ],
        },
      ],
    });
    if (written) documents++;
    else skipped++;
  }
  // The aggregates status reads, recounted over the rebuilt records (each write also kept them).
  await state.rebuildAggregates?.();
  return {
    storeEpoch,
    documents,
    skipped,
    retiredVersions,
    notRecovered: [
      { what: 'review-queue', line: 'review queue (pending proposals and decisions)' },
      { what: 'tombstones', line: 'tombstones (removed pages have no chunks left to read)' },
      { what: 'run-history', line: 'run history and shape baselines' },
      {
        what: 'validators',
        line: 'HTTP validators and raw snapshot links (each page is fetched in full once)',
      },
      {
        what: 'status',
        line: 'quarantine and degraded status (recovered documents start healthy)',
      },
    ],
  };
}
