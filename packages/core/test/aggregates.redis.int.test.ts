import { openStateStore } from '../src/index.js';
import { describeAggregates } from './aggregates.suite.js';

// The machine's real Redis. A missing server fails every case with STORE_UNREACHABLE: never skipped.
const REDIS_URL = process.env.RAGFRESH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describeAggregates('redis', (namespace) => openStateStore(REDIS_URL, { namespace }), {
  runs: 12,
});
