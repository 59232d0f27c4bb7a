import { runConformanceSuite } from '@ragfresh/conformance';
import { concurrentRunner } from '../../../conformance/test/concurrent-runner.js';
import { fixture } from '../src/fixture.js';

// The whole shared suite against the target the fixture picks (here: the wire emulator). The
// same suite against a faulty emulator is pinecone.faulty.conformance.test.ts (a file of its
// own, so the two runs go in parallel). Both spend most of their time waiting on the emulator's
// lag, so their cases also run concurrently against the one emulator (concurrent-runner.ts).
runConformanceSuite({ fixture, runner: concurrentRunner });
