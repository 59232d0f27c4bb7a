import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type PineconeEmulator, startPineconeEmulator } from '../src/index.js';

let emu: PineconeEmulator;
let host: string;
let n = 0;

async function call(
  method: string,
  path: string,
  body?: unknown,
  opts: { raw?: string; key?: string | null; base?: string } = {},
) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'X-Pinecone-Api-Version': '2026-07',
  };
  if (opts.key !== null) headers['Api-Key'] = opts.key ?? 'test-key';
  const res = await fetch(`${opts.base ?? host}${path}`, {
    method,
    headers,
    ...(body === undefined && opts.raw === undefined
      ? {}
      : { body: opts.raw ?? JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the service's JSON bodies field by field
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

const ns = () => `ns${++n}`;
const vec = (id: string, values: number[], metadata?: unknown) => ({
  id,
  values,
  ...(metadata === undefined ? {} : { metadata }),
});

beforeAll(async () => {
  emu = await startPineconeEmulator();
  host = await emu.createIndex('main', 3);
});
afterEach(() => emu.faults.reset());
afterAll(async () => emu.close());

describe('Pinecone emulator: requests the service refuses', () => {
  it('refuses metadata over 40 KB per record', async () => {
    const r = await call('POST', '/vectors/upsert', {
      vectors: [vec('a', [1, 0, 0], { text: 'x'.repeat(40_960) })],
      namespace: ns(),
    });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ code: 3, details: [] });
    expect(r.json.message).toMatch(
      /Metadata size is 40971 bytes, which exceeds the limit of 40960 bytes/,
    );
    const fits = await call('POST', '/vectors/upsert', {
      vectors: [vec('a', [1, 0, 0], { text: 'x'.repeat(40_949) })],
      namespace: ns(),
    });
    expect(fits.status).toBe(200);
  });

  it('refuses null and nested metadata values', async () => {
    const nul = await call('POST', '/vectors/upsert', {
      vectors: [vec('a', [1, 0, 0], { title: null })],
    });
    expect(nul.status).toBe(400);
    expect(nul.json.message).toMatch(/got 'null' for field 'title'/);
    const nested = await call('POST', '/vectors/upsert', {
      vectors: [vec('a', [1, 0, 0], { o: { a: 1 } })],
    });
    expect(nested.status).toBe(400);
    const numbers = await call('POST', '/vectors/upsert', {
      vectors: [vec('a', [1, 0, 0], { l: [1, 2] })],
    });
    expect(numbers.status).toBe(400);
    const update = await call('POST', '/vectors/update', { id: 'a', setMetadata: { x: null } });
    expect(update.status).toBe(400);
  });

  it('refuses empty and malformed filter values', async () => {
    const bad = [
      { rf_doc: { $in: [] } },
      { rf_doc: { $nin: [] } },
      { rf_doc: { $eq: null } },
      { rf_doc: null },
      { rf_from: { $gt: 'a' } },
      { rf_doc: { $regex: 'a' } },
      { $and: [] },
      { $not: { a: 1 } },
      { rf_doc: { $exists: 'yes' } },
      { rf_doc: {} },
    ];
    for (const filter of bad) {
      const r = await call('POST', '/query', { vector: [1, 0, 0], topK: 1, filter });
      expect([JSON.stringify(filter), r.status]).toEqual([JSON.stringify(filter), 400]);
      expect(r.json.code).toBe(3);
    }
  });

  it('refuses upserts of more than 1000 vectors or 2 MB, and empty upserts', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => vec(`v${i}`, [1, 0, 0]));
    const r = await call('POST', '/vectors/upsert', { vectors: many });
    expect(r.status).toBe(400);
    expect(r.json.message).toMatch(/1001 vectors exceeds the limit of 1000/);
    expect(
      (await call('POST', '/vectors/upsert', { vectors: many.slice(0, 1000), namespace: ns() }))
        .status,
    ).toBe(200);
    const heavy = Array.from({ length: 60 }, (_, i) =>
      vec(`h${i}`, [1, 0, 0], { text: 'y'.repeat(36_000) }),
    );
    const big = await call('POST', '/vectors/upsert', { vectors: heavy });
    expect(big.status).toBe(400);
    expect(big.json.message).toMatch(/exceeds the maximum supported size of 2MB/);
    expect((await call('POST', '/vectors/upsert', { vectors: [] })).status).toBe(400);
  });

  it('refuses wrong dimensions, all-zero vectors, unknown fields, bad ids and missing API keys', async () => {
    expect(
      (await call('POST', '/vectors/upsert', { vectors: [vec('a', [1, 0])] })).json.message,
    ).toMatch(/dimension 2 does not match the dimension of the index 3/);
    expect((await call('POST', '/vectors/upsert', { vectors: [vec('a', [0, 0, 0])] })).status).toBe(
      400,
    );
    const unknown = await call('POST', '/vectors/upsert', {
      vectors: [vec('a', [1, 0, 0])],
      extra: true,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.json.message).toMatch(/unknown field "extra"/);
    expect((await call('POST', '/vectors/upsert', { vectors: [vec('', [1, 0, 0])] })).status).toBe(
      400,
    );
    expect(
      (await call('POST', '/vectors/upsert', { vectors: [vec('x'.repeat(513), [1, 0, 0])] }))
        .status,
    ).toBe(400);
    expect((await call('POST', '/query', { vector: [1, 0, 0], topK: 10_001 })).status).toBe(400);
    expect((await call('GET', '/vectors/list?limit=101')).status).toBe(400);
    expect((await call('POST', '/vectors/delete', { ids: ['a'], deleteAll: true })).status).toBe(
      400,
    );
    expect(
      (await call('POST', '/vectors/update', { id: 'a', filter: { a: { $eq: 1 } } })).status,
    ).toBe(400);
    expect((await call('POST', '/vectors/upsert', undefined, { raw: '{"vectors":' })).status).toBe(
      400,
    );
    const anon = await call('POST', '/query', { vector: [1, 0, 0], topK: 1 }, { key: null });
    expect(anon.status).toBe(401);
    const control = await call('GET', '/indexes/main', undefined, { key: null, base: emu.url });
    expect(control.status).toBe(401);
    expect(control.json).toEqual({
      error: { code: 'UNAUTHENTICATED', message: 'Invalid API Key' },
      status: 401,
    });
  });
});

describe('Pinecone emulator: semantics', () => {
  async function seeded(namespace: string) {
    const vectors = [
      vec('a#v1#0', [1, 0, 0], { doc: 'a', n: 1, cur: true, tags: ['x', 'y'] }),
      vec('a#v1#1', [0.9, 0.1, 0], { doc: 'a', n: 2, cur: false }),
      vec('b#v1#0', [0, 1, 0], { doc: 'b', n: 3, cur: true }),
      vec('c#v1#0', [0, 0, 1], { doc: 'c', n: 4 }),
    ];
    expect((await call('POST', '/vectors/upsert', { vectors, namespace })).json).toEqual({
      upsertedCount: 4,
    });
  }
  const ids = async (namespace: string, filter: unknown) =>
    (await call('POST', '/query', { vector: [1, 0, 0], topK: 100, filter, namespace })).json.matches
      .map((m: { id: string }) => m.id)
      .sort();

  it('implements $eq $ne $in $nin $gt $gte $lt $lte $and $or $exists', async () => {
    const s = ns();
    await seeded(s);
    expect(await ids(s, { doc: { $eq: 'a' } })).toEqual(['a#v1#0', 'a#v1#1']);
    expect(await ids(s, { doc: 'a' })).toEqual(['a#v1#0', 'a#v1#1']);
    expect(await ids(s, { doc: { $ne: 'a' } })).toEqual(['b#v1#0', 'c#v1#0']);
    expect(await ids(s, { doc: { $in: ['b', 'c'] } })).toEqual(['b#v1#0', 'c#v1#0']);
    expect(await ids(s, { doc: { $nin: ['b', 'c'] } })).toEqual(['a#v1#0', 'a#v1#1']);
    expect(await ids(s, { n: { $gt: 1, $lte: 3 } })).toEqual(['a#v1#1', 'b#v1#0']);
    expect(await ids(s, { n: { $gte: 4 } })).toEqual(['c#v1#0']);
    expect(await ids(s, { n: { $lt: 2 } })).toEqual(['a#v1#0']);
    expect(await ids(s, { $and: [{ doc: { $eq: 'a' } }, { cur: { $eq: true } }] })).toEqual([
      'a#v1#0',
    ]);
    expect(await ids(s, { $or: [{ doc: { $eq: 'c' } }, { cur: { $eq: true } }] })).toEqual([
      'a#v1#0',
      'b#v1#0',
      'c#v1#0',
    ]);
    expect(await ids(s, { cur: { $exists: false } })).toEqual(['c#v1#0']);
    expect(await ids(s, { tags: { $in: ['y'] } })).toEqual(['a#v1#0']);
    // A list field (ragfresh's rf_access): `$in` matches when any entry is listed, `$eq` when
    // one entry equals; `$nin` / `$ne` only when no entry is (Pinecone's list semantics).
    expect(await ids(s, { tags: { $in: ['*', 'x'] } })).toEqual(['a#v1#0']);
    expect(await ids(s, { tags: { $eq: 'x' } })).toEqual(['a#v1#0']);
    expect(await ids(s, { tags: { $in: ['z'] } })).toEqual([]);
    expect(await ids(s, { tags: { $nin: ['y'] } })).toEqual(['a#v1#1', 'b#v1#0', 'c#v1#0']);
    expect(await ids(s, { tags: { $ne: 'x' } })).toEqual(['a#v1#1', 'b#v1#0', 'c#v1#0']);
  });

  it('query ranks by cosine similarity; metadata and values only when asked', async () => {
    const s = ns();
    await seeded(s);
    const r = await call('POST', '/query', {
      vector: [2, 0, 0],
      topK: 2,
      namespace: s,
      includeMetadata: true,
    });
    expect(r.json.matches.map((m: { id: string }) => m.id)).toEqual(['a#v1#0', 'a#v1#1']);
    expect(r.json.matches[0].score).toBeCloseTo(1, 6);
    expect(r.json.matches[1].score).toBeCloseTo(0.9 / Math.sqrt(0.82), 5);
    expect(r.json.matches[0].metadata).toEqual({ doc: 'a', n: 1, cur: true, tags: ['x', 'y'] });
    expect(r.json.matches[0].values).toEqual([]);
    const bare = await call('POST', '/query', { vector: [2, 0, 0], topK: 1, namespace: s });
    expect(bare.json.matches[0].metadata).toBeUndefined();
    expect(r.json.namespace).toBe(s);
  });

  it('lists ids by prefix with paginationToken; fetches by ids', async () => {
    const s = ns();
    const vectors = Array.from({ length: 150 }, (_, i) =>
      vec(`doc#v1#${String(i).padStart(3, '0')}`, [1, 0, 0]),
    );
    await call('POST', '/vectors/upsert', {
      vectors: [...vectors, vec('other#v1#0', [1, 0, 0])],
      namespace: s,
    });
    const p1 = await call(
      'GET',
      `/vectors/list?prefix=${encodeURIComponent('doc#')}&limit=100&namespace=${s}`,
    );
    expect(p1.json.vectors).toHaveLength(100);
    expect(p1.json.vectors[0]).toEqual({ id: 'doc#v1#000' });
    const token = p1.json.pagination.next as string;
    const p2 = await call(
      'GET',
      `/vectors/list?prefix=${encodeURIComponent('doc#')}&limit=100&namespace=${s}&paginationToken=${token}`,
    );
    expect(p2.json.vectors).toHaveLength(50);
    expect(p2.json.pagination).toBeUndefined();
    expect((await call('GET', `/vectors/list?paginationToken=garbage&namespace=${s}`)).status).toBe(
      400,
    );
    const f = await call(
      'GET',
      `/vectors/fetch?ids=${encodeURIComponent('doc#v1#001')}&ids=missing&namespace=${s}`,
    );
    expect(Object.keys(f.json.vectors)).toEqual(['doc#v1#001']);
    expect(f.json.vectors['doc#v1#001'].values).toEqual([1, 0, 0]);
  });

  it('updates by id (merge) and by metadata filter (matchedRecords); deletes by ids, filter and deleteAll', async () => {
    const s = ns();
    await seeded(s);
    await call('POST', '/vectors/update', {
      id: 'a#v1#0',
      setMetadata: { cur: false, extra: 'e' },
      namespace: s,
    });
    const f = await call(
      'GET',
      `/vectors/fetch?ids=${encodeURIComponent('a#v1#0')}&namespace=${s}`,
    );
    expect(f.json.vectors['a#v1#0'].metadata).toEqual({
      doc: 'a',
      n: 1,
      cur: false,
      tags: ['x', 'y'],
      extra: 'e',
    });
    const u = await call('POST', '/vectors/update', {
      filter: { doc: { $eq: 'a' } },
      setMetadata: { to: 7 },
      namespace: s,
    });
    expect(u.json).toEqual({ matchedRecords: 2 });
    expect(await ids(s, { to: { $eq: 7 } })).toEqual(['a#v1#0', 'a#v1#1']);
    const dry = await call('POST', '/vectors/update', {
      filter: { doc: { $eq: 'b' } },
      setMetadata: { to: 9 },
      namespace: s,
      dryRun: true,
    });
    expect(dry.json).toEqual({ matchedRecords: 1 });
    expect(await ids(s, { to: { $eq: 9 } })).toEqual([]);
    await call('POST', '/vectors/delete', { ids: ['a#v1#0', 'absent'], namespace: s });
    await call('POST', '/vectors/delete', { filter: { doc: { $eq: 'b' } }, namespace: s });
    expect(await ids(s, undefined)).toEqual(['a#v1#1', 'c#v1#0']);
    await call('POST', '/vectors/delete', { deleteAll: true, namespace: s });
    expect(await ids(s, undefined)).toEqual([]);
  });

  it('control plane: creates an index from the 2026-07 body, describes it, refuses duplicates', async () => {
    const body = {
      name: 'created-1',
      schema: { fields: { _values: { type: 'dense_vector', dimension: 4, metric: 'cosine' } } },
      deployment: { deployment_type: 'managed', cloud: 'aws', region: 'us-east-1' },
    };
    const created = await call('POST', '/indexes', body, { base: emu.url });
    expect(created.status).toBe(201);
    expect(created.json.host).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await call('POST', '/indexes', body, { base: emu.url })).status).toBe(409);
    expect(
      (await call('POST', '/indexes', { ...body, name: 'Bad_Name' }, { base: emu.url })).status,
    ).toBe(400);
    expect(
      (await call('POST', '/indexes', { ...body, name: 'x2', dimension: 4 }, { base: emu.url }))
        .status,
    ).toBe(400);
    const described = await call('GET', '/indexes/created-1', undefined, { base: emu.url });
    expect(described.json.schema.fields._values.dimension).toBe(4);
    expect((await call('GET', '/indexes/none', undefined, { base: emu.url })).status).toBe(404);
    const stats = await call('POST', '/describe_index_stats', {}, { base: created.json.host });
    expect(stats.json).toMatchObject({ dimension: 4, totalVectorCount: 0, namespaces: {} });
  });
});

describe('Pinecone emulator: eventual consistency and faults', () => {
  it('makes writes readable only after the visibility lag', async () => {
    const s = ns();
    emu.faults.set({ visibilityLagMs: 200 });
    await call('POST', '/vectors/upsert', {
      vectors: [vec('a', [1, 0, 0], { k: 1 })],
      namespace: s,
    });
    expect((await call('GET', `/vectors/fetch?ids=a&namespace=${s}`)).json.vectors).toEqual({});
    expect(
      (await call('POST', '/query', { vector: [1, 0, 0], topK: 1, namespace: s })).json.matches,
    ).toEqual([]);
    await new Promise((r) => setTimeout(r, 250));
    expect(
      Object.keys((await call('GET', `/vectors/fetch?ids=a&namespace=${s}`)).json.vectors),
    ).toEqual(['a']);
  });

  it('answers 429 with Retry-After, 503, dropped connections and withheld answers', async () => {
    emu.faults.set({ rate429: 1, retryAfterSeconds: 2 });
    const r = await call('POST', '/query', { vector: [1, 0, 0], topK: 1 });
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(r.json.code).toBe(8);
    emu.faults.set({ rate5xx: 1 });
    expect((await call('POST', '/query', { vector: [1, 0, 0], topK: 1 })).status).toBe(503);
    emu.faults.set({ dropRate: 1 });
    await expect(call('POST', '/query', { vector: [1, 0, 0], topK: 1 })).rejects.toThrow();
    emu.faults.set({ timeoutRate: 1 });
    const s = ns();
    await expect(
      fetch(`${host}/vectors/upsert`, {
        method: 'POST',
        headers: { 'Api-Key': 'k', 'content-type': 'application/json' },
        body: JSON.stringify({ vectors: [vec('t', [1, 0, 0])], namespace: s }),
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();
    emu.faults.reset();
    expect(
      Object.keys((await call('GET', `/vectors/fetch?ids=t&namespace=${s}`)).json.vectors),
    ).toEqual(['t']);
    expect(emu.faults.injected['429']).toBeGreaterThan(0);
  });
});

describe('Pinecone emulator: modes that model the real service', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('lags fetch, list and query separately per namespace, with one LSN counter per namespace', async () => {
    const slow = await startPineconeEmulator({
      lags: (name) =>
        name === 'slow'
          ? { fetchMs: 0, listMs: 100, queryMs: 250 }
          : { fetchMs: 0, listMs: 0, queryMs: 0 },
    });
    try {
      const h = await slow.createIndex('lag', 3);
      const up = await call(
        'POST',
        '/vectors/upsert',
        { namespace: 'slow', vectors: [vec('a', [1, 0, 0])] },
        { base: h },
      );
      expect(up.headers.get('x-pinecone-request-lsn')).toBe('1');
      const other = await call(
        'POST',
        '/vectors/upsert',
        { namespace: 'fast', vectors: [vec('b', [1, 0, 0])] },
        { base: h },
      );
      expect(other.headers.get('x-pinecone-request-lsn')).toBe('1');
      const fetched = await call('GET', '/vectors/fetch?ids=a&namespace=slow', undefined, {
        base: h,
      });
      expect(Object.keys(fetched.json.vectors)).toEqual(['a']);
      const listed = await call('GET', '/vectors/list?namespace=slow', undefined, { base: h });
      expect(listed.json.vectors).toEqual([]);
      const q = await call(
        'POST',
        '/query',
        { namespace: 'slow', vector: [1, 0, 0], topK: 5 },
        { base: h },
      );
      expect(q.json.matches).toEqual([]);
      expect(q.headers.get('x-pinecone-max-indexed-lsn')).toBe('0');
      await sleep(300);
      const q2 = await call(
        'POST',
        '/query',
        { namespace: 'slow', vector: [1, 0, 0], topK: 5 },
        { base: h },
      );
      expect(q2.json.matches.map((m: { id: string }) => m.id)).toEqual(['a']);
      expect(q2.headers.get('x-pinecone-max-indexed-lsn')).toBe('1');
      const fast = await call(
        'POST',
        '/query',
        { namespace: 'fast', vector: [1, 0, 0], topK: 5 },
        { base: h },
      );
      expect(fast.json.matches.length).toBe(1);
    } finally {
      await slow.close();
    }
  });

  it('evaluates a filtered update against the lagging index and says so in matchedRecords', async () => {
    const lagging = await startPineconeEmulator({ lags: { fetchMs: 0, listMs: 0, queryMs: 200 } });
    try {
      const h = await lagging.createIndex('upd', 3);
      await call(
        'POST',
        '/vectors/upsert',
        { namespace: 'n', vectors: [vec('a', [1, 0, 0], { d: 'x' })] },
        { base: h },
      );
      const early = await call(
        'POST',
        '/vectors/update',
        { namespace: 'n', filter: { d: { $eq: 'x' } }, setMetadata: { p: 1 } },
        { base: h },
      );
      expect(early.json).toEqual({ matchedRecords: 0 });
      await sleep(250);
      const late = await call(
        'POST',
        '/vectors/update',
        { namespace: 'n', filter: { d: { $eq: 'x' } }, setMetadata: { p: 2 } },
        { base: h },
      );
      expect(late.json).toEqual({ matchedRecords: 1 });
      const f = await call('GET', '/vectors/fetch?ids=a&namespace=n', undefined, { base: h });
      expect(f.json.vectors.a.metadata).toEqual({ d: 'x', p: 2 });
    } finally {
      await lagging.close();
    }
  });

  it('accepts duplicate ids in one upsert (the last wins), refuses query results over 4 MB and namespaces over the quota', async () => {
    const quota = await startPineconeEmulator({ maxNamespaces: 1 });
    try {
      const h = await quota.createIndex('q', 1000);
      const v = (id: string) =>
        vec(
          id,
          Array.from({ length: 1000 }, (_, i) => (i + 1) / 1000),
        );
      const dup = await call(
        'POST',
        '/vectors/upsert',
        { namespace: 'a', vectors: [vec('x', new Array(1000).fill(1)), v('x')] },
        { base: h },
      );
      expect(dup.status).toBe(200);
      for (let i = 0; i < 6; i++) {
        const vectors = Array.from({ length: 100 }, (_, j) => v(`r${i}-${j}`));
        expect(
          (await call('POST', '/vectors/upsert', { namespace: 'a', vectors }, { base: h })).status,
        ).toBe(200);
      }
      const big = await call(
        'POST',
        '/query',
        { namespace: 'a', vector: v('q').values, topK: 600, includeValues: true },
        { base: h },
      );
      expect(big.status).toBe(400);
      expect(big.json.message).toMatch(/exceeds the 4MB limit/);
      const small = await call(
        'POST',
        '/query',
        { namespace: 'a', vector: v('q').values, topK: 600 },
        { base: h },
      );
      expect(small.status).toBe(200);
      const second = await call(
        'POST',
        '/vectors/upsert',
        { namespace: 'b', vectors: [v('y')] },
        { base: h },
      );
      expect(second.status).toBe(403);
      expect(second.json.message).toMatch(/^QUOTA_EXCEEDED: Namespace quota exceeded/);
    } finally {
      await quota.close();
    }
  });

  it('Pinecone Local 2025-01 mode: refuses the 2026-07 create body, accepts the 2025-01 one, sends no LSN headers, refuses update by filter', async () => {
    const local = await startPineconeEmulator({ mode: 'local-2025-01' });
    try {
      const modern = await call(
        'POST',
        '/indexes',
        {
          name: 'm',
          schema: { fields: { _values: { type: 'dense_vector', dimension: 3, metric: 'cosine' } } },
        },
        { base: local.url },
      );
      expect(modern.status).toBe(400);
      const created = await call(
        'POST',
        '/indexes',
        {
          name: 'l',
          dimension: 3,
          metric: 'cosine',
          spec: { serverless: { cloud: 'aws', region: 'us-east-1' } },
        },
        { base: local.url },
      );
      expect(created.status).toBe(201);
      expect(created.json).toMatchObject({ name: 'l', dimension: 3, metric: 'cosine' });
      const h = `http://${created.json.host}`;
      const up = await call(
        'POST',
        '/vectors/upsert',
        { vectors: [vec('a', [1, 0, 0], { d: 'x' })] },
        { base: h },
      );
      expect(up.headers.get('x-pinecone-request-lsn')).toBeNull();
      const upd = await call(
        'POST',
        '/vectors/update',
        { filter: { d: { $eq: 'x' } }, setMetadata: { p: 1 } },
        { base: h },
      );
      expect(upd.status).toBe(501);
    } finally {
      await local.close();
    }
  });
});
