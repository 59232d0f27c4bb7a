import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fixture } from '../src/fixture.js';

// The whole shared suite against an embedded libSQL file; the frozen manifest alone decides what applies.
runConformanceSuite({ fixture, runner: { describe, it, beforeAll, afterAll } });
