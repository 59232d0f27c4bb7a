import { isRagfreshError } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { parseDuration, resolveConfig } from '../src/index.js';

const ok = {
  userAgent: 'bot/1.0 (+https://example.org/bot)',
  sources: [{ id: 'docs', urls: ['https://docs.example.org/a'] }],
};

function errorOf(raw: unknown): string {
  try {
    resolveConfig(raw, '/tmp');
  } catch (err) {
    expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
    const message = (err as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    return message;
  }
  throw new Error('expected a config error');
}

describe('config validation: one line naming the field and the fix', () => {
  it('accepts a minimal config and fills defaults', () => {
    const c = resolveConfig(ok, '/tmp/x');
    expect(c.connector.store).toBe('lancedb');
    expect(c.state).toBe('sqlite:/tmp/x/.ragfresh/state.sqlite');
    expect(c.sources[0]?.everyMs).toBe(86_400_000);
    expect(c.sources[0]?.freshnessObjectiveMs).toBe(2 * 86_400_000);
    expect(c.goneChecks).toBe(3);
  });

  it('a missing field', () => {
    expect(errorOf({ sources: ok.sources })).toMatch(/config userAgent: is missing; set userAgent/);
    expect(errorOf({ userAgent: ok.userAgent })).toMatch(/config sources: is missing or empty/);
    expect(errorOf({ ...ok, sources: [{ urls: ['https://e.org/'] }] })).toMatch(
      /config sources\[0\]\.id: is missing/,
    );
  });

  it('a bad URL', () => {
    expect(errorOf({ ...ok, sources: [{ id: 'docs', urls: ['ftp://e.org/x'] }] })).toMatch(
      /config sources\[0\]\.urls\[0\]: unsupported scheme ftp:.*; fix the URL\./,
    );
    expect(errorOf({ ...ok, sources: [{ id: 'docs', urls: ['https://u:p@e.org/x'] }] })).toMatch(
      /sources\[0\]\.urls\[0\]: URL carries credentials/,
    );
  });

  it('an unknown connector', () => {
    expect(errorOf({ ...ok, connector: { store: 'mongodb' } })).toMatch(
      /config connector\.store: "mongodb" is not a known connector; use one of lancedb, memory, chroma, pgvector, qdrant, pinecone\./,
    );
  });

  it('a non-numeric interval', () => {
    expect(
      errorOf({ ...ok, sources: [{ id: 'docs', urls: ['https://e.org/'], every: 'often' }] }),
    ).toMatch(/config sources\[0\]\.every: "often" is not a duration; use milliseconds/);
  });

  it('a user agent without a contact URL', () => {
    expect(errorOf({ ...ok, userAgent: 'bot/1.0' })).toMatch(/names no contact URL/);
  });

  it('parses durations', () => {
    expect(parseDuration('6h')).toBe(21_600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration(250)).toBe(250);
    expect(parseDuration('soon')).toBeUndefined();
    expect(parseDuration('5x')).toBeUndefined();
  });
});
