import { describe, expect, it, vi } from 'vitest';

describe('tokenizer ranks load lazily', () => {
  it('creating a counter or a pipeline key loads nothing; the first count does', async () => {
    // A fresh module graph: the unit project shares modules between the files of a worker
    // (isolate: false), and another file may already have loaded the ranks.
    vi.resetModules();
    const { pagePipelineKey, pipelineVersions, tiktokenCounter, tiktokenRanksLoaded } =
      await import('../src/index.js');
    expect(tiktokenRanksLoaded('cl100k_base')).toBe(false);
    const counter = tiktokenCounter('cl100k_base');
    expect(pagePipelineKey({ counter })).toContain('tiktoken:cl100k_base');
    expect(pipelineVersions().chunker).toContain('tiktoken:cl100k_base');
    expect(tiktokenRanksLoaded('cl100k_base')).toBe(false);
    expect(counter.count('')).toBe(0);
    expect(tiktokenRanksLoaded('cl100k_base')).toBe(false);
    expect(counter.count('hello world')).toBe(2);
    expect(tiktokenRanksLoaded('cl100k_base')).toBe(true);
  });
});
