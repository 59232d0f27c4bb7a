import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRagfreshError } from '@ragfresh/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createConnector, createMemoryConnector } from '../src/index.js';

describe('createConnector(options, { dataDir, baseDir })', () => {
  const root = mkdtempSync(join(tmpdir(), 'ragfresh-memory-factory-'));
  const context = { dataDir: join(root, 'data'), baseDir: join(root, 'project') };
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('no options: an in-process index that writes no file', async () => {
    const c = createConnector({}, context);
    await c.open({ dimensions: 4 });
    await c.advanceEpoch(0, 1);
    expect(await c.readEpoch()).toBe(1);
    await c.close();
    expect(existsSync(context.dataDir)).toBe(false);
    expect(existsSync(context.baseDir)).toBe(false);
  });

  it('a relative persistPath is relative to the config folder', async () => {
    const c = createConnector({ persistPath: 'index/memory.json' }, context);
    await c.open({ dimensions: 4 });
    await c.advanceEpoch(0, 1);
    await c.close();
    expect(readdirSync(join(context.baseDir, 'index'))).toContain('memory.json');
    const again = createMemoryConnector({
      persistPath: join(context.baseDir, 'index/memory.json'),
    });
    await again.open({ dimensions: 4 });
    expect(await again.readEpoch()).toBe(1);
    await again.close();
  });

  it('an unknown key: one line naming connector.<key>', () => {
    try {
      createConnector({ persist: 'x.json' }, context);
      throw new Error('expected INVALID_CONFIG');
    } catch (err) {
      expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
      expect((err as Error).message).toBe(
        '[ragfresh] [config] config connector.persist: is not a known memory option; did you mean connector.persistPath?',
      );
    }
  });
});
