import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openStateStore } from '../src/index.js';
import { describeAggregates } from './aggregates.suite.js';

const dir = mkdtempSync(join(tmpdir(), 'ragfresh-agg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeAggregates('sqlite', (namespace) =>
  openStateStore(`sqlite:${join(dir, `${namespace}.sqlite`)}`, { namespace }),
);
