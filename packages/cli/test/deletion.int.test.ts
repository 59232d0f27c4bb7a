import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentId, FIELDS, HashingEmbeddings } from '@ragfresh/core';
import { startSimWeb } from '@ragfresh/sim';
import { expect, it } from 'vitest';
import { openRuntime, resolveConfig } from '../src/index.js';

it('deletion by repeated gone evidence: N checks spanning the minimum age, then review, never before', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-deletion-'));
  const sim = await startSimWeb({ seed: 5, hosts: 1, pagesPerHost: 4 });
  let now = Date.parse('2026-01-01T00:00:00Z');
  const urls = sim.urls();
  const config = resolveConfig({
    userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
    dataDir: dir,
    // An explicit URL list: no sitemap, so no inventory diff — only gone evidence can delete.
    sources: [{ id: 'list', urls }],
    connector: { store: 'lancedb', path: join(dir, 'lance'), table: 'del' },
    embeddings: new HashingEmbeddings({ dimensions: 64 }),
    fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
    deletion: { goneChecks: 3, minGoneAge: '24h' },
  });
  const rt = await openRuntime(config, { now: () => new Date(now) });
  try {
    await rt.engine.refresh({ all: true });
    const gone = urls[1]!;
    const docId = documentId('list', gone);
    sim.mutate(gone, 'delete404');
    for (const hoursLater of [1, 2, 3]) {
      now += hoursLater * 3_600_000;
      await rt.engine.refresh({ all: true });
      // Three 404s, but they span less than 24 h: no review item yet.
      expect(await rt.state.listReviewItems({ status: 'pending' })).toHaveLength(0);
    }
    now += 24 * 3_600_000;
    await rt.engine.refresh({ all: true });
    const [item] = await rt.state.listReviewItems({ status: 'pending' });
    expect(item?.reason).toBe('confirmed-gone');
    expect(item?.evidence.join(' ')).toMatch(/HTTP 404 observed 4 times/);
    // Still served until someone approves.
    const listed = await rt.connector.listChunks(docId);
    expect(listed.some((c) => c.metadata[FIELDS.current] === true)).toBe(true);
    expect(await rt.engine.reject(item!.id, 'tester')).toBe(true);
    expect((await rt.state.getDocument(docId))?.goneCount).toBe(0);
    expect(await rt.state.getTombstone(docId)).toBeUndefined();
  } finally {
    await rt.close();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
