import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds per test file in a full run on the 2-core machine (scripts/test-durations.mjs writes
 * it from a JSON report). Only an order: nothing asserts a time.
 */
const DURATIONS = JSON.parse(
  readFileSync(new URL('./scripts/test-durations.json', import.meta.url), 'utf8'),
) as Record<string, number>;

/**
 * Longest file first, so the workers finish together instead of one running a long file
 * alone at the end. vitest's own order needs the results cache of an earlier run; a fresh clone
 * (CI) has none and would start the largest files by bytes, which are not the slow ones. The
 * cache still wins where it exists (a failed file first, then its last duration); a file in
 * neither runs after the known ones.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const weight = (spec: TestSpecification): [number, number] => {
      const path = relative(root, spec.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${path}`);
      if (cached !== undefined) return [cached.failed ? 1 : 0, cached.duration / 1000];
      return [0, DURATIONS[path] ?? 0];
    };
    const weights = new Map(files.map((f) => [f, weight(f)]));
    return [...files].sort((a, b) => {
      const [fa, da] = weights.get(a)!;
      const [fb, db] = weights.get(b)!;
      return fb - fa || db - da || (a.moduleId < b.moduleId ? -1 : 1);
    });
  }
}

const TEST_FILES = [
  '{packages,connectors,examples}/*/test/**/*.test.ts',
  'conformance/test/**/*.test.ts',
  'emulators/test/**/*.test.ts',
  'scripts/test/**/*.test.ts',
];
const EXCLUDED = ['**/node_modules/**', '**/dist/**'];
/** Real backends, servers, child processes, the shared suite (DEVELOPERS.md, test file names). */
const NOT_UNIT = ['**/*.int.test.ts', '**/*.conformance.test.ts'];

export default defineConfig({
  resolve: { conditions: ['ragfresh-source'] },
  ssr: { resolve: { conditions: ['ragfresh-source'] } },
  test: {
    exclude: EXCLUDED,
    // `vitest run` runs both; `--project unit` is the quick loop (in-process code, no server, no
    // child process, no shared suite): under a minute on the 2-core machine.
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: TEST_FILES,
          exclude: NOT_UNIT,
          // Each worker imports the workspace sources once for all its files instead of once
          // per file: importing was half the project's time (import 110 s vs tests 126 s,
          // summed over files). Unit files hold no process-wide state (no vi.mock, env stubs
          // or fake timers); a test about first-load behaviour imports a fresh graph
          // (vi.resetModules, packages/extract/test/tokens-lazy.test.ts).
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: TEST_FILES.flatMap((glob) =>
            NOT_UNIT.map((suffix) => glob.replace('**/*.test.ts', suffix)),
          ),
        },
      },
    ],
    // Hang guards, not performance bounds (timings belong in benchmarks): under load on two
    // shared cores the sim scale test alone took over 60 s.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    fileParallelism: true,
    // Three forks on two cores: a third of the suite's time is spent waiting (emulated store
    // lags, claim expiries, child processes), so a third worker fills those waits. No test
    // asserts a wall-clock bound (DEVELOPERS.md), so the extra load only stretches waits.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
  },
});
