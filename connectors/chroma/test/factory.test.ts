import { isRagfreshError } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { createChromaConnector, createConnector } from '../src/index.js';

// The registry factory owns Chroma's defaults; building a connector does not contact the server.
const context = { dataDir: '/tmp/ragfresh-data', baseDir: '/tmp/ragfresh-project' };
const url = 'http://127.0.0.1:8000';

function errorOf(options: Record<string, unknown>): string {
  try {
    createConnector(options, context);
  } catch (err) {
    expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
    return (err as Error).message.replace(/^\[ragfresh\] \[config\] /, '');
  }
  throw new Error('expected INVALID_CONFIG');
}

describe('createConnector(options, { dataDir, baseDir })', () => {
  it('collection defaults to ragfresh; a written one wins', () => {
    expect(createConnector({ url }, context).collectionName).toBe('ragfresh');
    expect(createConnector({ url, collection: 'docs' }, context).collectionName).toBe('docs');
  });

  it('url is required; unknown keys and wrong types name connector.<key>', () => {
    expect(errorOf({})).toBe('config connector.url: is missing; set it (chroma needs it).');
    expect(errorOf({ url, colection: 'docs' })).toBe(
      'config connector.colection: is not a known chroma option; did you mean connector.collection?',
    );
    expect(errorOf({ url, headers: 'x' })).toBe(
      'config connector.headers: expected an object, got string "x"; write { … }.',
    );
  });

  it('the legacy createChromaConnector(options) still works', () => {
    expect(createChromaConnector({ url, collection: 'legacy' }).collectionName).toBe('legacy');
  });
});
