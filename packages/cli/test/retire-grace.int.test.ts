import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentId, FIELDS } from '@ragfresh/core';
import { startSimWeb } from '@ragfresh/sim';
import { describe, expect, it } from 'vitest';
import { openRuntime, resolveConfig } from '../src/index.js';

// `retireGrace`: a replaced version stays in the store (outside the current view) until the
// grace has passed, so a reader that started on it can finish; with 0 only the publisher's one
// epoch of grace applies and it is deleted by the next publication.
describe.each([
  { grace: '1h', kept: true },
  { grace: 0, kept: false },
])('retireGrace $grace on real LanceDB', ({ grace, kept }) => {
  it(`${kept ? 'keeps' : 'deletes'} the replaced version once a later publication moved the epoch on`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-grace-'));
    await using sim = await startSimWeb({ seed: 7, hosts: 1, pagesPerHost: 3 });
    const config = resolveConfig({
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: dir,
      sources: [{ id: 'docs', sitemaps: [`${sim.origin(sim.hosts()[0]!)}/sitemap.xml`] }],
      connector: { store: 'lancedb', path: join(dir, 'lance'), table: 'grace' },
      fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      retireGrace: grace,
    });
    expect(config.settings.publish.retireGraceMs).toBe(kept ? 3_600_000 : 0);
    const rt = await openRuntime(config);
    try {
      await rt.engine.refresh({ all: true });
      const url = sim.urls(sim.hosts()[0]!).find((u) => new URL(u).pathname !== '/')!;
      const id = documentId('docs', url);
      const first = (await rt.state.getDocument(id))!.currentVersionId!;
      sim.mutate(url, 'edit', { section: 0, text: 'The quota is now 42 requests per minute.' });
      await rt.engine.refresh({ all: true });
      const second = (await rt.state.getDocument(id))!.currentVersionId!;
      expect(second).not.toBe(first);
      // One more publication (another page changes): the epoch is now one past the retirement,
      // so only the time grace can keep the replaced version.
      const other = sim.urls(sim.hosts()[0]!).filter((u) => new URL(u).pathname !== '/')[1]!;
      sim.mutate(other, 'edit', { section: 0, text: 'Support hours are now nine to five.' });
      await rt.engine.refresh({ all: true });
      const versions = new Set(
        (await rt.connector.listChunks(id)).map((c) => String(c.metadata[FIELDS.versionId])),
      );
      expect(versions.has(second)).toBe(true);
      expect(versions.has(first)).toBe(kept);
      // Never in the current view, whatever the grace.
      const hits = await rt.connector.query(await rt.embeddings.embedQuery('quota requests'), 20, {
        documentId: id,
        view: { kind: 'flag' },
      });
      expect(new Set(hits.map((h) => String(h.metadata[FIELDS.versionId])))).toEqual(
        new Set([second]),
      );
    } finally {
      await rt.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
