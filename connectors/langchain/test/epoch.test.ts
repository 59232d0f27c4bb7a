import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryVectorStore } from '@langchain/classic/vectorstores/memory';
import { expectCode } from '@ragfresh/conformance/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { type EpochStore, fileEpochStore } from '../src/epoch.js';
import { LangChainConnector } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ragfresh-lc-epoch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('fileEpochStore', () => {
  it('starts at 0 and moves only from the expected epoch', async () => {
    const store = fileEpochStore(join(dir, 'a.json'));
    expect(await store.read()).toBe(0);
    expect(await store.compareAndSet(0, 1)).toBe(true);
    expect(await store.compareAndSet(0, 2)).toBe(false);
    expect(await store.read()).toBe(1);
    expect(await fileEpochStore(join(dir, 'a.json')).read()).toBe(1);
  });

  it('keeps the newest fence beside the epoch and refuses an older one', async () => {
    const path = join(dir, 'fence.json');
    // A file written before the fence: it reads as fence 0.
    writeFileSync(path, '{"format":"ragfresh-langchain-epoch/1","epoch":4}');
    const store = fileEpochStore(path);
    expect(await store.readFence()).toBe(0);
    expect(await store.raiseFence(2)).toBe(true);
    expect(await store.raiseFence(1)).toBe(false);
    expect(await store.compareAndSet(4, 5, 1)).toBe(false);
    expect(await store.read()).toBe(4);
    // Control: the held fence moves it, and the record keeps that fence.
    expect(await store.compareAndSet(4, 5, 2)).toBe(true);
    expect(await store.read()).toBe(5);
    expect(await store.readFence()).toBe(2);
    // Unfenced moves (an EpochStore caller that never heard of fences) still work.
    expect(await store.compareAndSet(5, 6)).toBe(true);
    expect(await store.readFence()).toBe(2);
  });

  it('names the space of the move that gave one, in the same write, and keeps it otherwise', async () => {
    const path = join(dir, 'space.json');
    // A file written before the record named its space: it names none.
    writeFileSync(path, '{"format":"ragfresh-langchain-epoch/1","epoch":2,"fence":1}');
    const store = fileEpochStore(path);
    expect(await store.readSpace()).toBeUndefined();
    // A refused move writes no space.
    expect(await store.compareAndSet(1, 3, undefined, 'es_refused')).toBe(false);
    expect(await store.readSpace()).toBeUndefined();
    expect(await store.compareAndSet(2, 3, 1, 'es_first')).toBe(true);
    expect(await fileEpochStore(path).readSpace()).toBe('es_first');
    // A move naming none, and a fence raise, keep it.
    expect(await store.compareAndSet(3, 4)).toBe(true);
    expect(await store.raiseFence(5)).toBe(true);
    expect(await fileEpochStore(path).readSpace()).toBe('es_first');
    expect(await store.compareAndSet(4, 5, 5, 'es_second')).toBe(true);
    expect(await fileEpochStore(path).readSpace()).toBe('es_second');
    expect(await store.read()).toBe(5);
    expect(await store.readFence()).toBe(5);
    writeFileSync(path, '{"format":"ragfresh-langchain-epoch/1","epoch":2,"space":7}');
    await expectCode(store.readSpace(), 'FOREIGN_DATA');
  });

  it('of 8 racing moves of the same epoch exactly one wins', async () => {
    const path = join(dir, 'race.json');
    const results = await Promise.all(
      [...Array(8).keys()].map(() => fileEpochStore(path).compareAndSet(0, 1)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it("takes over a lock left by a killed publisher, and refuses a file that is not ragfresh's", async () => {
    const path = join(dir, 'stale.json');
    // A pid that existed and is gone: a child that already exited.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    mkdirSync(`${path}.lock`);
    writeFileSync(`${path}.lock/owner`, dead.stdout.toString());
    expect(await fileEpochStore(path).compareAndSet(0, 1)).toBe(true);
    writeFileSync(join(dir, 'foreign.json'), '{"epoch": 3}');
    await expectCode(fileEpochStore(join(dir, 'foreign.json')).read(), 'FOREIGN_DATA');
  });
});

describe('LangChainConnector over an EpochStore', () => {
  const embeddings = {
    embedQuery: async () => [1, 0, 0, 0],
    embedDocuments: async (texts: string[]) => texts.map(() => [1, 0, 0, 0]),
  };
  /** An in-process EpochStore that records the arguments of every compareAndSet. */
  const recording = (withSpace: boolean) => {
    const calls: unknown[][] = [];
    let record = { epoch: 0, space: undefined as string | undefined };
    const store: EpochStore = {
      description: 'in-process test record',
      read: async () => record.epoch,
      compareAndSet: async (...args: [number, number, number?, string?]) => {
        calls.push(args);
        if (record.epoch !== args[0]) return false;
        record = { epoch: args[1], space: args[3] ?? record.space };
        return true;
      },
      ...(withSpace ? { readSpace: async () => record.space } : {}),
    };
    return { store, calls };
  };
  const open = async (epoch: EpochStore) => {
    const c = new LangChainConnector({
      store: new MemoryVectorStore(embeddings),
      filters: 'memory',
      epoch,
    });
    await c.open({ dimensions: 4 });
    return c;
  };

  it('with readSpace: declares epochSpace and hands the space to compareAndSet', async () => {
    const { store, calls } = recording(true);
    const c = await open(store);
    expect(c.capabilities.epochSpace).toBe(true);
    await c.advanceEpoch(0, 1, { space: 'es_a' });
    await c.advanceEpoch(1, 2);
    expect(calls).toEqual([
      [0, 1, undefined, 'es_a'],
      [1, 2],
    ]);
    expect(await c.readEpochSpace()).toBe('es_a');
    await c.close();
  });

  it('without it: no epochSpace, and compareAndSet never sees a space', async () => {
    const { store, calls } = recording(false);
    const c = await open(store);
    expect(c.capabilities.epochSpace).toBe(false);
    await c.advanceEpoch(0, 1, { space: 'es_a' });
    expect(calls).toEqual([[0, 1]]);
    expect(await c.readEpochSpace()).toBeUndefined();
    await c.close();
  });
});
