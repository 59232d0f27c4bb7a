import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryVectorStore } from '@langchain/classic/vectorstores/memory';
import { isRagfreshError } from '@ragfresh/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createConnector } from '../src/index.js';

// `store` names the package in a ragfresh config, so the factory takes the VectorStore as
// `vectorStore`; the epoch file defaults to <dataDir>/langchain.epoch.json.
describe('createConnector(options, { dataDir, baseDir })', () => {
  const root = mkdtempSync(join(tmpdir(), 'ragfresh-langchain-factory-'));
  const context = { dataDir: join(root, 'data'), baseDir: join(root, 'project') };
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const embeddings = {
    embedQuery: async () => [1, 0, 0, 0],
    embedDocuments: async (texts: string[]) => texts.map(() => [1, 0, 0, 0]),
  };
  const vectorStore = () => new MemoryVectorStore(embeddings);

  it('the epoch lives in <dataDir>/langchain.epoch.json by default', async () => {
    const c = createConnector({ vectorStore, filters: 'memory' }, context);
    await c.open({ dimensions: 4 });
    await c.advanceEpoch(0, 1);
    await c.close();
    expect(c.epochStore.description).toContain(join(context.dataDir, 'langchain.epoch.json'));
    expect(readFileSync(join(context.dataDir, 'langchain.epoch.json'), 'utf8')).toContain('1');
  });

  it('a relative epoch path is relative to the config folder', () => {
    const c = createConnector({ vectorStore, filters: 'memory', epoch: 'e.json' }, context);
    expect(c.epochStore.description).toContain(join(context.baseDir, 'e.json'));
  });

  it('vectorStore and filters are required; unknown keys name connector.<key>', () => {
    const errorOf = (options: Record<string, unknown>): string => {
      try {
        createConnector(options, context);
      } catch (err) {
        expect(isRagfreshError(err, 'INVALID_CONFIG')).toBe(true);
        return (err as Error).message.replace(/^\[ragfresh\] \[config\] /, '');
      }
      throw new Error('expected INVALID_CONFIG');
    };
    expect(errorOf({ filters: 'memory' })).toBe(
      'config connector.vectorStore: is missing; set it (langchain needs it).',
    );
    expect(errorOf({ vectorStore, filters: 'memory', listlimit: 5 })).toBe(
      'config connector.listlimit: is not a known langchain option; did you mean connector.listLimit?',
    );
  });
});
