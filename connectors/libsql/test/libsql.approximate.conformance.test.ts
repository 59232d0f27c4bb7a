import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { libSqlFixture } from '../src/fixture.js';

// The same suite with `search: 'approximate'`: unscoped queries go through vector_top_k.
runConformanceSuite({
  fixture: libSqlFixture({ search: 'approximate' }),
  runner: { describe, it, beforeAll, afterAll },
});
