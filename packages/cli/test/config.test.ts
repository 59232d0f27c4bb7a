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
    return message.replace(/^\[ragfresh\] \[config\] /, '');
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
    expect(c.settings.deletion.goneChecks).toBe(3);
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

  it('a connector whose package is not installed', () => {
    expect(errorOf({ ...ok, connector: { store: 'mongodb' } })).toBe(
      'config connector.store: "mongodb" needs the package @ragfresh/connector-mongodb (or ragfresh-connector-mongodb), not found from /tmp; install it there (npm i @ragfresh/connector-mongodb).',
    );
  });

  it.each<[string, unknown, string]>([
    [
      'a typo',
      { ...ok, sources: [{ ...ok.sources[0], evry: '6h' }] },
      'config sources[0].evry: is not a known key; did you mean sources[0].every?',
    ],
    [
      'a range',
      { ...ok, embeddings: { kind: 'hashing', dimensions: -3 } },
      'config embeddings.dimensions: -3 is out of range; use a number >= 1.',
    ],
    [
      'a wrong type',
      { ...ok, deletion: { autoApprove: 'yes' } },
      'config deletion.autoApprove: expected a boolean, got string "yes"; write true or false.',
    ],
    [
      'the allow-list key',
      { ...ok, fetch: { allowList: ['127.0.0.1:8080'] } },
      'config fetch.allowList: is not a known key; did you mean fetch.allow?',
    ],
  ])('%s: one line', (_name, raw, line) => {
    expect(errorOf(raw)).toBe(line);
  });

  it('several problems: one line each', () => {
    try {
      resolveConfig({ ...ok, chunking: { maxTokens: 0 }, fetch: { robots: 'no' } }, '/tmp');
      throw new Error('expected a config error');
    } catch (err) {
      expect((err as Error).message.split('\n')).toEqual([
        '[ragfresh] [config] config fetch.robots: expected a boolean, got string "no"; write true or false.',
        'ragfresh: config chunking.maxTokens: 0 is out of range; use a number >= 16.',
      ]);
    }
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
