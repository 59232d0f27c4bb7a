import { describe, expect, it } from 'vitest';
import {
  pagePipelineKey,
  pipelineVersions,
  tiktokenCounter,
  tiktokenRanksLoaded,
} from '../src/index.js';

describe('tokenizer ranks load lazily', () => {
  it('creating a counter or a pipeline key loads nothing; the first count does', () => {
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
