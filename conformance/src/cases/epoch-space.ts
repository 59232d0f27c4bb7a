import type { ConformanceCase } from '../types.js';

const FIRST = 'es_conformance1';
const SECOND = 'es_conformance2';

/**
 * The epoch record names the embedding space (connectors with `epochSpace`): each move writes
 * its publisher's space beside the epoch, a second client reads it from the store alone, a move
 * in another space names that one, and a move that names none leaves it.
 */
export const epochSpace: ConformanceCase = {
  id: 'epoch-space',
  title: "the store's epoch record names the space of the published view",
  guarantee:
    "With epochSpace, a publisher's epoch move keeps its embedding space in the epoch record; another connector instance reads it back from the store alone; a move in another space names that one and a move naming none keeps it.",
  whenItFails:
    '_advanceEpoch must write its space argument into the epoch record (row, point or document) in the same conditional write as the epoch, and keep the stored one when given none; _readEpochSpace must read the store, not a field cached in the connector.',
  appliesTo: (c) => c.epochSpace === true,
  declared: () => 'epoch record names the space',
  async run(ctx) {
    const state = ctx.memoryState();
    const connector = await ctx.connector();
    const reader = await ctx.openAnotherConnector();
    const publishIn = async (spaceId: string | undefined, version: string) => {
      const publisher = await ctx.publisher({
        state,
        ...(spaceId === undefined ? {} : { spaceId }),
      });
      try {
        await publisher.publish([ctx.corpus.generated('spaced', version, 2)]);
      } finally {
        await publisher.close();
      }
      return connector.readEpoch();
    };
    const expectRead = async (label: string, epoch: number, space: string) => {
      let read: string | undefined;
      await ctx.eventually(label, async () => {
        read = await reader.readEpochSpace();
        const readerEpoch = await reader.readEpoch();
        ctx.observe(`${label}Space`, read ?? 'none');
        ctx.check(
          readerEpoch === epoch,
          `a second client reads epoch ${readerEpoch}, expected ${epoch}`,
        );
        ctx.check(
          read === space,
          `after ${label}, a second client reads space ${read ?? 'none'} from the epoch record, expected ${space}`,
        );
      });
      return read;
    };
    ctx.check(
      (await reader.readEpochSpace()) === undefined,
      'a namespace no move has named a space for names none',
    );
    const e1 = await publishIn(FIRST, 'v1');
    await expectRead('first', e1, FIRST);
    const e2 = await publishIn(SECOND, 'v2');
    await expectRead('second', e2, SECOND);
    const e3 = await publishIn(undefined, 'v3');
    const kept = await expectRead('unnamed', e3, SECOND);
    ctx.observed(`epochs ${e1}, ${e2}, ${e3} named ${FIRST}, ${SECOND}, ${kept ?? 'none'}`);
  },
};
