import { documentId, FIELDS } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';

// A change of a source's access scope is a new version of each of its documents although no
// page changed: the pages answer 304 and every chunk text is known, yet the documents are
// re-extracted from their raw snapshots and republished under the new scope (embeddings reused
// by text), and a second run with the same scope changes nothing.
describe('a scope change republishes through the protocol', () => {
  let h: Harness;
  let pages: string[];
  const stored = async () => {
    const out = new Map<string, string>();
    for (const u of pages) {
      for (const c of await h.connector.listChunks(documentId('a', u))) {
        const { from, to } = {
          from: Number(c.metadata[FIELDS.from]),
          to: Number(c.metadata[FIELDS.to]),
        };
        const epoch = await h.connector.readEpoch();
        if (from <= epoch && epoch < to) out.set(c.id, JSON.stringify(c.metadata[FIELDS.access]));
      }
    }
    return out;
  };

  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 3 });
    pages = h.sim.urls(h.sim.hosts()[0]!);
  });
  afterAll(() => h.stop());

  it('public, then scoped to staff: every document republished, nothing embedded, nothing fetched in full', async () => {
    const cold = await h.engine([source('a', pages)]).refresh({ all: true });
    expect(cold.totals.published).toBe(pages.length);
    expect(new Set((await stored()).values())).toEqual(new Set(['["*"]']));
    const before = new Map<string, string | undefined>();
    for (const u of pages)
      before.set(u, (await h.state.getDocument(documentId('a', u)))?.currentVersionId);

    const embedded = h.embeddings.texts;
    const scoped = await h
      .engine([source('a', pages, { access: ['staff'] })])
      .refresh({ all: true });
    expect(scoped.totals).toMatchObject({
      published: pages.length,
      reextracted: pages.length,
      chunksEmbedded: 0,
      notModified: pages.length,
    });
    expect(h.embeddings.texts).toBe(embedded);
    expect(new Set((await stored()).values())).toEqual(new Set(['["staff"]']));
    for (const u of pages) {
      const r = await h.state.getDocument(documentId('a', u));
      expect(r?.access).toEqual(['staff']);
      expect(r?.currentVersionId).not.toBe(before.get(u));
    }

    const again = await h
      .engine([source('a', pages, { access: ['staff'] })])
      .refresh({ all: true });
    expect(again.totals).toMatchObject({ published: 0, reextracted: 0, notModified: pages.length });
  });
});
