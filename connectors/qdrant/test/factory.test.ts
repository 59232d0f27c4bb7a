import { isRagfreshError } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { createConnector, createQdrantConnector } from '../src/index.js';

// The registry factory owns Qdrant's defaults; building a connector sends no request.
const context = { dataDir: '/tmp/ragfresh-data', baseDir: '/tmp/ragfresh-project' };
const url = 'http://127.0.0.1:6333';

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
    expect(createConnector({ url }, context).collection).toBe('ragfresh');
    expect(createConnector({ url, collection: 'docs' }, context).collection).toBe('docs');
  });

  it('url is required; unknown keys and wrong types name connector.<key>', () => {
    expect(errorOf({})).toBe('config connector.url: is missing; set it (qdrant needs it).');
    expect(errorOf({ url, apikey: 'k' })).toBe(
      'config connector.apikey: is not a known qdrant option; did you mean connector.apiKey?',
    );
    expect(errorOf({ url, retry: 3 })).toBe(
      'config connector.retry: expected an object, got number 3; write { … }.',
    );
  });

  it('the legacy createQdrantConnector(options) still works', () => {
    expect(createQdrantConnector({ url, collection: 'legacy' }).collection).toBe('legacy');
  });
});
