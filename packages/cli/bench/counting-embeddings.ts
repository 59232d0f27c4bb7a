/** Vector size of every embedding in the bench (both pipelines, the same hashing embedder). */
export const BENCH_DIMENSIONS = 256;
