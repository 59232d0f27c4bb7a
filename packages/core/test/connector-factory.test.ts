import { describe, expect, it } from 'vitest';
import {
  buildConnector,
  checkConnectorOptions,
  isRagfreshError,
  RagfreshError,
  resolveOptionPath,
} from '../src/index.js';

// The option checks every connector's createConnector(options, context) runs: one line naming
// `connector.<key>`, never a second line, always INVALID_CONFIG.
interface Options {
  url: string;
  collection?: string;
  maxWriteBatch?: number;
  ratio?: number;
  headers?: Record<string, string>;
  verbose?: boolean;
}
const spec = {
  url: 'string!',
  collection: 'string',
  maxWriteBatch: 'integer',
  ratio: 'number',
  headers: 'object',
  verbose: 'boolean',
} as const;

function lineOf(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
    const message = (err as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    return message.replace(/^\[ragfresh\] \[config\] /, '');
  }
  throw new Error('expected INVALID_CONFIG');
}
const check = (options: Record<string, unknown>) => () =>
  checkConnectorOptions<Options>('acme', options, spec);

describe('checkConnectorOptions', () => {
  it('returns the options when they fit', () => {
    const options = { url: 'http://x', maxWriteBatch: 5, ratio: 0.5, headers: {}, verbose: true };
    expect(checkConnectorOptions<Options>('acme', options, spec)).toBe(options);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a typo',
      { url: 'u', colection: 'x' },
      'config connector.colection: is not a known acme option; did you mean connector.collection?',
    ],
    [
      'a prefix of a known key',
      { url: 'u', maxWrite: 5 },
      'config connector.maxWrite: is not a known acme option; did you mean connector.maxWriteBatch?',
    ],
    [
      'nothing near',
      { url: 'u', region: 'eu' },
      'config connector.region: is not a known acme option; remove it (known here: url, collection, maxWriteBatch, ratio, headers, verbose).',
    ],
    ['a missing required key', {}, 'config connector.url: is missing; set it (acme needs it).'],
    [
      'a fraction for an integer',
      { url: 'u', maxWriteBatch: 2.5 },
      'config connector.maxWriteBatch: expected an integer, got number 2.5; write a whole number.',
    ],
    [
      'a string for a number',
      { url: 'u', ratio: '0.5' },
      'config connector.ratio: expected a number, got string "0.5"; write a number.',
    ],
    [
      'a list for an object',
      { url: 'u', headers: ['a'] },
      'config connector.headers: expected an object, got a list; write { … }.',
    ],
    [
      'null for a boolean',
      { url: 'u', verbose: null },
      'config connector.verbose: expected a boolean, got null; write true or false.',
    ],
  ])('%s: one line', (_name, options, line) => {
    expect(lineOf(check(options))).toBe(line);
  });
});

describe('buildConnector', () => {
  const fail = (message: string) => () => {
    throw new RagfreshError('INVALID_CONFIG', message, { scope: 'acme' });
  };

  it("words a constructor's check after the option it starts with, or the connector", () => {
    expect(
      lineOf(() => buildConnector('acme', ['collection'], fail('collection "a" is bad.'))),
    ).toBe('config connector.collection: collection "a" is bad.');
    expect(
      lineOf(() => buildConnector('acme', ['url', 'host'], fail('give one of url or host.'))),
    ).toBe('config connector: give one of url or host.');
  });

  it('passes other errors and the value through', () => {
    const other = new RagfreshError('STORE_UNREACHABLE', 'down');
    expect(() =>
      buildConnector('acme', [], () => {
        throw other;
      }),
    ).toThrow(other);
    expect(buildConnector('acme', [], () => 42)).toBe(42);
  });
});

describe('resolveOptionPath', () => {
  it('a relative path is relative to the config folder; an absolute one stays', () => {
    const context = { dataDir: '/d', baseDir: '/project' };
    expect(resolveOptionPath(context, 'index/a.json')).toBe('/project/index/a.json');
    expect(resolveOptionPath(context, '/abs/a.json')).toBe('/abs/a.json');
  });
});
