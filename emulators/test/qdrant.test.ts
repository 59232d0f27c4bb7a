import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLOUD_STRICT_MODE, type QdrantEmulator, startQdrantEmulator } from '../src/index.js';

let emu: QdrantEmulator;
let n = 0;

async function call(method: string, path: string, body?: unknown, raw?: string) {
  const res = await fetch(`${emu.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined && raw === undefined ? {} : { body: raw ?? JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the service's JSON bodies field by field
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

const U1 = '6f1c3a52-7c1e-4b5e-9d0a-2a8e4d7b9c13';
const U2 = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

async function collection(size = 3): Promise<string> {
  const name = `t${++n}`;
  expect(
    (await call('PUT', `/collections/${name}`, { vectors: { size, distance: 'Cosine' } })).status,
  ).toBe(200);
  return name;
}

function point(id: number | string, vector: number[], payload: unknown) {
  return { id, vector, payload };
}

beforeAll(async () => {
  emu = await startQdrantEmulator();
});
afterEach(() => emu.faults.reset());
afterAll(async () => emu.close());

describe('Qdrant emulator: requests the service refuses', () => {
  it.each([
    ['a non-UUID string id', 'chunk-1'],
    ['a negative integer id', -1],
    ['a fractional id', 1.5],
    ['a boolean id', true],
  ])('refuses %s with 400 and Qdrant error body', async (_, id) => {
    const c = await collection();
    const r = await call('PUT', `/collections/${c}/points?wait=true`, {
      points: [point(id as never, [1, 0, 0], {})],
    });
    expect(r.status).toBe(400);
    expect(r.json.status.error).toMatch(/not a valid point ID/);
    expect(typeof r.json.time).toBe('number');
  });

  it('accepts unsigned integer and UUID ids (normalised to lower-case hyphenated form)', async () => {
    const c = await collection();
    const r = await call('PUT', `/collections/${c}/points?wait=true`, {
      points: [point(7, [1, 0, 0], {}), point(U1.toUpperCase().replace(/-/g, ''), [0, 1, 0], {})],
    });
    expect(r.status).toBe(200);
    expect(r.json.result.status).toBe('completed');
    const got = await call('POST', `/collections/${c}/points`, {
      ids: [7, U1],
      with_payload: true,
    });
    expect(got.json.result.map((p: { id: unknown }) => p.id)).toEqual([7, U1]);
  });

  it('ignores unknown body fields and query parameters (serde default), refuses them in Filter, wrong vector sizes, malformed JSON and missing collections', async () => {
    const c = await collection();
    const before = emu.ignoredFields.length;
    const unknown = await call('PUT', `/collections/${c}/points?wait=true&wiat=true`, {
      points: [],
      extra: 1,
    });
    expect(unknown.status).toBe(200);
    expect(emu.ignoredFields.slice(before)).toEqual(['query.wiat', 'PointsList.extra']);
    const filterField = await call('POST', `/collections/${c}/points/count`, {
      filter: { must: [], extra: 1 },
    });
    expect(filterField.status).toBe(400);
    expect(filterField.json.status.error).toMatch(/unknown field `extra`/);
    // An unknown key in a FieldCondition is ignored, leaving a condition with nothing to test.
    const badFilter = await call('POST', `/collections/${c}/points/count`, {
      filter: { must: [{ key: 'a', matches: { value: 1 } }] },
    });
    expect(badFilter.status).toBe(422);
    const dims = await call('PUT', `/collections/${c}/points`, { points: [point(1, [1, 0], {})] });
    expect(dims.status).toBe(400);
    expect(dims.json.status.error).toMatch(/expected dim: 3, got 2/);
    const malformed = await call('PUT', `/collections/${c}/points`, undefined, '{"points": [');
    expect(malformed.status).toBe(400);
    expect(malformed.json.status.error).toMatch(/^Format error in JSON body/);
    const missing = await call('POST', '/collections/nope/points/count', {});
    expect(missing.status).toBe(404);
    expect(missing.json.status.error).toBe("Not found: Collection `nope` doesn't exist!");
    const emptyCondition = await call('POST', `/collections/${c}/points/count`, {
      filter: { must: [{ key: 'a' }] },
    });
    expect(emptyCondition.status).toBe(422);
    const setNoTarget = await call('POST', `/collections/${c}/points/payload`, {
      payload: { a: 1 },
    });
    expect(setNoTarget.status).toBe(422);
    const dup = await call('PUT', `/collections/${c}`, {
      vectors: { size: 3, distance: 'Cosine' },
    });
    expect(dup.status).toBe(409);
    const distance = await call('PUT', `/collections/${c}x`, {
      vectors: { size: 3, distance: 'cosine' },
    });
    expect(distance.status).toBe(400);
  });
});

describe('Qdrant emulator: semantics', () => {
  async function seeded() {
    const c = await collection();
    const pts = [
      point(1, [1, 0, 0], {
        metadata: { doc: 'a', n: 1, cur: true, tags: ['x', 'y'] },
        content: 'one',
      }),
      point(2, [0.9, 0.1, 0], { metadata: { doc: 'a', n: 2, cur: false }, content: 'two' }),
      point(3, [0, 1, 0], { metadata: { doc: 'b', n: 3, cur: true }, content: 'three' }),
      point(4, [0, 0, 1], { metadata: { doc: 'c', n: 4, empty: [] }, content: 'four' }),
      point(U2, [0, 0.5, 0.5], { other: 1 }),
    ];
    expect((await call('PUT', `/collections/${c}/points?wait=true`, { points: pts })).status).toBe(
      200,
    );
    return c;
  }
  const ids = (r: { json: { result: { points: Array<{ id: unknown }> } } }) =>
    r.json.result.points.map((p) => p.id);
  const count = async (c: string, filter: unknown) =>
    (await call('POST', `/collections/${c}/points/count`, { filter, exact: true })).json.result
      .count;

  it('filters with must / should / must_not, match value/any/except, range, is_empty, has_id (exact counts)', async () => {
    const c = await seeded();
    expect(await count(c, { must: [{ key: 'metadata.doc', match: { value: 'a' } }] })).toBe(2);
    expect(await count(c, { must: { key: 'metadata.doc', match: { value: 'a' } } })).toBe(2);
    expect(
      await count(c, {
        should: [
          { key: 'metadata.doc', match: { value: 'a' } },
          { key: 'metadata.doc', match: { value: 'b' } },
        ],
      }),
    ).toBe(3);
    expect(await count(c, { must_not: [{ key: 'metadata.doc', match: { value: 'a' } }] })).toBe(3);
    expect(await count(c, { must: [{ key: 'metadata.doc', match: { any: ['b', 'c'] } }] })).toBe(2);
    // Like must_not + match any: a point without the field matches.
    expect(await count(c, { must: [{ key: 'metadata.doc', match: { except: ['a'] } }] })).toBe(3);
    expect(await count(c, { must: [{ key: 'metadata.n', range: { gte: 2, lt: 4 } }] })).toBe(2);
    expect(await count(c, { must: [{ key: 'metadata.cur', match: { value: true } }] })).toBe(2);
    expect(await count(c, { must: [{ key: 'metadata.tags', match: { value: 'y' } }] })).toBe(1);
    // An array payload (ragfresh's rf_access): `match.any` holds when any entry is one of the values.
    expect(await count(c, { must: [{ key: 'metadata.tags', match: { any: ['*', 'y'] } }] })).toBe(
      1,
    );
    expect(await count(c, { must: [{ key: 'metadata.tags', match: { any: ['*', 'z'] } }] })).toBe(
      0,
    );
    expect(await count(c, { must: [{ is_empty: { key: 'metadata.empty' } }] })).toBe(5); // missing counts as empty
    expect(await count(c, { must: [{ key: 'metadata.doc', is_empty: true }] })).toBe(1);
    expect(await count(c, { must_not: [{ has_id: [1, U2] }] })).toBe(3);
    expect(
      await count(c, {
        must: [
          { must_not: [{ key: 'metadata.doc', match: { value: 'a' } }] },
          { key: 'metadata.n', range: { gt: 3 } },
        ],
      }),
    ).toBe(1);
    expect(await count(c, undefined)).toBe(5);
  });

  it('scrolls in id order with offset / next_page_offset', async () => {
    const c = await seeded();
    const p1 = await call('POST', `/collections/${c}/points/scroll`, {
      limit: 2,
      with_payload: false,
    });
    expect(ids(p1)).toEqual([1, 2]);
    expect(p1.json.result.points[0].payload).toBeUndefined();
    expect(p1.json.result.next_page_offset).toBe(3);
    const p2 = await call('POST', `/collections/${c}/points/scroll`, { limit: 2, offset: 3 });
    expect(ids(p2)).toEqual([3, 4]);
    const p3 = await call('POST', `/collections/${c}/points/scroll`, {
      limit: 2,
      offset: p2.json.result.next_page_offset,
    });
    expect(ids(p3)).toEqual([U2]);
    expect(p3.json.result.next_page_offset).toBeNull();
  });

  it('set_payload with key merges into a nested object; upsert overwrites; delete by filter', async () => {
    const c = await seeded();
    await call('POST', `/collections/${c}/points/payload?wait=true`, {
      payload: { cur: false, extra: 'x' },
      key: 'metadata',
      filter: { must: [{ key: 'metadata.doc', match: { value: 'a' } }] },
    });
    const got = await call('POST', `/collections/${c}/points`, { ids: [1], with_payload: true });
    expect(got.json.result[0].payload).toEqual({
      metadata: { doc: 'a', n: 1, cur: false, tags: ['x', 'y'], extra: 'x' },
      content: 'one',
    });
    await call('PUT', `/collections/${c}/points?wait=true`, {
      points: [point(1, [1, 0, 0], { replaced: true })],
    });
    expect(
      (await call('POST', `/collections/${c}/points`, { ids: [1] })).json.result[0].payload,
    ).toEqual({ replaced: true });
    const ins = await call('PUT', `/collections/${c}/points?wait=true`, {
      points: [point(1, [1, 0, 0], { again: true })],
      update_mode: 'insert_only',
    });
    expect(ins.status).toBe(200);
    expect(
      (await call('POST', `/collections/${c}/points`, { ids: [1] })).json.result[0].payload,
    ).toEqual({ replaced: true });
    await call('POST', `/collections/${c}/points/delete?wait=true`, {
      filter: { must: [{ key: 'metadata.doc', match: { value: 'b' } }] },
    });
    expect(await count(c, undefined)).toBe(4);
    const missing = await call('POST', `/collections/${c}/points/payload`, {
      payload: { a: 1 },
      points: [999],
    });
    expect(missing.status).toBe(404);
  });

  it('query scores by cosine similarity, highest first, with filter, limit and payload selection', async () => {
    const c = await seeded();
    const r = await call('POST', `/collections/${c}/points/query`, {
      query: [2, 0, 0],
      limit: 3,
      filter: { must: [{ key: 'metadata.doc', match: { any: ['a', 'b'] } }] },
      with_payload: ['content'],
    });
    expect(ids(r)).toEqual([1, 2, 3]);
    expect(r.json.result.points[0].score).toBeCloseTo(1, 6);
    expect(r.json.result.points[1].score).toBeCloseTo(0.9 / Math.sqrt(0.82), 5);
    expect(r.json.result.points[2].score).toBeCloseTo(0, 6);
    expect(r.json.result.points[0].payload).toEqual({ content: 'one' });
    const nearest = await call('POST', `/collections/${c}/points/query`, {
      query: { nearest: [0, 1, 0] },
      limit: 1,
    });
    expect(ids(nearest)).toEqual([3]);
  });

  it('aliases: atomic swap, reads through the alias, not listed as collections', async () => {
    const a = await seeded();
    const b = await collection();
    const alias = `al${n}`;
    expect(
      (
        await call('POST', '/collections/aliases', {
          actions: [{ create_alias: { collection_name: a, alias_name: alias } }],
        })
      ).status,
    ).toBe(200);
    expect(await count(alias, undefined)).toBe(5);
    const failed = await call('POST', '/collections/aliases', {
      actions: [
        { delete_alias: { alias_name: alias } },
        { create_alias: { collection_name: 'missing', alias_name: alias } },
      ],
    });
    expect(failed.status).toBe(404);
    expect(await count(alias, undefined)).toBe(5); // the failed batch changed nothing
    await call('POST', '/collections/aliases', {
      actions: [
        { delete_alias: { alias_name: alias } },
        { create_alias: { collection_name: b, alias_name: alias } },
      ],
    });
    expect(await count(alias, undefined)).toBe(0);
    const listed = (await call('GET', '/collections')).json.result.collections.map(
      (x: { name: string }) => x.name,
    );
    expect(listed).not.toContain(alias);
    expect((await call('GET', '/aliases')).json.result.aliases).toContainEqual({
      alias_name: alias,
      collection_name: b,
    });
  });
});

describe('Qdrant emulator: faults', () => {
  it('answers 429 with Retry-After and 503 with the error body, drops connections, and withholds answers', async () => {
    const c = await collection();
    emu.faults.set({ rate429: 1, retryAfterSeconds: 3 });
    const r429 = await call('POST', `/collections/${c}/points/count`, {});
    expect(r429.status).toBe(429);
    expect(r429.headers.get('retry-after')).toBe('3');
    expect(r429.json.status.error).toMatch(/Too many requests/);
    emu.faults.set({ rate5xx: 1 });
    expect((await call('POST', `/collections/${c}/points/count`, {})).status).toBe(503);
    emu.faults.set({ dropRate: 1 });
    await expect(call('POST', `/collections/${c}/points/count`, {})).rejects.toThrow();
    emu.faults.set({ timeoutRate: 1 });
    await expect(
      fetch(`${emu.url}/collections/${c}/points?wait=true`, {
        method: 'PUT',
        body: JSON.stringify({ points: [point(5, [1, 0, 0], {})] }),
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();
    emu.faults.reset();
    // The withheld write was applied: a retry must be idempotent.
    expect((await call('POST', `/collections/${c}/points/count`, {})).json.result.count).toBe(1);
  });

  it('lags writes sent without wait=true; wait=true writes are visible when acknowledged', async () => {
    const c = await collection();
    emu.faults.set({ visibilityLagMs: 200 });
    const r = await call('PUT', `/collections/${c}/points`, { points: [point(1, [1, 0, 0], {})] });
    expect(r.json.result.status).toBe('acknowledged');
    expect((await call('POST', `/collections/${c}/points/count`, {})).json.result.count).toBe(0);
    await new Promise((res) => setTimeout(res, 250));
    expect((await call('POST', `/collections/${c}/points/count`, {})).json.result.count).toBe(1);
    await call('PUT', `/collections/${c}/points?wait=true`, { points: [point(2, [1, 0, 0], {})] });
    expect((await call('POST', `/collections/${c}/points/count`, {})).json.result.count).toBe(2);
  });
});

// biome-ignore lint/suspicious/noExplicitAny: the tests read the service's JSON bodies field by field
type Json = any;

describe('Qdrant emulator: modes that model the real service', () => {
  it('strict mode (Qdrant Cloud default): refuses filters on unindexed keys with 400, accepts indexed ones', async () => {
    const strict = await startQdrantEmulator({ strictMode: CLOUD_STRICT_MODE });
    try {
      const at = (path: string, method: string, b: unknown) =>
        fetch(`${strict.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(b),
        }).then(async (r) => ({ status: r.status, json: (await r.json()) as Json }));
      await at('/collections/s', 'PUT', { vectors: { size: 2, distance: 'Cosine' } });
      await at('/collections/s/points?wait=true', 'PUT', {
        points: [{ id: 1, vector: [1, 0], payload: { e: 0 } }],
      });
      const filter = { must: [{ key: 'e', match: { value: 0 } }] };
      const refused = await at('/collections/s/points/payload?wait=true', 'POST', {
        payload: { e: 1 },
        filter,
      });
      expect(refused.status).toBe(400);
      expect(refused.json.status.error).toMatch(
        /^Bad request: Index required but not found for "e" of one of the following types: \[integer\]/,
      );
      const count = await at('/collections/s/points/count', 'POST', { filter });
      expect(count.status).toBe(400);
      await at('/collections/s/index?wait=true', 'PUT', {
        field_name: 'e',
        field_schema: 'integer',
      });
      expect(
        (await at('/collections/s/points/payload?wait=true', 'POST', { payload: { e: 1 }, filter }))
          .status,
      ).toBe(200);
      // A collection created with its own strict_mode_config keeps it.
      await at('/collections/open', 'PUT', {
        vectors: { size: 2, distance: 'Cosine' },
        strict_mode_config: { enabled: false },
      });
      expect((await at('/collections/open/points/count', 'POST', { filter })).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('scripted 408, 403 and 429 with and without Retry-After; slow writes answer wait_timeout (with timeout) or 408', async () => {
    const c = await collection(2);
    emu.inject({
      status: 429,
      retryAfterSeconds: 3,
      route: 'POST /collections/{name}/points/count',
    });
    emu.inject({ status: 429, route: 'POST /collections/{name}/points/count' });
    emu.inject({ status: 408, route: 'POST /collections/{name}/points/count' });
    emu.inject({ status: 403, route: 'POST /collections/{name}/points/count' });
    const a = await call('POST', `/collections/${c}/points/count`, {});
    expect([a.status, a.headers.get('retry-after')]).toEqual([429, '3']);
    const b = await call('POST', `/collections/${c}/points/count`, {});
    expect([b.status, b.headers.get('retry-after')]).toEqual([429, null]);
    expect((await call('POST', `/collections/${c}/points/count`, {})).status).toBe(408);
    expect((await call('POST', `/collections/${c}/points/count`, {})).status).toBe(403);
    expect((await call('POST', `/collections/${c}/points/count`, {})).status).toBe(200);

    emu.inject({ slowWriteMs: 200, route: 'PUT /collections/{name}/points' });
    const t = await call('PUT', `/collections/${c}/points?wait=true`, {
      points: [point(2, [1, 0], {})],
    });
    expect(t.status).toBe(408);
    emu.inject({ slowWriteMs: 200, route: 'PUT /collections/{name}/points' });
    const waited = await call('PUT', `/collections/${c}/points?wait=true&timeout=1`, {
      points: [point(3, [1, 0], {})],
    });
    expect(waited.json.result.status).toBe('completed');
    expect((await call('POST', `/collections/${c}/points/count`, {})).json.result.count).toBe(2);
    emu.inject({ slowWriteMs: 1_500, route: 'PUT /collections/{name}/points' });
    const w = await call('PUT', `/collections/${c}/points?wait=true&timeout=1`, {
      points: [point(1, [1, 0], {})],
    });
    expect(w.json.result.status).toBe('wait_timeout');
    expect((await call('POST', `/collections/${c}/points/count`, {})).json.result.count).toBe(2);
    await new Promise((r) => setTimeout(r, 1_600));
    expect((await call('POST', `/collections/${c}/points/count`, {})).json.result.count).toBe(3);
  });

  it('a pre-1.17 server ignores update_mode (insert_only overwrites)', async () => {
    const old = await startQdrantEmulator({ version: '1.16.0' });
    try {
      const put = (b: unknown) =>
        fetch(`${old.url}/collections/o/points?wait=true`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(b),
        });
      await fetch(`${old.url}/collections/o`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ vectors: { size: 2, distance: 'Cosine' } }),
      });
      await put({ points: [point(1, [1, 0], { v: 1 })] });
      await put({ update_mode: 'insert_only', points: [point(1, [1, 0], { v: 2 })] });
      const got = await fetch(`${old.url}/collections/o/points`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ids: [1], with_payload: true }),
      }).then((r) => r.json() as Promise<Json>);
      expect(got.result[0].payload).toEqual({ v: 2 });
      expect(old.ignoredFields).toEqual(['PointsList.update_mode']);
    } finally {
      await old.close();
    }
  });
});
