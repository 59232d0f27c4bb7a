import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSuite } from '@ragfresh/conformance';
import { MemoryConnector } from '@ragfresh/connector-memory';
import { fixture as memoryFixture } from '@ragfresh/connector-memory/fixture';
import type { StoredChunk, StoreFixture } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';

// paused-publisher pauses publisher A inside one step of a batch. A store that fails A's batch
// before that step never lets it pause: the case must fail at once with the store's own error,
// not wait out its 120 s case timeout.

/** Refuses to stage the document the paused publisher adds in its `promoting` run. */
class RefusesPromotingBatch extends MemoryConnector {
  protected override async _upsert(chunks: readonly StoredChunk[], fence?: number): Promise<void> {
    if (chunks.some((c) => c.text.startsWith('promoting-n ')))
      throw new Error('disk full while staging promoting-n');
    await super._upsert(chunks, fence);
  }
}

/** The memory fixture's target, its connectors refusing that batch (persisted: A and B share one index). */
const refusing: StoreFixture = {
  store: 'memory-refuses-promoting-batch',
  async start() {
    const target = await memoryFixture.start();
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-refusing-'));
    return {
      ...target,
      createConnector: async (ns: string) =>
        new RefusesPromotingBatch({ persistPath: join(dir, `${ns.replace(/\W/g, '_')}.json`) }),
      async stop() {
        rmSync(dir, { recursive: true, force: true });
        await target.stop();
      },
    };
  },
};

describe('paused-publisher on a store that fails the batch before its pause', () => {
  it('fails fast with the batch error', { timeout: 60_000 }, async () => {
    const report = await runSuite({ fixture: refusing, cases: ['paused-publisher'] });
    const c = report.cases[0]!;
    expect(c.status).toBe('failed');
    // The staging run pauses and is refused as on the reference; the promoting run never pauses.
    expect(c.failures).toEqual([
      expect.stringMatching(
        /^unexpected error: promoting: the publisher's batch failed with .*disk full while staging promoting-n.* before it reached promoting, where it was to pause past its lease$/,
      ),
    ]);
    expect(c.durationMs).toBeLessThan(30_000);
  });
});
