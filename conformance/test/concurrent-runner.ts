import { CASES, type TestRunner } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';

/**
 * Cases that run alone: the sentinels open and close the run (CASES order), and the cases whose
 * outcome depends on how their own steps are timed on the test process's event loop, which the
 * other cases' work would shift:
 * - verify-within-lag measures the store's lag by polling;
 * - paused-publisher's publisher A must finish its steps within a 300 ms lease on immediate
 *   stores before it pauses (measured: beside four other cases it lost the lease early on
 *   Chroma, LanceDB and faulty Qdrant, and the case hung to its 120 s timeout);
 * - the embedding migrations count a polling reader's answers on each side of the move
 *   (measured: faulty Qdrant beside other cases, 10 old and 4 new, 5 of each required: a read
 *   in flight at the move is counted after it).
 */
const ALONE = [
  CASES[0]!.id,
  'verify-within-lag',
  'paused-publisher',
  'embedding-migration',
  'embedding-migration-new-dimensions',
  CASES[CASES.length - 1]!.id,
];
for (const id of ALONE) {
  if (!CASES.some((c) => c.id === id)) throw new Error(`concurrent-runner: no case ${id}`);
}

type Case = Parameters<TestRunner['it']>;
let registering: Case[] | undefined;

/**
 * The vitest runner for `runConformanceSuite` in ragfresh's own conformance files. The cases
 * not in ALONE are registered with `it.concurrent`, so up to vitest's `maxConcurrency` (5) of
 * them share the started target at once. Each case works in a namespace of its own; a suite
 * against a lagging or faulty target spends most of its time waiting (lease expiries, the
 * declared lag, retries, crash children), and those waits now overlap instead of adding up.
 * The order changes, nothing else: `sentinel-empty` first on the fresh target, then the other
 * ALONE cases one by one with nothing else in flight, then every concurrent case as one group
 * (vitest runs consecutive concurrent tests together), `sentinel-isolated` last, after every
 * other case finished. The CLI (`runSuite`) and the committed reports still run the cases one
 * by one in CASES order.
 */
export const concurrentRunner: TestRunner = {
  describe(name, fn) {
    describe(name, () => {
      registering = [];
      fn();
      const cases = registering;
      registering = undefined;
      const idOf = (c: Case) => c[0].slice(0, c[0].indexOf(':'));
      const first = cases.filter((c) => idOf(c) === ALONE[0]);
      const last = cases.filter((c) => idOf(c) === ALONE[ALONE.length - 1]);
      const alone = cases.filter((c) => ALONE.slice(1, -1).includes(idOf(c)));
      const together = cases.filter((c) => !ALONE.includes(idOf(c)));
      for (const c of [...first, ...alone]) it(...c);
      for (const c of together) it.concurrent(...c);
      for (const c of last) it(...c);
    });
  },
  beforeAll,
  afterAll,
  it(...c) {
    if (registering === undefined) throw new Error('concurrentRunner: it() outside describe()');
    registering.push(c);
  },
};
