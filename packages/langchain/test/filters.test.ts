import { Document } from '@langchain/core/documents';
import { inView, OPEN_EPOCH } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { currentViewFilter } from '../src/index.js';

describe('currentViewFilter', () => {
  it('speaks each store dialect for the epoch view', () => {
    const view = { epoch: 7 };
    expect(currentViewFilter('chroma', view)).toEqual({
      $and: [{ rf_from: { $lte: 7 } }, { rf_to: { $gt: 7 } }],
    });
    expect(currentViewFilter('qdrant', view)).toEqual({
      must: [
        { key: 'metadata.rf_from', range: { lte: 7 } },
        { key: 'metadata.rf_to', range: { gt: 7 } },
      ],
    });
    expect(currentViewFilter('pinecone', view)).toEqual({
      rf_from: { $lte: 7 },
      rf_to: { $gt: 7 },
    });
    expect(currentViewFilter('pgvector', view)).toEqual({ rf_from: { lte: 7 }, rf_to: { gt: 7 } });
    expect(currentViewFilter('lancedb', view)).toBe('rf_from <= 7 AND rf_to > 7');
  });

  it('speaks each store dialect for the flag view', () => {
    expect(currentViewFilter('chroma', 'flag')).toEqual({ rf_current: { $eq: true } });
    expect(currentViewFilter('qdrant', 'flag')).toEqual({
      must: [{ key: 'metadata.rf_current', match: { value: true } }],
    });
    expect(currentViewFilter('pinecone', 'flag')).toEqual({ rf_current: { $eq: true } });
    expect(currentViewFilter('pgvector', 'flag')).toEqual({ rf_current: true });
    expect(currentViewFilter('lancedb', 'flag')).toBe('rf_current = true');
  });

  it('the memory predicate agrees with core inView on the interval edges', () => {
    for (const [from, to] of [
      [1, OPEN_EPOCH],
      [3, 5],
      [5, 6],
      [6, OPEN_EPOCH],
    ] as const) {
      const meta = { rf_from: from, rf_to: to, rf_current: false };
      for (const epoch of [0, 2, 3, 4, 5, 6, 7]) {
        const doc = new Document({ pageContent: '', metadata: meta });
        expect(currentViewFilter('memory', { epoch })(doc)).toBe(
          inView(meta, { kind: 'epoch', epoch }),
        );
      }
    }
  });

  it('refuses a bad epoch and an unknown store with INVALID_ARGUMENT', () => {
    expect(() => currentViewFilter('chroma', { epoch: -1 })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() => currentViewFilter('weaviate' as 'chroma', { epoch: 1 })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });
});

describe('accessFilter: the reader scope in each dialect, ANDed with the view', () => {
  it('is list membership of public and the groups, inside the store filter', async () => {
    const { combineFilters } = await import('../src/filters.js');
    expect(combineFilters('qdrant', { epoch: 3 }, undefined, ['hr'])).toEqual({
      must: [
        { key: 'metadata.rf_from', range: { lte: 3 } },
        { key: 'metadata.rf_to', range: { gt: 3 } },
        { key: 'metadata.rf_access', match: { any: ['*', 'hr'] } },
      ],
    });
    expect(combineFilters('pinecone', 'flag', undefined, [])).toEqual({
      $and: [{ rf_current: { $eq: true } }, { rf_access: { $in: ['*'] } }],
    });
    expect(combineFilters('pgvector', 'flag', { lang: 'en' }, ['b', 'a'])).toEqual({
      lang: 'en',
      rf_access: { arrayContains: ['*', 'a', 'b'] },
      rf_current: true,
    });
    expect(combineFilters('chroma', 'flag', undefined, ['hr'])).toEqual({
      $and: [
        { rf_current: { $eq: true } },
        { $or: [{ 'rf_access.*': { $eq: true } }, { 'rf_access.hr': { $eq: true } }] },
      ],
    });
    expect(combineFilters('lancedb', { epoch: 1 }, undefined, ['hr'])).toBe(
      "(rf_from <= 1 AND rf_to > 1) AND (array_has_any(rf_access, make_array('*', 'hr')))",
    );
    // Group names are checked, so none can carry a quote into the SQL.
    expect(() => combineFilters('lancedb', 'flag', undefined, ["o'k"])).toThrow(/not a group name/);
  });
});
