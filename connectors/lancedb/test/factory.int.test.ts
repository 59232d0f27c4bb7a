import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRagfreshError } from '@ragfresh/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createConnector, createLanceDbConnector } from '../src/index.js';

// The registry factory owns LanceDB's defaults: the CLI passes the options as written.
describe('createConnector(options, { dataDir, baseDir })', () => {
  const root = mkdtempSync(join(tmpdir(), 'ragfresh-lance-factory-'));
  const context = { dataDir: join(root, 'data'), baseDir: join(root, 'project') };
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const errorOf = (options: Record<string, unknown>): string => {
    try {
      createConnector(options, context);
    } catch (err) {
      expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
      expect((err as Error).message.split('\n')).toHaveLength(1);
      return (err as Error).message;
    }
    throw new Error('expected INVALID_CONFIG');
  };

  it('no options: table ragfresh, files under <dataDir>/lancedb', async () => {
    const c = createConnector({}, context);
    expect(c.tableName).toBe('ragfresh');
    await c.open({ dimensions: 4 });
    await c.close();
    expect(existsSync(join(context.dataDir, 'lancedb', 'ragfresh.lance'))).toBe(true);
    expect(existsSync(join(context.dataDir, 'lancedb', 'ragfresh__rf_epoch.lance'))).toBe(true);
  });

  it('written options win; a relative path is relative to the config folder', async () => {
    const c = createConnector({ path: 'lance', table: 'docs' }, context);
    expect(c.tableName).toBe('docs');
    await c.open({ dimensions: 4 });
    await c.close();
    expect(existsSync(join(context.baseDir, 'lance', 'docs.lance'))).toBe(true);
  });

  it('an unknown key or a wrong type: one line naming connector.<key>', () => {
    expect(errorOf({ tabel: 'x' })).toBe(
      '[ragfresh] [config] config connector.tabel: is not a known lancedb option; did you mean connector.table?',
    );
    expect(errorOf({ table: 3 })).toBe(
      '[ragfresh] [config] config connector.table: expected a string, got number 3; quote it.',
    );
    // The constructor's own checks are worded the same way.
    expect(errorOf({ table: 'bad name' })).toBe(
      `[ragfresh] [config] config connector.table: table name "bad name" is invalid; use 1-200 letters, digits, '_', '-' or '.'.`,
    );
    expect(errorOf({ compactAtFragments: -1 })).toBe(
      '[ragfresh] [config] config connector.compactAtFragments: compactAtFragments must be a non-negative integer, got -1.',
    );
    expect(errorOf({ compactAtFragments: 1.5 })).toMatch(
      /config connector\.compactAtFragments: expected an integer, got number 1\.5/,
    );
  });

  it('the legacy createLanceDbConnector(options) still takes full options, no defaults', () => {
    expect(createLanceDbConnector({ path: join(root, 'x'), table: 't' }).tableName).toBe('t');
  });
});
