import {
  type DocumentRecord,
  FIELDS,
  type PublishCandidate,
  type PublishReport,
} from '@ragfresh/core';
import { simhash64 } from '@ragfresh/extract';
import { describe, expect, it } from 'vitest';
import {
  collapseDuplicateHits,
  DUPLICATE_GROUP_PREFIX,
  DUPLICATE_MAX_DISTANCE,
  DuplicateGrouper,
  DuplicateIndex,
  passageShape,
} from './internals.js';

/** A fingerprint `bits` bits away from `fp` (the lowest bits flipped). */
function flip(fp: string, bits: number): string {
  let v = BigInt(`0x${fp}`);
  for (let b = 0; b < bits; b++) v ^= 1n << BigInt(b * 5);
  return v.toString(16).padStart(16, '0');
}

const A = simhash64('replicas are placed in separate zones and checked on every read '.repeat(20));
const FAR = simhash64(
  'compaction merges small segment files into larger ones overnight '.repeat(20),
);

describe('DuplicateIndex (banded LSH over SimHash fingerprints)', () => {
  it('finds every neighbour within the distance and none beyond it', () => {
    const index = new DuplicateIndex(3);
    index.set('a', A, 'g-a');
    for (let d = 0; d <= 6; d++) {
      const found = index.neighbours(flip(A, d)).map((n) => n.documentId);
      expect(found).toEqual(d <= 3 ? ['a'] : []);
    }
    expect(index.neighbours(FAR)).toEqual([]);
  });

  it('a copy joins the group of the page it is near; a different page gets its own group', () => {
    const index = new DuplicateIndex();
    const first = index.assign('page', A);
    expect(first).toBe(`${DUPLICATE_GROUP_PREFIX}${A}`);
    expect(index.assign('page-slash', A)).toBe(first);
    expect(index.assign('page-print', flip(A, DUPLICATE_MAX_DISTANCE))).toBe(first);
    expect(index.assign('other', FAR)).not.toBe(first);
  });

  it('a page keeps its group through a small change, and leaves it when it stops being a copy', () => {
    const index = new DuplicateIndex();
    const g = index.assign('page', A);
    index.assign('copy', A);
    expect(index.assign('copy', flip(A, 2))).toBe(g);
    const left = index.assign('copy', FAR);
    expect(left).not.toBe(g);
    expect(index.get('page')?.group).toBe(g);
  });

  it('the founder changing does not move its copies; a new copy still finds them', () => {
    const index = new DuplicateIndex();
    const g = index.assign('founder', A);
    index.assign('copy', flip(A, 1));
    // The founder becomes another page: its copies keep the group id (no rewrite of their chunks).
    expect(index.assign('founder', FAR)).not.toBe(g);
    expect(index.get('copy')?.group).toBe(g);
    expect(index.assign('late-copy', A)).toBe(g);
    // The founder deleted: the label lives on in the members, new copies join it.
    index.delete('founder');
    expect(index.assign('later-copy', flip(A, 2))).toBe(g);
  });

  it('a lone page keeps its own group id through an edit (no other holder)', () => {
    const index = new DuplicateIndex();
    const g = index.assign('alone', A);
    expect(index.assign('alone', FAR)).toBe(g);
  });

  it('a page bridging two groups joins the smallest id, and the two groups stay two', () => {
    const index = new DuplicateIndex(3);
    const left = flip(A, 0);
    const right = flip(A, 6); // 6 bits from left: two groups
    const gl = index.assign('left', left);
    const gr = index.assign('right', right);
    expect(gl).not.toBe(gr);
    const bridge = flip(A, 3); // 3 from each
    expect(index.assign('bridge', bridge)).toBe([gl, gr].sort()[0]);
    expect(index.get('left')?.group).toBe(gl);
    expect(index.get('right')?.group).toBe(gr);
  });
});

describe('DuplicateGrouper (the publish queue side)', () => {
  const text = 'replicas are placed in separate zones and checked on every read '.repeat(20);
  const candidate = (documentId: string, body = text): PublishCandidate => ({
    documentId,
    versionId: `v-${documentId}`,
    sourceId: 's',
    url: `https://x.example/${documentId}`,
    contentHash: 'h',
    textChars: body.length,
    text: body,
    chunks: [],
  });
  const report = (outcomes: Record<string, string>): PublishReport =>
    ({
      documents: Object.entries(outcomes).map(([documentId, outcome]) => ({
        documentId,
        versionId: `v-${documentId}`,
        outcome,
        reasons: [],
        chunks: 0,
      })),
    }) as unknown as PublishReport;
  const grouper = (records: DocumentRecord[] = []) =>
    new DuplicateGrouper({ records: { all: async () => records } } as never);

  it('starts from the groups the state records, and a copy joins them', async () => {
    const known = {
      documentId: 'old',
      sourceId: 's',
      url: 'u',
      status: 'healthy',
      statusReasons: [],
      currentChunkIds: [],
      currentVersionId: 'v',
      timestamps: {},
      fingerprint: simhash64(text),
      duplicateGroup: 'rf-dup:from-state',
    } satisfies DocumentRecord;
    const [c] = await grouper([known]).assign([candidate('new')]);
    expect(c!.duplicateGroup).toBe('rf-dup:from-state');
    expect(c!.fingerprint).toBe(simhash64(text));
  });

  it('gives the same groups to a batch whatever its order', async () => {
    const a = await grouper().assign([candidate('b'), candidate('a')]);
    const b = await grouper().assign([candidate('a'), candidate('b')]);
    const byId = (xs: PublishCandidate[]) =>
      Object.fromEntries(xs.map((x) => [x.documentId, x.duplicateGroup]));
    expect(byId(a)).toEqual(byId(b));
  });

  it('forgets an assignment whose version did not become current', async () => {
    const near = flip(A, 1);
    const run = async (outcome: string) => {
      const g = grouper();
      await g.assign([{ ...candidate('a'), fingerprint: A }]);
      await g.settle(report({ a: outcome }));
      const [b] = await g.assign([{ ...candidate('b'), fingerprint: near }]);
      return b!.duplicateGroup;
    };
    // Published: the copy joins a's group. Rejected or held: a is not what the store serves.
    expect(await run('published')).toBe(`${DUPLICATE_GROUP_PREFIX}${A}`);
    expect(await run('rejected-by-gate')).toBe(`${DUPLICATE_GROUP_PREFIX}${near}`);
    expect(await run('held')).toBe(`${DUPLICATE_GROUP_PREFIX}${near}`);
  });
});

const hit = (id: string, meta: Record<string, unknown>) => ({ id, meta });

describe('collapseDuplicateHits', () => {
  const base = (url: string, extra: Record<string, unknown>) => ({
    [FIELDS.url]: url,
    [FIELDS.title]: 'Replication',
    [FIELDS.heading]: 'Replication > Zones',
    [FIELDS.documentId]: `doc:${url}`,
    ...extra,
  });

  it('collapses the same chunk text under several URLs into one result citing each URL', () => {
    const hits = [
      hit('1', base('https://x.example/a', { [FIELDS.contentHash]: 'h1' })),
      hit('2', base('https://x.example/other', { [FIELDS.contentHash]: 'h2' })),
      hit('3', base('https://x.example/a/', { [FIELDS.contentHash]: 'h1' })),
    ];
    const out = collapseDuplicateHits(hits, (h) => h.meta);
    expect(out.map((g) => g.hit.id)).toEqual(['1', '2']);
    expect(out[0]!.citations.map((c) => c.url)).toEqual([
      'https://x.example/a',
      'https://x.example/a/',
    ]);
    expect(out[0]!.citations[0]!.heading).toBe('Replication > Zones');
  });

  it('collapses the same position of near-duplicate pages, transitively, at the best rank', () => {
    const hits = [
      hit('other', base('https://x.example/z', { [FIELDS.contentHash]: 'z' })),
      hit(
        'print',
        base('https://x.example/print/a', {
          [FIELDS.contentHash]: 'p0',
          [FIELDS.duplicateGroup]: 'rf-dup:g',
          [FIELDS.ordinal]: 0,
        }),
      ),
      hit(
        'a',
        base('https://x.example/a', {
          [FIELDS.contentHash]: 'a0',
          [FIELDS.duplicateGroup]: 'rf-dup:g',
          [FIELDS.ordinal]: 0,
        }),
      ),
      hit('slash', base('https://x.example/a/', { [FIELDS.contentHash]: 'a0' })),
      hit(
        'a1',
        base('https://x.example/a', {
          [FIELDS.contentHash]: 'a1',
          [FIELDS.duplicateGroup]: 'rf-dup:g',
          [FIELDS.ordinal]: 1,
        }),
      ),
    ];
    const out = collapseDuplicateHits(hits, (h) => h.meta);
    expect(out.map((g) => g.hit.id)).toEqual(['other', 'print', 'a1']);
    expect(out[1]!.members.map((m) => m.id)).toEqual(['print', 'a', 'slash']);
    expect(out[1]!.citations).toHaveLength(3);
  });

  it('with the texts, the same position merges only passages equal but for dates and times', () => {
    const at = (id: string, url: string, text: string) => ({
      ...hit(
        id,
        base(url, {
          [FIELDS.contentHash]: `h-${id}`,
          [FIELDS.duplicateGroup]: 'rf-dup:t',
          [FIELDS.ordinal]: 3,
        }),
      ),
      text,
    });
    const hits = [
      at('a', 'https://x.example/a', 'Plan Team: 12 seats. Updated March 3, 2026 at 10:15 am.'),
      at(
        'print',
        'https://x.example/a?print=1',
        'Plan  Team: 12 seats. Updated 2026-11-30 at 09:00.',
      ),
      at('b', 'https://x.example/b', 'Plan Team: 14 seats. Updated March 3, 2026 at 10:15 am.'),
    ];
    const withText = collapseDuplicateHits(
      hits,
      (h) => h.meta,
      (h) => h.text,
    );
    expect(withText.map((g) => g.members.map((m) => m.id))).toEqual([['a', 'print'], ['b']]);
    // Control: by position alone (no texts) the sibling whose number differs is merged too.
    expect(collapseDuplicateHits(hits, (h) => h.meta)).toHaveLength(1);
    expect(passageShape('Due 1 December 2026, 5:30 pm')).toBe(
      passageShape('Due Dec 2nd, 2026, 17:45'),
    );
    expect(passageShape('$12.99 per seat')).not.toBe(passageShape('$14.99 per seat'));
    expect(passageShape('version 1.2.10')).not.toBe(passageShape('version 1.2.11'));
  });

  it('leaves hits without the fields alone, and different groups apart', () => {
    const hits = [
      hit('1', { [FIELDS.url]: 'u1' }),
      hit('2', { [FIELDS.url]: 'u1' }),
      hit('3', base('u3', { [FIELDS.duplicateGroup]: 'rf-dup:a', [FIELDS.ordinal]: 0 })),
      hit('4', base('u4', { [FIELDS.duplicateGroup]: 'rf-dup:b', [FIELDS.ordinal]: 0 })),
    ];
    expect(collapseDuplicateHits(hits, (h) => h.meta)).toHaveLength(4);
  });
});
