import { isRagfreshError, Publisher } from '@ragfresh/core';
import type { ConformanceCase } from '../types.js';

const SUFFIX = 'dropcase';

/**
 * A namespace beside the case's (`forNamespace`) is dropped from the store (`dropNamespace`):
 * opened again it is a fresh namespace, empty at epoch 0, and the case's own namespace keeps its
 * chunks and its epoch. What a migration to other dimensions does with the namespace it retired.
 */
export const dropNamespace: ConformanceCase = {
  id: 'drop-namespace',
  title: 'a dropped namespace is gone from the store, the one beside it untouched',
  guarantee:
    'With dropNamespace, dropping a namespace opened by forNamespace removes its chunks and its epoch record: opened again it is empty at epoch 0, while the namespace beside it keeps its chunks and epoch.',
  whenItFails:
    "_dropNamespace must remove this connector's own tables / collections / files, its epoch record included, and nothing of another namespace.",
  appliesTo: (c) => c.namespaces === true && c.dropNamespace === true,
  declared: () => 'dropped: empty at epoch 0; neighbour kept',
  async run(ctx) {
    const base = await ctx.connector();
    const keptDoc = ctx.corpus.generated('kept', 'v1', 3);
    const goneDoc = ctx.corpus.generated('gone', 'v1', 4);
    const kept = await ctx.publisher();
    await kept.publish([keptDoc]);
    await kept.close();
    const baseEpoch = await base.readEpoch();

    const other = base.forNamespace(SUFFIX);
    await other.open({ dimensions: ctx.dimensions });
    const publisher = await Publisher.open({
      connector: other,
      state: ctx.memoryState(),
      namespace: SUFFIX,
    });
    try {
      await publisher.publish([goneDoc]);
    } finally {
      await publisher.close();
    }
    const stored = (await other.listChunks(goneDoc.documentId)).length;
    const otherEpoch = await other.readEpoch();
    ctx.check(stored === 4, `before the drop the other namespace holds ${stored} of 4 chunks`);
    await ctx.time('drop', () => other.dropNamespace());
    const closed = await other.readEpoch().then(
      () => false,
      (err: unknown) => isRagfreshError(err, 'NOT_OPEN'),
    );
    ctx.check(closed, 'the dropped connector is still open after dropNamespace');

    const again = base.forNamespace(SUFFIX);
    await again.open({ dimensions: ctx.dimensions });
    let left: number;
    let epoch: number;
    try {
      left = (await again.listChunks(goneDoc.documentId)).length;
      epoch = await again.readEpoch();
    } finally {
      await again.close();
    }
    ctx.check(left === 0, `opened again, the dropped namespace holds ${left} chunks, expected 0`);
    ctx.check(epoch === 0, `opened again, the dropped namespace is at epoch ${epoch}, expected 0`);

    const reader = await ctx.openAnotherConnector();
    const neighbour = (await reader.listChunks(keptDoc.documentId)).length;
    const neighbourEpoch = await reader.readEpoch();
    ctx.check(neighbour === 3, `the namespace beside it holds ${neighbour} of its 3 chunks`);
    ctx.check(
      neighbourEpoch === baseEpoch,
      `the namespace beside it is at epoch ${neighbourEpoch}, expected ${baseEpoch}`,
    );
    ctx.observed(
      `dropped ${stored} chunks at epoch ${otherEpoch}: reopened ${left} at epoch ${epoch}; neighbour ${neighbour} at epoch ${neighbourEpoch}`,
    );
  },
};
