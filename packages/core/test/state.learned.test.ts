import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InMemoryStateStore, openStateStore, type StateStore } from '../src/index.js';
import { doc } from './state.suite.js';

const dir = mkdtempSync(join(tmpdir(), 'ragfresh-learned-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const stores: [string, () => Promise<StateStore>][] = [
  ['in-memory', async () => new InMemoryStateStore()],
  ['sqlite', () => openStateStore(`sqlite:${join(dir, 'learned.sqlite')}`, { namespace: 'l' })],
];

describe.each(stores)('learned values (%s)', (_name, open) => {
  it('round-trips one JSON value per (kind, id), replaces it, deletes it with undefined, and stays out of the document listing', async () => {
    const store = await open();
    try {
      expect(await store.getLearned!('boilerplate-host', 'docs 127.0.0.1:1')).toBeUndefined();
      await store.putLearned!('boilerplate-host', 'docs 127.0.0.1:1', { blocks: ['a', 'b'] });
      await store.putLearned!('boilerplate-doc', 'docs 127.0.0.1:1', { other: true });
      await store.putDocument(doc('d1', 'docs'));
      expect(await store.getLearned!('boilerplate-host', 'docs 127.0.0.1:1')).toEqual({
        blocks: ['a', 'b'],
      });
      await store.putLearned!('boilerplate-host', 'docs 127.0.0.1:1', { blocks: ['c'] });
      expect(await store.getLearned!('boilerplate-host', 'docs 127.0.0.1:1')).toEqual({
        blocks: ['c'],
      });
      expect(await store.getLearned!('boilerplate-doc', 'docs 127.0.0.1:1')).toEqual({
        other: true,
      });
      const listed: string[] = [];
      for await (const r of store.listDocuments()) listed.push(r.documentId);
      expect(listed).toEqual(['d1']);
      await store.putLearned!('boilerplate-host', 'docs 127.0.0.1:1', undefined);
      expect(await store.getLearned!('boilerplate-host', 'docs 127.0.0.1:1')).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
