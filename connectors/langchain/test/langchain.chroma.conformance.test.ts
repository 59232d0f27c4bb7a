import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { chromaFixture } from '../src/fixture.js';

// The shared suite against LangChain's Chroma class and a real local Chroma server.
runConformanceSuite({ fixture: chromaFixture, runner: { describe, it, beforeAll, afterAll } });
