import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// These tests run the built CLI (`tsc -b` runs before the test command, as in .ci/run).
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function run(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('ragfresh CLI', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const cases: Array<[string, string, RegExp]> = [
    [
      'a missing field',
      `export default { sources: [{ id: 'docs', urls: ['https://e.org/'] }] };`,
      /^ragfresh: config userAgent: is missing; set userAgent/,
    ],
    [
      'a bad URL',
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['htp:/broken'] }] };`,
      /^ragfresh: config sources\[0\]\.urls\[0\]: /,
    ],
    [
      'a connector package installed nowhere',
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['https://e.org/'] }], connector: { store: 'mongo' } };`,
      /^ragfresh: config connector\.store: "mongo" needs the package @ragfresh\/connector-mongo \(or ragfresh-connector-mongo\), not found from /,
    ],
    [
      'a typo, with its suggestion',
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['https://e.org/'], evry: '6h' }] };`,
      /^ragfresh: config sources\[0\]\.evry: is not a known key; did you mean sources\[0\]\.every\?$/,
    ],
    [
      'a range',
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['https://e.org/'] }], embeddings: { kind: 'hashing', dimensions: -3 } };`,
      /^ragfresh: config embeddings\.dimensions: -3 is out of range; use a number >= 1\.$/,
    ],
    [
      'a wrong type',
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['https://e.org/'] }], deletion: { autoApprove: 'yes' } };`,
      /^ragfresh: config deletion\.autoApprove: expected a boolean, got string "yes"; write true or false\.$/,
    ],
    [
      'the allow-list key misspelt',
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['https://e.org/'] }], fetch: { allowList: ['127.0.0.1:8080'] } };`,
      /^ragfresh: config fetch\.allowList: is not a known key; did you mean fetch\.allow\?$/,
    ],
    [
      'the allow-list with an empty entry',
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['https://e.org/'] }], fetch: { allow: [''] } };`,
      /^ragfresh: config fetch\.allow\[0\]: "" is not an entry; use a host, host:port or CIDR string/,
    ],
    [
      'a non-numeric interval',
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['https://e.org/'], every: 'weekly' }] };`,
      /^ragfresh: config sources\[0\]\.every: "weekly" is not a duration; /,
    ],
  ];
  it.each(cases)(
    'config error, %s: one line naming the field and the fix, exit code 2',
    (_name, source, pattern) => {
      const file = join(dir, `bad-${Math.random().toString(36).slice(2)}.config.mjs`);
      writeFileSync(file, source);
      const r = run(['status', '--config', file], dir);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(pattern);
    },
  );

  it('a missing config file says what to do', () => {
    const r = run(['refresh'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(/no ragfresh\.config\.ts here; run `ragfresh init`/);
  });

  it('init writes a starter config and refuses to overwrite it', () => {
    const sub = mkdtempSync(join(dir, 'init-'));
    expect(run(['init'], sub).code).toBe(0);
    const written = readFileSync(join(sub, 'ragfresh.config.ts'), 'utf8');
    expect(written).toContain('defineConfig');
    writeFileSync(join(sub, 'ragfresh.config.ts'), '// mine');
    const again = run(['init'], sub);
    expect(again.code).toBe(2);
    expect(readFileSync(join(sub, 'ragfresh.config.ts'), 'utf8')).toBe('// mine');
  });

  it('an unknown command exits 2 with one line', () => {
    const r = run(['frobnicate'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('the demo runs offline end to end and shows each behaviour', () => {
    const r = run(['demo'], dir);
    expect(r.code).toBe(0);
    const out = r.stdout;
    expect(out).toMatch(/1\. cold refresh/);
    expect(out).toMatch(/docs-0\s+updated\s+http/); // the edit
    expect(out).toMatch(/quarantined\s+http.*shrink: /); // the shrink
    expect(out).toMatch(/degraded\s+http.*server-error: HTTP 503/); // the outage
    expect(out).toMatch(/not-the-document http.*consent_wall/); // the consent wall
    expect(out).toMatch(/delete:docs-0:\S+\s+deletion .*HTTP 410 observed 2 times/); // the deletion
    expect(out).toMatch(/Update: the quota is now 42 requests per minute/); // the answer changed
    expect(out).toMatch(/STALE since \d{4}-/); // readers are told
    expect(out).toMatch(/demo finished in \d+\.\d s/);
  });
});
