import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Runs built code (dist): build first. Each run is a child process, because the watchdog's
// only way out of a blocked event loop is to stop the process it runs in.
const CHILD = fileURLToPath(new URL('./fixtures/watchdog-child.mjs', import.meta.url));

function run(mode: 'blocking' | 'pending') {
  const r = spawnSync(process.execPath, [CHILD, mode], { encoding: 'utf8', timeout: 60_000 });
  return { signal: r.signal, status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('each case runs under a watchdog outside the event loop', () => {
  it('a connector that blocks the event loop stops the run with the case name', () => {
    const r = run('blocking');
    expect(r.signal).toBe('SIGKILL');
    expect(r.stdout).not.toContain('returned');
    expect(r.stderr).toMatch(/\[conformance\] case hung-blocking did not finish within \d+ ms/);
  });

  it('control: a case that only awaits for ever times out in the loop and the run goes on', () => {
    const r = run('pending');
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(
      'returned failed: unexpected error: case hung-pending did not finish within 400 ms',
    );
    expect(r.stderr).not.toContain('event loop stayed blocked');
  });
});
