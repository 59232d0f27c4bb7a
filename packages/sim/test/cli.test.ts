import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

function run(args: string[]) {
  if (!existsSync(cli))
    throw new Error(`${cli} is missing: run \`pnpm exec tsc -b packages/sim\` first`);
  return spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('cli (built dist/cli.js)', () => {
  it('starts the sim, prints one origin per host, serves, and stops on SIGTERM', async () => {
    const child = run(['--hosts', '2', '--pages', '3', '--seed', '4']);
    let out = '';
    const origins = await new Promise<string[]>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ctrl-C'))
          resolve(
            [...out.matchAll(/^docs-\d+\s+(http:\/\/127\.0\.0\.1:\d+)/gm)].map(
              (m) => m[1] as string,
            ),
          );
      });
      child.once('exit', (code) => reject(new Error(`cli exited early with ${code}: ${out}`)));
    });
    expect(out).toContain('seed 4, 6 pages');
    expect(origins).toHaveLength(2);
    const res = await fetch(`${origins[1]}/sitemap.xml`);
    expect(res.status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('rejects a bad option with one line and exit code 1', async () => {
    const child = run(['--hosts', 'many']);
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(err.trim().split('\n')).toEqual([
      'ragfresh-sim: --hosts must be an integer, got "many"',
    ]);
  });
});
