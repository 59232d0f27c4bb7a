import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Signals a cron job can trust (issue 33 item 5), through the built CLI on a simulated site:
// the coverage gate's exit code, never-published URLs apart in `status`, the heartbeat naming
// a hung page, and EPIPE ending quietly.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command. `closedStdout`: the reader has gone before the first line is written (what
 * `| head -1` is once it has its line), so every write to stdout meets EPIPE.
 */
function run(
  command: string,
  args: readonly string[],
  opts: { env?: Record<string, string>; closedStdout?: boolean } = {},
): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    if (opts.closedStdout === true) child.stdout.destroy();
    else child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

const ragfresh = (args: readonly string[], opts: Parameters<typeof run>[2] = {}) =>
  run(process.execPath, [BIN, ...args], opts);

describe('signals a cron job can trust (built CLI, simulated site)', () => {
  let sim: SimWeb;
  let dir: string;
  let pages: string[];
  let missing: string;
  /** A config over one data dir; `minCoverage` undefined: the default gate (0.9). */
  const config = (minCoverage?: number) => {
    const file = join(dir, `ragfresh-${minCoverage ?? 'default'}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, 'data'),
        sources: [{ id: 'docs', urls: [...pages, missing] }],
        embeddings: { kind: 'hashing', dimensions: 64 },
        fetch: {
          minIntervalMs: 0,
          allowPrivateNetworks: true,
          timeoutMs: 1_000,
          circuitBreaker: { failureThreshold: 100 },
        },
        ...(minCoverage === undefined ? {} : { gates: { minCoverage } }),
      }),
    );
    return file;
  };
  const jsonLines = (stderr: string) =>
    stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-signals-'));
    sim = await startSimWeb({ seed: 33, hosts: 1, pagesPerHost: 9 });
    pages = sim.urls(sim.hosts()[0]!).slice(0, 9);
    // Listed from the first run on, answered 404 every time: known, never published.
    missing = `${sim.origin(sim.hosts()[0]!)}/never-published-page`;
  });
  afterAll(async () => {
    await sim?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a run that answers every page exits 0; status keeps the never-published URL apart', async () => {
    expect(pages).toHaveLength(9);
    const r = await ragfresh(['refresh', '--all', '--json', '--config', config()]);
    expect(r.stderr).not.toMatch(/coverage below the gate/);
    expect(r.code).toBe(0);
    const { report } = JSON.parse(r.stdout) as {
      report: { coverage: number; sources: { coverage: number; counts: { definitive: number } }[] };
    };
    // The 404 is a definitive answer: 10 of 10 due pages answered.
    expect(report.sources[0]).toMatchObject({ coverage: 1, counts: { definitive: 10 } });
    expect(report.coverage).toBe(1);

    const json = await ragfresh(['status', '--json', '--config', config()]);
    const [docs] = JSON.parse(json.stdout) as {
      documents: number;
      unpublished: number;
      counts: Record<string, number>;
    }[];
    expect(docs).toMatchObject({ documents: 10, unpublished: 1 });
    // Before: the 404 record (status "healthy", no version) was counted healthy, 10 of 10.
    expect(docs!.counts.healthy).toBe(9);
    const text = await ragfresh(['status', '--config', config()]);
    const [header, , row] = text.stdout.split('\n');
    const cells = (line: string) => line.trim().split(/\s{2,}/);
    const column = cells(header!).indexOf('unpublished');
    expect(column).toBeGreaterThan(0);
    expect(cells(row!)[column]).toBe('1');
  });

  it('EPIPE ends quietly in every command: status, inspect, verify, query, import', async () => {
    const importFile = join(dir, 'rows.jsonl');
    writeFileSync(
      importFile,
      `${JSON.stringify({
        url: pages[0],
        loadedTime: '2026-01-01T00:00:00Z',
        markdown: '# Imported\n\nA page as a crawler exported it, long enough to be a document.',
      })}\n`,
    );
    const commands = [
      ['status'],
      ['status', '--json'],
      ['inspect', pages[1]!],
      ['verify'],
      ['query', 'the page', '-k', '3'],
      ['import', '--source', 'docs', importFile],
    ];
    for (const args of commands) {
      const r = await ragfresh([...args, '--config', config()], { closedStdout: true });
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
    }
    // Control: the same closed pipe does break a plain Node writer, so the check above can fail.
    const bare = await run(
      process.execPath,
      ['-e', "process.stdout.write('a\\n'); setTimeout(() => process.stdout.write('b\\n'), 50);"],
      { closedStdout: true },
    );
    expect(bare.code).not.toBe(0);
    expect(bare.stderr).toMatch(/EPIPE/);
  });

  it('below gates.minCoverage exits 8 naming the source; a hung page is named by the heartbeat', async () => {
    const [hung, downA, downB] = pages.slice(2, 5) as [string, string, string];
    sim.mutate(downA, 'outage', { retryAfter: 0 });
    sim.mutate(downB, 'outage', { retryAfter: 0 });
    // Longer than fetch.timeoutMs: in flight until the fetcher gives up on it.
    sim.mutate(hung, 'slow', { headerDelayMs: 5_000 });
    const env = { RAGFRESH_HEARTBEAT_MS: '100' };
    const r = await ragfresh(['refresh', '--all', '--config', config()], { env });
    expect(r.code).toBe(8);
    const gateLines = r.stderr.split('\n').filter((l) => l.includes('coverage below the gate'));
    expect(gateLines).toEqual([
      'ragfresh: coverage below the gate gates.minCoverage 90%: docs 70% (7/10), overall 70% (7/10) of due pages answered; the others failed or timed out (see the alerts and degraded pages above).',
    ]);
    const beats = jsonLines(r.stderr).filter((l) => l.event === 'heartbeat');
    expect(beats.length).toBeGreaterThan(0);
    // The last heartbeat comes while only the hung page is left in flight.
    expect(beats.at(-1)).toMatchObject({ slowestUrl: hung, slowestSource: 'docs', inFlight: 1 });
    expect(beats.map((b) => b.slowestUrl)).toContain(hung);
    expect(Number(beats.at(-1)!.slowestMs)).toBeGreaterThanOrEqual(100);

    // Control: the same run under a gate of 0.6 exits on the sources' status (0).
    const lower = await ragfresh(['refresh', '--all', '--config', config(0.6)], {
      env: { RAGFRESH_HEARTBEAT_MS: '0' },
    });
    expect(lower.stderr).not.toMatch(/coverage below the gate/);
    expect(lower.code).toBe(0);
    expect(jsonLines(lower.stderr).filter((l) => l.event === 'heartbeat')).toEqual([]);
  });

  it('a refresh with the site down exits 8, not 0', async () => {
    sim.mutateHost(sim.hosts()[0]!, 'outage', { retryAfter: 0 });
    const r = await ragfresh(['refresh', '--all', '--config', config()]);
    expect(r.stderr).toContain('docs 0% (0/10)');
    expect(r.stderr).toMatch(/alert.*coverage-drop/);
    expect(r.code).toBe(8);
    // The site's own status is still met (the last good observations are recent): without the
    // gate this run exited 0.
    const status = await ragfresh(['status', '--config', config()]);
    expect(status.code).toBe(0);
    sim.mutateHost(sim.hosts()[0]!, 'restore');
  });
});
