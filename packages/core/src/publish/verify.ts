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
