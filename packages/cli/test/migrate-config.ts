import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The config a migration test rewrites between runs (the same site, store and settings, other
 * embeddings): `write(embeddings)` writes `<dir>/ragfresh.config.mjs`, `args` passes it to the CLI.
 */
export function migrationConfig(
  dir: string,
  sitemap: string,
  connector: object,
): { readonly args: readonly string[]; write(embeddings: object): void } {
  const file = join(dir, 'ragfresh.config.mjs');
  return {
    args: ['--config', file],
    write(embeddings) {
      writeFileSync(
        file,
        `export default ${JSON.stringify({
          userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
          dataDir: join(dir, '.ragfresh'),
          sources: [{ id: 'docs', sitemaps: [sitemap] }],
          connector,
          embeddings,
          retireGrace: 0,
          fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
        })};\n`,
      );
    },
  };
}
