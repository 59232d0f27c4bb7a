import { MemoryConnector } from '@ragfresh/connector-memory';
import { describe, expect, it } from 'vitest';
import {
  decodeChunkMetadata,
  FIELDS,
  InMemoryStateStore,
  type PublishCandidate,
  Publisher,
} from '../src/index.js';
import { candidate, DIMS } from './support.js';

/** A candidate carrying a fingerprint and a near-duplicate group, as the engine's queue makes it. */
function grouped(c: PublishCandidate, fingerprint: string, group: string): PublishCandidate {
  return {
    ...c,
    fingerprint,
    duplicateGroup: group,
    chunks: c.chunks.map((ch) => ({ ...ch, duplicateGroup: group })),
  };
}

describe('near-duplicate facts through the publish protocol (additive rf_dup)', () => {
  it('rf_dup is stored on every chunk and decoded; the record keeps fingerprint and group', async () => {
    const connector = new MemoryConnector();
    await connector.open({ dimensions: DIMS });
    const state = new InMemoryStateStore();
    const publisher = await Publisher.open({ connector, state });
    const c = grouped(
      candidate('docs', 'https://e.com/a', ['one passage', 'another']),
      '0123456789abcdef',
      'rf-dup:0123456789abcdef',
    );
    await publisher.publish([c]);
    const listed = await connector.listChunks(c.documentId, c.versionId);
    expect(listed.map((l) => l.metadata[FIELDS.duplicateGroup])).toEqual([
      'rf-dup:0123456789abcdef',
      'rf-dup:0123456789abcdef',
    ]);
    expect(decodeChunkMetadata(listed[0]!.metadata).duplicateGroup).toBe('rf-dup:0123456789abcdef');
    const record = await state.getDocument(c.documentId);
    expect(record?.fingerprint).toBe('0123456789abcdef');
    expect(record?.duplicateGroup).toBe('rf-dup:0123456789abcdef');
    // Without a group nothing is written: the layout of other writers is unchanged.
    const plain = candidate('docs', 'https://e.com/b', ['plain']);
    await publisher.publish([plain]);
    const [p] = await connector.listChunks(plain.documentId, plain.versionId);
    expect(FIELDS.duplicateGroup in p!.metadata).toBe(false);
    expect(decodeChunkMetadata(p!.metadata).duplicateGroup).toBeUndefined();
    await publisher.close();
  });

  it('a crash after promotion rolls the new fingerprint and group forward with the version', async () => {
    const connector = new MemoryConnector();
    await connector.open({ dimensions: DIMS });
    const state = new InMemoryStateStore();
    const a = grouped(
      candidate('docs', 'https://e.com/p', ['first']),
      'aaaaaaaaaaaaaaaa',
      'rf-dup:a',
    );
    const first = await Publisher.open({ connector, state, leaseTtlMs: 30 });
    await first.publish([a]);
    await first.close();
    const crashing = await Publisher.open({
      connector,
      state,
      leaseTtlMs: 30,
      hooks: {
        beforeStep: (s) => {
          if (s === 'promoted') throw new Error('simulated crash before promoted');
        },
      },
    });
    const b = grouped(
      candidate('docs', 'https://e.com/p', ['second']),
      'bbbbbbbbbbbbbbbb',
      'rf-dup:b',
    );
    await expect(crashing.publish([b])).rejects.toThrow(/simulated crash/);
    // The epoch moved, the record was not written yet: only the journal knows b's facts.
    expect((await state.getDocument(a.documentId))?.duplicateGroup).toBe('rf-dup:a');
    await new Promise((r) => setTimeout(r, 40));
    const recovering = await Publisher.open({ connector, state });
    const record = await state.getDocument(a.documentId);
    expect(record?.currentVersionId).toBe(b.versionId);
    expect(record?.fingerprint).toBe('bbbbbbbbbbbbbbbb');
    expect(record?.duplicateGroup).toBe('rf-dup:b');
    await recovering.close();
  });
});
