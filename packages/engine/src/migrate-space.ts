import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  type Connector,
  type CurrentChunks,
  type EmbeddingSpace,
  listCurrentChunks,
  type PublishCandidate,
  Publisher,
  RagfreshError,
  readSpaceRecord,
  reasonLine,
  respaceCandidates,
  type SpaceRecord,
  spaceLabel,
  writeSpaceRecord,
} from '@ragfresh/core';
import { tiktokenCounter } from '@ragfresh/extract';
import type { ComposedEngine } from './compose.js';

/** How a space migration embeds (remote APIs want batches, a few at once, and patience). */
export interface SpaceMigrationOptions {
  /** Count and price only: nothing is embedded or written. */
  readonly dryRun?: boolean;
  /** Price per million tokens for the estimate (`--price`); default 0 (no cost shown). */
  readonly pricePerMillionTokens?: number;
  /** Texts per `embedDocuments` call. Default 64. */
  readonly batchSize?: number;
  /** `embedDocuments` calls in flight at once. Default 2. */
  readonly concurrency?: number;
  /** Attempts per batch (the first included). Default 6. */
  readonly attempts?: number;
  /** First backoff after a failed batch when the error names no Retry-After. Default 500 ms. */
  readonly backoffMs?: number;
  /** Progress after every batch: counts and an ETA. */
  readonly onProgress?: (p: SpaceMigrationProgress) => void;
  /** Waits the retire grace (default: `setTimeout`); tests pass a shorter clock. */
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface SpaceMigrationProgress {
  readonly embedded: number;
  readonly total: number;
  readonly elapsedMs: number;
  /** Estimated milliseconds left at the rate so far. */
  readonly etaMs: number;
  /** Failed batches retried so far. */
  readonly retries: number;
}

export interface SpaceMigrationReport {
  readonly outcome: 'migrated' | 'dry-run' | 'already-in-space';
  readonly from: EmbeddingSpace | undefined;
  readonly to: EmbeddingSpace;
  readonly documents: number;
  readonly chunks: number;
  /** Texts sent to the embedder (equals `chunks` for a migration that ran once). */
  readonly embedded: number;
  readonly tokens: number;
  readonly estimatedCost?: number;
  readonly retries: number;
  /** Where the new space lives: `same` namespace (same dimensions) or a new one. */
  readonly namespace: 'same' | string;
  /** Chunks of the old space deleted after the grace (this run). */
  readonly retiredChunks: number;
  /** The namespace a migration to other dimensions left was dropped from the store (this run). */
  readonly retiredNamespaceDropped?: true;
  readonly epoch?: number;
}

type Retired = Pick<SpaceMigrationReport, 'retiredChunks' | 'retiredNamespaceDropped'>;
const NOTHING_RETIRED: Retired = { retiredChunks: 0 };

/** Documents per store call while retiring a left namespace. */
const LIST_BATCH = 100;

/**
 * Re-embeds every current chunk of the index from its stored text (nothing is fetched or
 * extracted again) into the configured embedding space, and moves readers in one epoch move:
 * staged with the publisher's protocol (journalled, verified queryable, promoted by one
 * compare-and-set), into the same namespace when the dimensions stay (the epoch filter pins
 * readers to the old space until the flip) or into a namespace of its own when they change
 * (the space record names it from the flip on). The old space is retired after the grace.
 * Runs on the `migrate` role's engine: `engine.connector` is the index in its current space.
 */
export async function migrateEmbeddingSpace(
  engine: ComposedEngine,
  options: SpaceMigrationOptions = {},
): Promise<SpaceMigrationReport> {
  const { state, space: to } = engine;
  const sleep = options.sleep ?? ((ms) => new Promise<void>((r) => setTimeout(r, ms)));
  const resumed = await recoverInterrupted(engine);
  let record = await readSpaceRecord(state);
  if (record === undefined)
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      'the index records no embedding space yet (nothing was published, or it predates spaces): run `ragfresh refresh` with the embeddings it was built with first.',
      { scope: 'embeddings' },
    );
  const from = record.active;
  if (from.id === to.id && record.migration === undefined) {
    const retired = await retireLeftNamespace(engine, record, 0, sleep);
    return {
      // A killed run's batch rolled forward just now: this run finished that migration.
      outcome: resumed === to.id ? 'migrated' : 'already-in-space',
      from,
      to,
      documents: 0,
      chunks: 0,
      embedded: 0,
      tokens: 0,
      retries: 0,
      namespace: record.namespace ?? 'same',
      ...retired,
    };
  }
  const sameDimensions = from.dimensions === to.dimensions;
  const targetNamespace = sameDimensions ? record.namespace : to.id;
  const current = await listCurrentChunks(engine.connector, state);
  const chunks = current.reduce((n, d) => n + d.chunks.length, 0);
  const counter = tiktokenCounter();
  const tokens = current.reduce(
    (n, d) => n + d.chunks.reduce((m, c) => m + counter.count(c.text), 0),
    0,
  );
  const price = options.pricePerMillionTokens;
  const base = {
    from,
    to,
    documents: current.length,
    chunks,
    tokens,
    ...(price === undefined ? {} : { estimatedCost: (tokens / 1_000_000) * price }),
    namespace: targetNamespace === record.namespace ? 'same' : (targetNamespace ?? 'same'),
  } as const;
  if (options.dryRun === true)
    return { ...base, outcome: 'dry-run', embedded: 0, retries: 0, retiredChunks: 0 };

  record = {
    ...record,
    migration: {
      to,
      ...(targetNamespace === undefined ? {} : { namespace: targetNamespace }),
      startedAt: new Date().toISOString(),
    },
  };
  await writeSpaceRecord(state, record);

  if (current.length === 0) {
    // Nothing to re-embed: the empty index is in the new space at once.
    await writeSpaceRecord(state, {
      active: to,
      ...(targetNamespace === undefined ? {} : { namespace: targetNamespace }),
    });
    return { ...base, outcome: 'migrated', embedded: 0, retries: 0, retiredChunks: 0 };
  }
  const target =
    targetNamespace === record.namespace ? engine.connector : engine.connectorFor(targetNamespace);
  try {
    if (target !== engine.connector) {
      await target.open({ dimensions: to.dimensions });
      // Epochs go on from the old namespace's, so every epoch the state recorded stays at or
      // below the store's (no false STORE_LOST) and readers' epochs only ever grow.
      const [held, old] = [await target.readEpoch(), await engine.connector.readEpoch()];
      if (held < old) await target.advanceEpoch(held, old);
    }
    // Opening the publisher recovers an interrupted attempt first (rolled back before its
    // epoch move, forward after it), so a run after a SIGKILL resumes from a clean journal.
    const publisher = await Publisher.open({
      ...engine.publisherOptions,
      connector: target,
      state,
      ...(targetNamespace === undefined ? {} : { namespace: targetNamespace }),
    });
    try {
      const done = await readSpaceRecord(state);
      if (done?.active.id === to.id && done.migration === undefined) {
        // A killed run's batch was rolled forward while opening: the migration is complete.
        const retired = await retireOld(engine, publisher, done, sleep);
        return { ...base, outcome: 'migrated', embedded: 0, retries: 0, ...retired };
      }
      const embedder = new BatchEmbedder(engine.embeddings, chunks, options);
      const candidates = await embedder.candidates(current, to);
      const report = await publisher.publish(candidates, { respace: true });
      const failed = report.documents.filter((d) => d.outcome !== 'published');
      if (failed.length > 0)
        throw new RagfreshError(
          'VERIFY_FAILED',
          `${failed.length} of ${candidates.length} documents were not published in the new space (${failed[0]!.documentId}: ${failed[0]!.outcome} ${failed[0]!.reasons.map(reasonLine).join('; ')}); readers stay in ${spaceLabel(from)}. Run the migration again.`,
          { scope: 'embeddings' },
        );
      const after = await readSpaceRecord(state);
      const retired =
        after === undefined ? NOTHING_RETIRED : await retireOld(engine, publisher, after, sleep);
      return {
        ...base,
        outcome: 'migrated',
        embedded: embedder.embedded,
        retries: embedder.retries,
        ...retired,
        epoch: report.epoch,
      };
    } finally {
      await publisher.close();
    }
  } finally {
    if (target !== engine.connector) await target.close();
  }
}

/**
 * Finishes or undoes a publication a killed run left in the journal, with a publisher on the
 * namespace the journal names (a migration to other dimensions journals in its new one).
 * Returns the target space of a migration batch it found, if any.
 */
async function recoverInterrupted(engine: ComposedEngine): Promise<string | undefined> {
  const journal = await engine.state.getJournal();
  if (journal === undefined) return undefined;
  const record = await readSpaceRecord(engine.state);
  const namespace = journal.namespace;
  const target =
    namespace === record?.namespace ? engine.connector : engine.connectorFor(namespace);
  try {
    if (target !== engine.connector) {
      const dimensions =
        record?.migration?.namespace === namespace
          ? record?.migration?.to.dimensions
          : record?.active.dimensions;
      await target.open({ dimensions: dimensions ?? engine.space.dimensions });
    }
    const publisher = await Publisher.open({
      ...engine.publisherOptions,
      connector: target,
      state: engine.state,
      ...(namespace === undefined ? {} : { namespace }),
    });
    await publisher.close();
  } finally {
    if (target !== engine.connector) await target.close();
  }
  return journal.space;
}

/** The retry delay an embeddings error asks for (HTTP Retry-After, seconds or a date), if any. */
export function retryAfterMs(err: unknown): number | undefined {
  const e = err as {
    headers?: Record<string, unknown> | { get?(name: string): unknown };
    response?: { headers?: Record<string, unknown> | { get?(name: string): unknown } };
  } | null;
  for (const h of [e?.headers, e?.response?.headers]) {
    if (h === undefined || h === null) continue;
    const raw =
      typeof (h as { get?: unknown }).get === 'function'
        ? (h as { get(name: string): unknown }).get('retry-after')
        : (h as Record<string, unknown>)['retry-after'];
    if (typeof raw !== 'string' && typeof raw !== 'number') continue;
    const seconds = Number(raw);
    if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
    const at = Date.parse(String(raw));
    if (Number.isFinite(at)) return Math.max(0, at - Date.now());
  }
  return undefined;
}

/** Embeds texts in batches, a few batches at once, retrying a failed batch with backoff. */
class BatchEmbedder {
  embedded = 0;
  retries = 0;
  readonly #started = performance.now();

  constructor(
    readonly embeddings: EmbeddingsInterface,
    readonly total: number,
    readonly options: SpaceMigrationOptions,
  ) {}

  async candidates(
    current: readonly CurrentChunks[],
    to: EmbeddingSpace,
  ): Promise<PublishCandidate[]> {
    const vectors = await this.embedAll(current.flatMap((d) => d.chunks.map((c) => c.text)));
    return respaceCandidates(current, to, vectors);
  }

  async embedAll(texts: readonly string[]): Promise<number[][]> {
    const size = this.options.batchSize ?? 64;
    const batches: Array<readonly string[]> = [];
    for (let i = 0; i < texts.length; i += size) batches.push(texts.slice(i, i + size));
    const out: number[][][] = new Array(batches.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < batches.length; i = next++)
        out[i] = await this.#embedBatch(batches[i]!);
    };
    const lanes = Math.max(1, Math.min(this.options.concurrency ?? 2, batches.length));
    await Promise.all(Array.from({ length: lanes }, worker));
    return out.flat();
  }

  async #embedBatch(texts: readonly string[]): Promise<number[][]> {
    const attempts = this.options.attempts ?? 6;
    let delay = this.options.backoffMs ?? 500;
    for (let attempt = 1; ; attempt++) {
      try {
        const vectors = await this.embeddings.embedDocuments([...texts]);
        if (vectors.length !== texts.length)
          throw new RagfreshError(
            'INTERNAL',
            `the embeddings returned ${vectors.length} vectors for ${texts.length} texts.`,
            { scope: 'embeddings' },
          );
        this.embedded += texts.length;
        const elapsedMs = performance.now() - this.#started;
        this.options.onProgress?.({
          embedded: this.embedded,
          total: this.total,
          elapsedMs,
          etaMs: (elapsedMs / this.embedded) * (this.total - this.embedded),
          retries: this.retries,
        });
        return vectors;
      } catch (err) {
        if (attempt >= attempts)
          throw new RagfreshError(
            'STORE_UNREACHABLE',
            `an embedding batch of ${texts.length} texts failed ${attempts} times (${err instanceof Error ? err.message : String(err)}); nothing was published and readers stay in the old space. Run the migration again.`,
            { scope: 'embeddings', cause: err },
          );
        this.retries++;
        const wait = retryAfterMs(err) ?? delay;
        delay = Math.min(delay * 2, 30_000);
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}

/**
 * After the flip: waits the retire grace, then deletes the old space's chunks (the replaced
 * versions the publisher queued, same namespace; or every chunk of the namespace left behind).
 */
async function retireOld(
  engine: ComposedEngine,
  publisher: Publisher,
  record: SpaceRecord,
  sleep: (ms: number) => Promise<void>,
): Promise<Retired> {
  const graceMs = engine.settings.publish.retireGraceMs;
  if (record.retiring === undefined) {
    if (graceMs > 0) await sleep(graceMs);
    return { retiredChunks: await publisher.collectRetired() };
  }
  return retireLeftNamespace(engine, record, graceMs, sleep);
}

/**
 * Deletes every chunk of the namespace a migration to other dimensions left, once past the
 * grace: the documents the state knows, in batches (the namespace keeps its own dimensions).
 * Then drops the namespace itself (`dropNamespace`) when the store can, it is not the one the
 * index lives in, and a scan finds nothing left in it (chunks no document of this state
 * owns keep it, empty of ours).
 */
async function retireLeftNamespace(
  engine: ComposedEngine,
  record: SpaceRecord,
  graceMs: number,
  sleep: (ms: number) => Promise<void>,
): Promise<Retired> {
  const retiring = record.retiring;
  if (retiring === undefined) return NOTHING_RETIRED;
  const wait = Date.parse(retiring.at) + graceMs - Date.now();
  if (wait > 0) await sleep(wait);
  const old = engine.connectorFor(retiring.namespace);
  let deleted = 0;
  let dropped = false;
  try {
    await old.open({ dimensions: retiring.dimensions });
    const ids: string[] = [];
    for await (const r of engine.state.listDocuments()) ids.push(r.documentId);
    for (let i = 0; i < ids.length; i += LIST_BATCH) {
      const slice = ids.slice(i, i + LIST_BATCH);
      for (const chunks of (await old.listChunksMany(slice)).values()) deleted += chunks.length;
      await old.deleteDocuments(slice);
    }
    if (await droppable(old, record, retiring.namespace)) {
      await old.dropNamespace();
      dropped = true;
    }
  } finally {
    await old.close();
  }
  const { retiring: _done, ...rest } = record;
  await writeSpaceRecord(engine.state, rest);
  return { retiredChunks: deleted, ...(dropped ? { retiredNamespaceDropped: true as const } : {}) };
}

/** Whether the retired namespace may go: not the active one, and holding nothing at all. */
async function droppable(
  old: Connector,
  record: SpaceRecord,
  namespace: string | undefined,
): Promise<boolean> {
  const c = old.capabilities;
  if (c.dropNamespace !== true || c.scan !== true) return false;
  if (namespace === record.namespace) return false;
  if (record.migration !== undefined && namespace === record.migration.namespace) return false;
  for await (const page of old.scanChunks({ pageSize: 1 })) if (page.length > 0) return false;
  return true;
}
