import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { afterAll, describe, expect, it } from 'vitest';
import { createConnector, epochFilePath, type LanceDbConnector } from '../src/index.js';
import { probeEpoch } from '../src/probe.js';

// The light epoch probe answers what `readEpoch()` of an opened connector reads, or undefined;
// each case below checks the probe against the full read of the same files.
describe('probeEpoch (@ragfresh/connector-lancedb/probe)', () => {
  const root = mkdtempSync(join(tmpdir(), 'ragfresh-lance-probe-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const store = () => {
    const dataDir = join(root, `s${n++}`);
    return { context: { dataDir, baseDir: dataDir }, path: join(dataDir, 'lancedb') };
  };
  const opened = async (s: ReturnType<typeof store>, options: Record<string, unknown> = {}) => {
    const c = createConnector(options, s.context) as LanceDbConnector;
    await c.open({ dimensions: 4 });
    return c;
  };
  const fullRead = async (s: ReturnType<typeof store>, options: Record<string, unknown> = {}) => {
    const c = await opened(s, options);
    try {
      return await c.readEpoch();
    } finally {
      await c.close();
    }
  };

  it('follows every move, fence raise and compaction: the epoch the full read reads', async () => {
    const s = store();
    expect(probeEpoch({}, s.context)).toBe(0); // no folder: what opening would create
    const c = await opened(s);
    await c.raiseFence(1);
    expect(probeEpoch({}, s.context)).toBe(0);
    for (let e = 1; e <= 3; e++) {
      await c.advanceEpoch(e - 1, e, { fence: 1 });
      expect(probeEpoch({}, s.context)).toBe(e);
    }
    await c.raiseFence(2);
    expect(probeEpoch({}, s.context)).toBe(3);
    // Cleanup removes every older version, the one the file named too: it is written again.
    await c.compact();
    expect(probeEpoch({}, s.context)).toBe(3);
    await c.maintain();
    expect(probeEpoch({}, s.context)).toBe(3);
    await c.close();
    expect(await fullRead(s)).toBe(3);
  });

  it('a commit after the file (here a Lance restore to an older version): undefined, and the full read sees the older epoch', async () => {
    const s = store();
    const c = await opened(s);
    await c.raiseFence(1);
    await c.advanceEpoch(0, 1, { fence: 1 });
    const atOne = JSON.parse(readFileSync(epochFilePath(s.path, 'ragfresh'), 'utf8')).version;
    await c.advanceEpoch(1, 2, { fence: 1 });
    expect(probeEpoch({}, s.context)).toBe(2);
    await c.close();
    const db = await lancedb.connect(s.path);
    const table = await db.openTable('ragfresh__rf_epoch');
    await table.checkout(atOne);
    await table.restore();
    table.close();
    db.close();
    expect(probeEpoch({}, s.context)).toBeUndefined();
    expect(await fullRead(s)).toBe(1);
  });

  it('a file whose hash is not the manifest of its version (a table recreated to the same version): undefined', async () => {
    const s = store();
    const c = await opened(s);
    await c.raiseFence(1);
    await c.advanceEpoch(0, 1, { fence: 1 });
    await c.close();
    const file = epochFilePath(s.path, 'ragfresh');
    const record = JSON.parse(readFileSync(file, 'utf8'));
    expect(probeEpoch({}, s.context)).toBe(1); // control
    writeFileSync(file, JSON.stringify({ ...record, epoch: 7, sha256: '0'.repeat(64) }));
    expect(probeEpoch({}, s.context)).toBeUndefined();
    writeFileSync(file, 'not json');
    expect(probeEpoch({}, s.context)).toBeUndefined();
    rmSync(file);
    expect(probeEpoch({}, s.context)).toBeUndefined();
    expect(await fullRead(s)).toBe(1);
  });

  it('folders: no epoch table is 0 (as the full read), no chunk table is undefined', async () => {
    const s = store();
    const c = await opened(s);
    await c.raiseFence(1);
    await c.advanceEpoch(0, 1, { fence: 1 });
    await c.close();
    rmSync(join(s.path, 'ragfresh.lance'), { recursive: true });
    expect(probeEpoch({}, s.context)).toBeUndefined();
    rmSync(join(s.path, 'ragfresh__rf_epoch.lance'), { recursive: true });
    expect(probeEpoch({}, s.context)).toBe(0);
    expect(await fullRead(s)).toBe(0);
  });

  it('options as the factory reads them: path, table, the namespace; refused options are undefined', async () => {
    const s = store();
    const options = { path: 'elsewhere', table: 'docs' };
    const c = await opened(s, options);
    const moved = c.forNamespace('s2');
    await moved.open({ dimensions: 8 });
    await moved.raiseFence(1);
    await moved.advanceEpoch(0, 4, { fence: 1 });
    await moved.close();
    await c.close();
    expect(probeEpoch(options, { ...s.context, namespace: 's2' })).toBe(4);
    // The base table's epoch table has no file yet (nothing moved it): the full read decides.
    expect(probeEpoch(options, s.context)).toBeUndefined();
    expect(probeEpoch({ ...options, tabel: 'x' }, s.context)).toBeUndefined();
    expect(probeEpoch({ ...options, table: 'bad name' }, s.context)).toBeUndefined();
    expect(probeEpoch({ ...options, path: '' }, s.context)).toBeUndefined();
    expect(probeEpoch(options, { ...s.context, namespace: 'Bad' })).toBeUndefined();
  });
});
