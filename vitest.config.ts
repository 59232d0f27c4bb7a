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
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
