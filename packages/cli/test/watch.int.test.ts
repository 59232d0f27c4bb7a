import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSimWeb } from '@ragfresh/sim';
import { expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../dist/bin.js');

it('watch refreshes on schedule, serves Prometheus metrics, and stops cleanly on SIGTERM', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-watch-'));
  const sim = await startSimWeb({ seed: 3, hosts: 1, pagesPerHost: 4 });
  const config = join(dir, 'ragfresh.config.mjs');
  writeFileSync(
    config,
    `export default ${JSON.stringify({
      userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
      dataDir: join(dir, 'data'),
      sources: [{ id: 'w', urls: sim.urls(), every: '1s' }],
      embeddings: { kind: 'hashing', dimensions: 64 },
      fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
    })};\n`,
  );
  const child = spawn(process.execPath, [BIN, 'watch', '--config', config, '--metrics-port', '0'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  try {
    const metricsUrl = await new Promise<string>((resolveUrl, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no metrics URL; stderr: ${stderr}`)),
        30_000,
      );
      child.stderr.on('data', (d) => {
        stderr += d;
        const m = /"url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolveUrl(m[1]!);
        }
      });
    });
    // Two scheduled passes at a 1 s interval: the second one is all 304s.
    let text = '';
    for (let i = 0; i < 60; i++) {
      text = await (await fetch(metricsUrl)).text();
      if (/ragfresh_fetches_total\{[^}]*outcome="not-modified"[^}]*\} [1-9]/.test(text)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(text).toMatch(/# TYPE ragfresh_fetches_total counter/);
    expect(text).toMatch(/ragfresh_fetches_total\{[^}]*outcome="ok"[^}]*\} 4/);
    expect(text).toMatch(/ragfresh_fetches_total\{[^}]*outcome="not-modified"[^}]*\} [1-9]/);
    expect(text).toMatch(/ragfresh_objective_met\{source="w"\} 1/);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/"event":"shutdown-requested"/);
    expect(stderr).toMatch(/"event":"stopped"/);
    expect(stdout).toMatch(/published/);
  } finally {
    child.kill('SIGKILL');
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);
