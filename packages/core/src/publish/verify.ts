import type { Connector } from '../connector.js';
import { FIELDS } from '../metadata.js';

export interface VerifyExpectation {
  readonly documentId: string;
  readonly versionId: string;
  readonly chunkIds: readonly string[];
  /** A chunk of the version and its own embedding: the smoke query must return it. */
  readonly probe: { readonly chunkId: string; readonly embedding: readonly number[] };
}

export interface VerifyOptions {
  /** Give up after this long. Default: derived from the connector's declared visibility. */
  readonly timeoutMs?: number;
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
  readonly signal?: AbortSignal;
  /**
   * Called before each attempt after the first: the publisher renews its lease there, so a
   * verification that waits out a slow index keeps the lease while it keeps asking.
   */
  readonly progress?: () => Promise<void>;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly attempts: number;
  readonly elapsedMs: number;
  /** Why the last attempt failed (empty when ok). */
  readonly failures: readonly string[];
}

/** Time budget for verification given the connector's declared visibility. */
export function defaultVerifyTimeoutMs(connector: Connector): number {
  const v = connector.capabilities.visibility;
  return v.mode === 'immediate' ? 2_000 : v.maxLagMs * 2 + 1_000;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

async function checkOnce(connector: Connector, expect: VerifyExpectation): Promise<string[]> {
  const failures: string[] = [];
  const count = await connector.countChunks(expect.documentId, expect.versionId);
  if (count !== expect.chunkIds.length)
    failures.push(`count ${count}, expected ${expect.chunkIds.length}`);
  const listed = await connector.listChunks(expect.documentId, expect.versionId);
  const present = new Set(listed.map((c) => String(c.metadata[FIELDS.chunkId] ?? c.id)));
  const missing = expect.chunkIds.filter((id) => !present.has(id));
  if (missing.length > 0)
    failures.push(`${missing.length} chunk id(s) missing, e.g. ${missing[0]}`);
  const k = Math.max(1, Math.min(expect.chunkIds.length, 50));
  const hits = await connector.query(expect.probe.embedding, k, {
    view: { kind: 'all' },
    documentId: expect.documentId,
    versionId: expect.versionId,
  });
  if (!hits.some((h) => String(h.metadata[FIELDS.chunkId] ?? h.id) === expect.probe.chunkId)) {
    failures.push(`smoke query with ${expect.probe.chunkId}'s own embedding did not return it`);
  }
  return failures;
}

/**
 * Step 4 of the publish protocol: a staged version is queryable when its exact chunk count
 * matches, every expected id is present, and a query with one chunk's own embedding returns
 * that chunk. Polled with exponential backoff up to the timeout: acknowledged is not
 * searchable on eventually consistent stores.
 */
export async function verifyQueryable(
  connector: Connector,
  expect: VerifyExpectation,
  options: VerifyOptions = {},
): Promise<VerifyResult> {
  const timeoutMs = options.timeoutMs ?? defaultVerifyTimeoutMs(connector);
  const started = performance.now();
  let delay = options.initialDelayMs ?? 25;
  const maxDelay = options.maxDelayMs ?? 1_000;
  let attempts = 0;
  let failures: string[] = [];
  for (;;) {
    attempts++;
    failures = await checkOnce(connector, expect);
    const elapsed = performance.now() - started;
    if (failures.length === 0) return { ok: true, attempts, elapsedMs: elapsed, failures: [] };
    if (elapsed + delay > timeoutMs) return { ok: false, attempts, elapsedMs: elapsed, failures };
    await sleep(delay, options.signal);
    delay = Math.min(maxDelay, delay * 2);
  }
}

/** One document version of a batch, with every chunk's embedding (to pick and judge probes). */
export interface BatchVerifyExpectation {
  readonly documentId: string;
  readonly versionId: string;
  readonly chunks: readonly { readonly chunkId: string; readonly embedding: readonly number[] }[];
}

export interface BatchVerifyOptions extends VerifyOptions {
  /** Documents of the batch that get a smoke query per attempt. Default 3 (first, middle, last). */
  readonly smokeSample?: number;
}

export interface BatchVerifyResult {
  readonly ok: boolean;
  readonly attempts: number;
  readonly elapsedMs: number;
  /** Why each failing document failed on the last attempt (empty when ok). */
  readonly failures: ReadonlyMap<string, readonly string[]>;
}

function sameVector(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The documents that get a smoke query: spread over the batch, deterministic. */
function smokeIndexes(n: number, sample: number): number[] {
  if (n === 0 || sample <= 0) return [];
  if (sample >= n) return [...Array(n).keys()];
  const picks = new Set<number>();
  for (let i = 0; i < sample; i++) picks.add(Math.round((i * (n - 1)) / Math.max(1, sample - 1)));
  return [...picks];
}

async function smokeOnce(
  connector: Connector,
  expect: BatchVerifyExpectation,
): Promise<string | undefined> {
  const probe = expect.chunks[Math.floor(expect.chunks.length / 2)];
  if (probe === undefined) return undefined;
  // Chunks with the very same vector (repeated text) are equally correct answers: a store may
  // return any of them first, so any of them proves the version is searchable.
  const twins = new Set(
    expect.chunks.filter((c) => sameVector(c.embedding, probe.embedding)).map((c) => c.chunkId),
  );
  const k = Math.max(1, Math.min(expect.chunks.length, 50));
  const hits = await connector.query(probe.embedding, k, {
    view: { kind: 'all' },
    documentId: expect.documentId,
    versionId: expect.versionId,
  });
  return hits.some((h) => twins.has(String(h.metadata[FIELDS.chunkId] ?? h.id)))
    ? undefined
    : `smoke query with ${probe.chunkId}'s own embedding did not return it`;
}

async function checkBatchOnce(
  connector: Connector,
  pending: readonly BatchVerifyExpectation[],
  smoke: ReadonlySet<string>,
): Promise<Map<string, string[]>> {
  const failures = new Map<string, string[]>();
  const fail = (documentId: string, why: string) => {
    const list = failures.get(documentId) ?? [];
    list.push(why);
    failures.set(documentId, list);
  };
  const counts = await connector.countChunksMany(pending);
  pending.forEach((e, i) => {
    if (counts[i] !== e.chunks.length)
      fail(e.documentId, `count ${counts[i]}, expected ${e.chunks.length}`);
  });
  const listed = await connector.listChunksMany(pending.map((e) => e.documentId));
  for (const e of pending) {
    const present = new Set(
      (listed.get(e.documentId) ?? [])
        .filter((c) => c.metadata[FIELDS.versionId] === e.versionId)
        .map((c) => String(c.metadata[FIELDS.chunkId] ?? c.id)),
    );
    const missing = e.chunks.filter((c) => !present.has(c.chunkId));
    if (missing.length > 0)
      fail(e.documentId, `${missing.length} chunk id(s) missing, e.g. ${missing[0]!.chunkId}`);
  }
  for (const e of pending) {
    if (!smoke.has(e.documentId)) continue;
    const why = await smokeOnce(connector, e);
    if (why !== undefined) fail(e.documentId, why);
  }
  return failures;
}

/**
 * Step 4 for a whole batch in a handful of store operations per attempt: exact counts of every
 * (document, version) in one batch call, every expected id in one listing, and a smoke query with
 * a chunk's own embedding on a sample of the batch's documents (the smoke query proves the vector
 * index serves the batch; counts and ids prove each document). Polled with backoff up to the
 * timeout; documents that passed are not re-checked.
 */
export async function verifyQueryableBatch(
  connector: Connector,
  expectations: readonly BatchVerifyExpectation[],
  options: BatchVerifyOptions = {},
): Promise<BatchVerifyResult> {
  const timeoutMs = options.timeoutMs ?? defaultVerifyTimeoutMs(connector);
  const started = performance.now();
  let delay = options.initialDelayMs ?? 25;
  const maxDelay = options.maxDelayMs ?? 1_000;
  const smoke = new Set(
    smokeIndexes(expectations.length, options.smokeSample ?? 3).map(
      (i) => expectations[i]!.documentId,
    ),
  );
  let pending = [...expectations];
  let attempts = 0;
  let failures = new Map<string, string[]>();
  for (;;) {
    attempts++;
    failures = pending.length === 0 ? new Map() : await checkBatchOnce(connector, pending, smoke);
    const elapsed = performance.now() - started;
    if (failures.size === 0) return { ok: true, attempts, elapsedMs: elapsed, failures };
    if (elapsed + delay > timeoutMs) return { ok: false, attempts, elapsedMs: elapsed, failures };
    pending = pending.filter((e) => failures.has(e.documentId));
    await sleep(delay, options.signal);
    await options.progress?.();
    delay = Math.min(maxDelay, delay * 2);
  }
}
