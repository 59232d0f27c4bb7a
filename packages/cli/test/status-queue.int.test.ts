import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueSection } from '../src/status.js';

// Runs the built CLI (build first). The reachable case is in worker.int.test.ts.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

describe('ragfresh status with and without a queue config', () => {
  let dir: string;
  let port: number;
  const write = (name: string, extra: Record<string, unknown>) => {
    const file = join(dir, name);
    writeFileSync(
      file,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, 'data'),
        sources: [{ id: 'docs', urls: ['https://docs.example.org/a'] }],
        ...extra,
      }),
    );
    return file;
  };
  const status = (config: string, ...args: string[]) =>
    spawnSync(process.execPath, [BIN, 'status', '--config', config, ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-status-queue-'));
    port = await closedPort();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('says in one line that Redis is unreachable and still prints the sources (exit code theirs)', () => {
    const config = write('unreachable.json', {
      queue: { redis: `redis://127.0.0.1:${port}`, prefix: 'rf-status' },
    });
    const r = status(config);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^docs +empty +0\/0 /m);
    const queueLines = r.stdout.split('\n').filter((l) => l.startsWith('queue'));
    expect(queueLines).toHaveLength(1);
    expect(queueLines[0]).toMatch(
      new RegExp(
        `^queue: redis unreachable at redis://127\\.0\\.0\\.1:${port} \\(.*ECONNREFUSED.*\\); queue depth not shown$`,
      ),
    );
    // Never indexed: 3, as without a queue.
    expect(r.status).toBe(3);
    const json = JSON.parse(status(config, '--json').stdout) as {
      sources: { sourceId: string }[];
      queue: { prefix: string; problem: string };
    };
    expect(json.sources.map((s) => s.sourceId)).toEqual(['docs']);
    expect(json.queue.prefix).toBe('rf-status');
    expect(json.queue.problem).toMatch(/^queue: redis unreachable at /);
  });

  it('worker status with Redis unreachable: the same one line, exit 1, no reconnect loop', () => {
    const config = write('unreachable-worker.json', {
      queue: { redis: `redis://127.0.0.1:${port}`, prefix: 'rf-status' },
    });
    const r = spawnSync(process.execPath, [BIN, 'worker', 'status', '--config', config], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^queue: redis unreachable at .*; queue depth not shown$/),
    ]);
    expect(r.status).toBe(1);
  });

  it('without a queue key prints what it printed before: no queue line, --json is the array', () => {
    const config = write('plain.json', {});
    const r = status(config);
    expect(r.stdout).not.toMatch(/^queue/m);
    expect(r.status).toBe(3);
    const json = JSON.parse(status(config, '--json').stdout) as unknown;
    expect(Array.isArray(json)).toBe(true);
  });

  it('does not load the queue package or contact Redis without a queue key', async () => {
    expect(await queueSection({})).toBeUndefined();
  });
});
