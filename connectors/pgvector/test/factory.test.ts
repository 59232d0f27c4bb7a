import { isRagfreshError } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { createConnector, createPgVectorConnector } from '../src/index.js';

// The registry factory owns pgvector's defaults; building a connector opens no connection.
const context = { dataDir: '/tmp/ragfresh-data', baseDir: '/tmp/ragfresh-project' };
const connectionString = 'postgres://postgres@127.0.0.1:5432/test';

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
  it('table defaults to ragfresh_chunks in schema public; written options win', () => {
    const c = createConnector({ connectionString }, context);
    expect(c.tableName).toBe('public.ragfresh_chunks');
    expect(c.epochTableName).toBe('public.ragfresh_chunks_rf_epoch');
    expect(
      createConnector({ connectionString, table: 'docs', schema: 'rag' }, context).tableName,
    ).toBe('rag.docs');
  });

  it('connectionString is required; unknown keys and wrong types name connector.<key>', () => {
    expect(errorOf({})).toBe(
      'config connector.connectionString: is missing; set it (pgvector needs it).',
    );
    expect(errorOf({ connectionString, tabel: 'x' })).toBe(
      'config connector.tabel: is not a known pgvector option; did you mean connector.table?',
    );
    expect(errorOf({ connectionString, maxConnections: 0 })).toBe(
      'config connector.maxConnections: maxConnections must be a positive integer, got 0.',
    );
    expect(errorOf({ connectionString, maxConnections: '4' })).toBe(
      'config connector.maxConnections: expected an integer, got string "4"; write a whole number.',
    );
  });

  it('the legacy createPgVectorConnector(options) still works', () => {
    expect(createPgVectorConnector({ connectionString, table: 'legacy' }).tableName).toBe(
      'public.legacy',
    );
  });
});
