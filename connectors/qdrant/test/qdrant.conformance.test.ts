import { runConformanceSuite } from '@ragfresh/conformance';
import { concurrentRunner } from '../../../conformance/test/concurrent-runner.js';
import { fixture } from '../src/fixture.js';

// The whole shared suite against the target the fixture picks (here: the wire emulator). The
// same suite with faults injected is qdrant.faulty.conformance.test.ts (a file of its own, so
// the two runs go in parallel). Cases run concurrently against the one emulator
// (concurrent-runner.ts).
runConformanceSuite({ fixture, runner: concurrentRunner });
