import { type Connector, isRagfreshError, Publisher } from '@ragfresh/core';
import type { CaseContext, ConformanceCase } from '../types.js';

/** Rounds of the race: each is one epoch move two publishers both try to make. */
const ROUNDS = 5;

type Outcome = 'won' | 'conflict' | 'error';

async function attempt(
  connector: Connector,
  expected: number,
): Promise<{ outcome: Outcome; detail?: string }> {
  try {
    await connector.advanceEpoch(expected, expected + 1);
    return { outcome: 'won' };
  } catch (err) {
    if (isRagfreshError(err, 'EPOCH_CONFLICT')) return { outcome: 'conflict' };
    return { outcome: 'error', detail: err instanceof Error ? err.message : String(err) };
  }
}

/** Waits until `reader` reads `epoch` (eventual stores), so every round starts from one value. */
async function settledEpoch(ctx: CaseContext, reader: Connector, epoch: number): Promise<number> {
  let seen = -1;
  await ctx.eventually(`epoch ${epoch} readable`, async () => {
    seen = await reader.readEpoch();
    ctx.check(seen === epoch, `a second client reads epoch ${seen}, expected ${epoch}`);
  });
  return seen;
}

export const epochRace: ConformanceCase = {
  id: 'epoch-race',
  title: 'two publishers race one epoch move: exactly one wins',
  guarantee:
    'With the publisher lease bypassed, two connector instances on one namespace call advanceEpoch(E, E + 1) at the same moment, 5 times: for an `exclusive` epoch claim exactly one call succeeds and the other fails with EPOCH_CONFLICT every time, and a late third attempt of an already-made move (a stale publisher) fails with EPOCH_CONFLICT. A `lease-only` store declares that only the lease protects it; the case then reports what the race did and checks that a second publisher on the same state is refused the lease (LEASE_HELD).',
  whenItFails:
    "_advanceEpoch must be a compare-and-set whose winner is decided by the store, not by a read-back of the value: both racers write the same `next`, so reading `next` back proves nothing. Write a claim only the winner's write can leave (a token in the same conditional write, a row count, an insert-if-absent), read it back, and never treat 'the store already holds next' as success. If the store offers no such write, declare epochClaim: 'lease-only'.",
  appliesTo: (c) => c.epochInStore,
  declared: (c) =>
    (c.epochClaim ?? 'exclusive') === 'exclusive'
      ? 'exclusive: 1 winner per race, stale move refused'
      : 'lease-only: races reported, the lease is required',
  timeoutMs: 180_000,
  async run(ctx) {
    const claim = ctx.capabilities.epochClaim ?? 'exclusive';
    ctx.check(
      claim === 'exclusive' || claim === 'lease-only',
      `epochClaim ${JSON.stringify(claim)} is neither 'exclusive' nor 'lease-only'`,
    );
    const exclusive = claim === 'exclusive';
    const a = await ctx.connector();
    const b = await ctx.openAnotherConnector();
    let epoch = await a.readEpoch();
    const winners: number[] = [];
    let doubleWins = 0;
    let staleAccepted = 0;
    let errors = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await settledEpoch(ctx, b, epoch);
      const results = await Promise.all([attempt(a, epoch), attempt(b, epoch)]);
      const won = results.filter((r) => r.outcome === 'won').length;
      winners.push(won);
      for (const r of results) {
        if (r.outcome === 'error') {
          errors += 1;
          ctx.check(
            false,
            `round ${round + 1}: a racer failed with ${r.detail}, not EPOCH_CONFLICT`,
          );
        }
      }
      if (won === 2) doubleWins += 1;
      if (exclusive) {
        ctx.check(
          won === 1,
          `round ${round + 1} (${epoch} -> ${epoch + 1}): ${won} of 2 racers succeeded, expected exactly 1`,
        );
      }
      if (won === 0) {
        ctx.check(false, `round ${round + 1}: neither racer moved epoch ${epoch}`);
        break;
      }
      epoch += 1;
      await settledEpoch(ctx, a, epoch);
      // A publisher that read the old epoch before the race tries the same move late.
      const stale = await attempt(b, epoch - 1);
      if (stale.outcome === 'won') staleAccepted += 1;
      if (exclusive) {
        ctx.check(
          stale.outcome === 'conflict',
          `round ${round + 1}: a stale advanceEpoch(${epoch - 1}, ${epoch}) after the move ${stale.outcome === 'won' ? 'succeeded' : `failed with ${stale.detail}`}, expected EPOCH_CONFLICT`,
        );
      }
    }
    if (!exclusive) {
      // The declaration says only the publisher lease protects the epoch: it must hold.
      const state = ctx.memoryState();
      const first = await ctx.publisher({ state, holder: 'race-a' });
      const second = await Publisher.open({ connector: b, state, holder: 'race-b' }).then(
        async (p) => {
          await p.close();
          return 'opened';
        },
        (err: unknown) => (isRagfreshError(err, 'LEASE_HELD') ? 'LEASE_HELD' : String(err)),
      );
      ctx.observe('secondPublisher', second);
      ctx.check(
        second === 'LEASE_HELD',
        `declared lease-only, but a second publisher on the same state ${second === 'opened' ? 'opened while the first held the lease' : `failed with ${second}`}`,
      );
      await first.close();
    }
    const final = await settledEpoch(ctx, b, epoch);
    ctx.observe('winnersPerRound', winners);
    ctx.observe('doubleWins', doubleWins);
    ctx.observe('staleAccepted', staleAccepted);
    ctx.observe('errors', errors);
    ctx.observe('finalEpoch', final);
    ctx.observed(
      `${exclusive ? 'exclusive' : 'lease-only'}: winners per round ${winners.join(',')}; ${doubleWins} double win(s), ${staleAccepted} stale move(s) accepted`,
    );
  },
};
