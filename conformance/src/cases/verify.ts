import {
  type Connector,
  type ConnectorCapabilities,
  chunkId,
  defaultVerifyTimeoutMs,
  FIELDS,
  type PublishCandidate,
  toStoredChunk,
  verifyQueryable,
} from '@ragfresh/core';
import type { ConformanceCase } from '../types.js';
import { round, sleep } from './helpers.js';

function declaredLag(c: ConnectorCapabilities): string {
  return c.visibility.mode === 'immediate' ? 'immediate' : `eventual ≤ ${c.visibility.maxLagMs} ms`;
}

/** Independent of verifyQueryable: exact count, and every chunk returned by a query with its own embedding. */
async function fullyQueryable(
  connector: Connector,
  v: PublishCandidate,
): Promise<{ ok: boolean; found: number; count: number }> {
  const count = await connector.countChunks(v.documentId, v.versionId);
  let found = 0;
  for (const c of v.chunks) {
    const hits = await connector.query(c.embedding, v.chunks.length, {
      view: { kind: 'all' },
      documentId: v.documentId,
      versionId: v.versionId,
    });
    if (hits.some((h) => h.metadata[FIELDS.chunkId] === c.chunkId)) found++;
  }
  return { ok: count === v.chunks.length && found === v.chunks.length, found, count };
}

export const verifyDetectsMissing: ConformanceCase = {
  id: 'verify-detects-missing',
  title: 'verify-queryable fails when a chunk is missing',
  guarantee:
    'verifyQueryable reports failure, naming the count and the missing id, when the store holds fewer chunks than the manifest expects, even after waiting the declared visibility lag.',
  whenItFails:
    '_count / _list (and _countMany / _listMany, the batch verifier) must read the store (not echo what was written), exactly, by (document, version); a count that is approximate or capped makes verification meaningless. _query scoped to a version must return a chunk for its own vector.',
  appliesTo: () => true,
  declared: (c) => `missing chunk detected (${declaredLag(c)})`,
  async run(ctx) {
    const connector = await ctx.connector();
    const epoch = await connector.readEpoch();
    const v = ctx.corpus.generated('partial', 'v1', 5);
    await connector.upsert(v.chunks.map((c) => toStoredChunk(c, epoch + 1)));
    const vis = ctx.capabilities.visibility;
    const timeoutMs = vis.mode === 'immediate' ? 300 : vis.maxLagMs + 500;
    const missing = chunkId(v.documentId, v.versionId, v.chunks.length);
    const result = await ctx.time('verify', () =>
      verifyQueryable(
        connector,
        {
          documentId: v.documentId,
          versionId: v.versionId,
          chunkIds: [...v.chunks.map((c) => c.chunkId), missing],
          probe: { chunkId: v.chunks[2]!.chunkId, embedding: v.chunks[2]!.embedding },
        },
        { timeoutMs },
      ),
    );
    ctx.observe('ok', result.ok);
    ctx.observe('attempts', result.attempts);
    ctx.observe('failures', [...result.failures]);
    ctx.check(!result.ok, `verifyQueryable succeeded although ${missing} was never written`);
    ctx.check(
      result.failures.some((f) => f.includes('count')) &&
        result.failures.some((f) => f.includes('missing')),
      `verifyQueryable failures do not name the count and the missing id: ${result.failures.join('; ')}`,
    );
    const probeMissing = await verifyQueryable(
      connector,
      {
        documentId: v.documentId,
        versionId: v.versionId,
        chunkIds: v.chunks.map((c) => c.chunkId),
        probe: { chunkId: missing, embedding: v.chunks[0]!.embedding },
      },
      { timeoutMs },
    );
    ctx.check(
      !probeMissing.ok,
      'verifyQueryable succeeded although its smoke query could not return the probe chunk',
    );
    ctx.observed(
      result.ok
        ? 'missing chunk NOT detected'
        : `missing chunk detected after ${result.attempts} attempt(s)`,
    );
  },
};

export const verifyWithinLag: ConformanceCase = {
  id: 'verify-within-lag',
  title: 'staged chunks become queryable within the declared lag, and verify says so only then',
  guarantee:
    'Every staged chunk is counted and returned by a query with its own embedding within the declared visibility (immediately, or within maxLagMs, measured by polling), and verifyQueryable returns ok only when that is already true.',
  whenItFails:
    'Declared visibility vs. the store: raise maxLagMs to what the store really needs, or make _count/_list read the same index _query reads (a metadata scan that is ahead of the vector index lets verify pass early). Observed lag is in the report.',
  appliesTo: () => true,
  declared: (c) => declaredLag(c),
  timeoutMs: 120_000,
  async run(ctx) {
    const connector = await ctx.connector();
    const vis = ctx.capabilities.visibility;
    const budget = vis.mode === 'immediate' ? 0 : vis.maxLagMs;
    const epoch = await connector.readEpoch();

    // Measure the lag by polling (never by sleeping the declared lag).
    const a = ctx.corpus.generated('lag', 'v1', 8);
    await connector.upsert(a.chunks.map((c) => toStoredChunk(c, epoch + 1)));
    const acked = performance.now();
    let polls = 0;
    let last = await fullyQueryable(connector, a);
    polls++;
    while (!last.ok && performance.now() - acked < budget + 2_000) {
      await sleep(10);
      last = await fullyQueryable(connector, a);
      polls++;
    }
    const lag = round(performance.now() - acked);
    ctx.observe('observedLagMs', last.ok ? lag : null);
    ctx.observe('polls', polls);
    if (!last.ok) {
      ctx.check(
        false,
        `after ${lag} ms only ${last.found}/${a.chunks.length} chunks were queryable (count ${last.count})`,
      );
    } else if (vis.mode === 'immediate') {
      ctx.check(
        polls === 1,
        `declared immediate visibility, but the first check after the write failed; visible after ${lag} ms`,
      );
    } else {
      ctx.check(lag <= budget, `observed lag ${lag} ms exceeds the declared maxLagMs ${budget}`);
    }

    // verifyQueryable must not report ok before the data is queryable.
    const b = ctx.corpus.generated('lag', 'v2', 8);
    await connector.upsert(b.chunks.map((c) => toStoredChunk(c, epoch + 1)));
    const probe = b.chunks[Math.floor(b.chunks.length / 2)]!;
    const result = await ctx.time('verify', () =>
      verifyQueryable(
        connector,
        {
          documentId: b.documentId,
          versionId: b.versionId,
          chunkIds: b.chunks.map((c) => c.chunkId),
          probe: { chunkId: probe.chunkId, embedding: probe.embedding },
        },
        { timeoutMs: defaultVerifyTimeoutMs(connector) },
      ),
    );
    const atOk = await fullyQueryable(connector, b);
    ctx.observe('verifyOk', result.ok);
    ctx.observe('verifyElapsedMs', round(result.elapsedMs));
    ctx.observe('queryableWhenVerified', `${atOk.found}/${b.chunks.length}`);
    ctx.check(result.ok, `verifyQueryable failed within its budget: ${result.failures.join('; ')}`);
    ctx.check(
      !result.ok || atOk.ok,
      `verifyQueryable said ok after ${round(result.elapsedMs)} ms, but only ${atOk.found}/${b.chunks.length} chunks were queryable then`,
    );
    const shown = last.ok
      ? vis.mode === 'immediate' && polls === 1
        ? 'immediate'
        : `visible after ${lag} ms`
      : 'not visible';
    ctx.observed(`${shown}; verify ok with ${atOk.found}/${b.chunks.length} queryable`);
  },
};
