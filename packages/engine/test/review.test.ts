import { documentId } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';
import type { RefreshEngine } from './internals.js';

describe('evidence and review', () => {
  let h: Harness;
  let engine: RefreshEngine;
  let urls: string[];
  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 4 });
    urls = h.sim.urls();
    engine = h.engine([source('r', urls)], {
      deletion: { goneChecks: 2, minGoneAgeMs: 0, autoApprove: false },
    });
    await engine.refresh({ all: true });
  });
  afterAll(() => h.stop());

  it('gone evidence accumulates per observation and says how many checks it has', async () => {
    const id = documentId('r', urls[1]!);
    h.sim.mutate(urls[1]!, 'delete410');
    await engine.refresh({ all: true });
    const r = await h.state.getDocument(id);
    expect(r?.goneCount).toBe(1);
    expect(r?.statusReasons[0]).toMatch(/^gone: HTTP 410 \(1 of 2 checks since /);
    expect(await h.state.getReviewItem(`delete:${id}`)).toBeUndefined();
  });

  it('rejecting a deletion resets the evidence and keeps the version current', async () => {
    const id = documentId('r', urls[1]!);
    await engine.refresh({ all: true });
    expect((await h.state.getReviewItem(`delete:${id}`))?.status).toBe('pending');
    expect(await engine.reject(`delete:${id}`, 'tester')).toBe(true);
    expect((await h.state.getDocument(id))?.goneCount).toBe(0);
    expect((await h.state.getDocument(id))?.currentVersionId).toBeDefined();
    expect((await h.connector.listChunks(id)).length).toBeGreaterThan(0);
    expect(await h.state.getTombstone(id)).toBeUndefined();
  });

  it('a complete run that no longer lists a live page proposes it; a partial run proposes nothing', async () => {
    const dropped = urls[3]!;
    const id = documentId('r', dropped);
    const partial = h.engine([source('r', [...urls.slice(0, 3), 'ftp://bad'])]);
    await partial.refresh({ all: true });
    expect(await h.state.getReviewItem(`delete:${id}`)).toBeUndefined();
    h.sim.mutate(dropped, 'delete404');
    const complete = h.engine([source('r', urls.slice(0, 3))], {
      deletion: { goneChecks: 5, minGoneAgeMs: 0, autoApprove: false },
    });
    h.sim.mutate(urls[1]!, 'restore');
    const report = await complete.refresh({ all: true });
    expect(report.sources[0]!.complete).toBe(true);
    const item = await h.state.getReviewItem(`delete:${id}`);
    expect(item?.reason).toBe('inventory-diff');
  });
});
