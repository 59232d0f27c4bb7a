import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRagfreshError } from '@ragfresh/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createConnector } from '../src/index.js';

describe('createConnector(options, { dataDir, baseDir })', () => {
  const root = mkdtempSync(join(tmpdir(), 'ragfresh-libsql-factory-'));
  const context = { dataDir: join(root, 'data'), baseDir: join(root, 'project') };
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('no options: table ragfresh in <dataDir>/libsql.db', async () => {
    mkdirSync(context.dataDir); // the CLI creates dataDir before it builds the connector
    const c = createConnector({}, context);
    expect(c.tableName).toBe('ragfresh');
    await c.open({ dimensions: 4 });
    await c.close();
    expect(existsSync(join(context.dataDir, 'libsql.db'))).toBe(true);
  });

  it('an unknown key or a wrong type: one line naming connector.<key>', () => {
    const errorOf = (options: Record<string, unknown>): string => {
      try {
        createConnector(options, context);
      } catch (err) {
        expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
        return (err as Error).message.replace(/^\[ragfresh\] \[config\] /, '');
      }
      throw new Error('expected INVALID_CONFIG');
    };
    expect(errorOf({ uri: 'file:x.db' })).toBe(
      'config connector.uri: is not a known libsql option; did you mean connector.url?',
    );
    expect(errorOf({ vectorIndex: 'yes' })).toBe(
      'config connector.vectorIndex: expected a boolean, got string "yes"; write true or false.',
    );
  });
});
