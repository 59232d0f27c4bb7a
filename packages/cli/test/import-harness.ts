import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FIELDS } from '@ragfresh/core';
import { type ConnectorConfig, openRuntime, type Runtime, resolveConfig } from '../src/index.js';

export const BIN = resolve(import.meta.dirname, '../dist/bin.js');

export function writeConfig(dir: string, connector: ConnectorConfig): string {
  const file = join(dir, 'ragfresh.config.mjs');
  writeFileSync(
    file,
    `export default ${JSON.stringify({
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: join(dir, 'data'),
      sources: [
        { id: 'docs', urls: ['https://docs.example.org/'], identity: { mode: 'normalize' } },
      ],
      connector,
      embeddings: { kind: 'hashing', dimensions: 64 },
    })};\n`,
  );
  return file;
}

export function cli(args: string[], cwd: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Environment of a CLI process a test SIGKILLs: a 5 s publish lease instead of a minute, so the
 * run after the kill waits seconds, not a minute, for the dead holder's lease to expire.
 */
export const SHORT_LEASE = { RAGFRESH_LEASE_TTL_MS: '5000' } as const;

/** Runs the CLI again while a killed process's publisher lease has not expired yet (LEASE_HELD). */
export async function cliAfterKill(args: string[], cwd: string) {
  for (;;) {
    const r = cli(args, cwd);
    if (!/LEASE_HELD|holds the publish lease/.test(r.stderr)) return r;
    await new Promise((res) => setTimeout(res, 500));
  }
}

export function start(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): { child: ChildProcess; out: { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => {
    out.stdout += String(d);
  });
  child.stderr!.on('data', (d) => {
    out.stderr += String(d);
  });
  return { child, out };
}

export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  tries = 600,
): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gave up waiting for ${what}`);
}

export async function readOnly(configFile: string): Promise<Runtime> {
  const mod = (await import(configFile)) as { default: unknown };
  return openRuntime(resolveConfig(mod.default), { role: 'read' });
}

/** Chunks of the current view of one document. */
export async function visible(rt: Runtime, documentId: string) {
  const epoch = await rt.connector.readEpoch();
  return (await rt.connector.listChunks(documentId))
    .filter(
      (c) => Number(c.metadata[FIELDS.from]) <= epoch && epoch < Number(c.metadata[FIELDS.to]),
    )
    .sort((a, b) => (a.id < b.id ? -1 : 1));
}
