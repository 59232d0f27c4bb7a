import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const script = new URL('../test-durations.mjs', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'ragfresh-durations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A vitest JSON report holding one result per [absolute path, seconds]. */
function report(name: string, files: [string, number][]): string {
  const path = join(dir, name);
  const testResults = files.map(([file, s]) => ({
    name: file,
    startTime: 1_000,
    endTime: 1_000 + s * 1000,
  }));
  writeFileSync(path, JSON.stringify({ numTotalTests: files.length, testResults }));
  return path;
}

async function durations(
  args: string[],
): Promise<{ table: Record<string, number>; stdout: string }> {
  const out = join(dir, `table-${Math.random().toString(36).slice(2)}.json`);
  const { stdout } = await run(process.execPath, [script, ...args, '--out', out]);
  return { table: JSON.parse(readFileSync(out, 'utf8')) as Record<string, number>, stdout };
}

describe('scripts/test-durations.mjs', () => {
  it('averages each file over the reports that ran it, from any checkout, longest first', async () => {
    const a = report('a.json', [
      ['/tmp/clone-1/packages/cli/test/safety.int.test.ts', 40],
      ['/tmp/clone-1/conformance/test/broken.test.ts', 10],
    ]);
    const b = report('b.json', [
      ['/ci/x/packages/cli/test/safety.int.test.ts', 20],
      ['/ci/x/conformance/test/broken.test.ts', 50],
      ['/ci/x/connectors/qdrant/test/new.test.ts', 3.04],
    ]);
    const { table, stdout } = await durations([a, b]);
    expect(Object.entries(table)).toEqual([
      ['conformance/test/broken.test.ts', 30],
      ['packages/cli/test/safety.int.test.ts', 30],
      ['connectors/qdrant/test/new.test.ts', 3],
    ]);
    expect(stdout).toMatch(/^3 files from 2 reports written to .*\(1 not in every report/);
    expect(stdout).toContain('conformance/test/broken.test.ts: 10.0–50.0 s');
  });

  it('writes nothing when one report is not a vitest JSON report, and says which', async () => {
    const out = join(dir, 'kept.json');
    writeFileSync(out, '{"packages/cli/test/a.test.ts": 1}\n');
    const good = report('good.json', [['/r/packages/cli/test/a.test.ts', 9]]);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"results": []}');
    const failed = await run(process.execPath, [script, good, bad, '--out', out]).catch(
      (e: unknown) => e,
    );
    expect(failed).toMatchObject({ code: 2 });
    const stderr = (failed as { stderr: string }).stderr;
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(`${bad}: no testResults`);
    expect(readFileSync(out, 'utf8')).toBe('{"packages/cli/test/a.test.ts": 1}\n');
  });

  it('refuses a result outside the workspace test folders', async () => {
    const stray = report('stray.json', [['/home/me/other/test/x.test.ts', 1]]);
    const failed = await run(process.execPath, [
      script,
      stray,
      '--out',
      join(dir, 'never.json'),
    ]).catch((e: unknown) => e);
    expect((failed as { stderr: string }).stderr).toContain(
      'is not under a test folder of this workspace',
    );
  });
});
