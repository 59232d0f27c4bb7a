import { runConformanceSuite } from '@ragfresh/conformance';
import { concurrentRunner } from '../../../conformance/test/concurrent-runner.js';
import { pineconeFixture } from '../src/fixture.js';

// The whole shared suite against the emulator in Pinecone Local mode: API 2025-01 control plane
// (the index is pre-created with the 2025-01 body), update by filter refused with 501, no LSN
// headers — so the connector declares epochClaim 'lease-only' and epoch-race reports it. Cases
// run concurrently against the one emulator (concurrent-runner.ts).
runConformanceSuite({
  fixture: pineconeFixture({ mode: 'local-2025-01' }),
  runner: concurrentRunner,
});
