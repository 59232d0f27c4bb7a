import { FIELDS, type QueryHit, type StoreTarget } from '@ragfresh/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, tableForNamespace } from '../src/fixture.js';
import type { PgVectorConnector } from '../src/index.js';
import { DIMS, makeVersion, namespace, vectorFor } from './chunks.js';

/**
 * Promotion under concurrent readers. Each reader is its own connector (its own connection),
 * reading while a writer promotes; every observation must show exactly one whole version.
 */

let target: StoreTarget;
let url: string;
const open: PgVectorConnector[] = [];

async function connector(ns: string): Promise<PgVectorConnector> {
  const c = (await target.createConnector(ns)) as PgVectorConnector;
  open.push(c);
  await c.open({ dimensions: DIMS });
  return c;
}

interface Tally {
  observations: number;
  both: number;
  neither: number;
  partial: number;
  seen: Set<string>;
}

function classify(
  hits: readonly QueryHit[],
  sizes: ReadonlyMap<string, number>,
  tally: Tally,
): void {
  tally.observations += 1;
  const versions = new Set(hits.map((h) => String(h.metadata[FIELDS.versionId])));
  if (versions.size === 0) tally.neither += 1;
  else if (versions.size > 1) tally.both += 1;
  else {
    const [v] = versions;
    tally.seen.add(v!);
    if (hits.length !== sizes.get(v!)) tally.partial += 1;
  }
}

function newTally(): Tally {
  return { observations: 0, both: 0, neither: 0, partial: 0, seen: new Set() };
}

async function readUntil(
  done: () => boolean,
  read: () => Promise<readonly QueryHit[]>,
  sizes: Map<string, number>,
  tally: Tally = newTally(),
): Promise<Tally> {
  while (!done()) classify(await read(), sizes, tally);
  classify(await read(), sizes, tally);
  return tally;
}

function sum(tallies: readonly Tally[]): Tally {
  const out = newTally();
  for (const t of tallies) {
    out.observations += t.observations;
    out.both += t.both;
    out.neither += t.neither;
    out.partial += t.partial;
    for (const v of t.seen) out.seen.add(v);
  }
  return out;
}

beforeAll(async () => {
  target = await fixture.start();
  url = String(target.connectorSpec('probe').options.connectionString);
});

afterAll(async () => {
  for (const c of open) await c.close();
  await target?.stop();
});

describe('flagPromotion atomic: one patchValidityMany call flips a whole document in one statement', () => {
  it('flag readers on other connections never see both versions nor neither', async () => {
    const ns = namespace('flag');
    const writer = await connector(ns);
    const readers = await Promise.all([connector(ns), connector(ns), connector(ns)]);
    const sizes = new Map([
      ['v1', 120],
      ['v2', 80],
    ]);
    await writer.upsert(makeVersion('s:d', 'v1', 120, { current: true }));
    await writer.upsert(makeVersion('s:d', 'v2', 80, { current: false, seed: 5 }));
    let finished = false;
    const reading = readers.map((r) =>
      readUntil(
        () => finished,
        () => r.query(vectorFor(3), 500, { view: { kind: 'flag' }, documentId: 's:d' }),
        sizes,
      ),
    );
    for (let i = 0; i < 16; i++) {
      // The Publisher's flag flip: both halves in one patchValidityMany call (one UPDATE).
      const [on, off] = i % 2 === 0 ? ['v2', 'v1'] : ['v1', 'v2'];
      await writer.patchValidityMany([
        { documentId: 's:d', versionId: on, patch: { current: true } },
        { documentId: 's:d', versionId: off, patch: { current: false } },
      ]);
    }
    finished = true;
    const t = sum(await Promise.all(reading));
    expect(t.observations).toBeGreaterThan(16);
    expect({ both: t.both, neither: t.neither, partial: t.partial }).toEqual({
      both: 0,
      neither: 0,
      partial: 0,
    });
    expect(t.seen).toEqual(new Set(['v1', 'v2']));
  });

  it('control: the same readers do catch a gap when the flip is two separate statements', async () => {
    const ns = namespace('flagctl');
    const writer = await connector(ns);
    const readers = await Promise.all([connector(ns), connector(ns), connector(ns)]);
    const sizes = new Map([
      ['v1', 40],
      ['v2', 40],
    ]);
    await writer.upsert(makeVersion('s:d', 'v1', 40, { current: true }));
    await writer.upsert(makeVersion('s:d', 'v2', 40, { current: false }));
    const table = tableForNamespace(ns);
    const sql = new pg.Pool({ connectionString: url, max: 1 });
    const set = (v: string, on: boolean) =>
      sql.query(
        `UPDATE ${table} SET metadata = jsonb_set(metadata, '{rf_current}', $3::jsonb) WHERE metadata->>'rf_doc' = $1 AND metadata->>'rf_version' = $2`,
        ['s:d', v, JSON.stringify(on)],
      );
    let finished = false;
    const live = readers.map(() => newTally());
    const reading = readers.map((r, i) =>
      readUntil(
        () => finished,
        () => r.query(vectorFor(3), 500, { view: { kind: 'flag' }, documentId: 's:d' }),
        sizes,
        live[i],
      ),
    );
    // Flip until a reader lands between the two statements (bounded, so a detector that
    // cannot see gaps fails instead of hanging).
    for (let i = 0; i < 500 && sum(live).neither === 0; i++) {
      const [from, to] = i % 2 === 0 ? ['v1', 'v2'] : ['v2', 'v1'];
      await set(from!, false);
      await set(to!, true);
    }
    finished = true;
    const t = sum(await Promise.all(reading));
    await sql.end();
    expect(t.neither).toBeGreaterThan(0);
  });
});

describe('promotion snapshot: epoch readers see one whole version per document', () => {
  it('readers using searchCurrent during repeated stage / patch / advance cycles never see both, neither or part', async () => {
    const ns = namespace('epoch');
    const writer = await connector(ns);
    const readers = await Promise.all([connector(ns), connector(ns), connector(ns)]);
    const size = (n: number) => 30 + ((n * 37) % 90); // versions grow and shrink
    const sizes = new Map<string, number>();
    sizes.set('v1', size(1));
    await writer.upsert(makeVersion('s:d', 'v1', size(1), { from: 1, current: true }));
    await writer.advanceEpoch(0, 1);
    let finished = false;
    const reading = readers.map((r) =>
      readUntil(
        () => finished,
        () => r.searchCurrent(vectorFor(1), 500, { documentId: 's:d' }),
        sizes,
      ),
    );
    for (let n = 2; n <= 16; n++) {
      const epoch = await writer.readEpoch();
      const next = epoch + 1;
      const v = `v${n}`;
      sizes.set(v, size(n));
      await writer.upsert(makeVersion('s:d', v, size(n), { from: next, seed: n }));
      await writer.patchValidity('s:d', `v${n - 1}`, { to: next });
      await writer.advanceEpoch(epoch, next);
      await writer.patchValidity('s:d', v, { current: true });
      // Retire two epochs behind, so a reader still holding the previous epoch finds its version.
      if (n > 3) await writer.deleteVersion('s:d', `v${n - 3}`);
    }
    finished = true;
    const t = sum(await Promise.all(reading));
    expect(t.observations).toBeGreaterThan(15);
    expect({ both: t.both, neither: t.neither, partial: t.partial }).toEqual({
      both: 0,
      neither: 0,
      partial: 0,
    });
    expect(t.seen.size).toBeGreaterThan(1);
    expect(await writer.readEpoch()).toBe(16);
  });
});
