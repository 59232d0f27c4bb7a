import { describe, expect, it } from 'vitest';
import { runExample } from '../src/main.js';

describe('examples/langchain-index', () => {
  it("index() with cleanup 'full' over a real Chroma server: a 503 deletes nothing and the prompt says STALE", async () => {
    const [cold, down, back] = await runExample(() => {});
    expect(cold!.numAdded).toBeGreaterThan(6);
    expect(cold!.answer).toMatch(/^Source: http:\/\/127\.0\.0\.1:\d+\/\S*/m);
    expect(cold!.answer).toMatch(/^Fetched: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/m);
    expect(cold!.answer).not.toMatch(/STALE/);
    // The page is down: every other page answers 304, nothing is written or deleted.
    expect(down).toMatchObject({
      numAdded: 0,
      numDeleted: 0,
      numSkipped: cold!.numAdded,
      notModified: 5,
    });
    expect(down!.answer).toMatch(/^STALE since \d{4}-/m);
    expect(back).toMatchObject({ numAdded: 0, numDeleted: 0, notModified: 6 });
    expect(back!.answer).not.toMatch(/STALE/);
  });
});
