import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { documentId } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';

const pending = async (h: Harness, sourceId: string) =>
  (await h.state.listReviewItems({ status: 'pending' })).filter((i) => i.sourceId === sourceId);

describe('deletion safety: per-run gate, confirmed-gone only, re-evaluation, redirects', () => {
  let h: Harness;
  let urls: string[];
  const auto = { goneChecks: 1, minGoneAgeMs: 0, autoApprove: true };
  const manual = { goneChecks: 1, minGoneAgeMs: 0, autoApprove: false };

  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 10 }, 0.2);
    urls = h.sim.urls();
    expect(urls.length).toBe(10);
    await h.engine([source('d', urls)], { deletion: auto }).refresh({ all: true });
  });
  afterAll(() => h.stop());

  it('a 60 % URL list under autoApprove removes nothing and raises one mass-removal-held alert', async () => {
    const report = await h
      .engine([source('d', urls.slice(0, 6))], { deletion: auto })
      .refresh({ all: true });
    const s = report.sources[0]!;
    expect(s.complete).toBe(true);
    expect(s.counts.notModified).toBe(10); // the 4 unlisted pages still answer 304
    expect(s.counts.removed).toBe(0);
    expect(s.alerts.filter((a) => a.startsWith('mass-removal-held'))).toHaveLength(1);
    expect(s.alerts[0]).toMatch(/removing 4 of 10 live documents \(4 unlisted-but-answering\)/);
    expect(await pending(h, 'd')).toHaveLength(0);
    expect(await h.state.listTombstones()).toHaveLength(0);
  });

  it('one unlisted page that still answers is its own proposal kind, never auto-approved, withdrawn when listed again', async () => {
    const id = documentId('d', urls[9]!);
    await h.engine([source('d', urls.slice(0, 9))], { deletion: auto }).refresh({ all: true });
    const item = await h.state.getReviewItem(`delete:${id}`);
    expect(item?.reason).toBe('unlisted-but-answering');
    expect(item?.status).toBe('pending');
    expect(await h.state.getTombstone(id)).toBeUndefined();
    await h.engine([source('d', urls)], { deletion: auto }).refresh({ all: true });
    const after = await h.state.getReviewItem(`delete:${id}`);
    expect(after?.status).toBe('withdrawn');
    expect(after?.evidence.at(-1)).toMatch(/withdrawn: listed in the inventory again/);
    expect((await h.state.getDocument(id))?.history?.at(-1)?.event).toBe('proposal-withdrawn');
  });

  it('a gone proposal is withdrawn when the page answers again', async () => {
    const id = documentId('d', urls[8]!);
    h.sim.mutate(urls[8]!, 'delete404');
    await h.engine([source('d', urls)], { deletion: manual }).refresh({ all: true });
    expect((await h.state.getReviewItem(`delete:${id}`))?.reason).toBe('confirmed-gone');
    h.sim.mutate(urls[8]!, 'restore');
    await h.engine([source('d', urls)], { deletion: manual }).refresh({ all: true });
    const item = await h.state.getReviewItem(`delete:${id}`);
    expect(item?.status).toBe('withdrawn');
    expect(item?.evidence.at(-1)).toMatch(/the page answered 200\/304/);
  });

  it('confirmed-gone pages within the gate are auto-approved together; beyond it they are held', async () => {
    h.sim.mutate(urls[7]!, 'delete410');
    const one = await h.engine([source('d', urls)], { deletion: auto }).refresh({ all: true });
    expect(one.sources[0]!.counts.removed).toBe(1);
    expect(await h.state.getTombstone(documentId('d', urls[7]!))).toBeDefined();
    for (const u of urls.slice(4, 7)) h.sim.mutate(u, 'delete404');
    const three = await h.engine([source('d', urls)], { deletion: auto }).refresh({ all: true });
    const s = three.sources[0]!;
    expect(s.counts.removed).toBe(0);
    expect(s.alerts.filter((a) => a.startsWith('mass-removal-held'))).toHaveLength(1);
    expect(await h.state.listTombstones()).toHaveLength(1);
    for (const u of urls.slice(4, 7)) h.sim.mutate(u, 'restore');
  });
});

describe('a redirect that ends in 404', () => {
  let h: Harness;
  let server: Server;
  let base: string;
  let moved = false;
  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 1 });
    server = createServer((req, res) => {
      if (req.url === '/old' && moved) res.writeHead(301, { location: '/new' }).end();
      else if (req.url === '/old')
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(
            `<html><head><title>Old</title></head><body><main><article><h1>Old</h1>${'<p>The old page explains the plan and the price in words for readers of it.</p>'.repeat(20)}</article></main></body></html>`,
          );
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await h.stop();
    await new Promise((r) => server.close(r));
  });

  it('is recorded as such, and is not gone evidence for the requested URL', async () => {
    const engine = h.engine([source('r', [`${base}/old`])], {
      deletion: { goneChecks: 1, minGoneAgeMs: 0, autoApprove: true },
    });
    await engine.refresh({ all: true });
    moved = true;
    await engine.refresh({ all: true });
    const r = await h.state.getDocument(documentId('r', `${base}/old`));
    expect(r?.status).toBe('degraded');
    expect(r?.statusReasons[0]).toMatch(
      new RegExp(`^redirected-to-gone: redirected to ${base}/new .*which answered HTTP 404`),
    );
    expect(r?.goneCount ?? 0).toBe(0);
    expect(await h.state.listReviewItems({ status: 'pending' })).toHaveLength(0);
    expect(r?.currentVersionId).toBeDefined();
  });
});
