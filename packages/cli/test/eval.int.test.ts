import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvalReport } from '../src/eval.js';
import { type ReturnsSite, startReturnsSite } from '../src/returns-site.js';

// `ragfresh eval` through the built CLI against embedded LanceDB: a hand-built question set on
// the two-page shop site, scored on the current view and, after the 30 -> 14 days change,
// against the previous epoch (still stored within the one-epoch grace).
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      done({ code, stdout, stderr });
    });
  });
}

describe('ragfresh eval on a real store', () => {
  let dir: string;
  let site: ReturnsSite;
  let configFile: string;
  let questionsFile: string;

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-eval-'));
    site = await startReturnsSite();
    configFile = join(dir, 'ragfresh.config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, 'data'),
        sources: [
          { id: 'returns', urls: [site.returnsUrl] },
          { id: 'shipping', urls: [site.shippingUrl] },
        ],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      }),
    );
    questionsFile = join(dir, 'q.jsonl');
    const q = (o: object) => JSON.stringify(o);
    writeFileSync(
      questionsFile,
      [
        q({ question: 'how long does express shipping take', url: site.shippingUrl }),
        q({
          question: 'free shipping over fifty euros',
          passage: 'over fifty euros',
          source: 'shipping',
        }),
        q({ question: 'can I return sale items and gift cards', url: site.returnsUrl }),
        q({
          question: 'return window in days for a full refund',
          url: site.returnsUrl,
          passage: 'within 14 days',
        }),
        q({
          question: 'what is the warranty on electronics',
          passage: 'two-year warranty',
          source: 'returns',
        }),
        '',
      ].join('\n'),
    );
    const cold = await cli(['refresh', '--all', '--config', configFile]);
    expect(cold.code, cold.stderr).toBe(0);
  });
  afterAll(async () => {
    await site?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports hit@1, hit@5 and MRR overall and per source, with the embedder named', async () => {
    const out = join(dir, 'report.json');
    const run = await cli([
      'eval',
      '--questions',
      questionsFile,
      '--json',
      out,
      '--config',
      configFile,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    expect(report.embedder).toBe('HashingEmbeddings, 256 dimensions');
    const [view] = report.views;
    expect(view?.label).toBe('current');
    expect(view?.epoch).toBe(1);
    expect(view?.questions.map((x) => [x.source, x.rank])).toEqual([
      ['shipping', 1],
      ['shipping', 1],
      ['returns', 1],
      ['returns', null], // the page still says 30 days
      ['returns', null], // nothing says it
    ]);
    expect(view?.overall).toEqual({ questions: 5, hitAt1: 0.6, hitAt5: 0.6, mrr: 0.6 });
    expect(view?.perSource.shipping).toEqual({ questions: 2, hitAt1: 1, hitAt5: 1, mrr: 1 });
    expect(view?.perSource.returns?.hitAt1).toBeCloseTo(1 / 3);
    expect(run.stdout).toMatch(
      /^eval: 5 questions; embedder HashingEmbeddings, 256 dimensions; top 10; epoch 1 \(current\)/,
    );
    expect(run.stdout).toMatch(/\noverall +5 +0\.600 +0\.600 +0\.600\n/);
  });

  it('--against compares two epochs: the 14-day passage is found now and was not before', async () => {
    site.set('14 days');
    expect((await cli(['refresh', '--all', '--config', configFile])).code).toBe(0);
    const run = await cli([
      'eval',
      '--questions',
      questionsFile,
      '--against',
      '1',
      '--json',
      '--config',
      configFile,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as EvalReport;
    expect(report.views.map((v) => [v.label, v.epoch])).toEqual([
      ['against', 1],
      ['current', 2],
    ]);
    expect(report.views[0]?.overall.hitAt1).toBe(0.6);
    expect(report.views[1]?.overall.hitAt5).toBe(0.8);
    expect(report.changed?.map((c) => [c.question, c.against, c.current !== null])).toEqual([
      ['return window in days for a full refund', null, true],
    ]);
    const text = await cli([
      'eval',
      '--questions',
      questionsFile,
      '--against',
      '1',
      '--config',
      configFile,
    ]);
    expect(text.stdout).toMatch(
      /rank changes \(epoch 1 -> 2\):\n {2}- -> \d {2}return window in days/,
    );
  });

  it('refuses an epoch the store never published, in one line', async () => {
    const run = await cli([
      'eval',
      '--questions',
      questionsFile,
      '--against',
      '9',
      '--config',
      configFile,
    ]);
    expect(run.code).toBe(2);
    expect(run.stdout.trim()).toBe(
      'ragfresh: --against 9 is not a published epoch; the store is at epoch 2 (use 1..2).',
    );
  });
});
