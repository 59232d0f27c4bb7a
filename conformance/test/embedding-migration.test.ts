import { runSuite } from '@ragfresh/conformance';
import { BROKEN_CONNECTORS } from '@ragfresh/conformance/broken';
import { fixture as memoryFixture } from '@ragfresh/connector-memory/fixture';
import { describe, expect, it } from 'vitest';

// The embedding-migration check paired with its control: a connector whose view filter lets
// staged rows through (rf_to only) shows readers the new space's staged rows beside the old
// space's current ones, and the case must say so; the reference passes both cases.
const CASES = ['embedding-migration', 'embedding-migration-new-dimensions'];

describe('embedding-migration', () => {
  it('passes on the reference connector, same and other dimensions', async () => {
    const report = await runSuite({ fixture: memoryFixture, cases: CASES });
    expect(report.cases.map((c) => [c.id, c.status, c.failures])).toEqual(
      CASES.map((id) => [id, 'passed', []]),
    );
    for (const c of report.cases) {
      expect(c.observations.mixedReads).toBe(0);
      expect(Number(c.observations.newSpaceReads)).toBeGreaterThanOrEqual(5);
    }
  });

  it('fails a connector that shows staged rows: readers saw both spaces in one answer', async () => {
    const broken = BROKEN_CONNECTORS.find((b) => b.kind === 'staged-visible')!;
    const report = await runSuite({ fixture: broken.fixture, cases: ['embedding-migration'] });
    const c = report.cases[0]!;
    expect(c.status).toBe('failed');
    expect(Number(c.observations.mixedReads)).toBeGreaterThan(0);
    expect(c.failures.some((f) => /reads returned chunks of both spaces/.test(f))).toBe(true);
  });
});
