import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { StoreTarget } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from '../src/fixture.js';
import { DIMS, makeChunks } from './chunks.js';

let target: StoreTarget;

beforeAll(async () => {
  target = await fixture.start();
});

afterAll(async () => {
  await target?.stop();
});

describe('chroma fixture', () => {
  it('starts a local server it owns and hands out isolated connectors', async () => {
    expect(fixture.store).toBe('chroma');
    expect(target.kind).toBe('local-server');
    expect(target.description).toMatch(/^Chroma .* started by the fixture/);
    const a = await target.createConnector('case one');
    const b = await target.createConnector('case/two');
    await a.open({ dimensions: DIMS });
    await b.open({ dimensions: DIMS });
    await a.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 2, from: 1 }));
    expect(await a.countChunks('a:doc', 'v1')).toBe(2);
    expect(await b.countChunks('a:doc', 'v1')).toBe(0);
  });

  it('describes the same connector for a child process, from built JavaScript', async () => {
    const spec = target.connectorSpec('case one');
    expect(spec.exportName).toBe('createChromaConnector');
    expect(spec.module).toMatch(/^file:\/\/.*\/connectors\/chroma\/dist\/index\.js$/);
    expect(JSON.parse(JSON.stringify(spec.options))).toEqual(spec.options);
    expect(existsSync(fileURLToPath(spec.module))).toBe(true);
    const mod = (await import(spec.module)) as Record<
      string,
      (o: unknown) => {
        open(o: { dimensions: number }): Promise<void>;
        countChunks(d: string, v: string): Promise<number>;
      }
    >;
    const child = mod[spec.exportName]!(spec.options);
    await child.open({ dimensions: DIMS });
    expect(await child.countChunks('a:doc', 'v1')).toBe(2);
  });

  it('stops the server it started', async () => {
    const t = await fixture.start();
    const url = JSON.stringify(t.connectorSpec('x').options.url);
    const base = JSON.parse(url) as string;
    expect((await fetch(`${base}/api/v2/heartbeat`)).ok).toBe(true);
    await t.stop();
    await expect(fetch(`${base}/api/v2/heartbeat`)).rejects.toThrow();
  });
});
