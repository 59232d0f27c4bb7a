import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const BIN = resolve(import.meta.dirname, '../dist/bin.js');

/**
 * Runs the built CLI without blocking the event loop (a test may serve an emulator or a
 * simulated site from its own process meanwhile).
 */
export function runCli(
  args: readonly string[],
  cwd: string,
  timeout = 180_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, timeout });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

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
