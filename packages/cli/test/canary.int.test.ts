import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { reasonLine } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReturnsSite, startReturnsSite } from '../src/returns-site.js';

// Publication canaries through the built CLI (refresh, status, query) on embedded LanceDB and
// SQLite state: the seeds' 30 -> 14 days example. The site runs in this process, so the CLI is
// spawned asynchronously (a blocking spawn would stop the site from answering).
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      done({ code, stdout, stderr });
    });
  });
}

const QUESTION = 'how many days do I have to return an item';

interface StatusJson {
  sourceId: string;
  state: string;
  canaries?: Array<{ phase: string; ok: boolean; rank?: number; epoch: number; reason?: string }>;
}

describe('publication canaries through the CLI', () => {
  let dir: string;
  let site: ReturnsSite;
  const config = (name: string, canaries: unknown[]) => {
    const file = join(dir, `${name}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, 'data'),
        sources: [{ id: 'shop', urls: [site.returnsUrl, site.shippingUrl], every: '1s', canaries }],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      }),
    );
    return file;
  };
  const guarded = () =>
    config('guarded', [
      {
        query: QUESTION,
        expect: { phrase: '14 days', url: site.returnsUrl, section: 'Returns policy' },
      },
    ]);

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-canary-'));
    site = await startReturnsSite();
  });
  afterAll(async () => {
    await site?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes the 30 -> 14 days change: the staged 14-day passage is retrievable before promotion, then current', async () => {
    // The 30-day page is published before the canary exists, as a user would add it.
    const first = await cli(['refresh', '--all', '--json', '--config', config('plain', [])]);
    expect(first.stderr).toBe('');
    expect(JSON.parse(first.stdout).report.totals.published).toBe(2);

    site.set('14 days');
    const second = await cli(['refresh', '--all', '--json', '--config', guarded()]);
    const report = JSON.parse(second.stdout).report;
    expect(report.totals.published).toBe(1);
    const canaries = report.sources[0].canaries as StatusJson['canaries'];
    expect(canaries?.map((c) => [c.phase, c.ok])).toEqual([
      ['staged', true],
      ['current', true],
    ]);
    // Lexical hashing embeddings rank the shipping page first for this question; within top 5.
    expect(canaries?.every((c) => (c.rank ?? 99) <= 5)).toBe(true);
    // Staged against the epoch the batch targets, current at the epoch it was promoted to.
    expect(canaries?.[0]?.epoch).toBe(canaries?.[1]?.epoch);

    const status = await cli(['status', '--config', guarded()]);
    expect(status.stdout).toMatch(/shop: canary ok rank \d \(staged, epoch \d+, /);
    expect(status.stdout).toMatch(/shop: canary ok rank \d \(current, epoch \d+, /);
    const hits = JSON.parse(
      (await cli(['query', QUESTION, '--json', '--config', guarded()])).stdout,
    );
    const returns = hits.find((h: { header: string }) => h.header.includes(site.returnsUrl));
    expect(returns.text).toContain('within 14 days of delivery');
  });

  it('blocks a promotion when the staged text lacks the phrase: quarantined canary-failed, 14 days stays current', async () => {
    site.set('redesign');
    const run = await cli(['refresh', '--all', '--json', '--config', guarded()]);
    expect(run.code).toBe(4); // a quarantined document
    const report = JSON.parse(run.stdout).report;
    expect(report.totals.published).toBe(0);
    expect(report.totals.rejected).toBe(1);
    const event = report.sources[0].events.find(
      (e: { event: string }) => e.event === 'quarantined',
    );
    expect(event.url).toBe(site.returnsUrl);
    expect(reasonLine(event.reasons[0])).toBe(
      `canary-failed: "${QUESTION}" did not retrieve phrase "14 days", from ${site.returnsUrl}, under "Returns policy" in the top 5`,
    );
    const canaries = report.sources[0].canaries as StatusJson['canaries'];
    expect(canaries?.map((c) => [c.phase, c.ok])).toEqual([['staged', false]]);

    // The old version is what readers get; status shows the failed canary and exits 4.
    const hits = JSON.parse(
      (await cli(['query', QUESTION, '--json', '--config', guarded()])).stdout,
    );
    const returns = hits.find((h: { header: string }) => h.header.includes(site.returnsUrl));
    expect(returns.text).toContain('within 14 days of delivery');
    expect(hits.some((h: { text: string }) => h.text.includes('return calculator'))).toBe(false);
    const status = await cli(['status', '--json', '--config', guarded()]);
    expect(status.code).toBe(4);
    const [shop] = JSON.parse(status.stdout) as StatusJson[];
    expect(shop?.state).toBe('quarantined');
    expect(shop?.canaries?.map((c) => [c.phase, c.ok])).toEqual([['staged', false]]);
    const text = await cli(['status', '--config', guarded()]);
    expect(text.stdout).toMatch(/shop: canary FAILED \(staged, epoch \d+, .*\) "how many days/);
  });
});
