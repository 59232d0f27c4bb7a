import { createMemoryConnector } from '@ragfresh/connector-memory';
import {
  documentId,
  FIELDS,
  InMemoryStateStore,
  metadataCitation,
  Publisher,
} from '@ragfresh/core';
import { MemoryRawSnapshotStore } from '@ragfresh/fetch';
import { describe, expect, it } from 'vitest';
import { countingEmbeddings } from './harness.js';
import {
  EngineContext,
  type EngineSource,
  ExtractPipeline,
  importRows,
  parseExport,
} from './internals.js';

// Hostile export rows: a row names its own canonical and loaded URLs; neither may choose the citation.
const source: EngineSource = {
  id: 'site',
  urls: ['https://x.org/'],
  everyMs: 3_600_000,
  identity: { mode: 'strict' },
};

const rows = [
  {
    url: 'https://x.org/pricing',
    canonicalUrl: 'https://docs.other-company.example/official/pricing',
    loadedUrl: 'https://docs.other-company.example/official/pricing',
    markdown:
      '# Pricing\n\nThe zephyr plan costs forty two credits. [Console](javascript:alert(1)).',
  },
  {
    url: 'https://x.org/limits',
    canonicalUrl: 'javascript:alert(2)',
    markdown: '# Limits\n\nNine requests per second. ![x](data:image/png;base64,AAAA)',
    chunks: [
      { text: 'Nine requests per second, see [data](data:text/html,hi).', headingPath: ['Limits'] },
    ],
  },
  {
    // The control: a same-site canonical and loaded URL are accepted.
    url: 'https://x.org/old',
    canonicalUrl: '/retention',
    loadedUrl: 'https://www.x.org/old/',
    markdown: '# Retention\n\nLogs are kept thirty days.',
  },
].map((r) => JSON.stringify({ ...r, loadedTime: '2026-10-01T00:00:00Z' }));

async function imported(canonical?: EngineSource['canonical']) {
  const connector = createMemoryConnector();
  await connector.open({ dimensions: 64 });
  const state = new InMemoryStateStore();
  const publisher = await Publisher.open({ connector, state });
  const src = { ...source, ...(canonical === undefined ? {} : { canonical }) };
  const ctx = new EngineContext({
    sources: [src],
    connector,
    state,
    publisher,
    fetcher: undefined as never,
    pipeline: new ExtractPipeline({ maxTokens: 200 }),
    embeddings: countingEmbeddings(),
    snapshots: new MemoryRawSnapshotStore(),
  });
  const parsed = parseExport(rows.join('\n'), { format: 'crawler' });
  await importRows(ctx, {
    source: src,
    rows: parsed.rows,
    label: 'rows',
    coverage: parsed.coverage,
  });
  const chunks = async (path: string) =>
    connector.listChunks(documentId('site', `https://x.org${path}`, source.identity));
  const out = {
    pricing: await chunks('/pricing'),
    limits: await chunks('/limits'),
    old: await chunks('/old'),
  };
  await publisher.close();
  return out;
}

describe('import rows follow the citation rule of fetched pages', () => {
  it('an off-site canonical and loadedUrl never become the citation; a same-site pair does (control)', async () => {
    const { pricing, limits, old } = await imported();
    expect(pricing.length).toBeGreaterThan(0);
    for (const c of pricing) {
      expect(metadataCitation(c.metadata)).toBe('https://x.org/pricing');
      expect(c.metadata[FIELDS.canonicalUrl]).toBeUndefined();
      expect(c.metadata[FIELDS.canonicalClaim]).toBe(
        'https://docs.other-company.example/official/pricing',
      );
      expect(c.text).not.toContain('javascript:');
    }
    for (const c of limits) {
      expect(metadataCitation(c.metadata)).toBe('https://x.org/limits');
      expect(c.metadata[FIELDS.canonicalClaim]).toBeUndefined();
      expect(c.text).not.toMatch(/data:|javascript:/);
    }
    expect(limits.map((c) => c.text)).toEqual(['Nine requests per second, see data.']);
    expect(old.map((c) => metadataCitation(c.metadata))).toEqual(
      old.map(() => 'https://www.x.org/retention'),
    );
    expect(old[0]!.metadata[FIELDS.finalUrl]).toBe('https://www.x.org/old/');
  });

  it("canonical: 'trust' cites the row's canonical (the policy reaches imports)", async () => {
    const { pricing } = await imported('trust');
    expect(pricing.map((c) => metadataCitation(c.metadata))).toEqual(
      pricing.map(() => 'https://docs.other-company.example/official/pricing'),
    );
  });
});
