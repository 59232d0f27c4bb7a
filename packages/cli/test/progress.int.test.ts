import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  const stream = {
    isTTY,
    write: (s: string) => chunks.push(s) > 0,
  } as unknown as NodeJS.WriteStream;
  return { stream, chunks };
}

describe('progress logger', () => {
  it('not a TTY: one JSON line per interval, never more often, with totals and counts', () => {
    let t = 0;
    const { stream, chunks } = sink(false);
    const log = createLogger({ stream, progressIntervalMs: 10_000, now: () => t });
    for (let done = 1; done <= 30; done++) {
      t += 1_000; // one page a second: a line at 10 s, 20 s, 30 s
      log.progress('docs', done, 30, { notModified: done - 1, published: 1, fetchErrors: 0 });
    }
    const lines = chunks.map((c) => JSON.parse(c) as Record<string, unknown>);
    expect(lines.map((l) => [l.event, l.done, l.total])).toEqual([
      ['progress', 10, 30],
      ['progress', 20, 30],
      ['progress', 30, 30],
    ]);
    expect(lines[2]).toMatchObject({
      notModified: 29,
      published: 1,
      errors: 0,
      sources: { docs: '30/30' },
    });
  });

  it('a TTY: one line redrawn in place, several sources and counts', () => {
    let t = 0;
    const { stream, chunks } = sink(true);
    const log = createLogger({ stream, now: () => (t += 1_000) });
    log.progress('docs', 1, 2, { notModified: 1, published: 0, fetchErrors: 0 });
    log.progress('blog', 2, 2, { notModified: 0, published: 2, fetchErrors: 1 });
    log.done();
    expect(chunks.at(-2)).toBe(
      '\r\x1b[2K  pages 3/4 · docs 1/2 · blog 2/2 · 304 1 · published 2 · errors 1',
    );
    expect(chunks.at(-1)).toBe('\r\x1b[2K');
    expect(chunks.join('')).not.toContain('\n');
  });

  it('a heartbeat: a JSON line off a TTY, the progress line with the slowest page on one', () => {
    const beat = {
      inFlight: 2,
      slowestUrl: 'https://docs.example.org/hung',
      slowestSource: 'docs',
      slowestMs: 31_800,
      done: 4,
      total: 6,
    };
    const off = sink(false);
    createLogger({ stream: off.stream, heartbeatMs: 50 }).heartbeat(beat);
    expect(off.chunks.map((c) => JSON.parse(c) as Record<string, unknown>)).toMatchObject([
      { event: 'heartbeat', ...beat },
    ]);
    const on = sink(true);
    const tty = createLogger({ stream: on.stream, now: () => 0 });
    tty.progress('docs', 4, 6);
    tty.heartbeat(beat);
    expect(on.chunks.at(-1)).toBe(
      '\r\x1b[2K  pages 4/6 · 2 in flight, slowest https://docs.example.org/hung 31.8s',
    );
    const quiet = sink(false);
    createLogger({ stream: quiet.stream, quiet: true }).heartbeat(beat);
    expect(quiet.chunks).toEqual([]);
  });

  it('--quiet silences progress on a TTY and off it', () => {
    for (const tty of [true, false]) {
      const { stream, chunks } = sink(tty);
      const log = createLogger({ stream, quiet: true, progressIntervalMs: 0 });
      log.progress('docs', 1, 1);
      log.info('something');
      expect(chunks).toEqual([]);
    }
  });
});

// The built CLI on a simulated site, stderr a pipe (not a TTY), as under cron or CI.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { timeout: 120_000, env: { ...process.env, ...env } },
      (err, stdout, stderr) => {
        done({
          code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
          stdout,
          stderr,
        });
      },
    );
  });
}

describe('progress of a non-TTY refresh through the CLI', () => {
  let sim: SimWeb;
  let dir: string;
  let pages: string[];
  const config = () => {
    const file = join(dir, `ragfresh-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, `data-${Math.random().toString(36).slice(2)}`),
        sources: [{ id: 'docs', urls: pages }],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      }),
    );
    return file;
  };
  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-progress-'));
    sim = await startSimWeb({ seed: 5, hosts: 1, pagesPerHost: 6 });
    pages = sim.urls(sim.hosts()[0]!);
  });
  afterAll(async () => {
    await sim?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const progressLines = (stderr: string) =>
    stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { event: string; done: number; total: number })
      .filter((l) => l.event === 'progress');

  it('prints periodic progress lines on stderr (interval 0: one per page, in order, up to the total)', async () => {
    const r = await cli(['refresh', '--all', '--config', config()], {
      RAGFRESH_PROGRESS_INTERVAL_MS: '0',
    });
    expect(r.code).toBe(0);
    const lines = progressLines(r.stderr);
    expect(lines.map((l) => l.done)).toEqual(pages.map((_, i) => i + 1));
    expect(new Set(lines.map((l) => l.total))).toEqual(new Set([pages.length]));
  });

  it('--quiet prints none', async () => {
    const r = await cli(['refresh', '--all', '--quiet', '--config', config()], {
      RAGFRESH_PROGRESS_INTERVAL_MS: '0',
    });
    expect(r.code).toBe(0);
    expect(progressLines(r.stderr)).toEqual([]);
  });
});
