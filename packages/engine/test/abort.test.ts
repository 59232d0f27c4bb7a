import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, harness, source } from './harness.js';

describe('stopping a refresh', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness({ hosts: 1, pagesPerHost: 12 });
  });
  afterAll(() => h.stop());

  it('settles when aborted mid-run: pages not reached are not observed, coverage is incomplete, nothing is proposed for removal', async () => {
    const urls = h.sim.urls();
    const engine = h.engine([source('s', urls)]);
    // A cold run first, so the second run has live documents an incomplete run must not remove.
    const cold = await engine.refresh({ all: true });
    expect(cold.totals.published).toBe(urls.length);
    const controller = new AbortController();
    let fetched = 0;
    const fetch = h.fetcher.fetch.bind(h.fetcher);
    h.fetcher.fetch = (url, options) => {
      // Abort while requests are in flight: some answered, some interrupted, some never started.
      if (++fetched === 4) controller.abort(new Error('stop requested'));
      return fetch(url, options);
    };
    try {
      const report = await engine.refresh({ all: true, signal: controller.signal });
      const [run] = report.sources;
      expect(run?.complete).toBe(false);
      expect(report.totals.notModified).toBeLessThan(urls.length);
      expect(report.totals.reviewCreated).toBe(0);
      expect((await h.state.listReviewItems({ status: 'pending' })).length).toBe(0);
    } finally {
      h.fetcher.fetch = fetch;
    }
  });
});
