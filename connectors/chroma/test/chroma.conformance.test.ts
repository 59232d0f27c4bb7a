import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fixture } from '../src/fixture.js';

// The whole shared suite; the connector's frozen manifest alone decides what applies.
// CHROMA_URL runs it against an already running server instead of a local one.
runConformanceSuite({
  fixture,
  runner: { describe, it, beforeAll, afterAll },
  ...(process.env.CHROMA_URL === undefined
    ? {}
    : { startOptions: { url: process.env.CHROMA_URL } }),
});
