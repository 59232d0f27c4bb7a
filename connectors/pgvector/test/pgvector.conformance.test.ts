import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fixture } from '../src/fixture.js';

// The whole shared suite against PGlite + real pgvector served over the wire; the connector's
// frozen manifest alone decides what applies. PGVECTOR_URL runs it against a real Postgres
// with pgvector instead.
runConformanceSuite({
  fixture,
  runner: { describe, it, beforeAll, afterAll },
  ...(process.env.PGVECTOR_URL === undefined
    ? {}
    : { startOptions: { url: process.env.PGVECTOR_URL } }),
});
