import { runConformanceSuite } from '@ragfresh/conformance';
import type { StoreFixture } from '@ragfresh/core';
import { concurrentRunner } from '../../../conformance/test/concurrent-runner.js';
import { fixture } from '../src/fixture.js';

/**
 * The shared suite (pinecone.conformance.test.ts) against an eventually consistent, unreliable
 * emulator: every write becomes readable only after 300 ms (the emulator target declares
 * maxLagMs 3000), and requests meet rate limits with Retry-After, 5xx, dropped connections and
 * withheld answers. Cases run concurrently against the one emulator (concurrent-runner.ts).
 */
const faulty: StoreFixture = {
  store: 'pinecone',
  async start(options) {
    const target = await fixture.start(options);
    target.faults?.set({
      visibilityLagMs: 300,
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
