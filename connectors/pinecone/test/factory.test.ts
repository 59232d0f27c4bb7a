import { isRagfreshError } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { createConnector, createPineconeConnector } from '../src/index.js';

// Pinecone has no defaults to own: the namespace is required ('' is Pinecone's default one), so
// a config says which namespace it writes. Building a connector sends no request.
const context = { dataDir: '/tmp/ragfresh-data', baseDir: '/tmp/ragfresh-project' };
const given = { apiKey: 'k', host: 'http://127.0.0.1:5081', namespace: '' };

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
  it('passes the written options as they are', () => {
    expect(createConnector(given, context).options).toEqual(given);
  });

  it('apiKey and namespace are required; unknown keys and wrong types name connector.<key>', () => {
    expect(errorOf({ host: given.host, namespace: '' })).toBe(
      'config connector.apiKey: is missing; set it (pinecone needs it).',
    );
    expect(errorOf({ apiKey: 'k', host: given.host })).toBe(
      'config connector.namespace: is missing; set it (pinecone needs it).',
    );
    expect(errorOf({ ...given, index: 'docs' })).toBe(
      'config connector.index: is not a known pinecone option; did you mean connector.indexName?',
    );
    expect(errorOf({ ...given, region: 'eu' })).toBe(
      'config connector.region: is not a known pinecone option; remove it (known here: apiKey, indexName, host, namespace, controllerHostUrl, createIndex, hostAliases, maxLagMs, timeoutMs, retry, epochClaim, claimExpiryMs, spaceIndex).',
    );
    expect(errorOf({ ...given, indexName: 'docs' })).toBe(
      'config connector: give exactly one of indexName or host.',
    );
    expect(errorOf({ ...given, maxLagMs: '5s' })).toBe(
      'config connector.maxLagMs: expected an integer, got string "5s"; write a whole number.',
    );
  });

  it('the legacy createPineconeConnector(options) still works', () => {
    expect(createPineconeConnector(given).options.namespace).toBe('');
  });
});
