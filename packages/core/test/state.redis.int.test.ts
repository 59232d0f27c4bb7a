import { createClient } from '@keyv/redis';
import { describe, expect, it } from 'vitest';
import { openStateStore, PUBLISHER_LEASE } from '../src/index.js';
import { describeStateStore, doc, journal, randomNamespace } from './state.suite.js';

// The machine's real Redis. A missing server fails every case with STORE_UNREACHABLE: never skipped.
const REDIS_URL = process.env.RAGFRESH_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describeStateStore('redis', (namespace) => openStateStore(REDIS_URL, { namespace }));

describe('a single node keeps the layout earlier versions wrote', () => {
  it('opens a state written with untagged `<namespace>:` keys and reads the same records', async () => {
    const namespace = randomNamespace();
    const raw = createClient({ url: REDIS_URL });
    await raw.connect();
    try {
      // What the previous version stored: one key per record under `<namespace>:`.
      const record = doc('d1', 's1');
      await raw.set(`${namespace}:doc:d1`, JSON.stringify(record));
      await raw.set(`${namespace}:docsrc:s1:d1`, JSON.stringify('d1'));
      await raw.set(`${namespace}:journal`, JSON.stringify(journal(3)));
      await raw.set(
        `${namespace}:lease:${PUBLISHER_LEASE}`,
        JSON.stringify({ name: PUBLISHER_LEASE, holder: 'old', fence: 3, expiresAt: 0 }),
      );
      const state = await openStateStore(REDIS_URL, { namespace });
      try {
        expect(state.keys.root).toBe(namespace);
        expect(await state.getDocument('d1')).toEqual(record);
        const listed = [];
        for await (const r of state.listDocuments({ sourceId: 's1' })) listed.push(r);
        expect(listed).toEqual([record]);
        expect(await state.getJournal()).toEqual(journal(3));
        // The stored fence carries on: the next grant is above it.
        expect((await state.acquireLease(PUBLISHER_LEASE, 'new', 10_000))?.fence).toBe(4);
        // New writes go to the same layout, and nothing under a {hash tag}.
        await state.putDocument(doc('d2', 's1'));
        expect(await raw.exists(`${namespace}:doc:d2`)).toBe(1);
        expect(await raw.keys(`{${namespace}}*`)).toEqual([]);
      } finally {
        await state.close();
      }
    } finally {
      const keys = await raw.keys(`${namespace}:*`);
      if (keys.length > 0) await raw.del(keys);
      await raw.close();
    }
  });
});
