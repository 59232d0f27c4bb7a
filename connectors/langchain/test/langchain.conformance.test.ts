import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fixture } from '../src/fixture.js';

// The shared suite against LangChain's MemoryVectorStore; the frozen manifest alone decides what applies.
runConformanceSuite({ fixture, runner: { describe, it, beforeAll, afterAll } });
