import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentId, FIELDS, HashingEmbeddings } from '@ragfresh/core';
import { startSimWeb } from '@ragfresh/sim';
import { expect, it } from 'vitest';
import { openRuntime, resolveConfig } from '../src/index.js';

// Needs Debian's chromium at /usr/bin/chromium (.ci/run installs it); fails loudly without it.
it('acquisition auto renders an empty app shell in headless Chromium and records the mode', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-render-'));
  const sim = await startSimWeb({ seed: 9, hosts: 1, pagesPerHost: 3 });
  const [home, shellPage, plain] = sim.urls();
  sim.mutate(shellPage!, 'appShell', { clientRender: true });
  const config = resolveConfig({
    userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
    dataDir: dir,
    sources: [{ id: 'spa', urls: [home!, shellPage!, plain!], acquisition: 'auto' }],
    connector: { store: 'lancedb', path: join(dir, 'lance'), table: 'render' },
    embeddings: new HashingEmbeddings({ dimensions: 64 }),
    fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
  });
  const rt = await openRuntime(config);
  try {
    const report = await rt.engine.refresh({ all: true });
    expect(report.sources[0]!.counts.published).toBe(3);
    const shellChunks = await rt.connector.listChunks(documentId('spa', shellPage!));
    expect(shellChunks.length).toBeGreaterThan(0);
    expect(new Set(shellChunks.map((c) => c.metadata[FIELDS.acquisition]))).toEqual(
      new Set(['rendered']),
    );
    // The client-rendered article is there, not the empty shell.
    const phrase = sim.pageFacts(shellPage!).phrase;
    expect(shellChunks.map((c) => c.text).join('\n')).toContain(phrase);
    const plainChunks = await rt.connector.listChunks(documentId('spa', plain!));
    expect(new Set(plainChunks.map((c) => c.metadata[FIELDS.acquisition]))).toEqual(
      new Set(['raw']),
    );
  } finally {
    await rt.close();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
