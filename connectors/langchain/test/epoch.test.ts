import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectCode } from '@ragfresh/conformance/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { fileEpochStore } from '../src/epoch.js';

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
