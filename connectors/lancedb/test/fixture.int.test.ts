import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { StoreTarget } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from '../src/fixture.js';
import { DIMS, makeChunks } from './chunks.js';

const run = promisify(execFile);
let target: StoreTarget;

beforeAll(async () => {
  target = await fixture.start();
});

afterAll(async () => {
  await target?.stop();
});

/** A child process that builds the connector from its spec and tries to advance the epoch 0 -> 1. */
const CHILD = `
const [module, exportName, options, dims] = process.argv.slice(1);
const mod = await import(module);
const c = mod[exportName](JSON.parse(options));
await c.open({ dimensions: Number(dims) });
try { await c.advanceEpoch(0, 1); console.log('advanced'); }
catch (e) { console.log(e.code ?? e.message); }
await c.close();
`;

describe('lancedb fixture', () => {
  it('is embedded and hands out isolated connectors', async () => {
    expect(fixture.store).toBe('lancedb');
    expect(target.kind).toBe('embedded');
    const a = await target.createConnector('case one');
    const b = await target.createConnector('case/two');
    await a.open({ dimensions: DIMS });
    await b.open({ dimensions: DIMS });
    await a.upsert(makeChunks({ documentId: 'a:doc', versionId: 'v1', count: 2, from: 1 }));
    expect(await a.countChunks('a:doc', 'v1')).toBe(2);
    expect(await b.countChunks('a:doc', 'v1')).toBe(0);
    await a.close();
    await b.close();
  });

  it('lets exactly one of several child processes advance the epoch (built JavaScript)', async () => {
    const spec = target.connectorSpec('cross process');
    expect(spec.exportName).toBe('createLanceDbConnector');
    expect(existsSync(fileURLToPath(spec.module))).toBe(true);
    const args = [
      '--input-type=module',
      '-e',
      CHILD,
      spec.module,
      spec.exportName,
      JSON.stringify(spec.options),
      String(DIMS),
    ];
    const outputs = await Promise.all(
      Array.from({ length: 4 }, () => run(process.execPath, args).then((r) => r.stdout.trim())),
    );
    expect(outputs.filter((o) => o === 'advanced')).toHaveLength(1);
    expect(outputs.filter((o) => o === 'EPOCH_CONFLICT')).toHaveLength(3);
    const c = await target.createConnector('cross process');
    await c.open({ dimensions: DIMS });
    expect(await c.readEpoch()).toBe(1);
    await c.close();
  });
});
