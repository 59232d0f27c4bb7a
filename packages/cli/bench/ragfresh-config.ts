import { BENCH_DIMENSIONS } from './counting-embeddings.ts';

/**
 * The ragfresh config of the bench, as plain JSON: the phase processes resolve it (with a
 * counting embedder in place of `embeddings`), and the CLI start measurement reads it from a
 * file with `--config`. The sim serves on loopback, so private networks are allowed; no
 * politeness delay, 32 requests in flight, 4 per host, robots.txt honoured.
 */
export function benchConfig(dataDir: string, sitemaps: readonly string[]): Record<string, unknown> {
  return {
    userAgent: 'ragfresh-bench/0.1 (+https://example.org/bot)',
    dataDir,
    sources: sitemaps.map((s, i) => ({ id: `host-${i}`, sitemaps: [s] })),
    embeddings: { kind: 'hashing', dimensions: BENCH_DIMENSIONS },
    fetch: {
      minIntervalMs: 0,
      allowPrivateNetworks: true,
      globalConcurrency: 32,
      perHostConcurrency: 4,
    },
    // BOILERPLATE=0 measures the engine without per-host boilerplate learning.
    ...(process.env.BOILERPLATE === '0' ? { boilerplate: false } : {}),
  };
}
