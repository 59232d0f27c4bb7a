import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HEAP_MB } from '../src/process-tuning.js';

// Process start of the built CLI: the Node version check comes first, then heavy commands
// re-execute once with bounded memory (process-tuning.ts), and light ones never do.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function run(args: string[], cwd: string, env: Record<string, string> = {}) {
  const { RAGFRESH_TUNED: _t, RAGFRESH_NO_REEXEC: _n, ...base } = process.env;
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...base, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('CLI process start', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-bin-'));
    // A config that records the process it was loaded in, then fails validation (exit 2).
    writeFileSync(
      join(dir, 'ragfresh.config.mjs'),
      `import { writeFileSync } from 'node:fs';
writeFileSync(new URL('./seen-' + process.argv[2] + '.json', import.meta.url), JSON.stringify({
  tuned: process.env.RAGFRESH_TUNED ?? null,
  arenas: process.env.MALLOC_ARENA_MAX ?? null,
  execArgv: process.execArgv,
}));
export default {};`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('an old Node: one line with the minimum, the version found and how to run the pinned one', () => {
    const r = run(['refresh'], dir, { RAGFRESH_NODE_VERSION_CHECK: '20.19.2' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^ragfresh: needs Node >= 22\.18, found 20\.19\.2; .*npx -y pnpm@10 ragfresh/,
    );
    expect(existsSync(join(dir, 'seen-refresh.json'))).toBe(false);
  });

  it.each(['refresh', 'verify', 'reextract'])(
    '%s re-executes with a bounded old space and MALLOC_ARENA_MAX=2 before loading the config',
    (command) => {
      expect(run([command], dir).code).toBe(2);
      const seen = JSON.parse(readFileSync(join(dir, `seen-${command}.json`), 'utf8'));
      expect(seen.tuned).toBe('1');
      expect(seen.execArgv).toContain(`--max-old-space-size=${DEFAULT_HEAP_MB}`);
      if (process.platform === 'linux' && process.env.MALLOC_ARENA_MAX === undefined)
        expect(seen.arenas).toBe('2');
    },
  );

  it.each(['status', 'query'])('%s is not re-executed', (command) => {
    run([command, 'x'], dir);
    const seen = JSON.parse(readFileSync(join(dir, `seen-${command}.json`), 'utf8'));
    expect(seen.tuned).toBeNull();
    expect(seen.execArgv).not.toContain(`--max-old-space-size=${DEFAULT_HEAP_MB}`);
  });

  it('--help is answered without re-executing or loading a config', () => {
    const r = run(['refresh', '--help'], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: ragfresh <command>');
  });
});

describe('status never creates files', () => {
  it('in a folder with only a config: exit 3 (never indexed), and the folder is unchanged', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-status-'));
    try {
      writeFileSync(
        join(dir, 'ragfresh.config.json'),
        JSON.stringify({
          userAgent: 'b/1 (+https://example.org/bot)',
          sources: [{ id: 'docs', urls: ['https://docs.example.org/a'] }],
        }),
      );
      const r = run(['status'], dir);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stdout).toContain('docs');
      expect(readdirSync(dir)).toEqual(['ragfresh.config.json']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a config that loads anywhere', () => {
  it('init then status in an empty "type": "commonjs" folder with no ragfresh installed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-anywhere-'));
    try {
      writeFileSync(join(dir, 'package.json'), '{"name":"empty","type":"commonjs"}');
      expect(run(['init'], dir).code).toBe(0);
      expect(readFileSync(join(dir, 'ragfresh.config.ts'), 'utf8')).toContain(
        "from 'ragfresh/config'",
      );
      const r = run(['status'], dir);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(3);
      expect(readdirSync(dir).sort()).toEqual(['package.json', 'ragfresh.config.ts']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
