import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fixture } from '../src/fixture.js';

// The reference connector runs the whole shared suite; its manifest alone decides what applies.
runConformanceSuite({ fixture, runner: { describe, it, beforeAll, afterAll } });
