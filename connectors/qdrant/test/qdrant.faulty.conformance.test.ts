import { runConformanceSuite } from '@ragfresh/conformance';
import type { StoreFixture } from '@ragfresh/core';
import { concurrentRunner } from '../../../conformance/test/concurrent-runner.js';
import { fixture } from '../src/fixture.js';

/**
 * The shared suite (qdrant.conformance.test.ts) with faults injected on every request of an
 * emulator target: rate limits with Retry-After, 5xx, dropped connections and withheld answers.
 * The connector must retry idempotently and still keep every declared guarantee. (Qdrant writes
 * pass wait=true, so a visibility lag never applies to them.) Cases run concurrently against the
 * one emulator (concurrent-runner.ts).
 */
const faulty: StoreFixture = {
  store: 'qdrant',
  async start(options) {
    const target = await fixture.start(options);
    target.faults?.set({
      rate429: 0.03,
      retryAfterSeconds: 0,
      rate5xx: 0.03,
      dropRate: 0.02,
      timeoutRate: 0.005,
    });
    return target;
  },
};
runConformanceSuite({ fixture: faulty, runner: concurrentRunner });
