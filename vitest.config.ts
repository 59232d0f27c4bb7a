import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['ragfresh-source'] },
  ssr: { resolve: { conditions: ['ragfresh-source'] } },
  test: {
    include: [
      '{packages,connectors,examples}/*/test/**/*.test.ts',
      'conformance/test/**/*.test.ts',
      'emulators/test/**/*.test.ts',
    ],
    exclude: ['**/node_modules/**', '**/dist/**'],
    // Hang guards, not performance bounds (timings belong in benchmarks): under load on two
    // shared cores the sim scale test alone took over 60 s.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
