import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fixture } from '../src/fixture.js';

// The whole shared suite against the target the fixture picks (here: the wire emulator). The
// same suite against a faulty emulator is pinecone.faulty.conformance.test.ts (a file of its
// own, so the two runs, each a few minutes of waiting on the emulator's lag, go in parallel).
runConformanceSuite({ fixture, runner: { describe, it, beforeAll, afterAll } });
