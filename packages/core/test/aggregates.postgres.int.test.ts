import { openStateStore } from '../src/index.js';
import { describeAggregates } from './aggregates.suite.js';

// The machine's real Postgres. A missing server fails every case with STORE_UNREACHABLE: never skipped.
const POSTGRES_URL =
  process.env.RAGFRESH_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

describeAggregates('postgres', (namespace) => openStateStore(POSTGRES_URL, { namespace }), {
  runs: 12,
});
