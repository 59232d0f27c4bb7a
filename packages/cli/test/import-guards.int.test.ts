import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Reason, reasonLine } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../src/exit.js';
import { BIN, cli, writeConfig } from './import-harness.js';

const ORIGIN = 'https://docs.example.org';
const HOUR = 3_600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const jsonl = (rows: readonly (object | string)[]) =>
  `${rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n')}\n`;
const page = (path: string, extra: Record<string, unknown> = {}) => ({
  url: `${ORIGIN}${path}`,
  loadedTime: ago(HOUR),
  markdown: `# ${path}\n\nThe documentation of ${path}, a page of its own.`,
  ...extra,
});

interface Report {
  counts: Record<string, number>;
  refusedBy: Record<string, number>;
  events: { url: string; event: string; reasons: Reason[] }[];
}

describe('ragfresh import: hostile rows through the real CLI (LanceDB)', () => {
  let dir: string;
  let config: string;
  beforeAll(() => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-import-guards-'));
    config = writeConfig(dir, { store: 'lancedb', path: join(dir, 'lance'), table: 'guards' });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a 30 MB row and hostile rows are refused one by one (exit 7, no crash); the next import proceeds at once', () => {
    writeFileSync(
      join(dir, 'hostile.jsonl'),
      jsonl([
        // The row that once took the process down with a V8 out-of-memory (rc 134).
        page('/huge', { markdown: `# Huge\n\n${'word '.repeat(6_000_000)}` }),
        { ...page('/m'), url: 'http://169.254.169.254/latest/meta-data/iam/' },
        { ...page('/p'), url: 'http://10.0.0.1/internal' },
        { ...page('/o'), url: 'https://docs.other-company.example/pricing' },
        page('/a', { loadedTime: '2030-01-01T00:00:00Z', markdown: '# A\n\nFrom 2030.' }),
        page('/a', { markdown: '# A\n\nThe correct text of A.' }),
        `{"url":"${ORIGIN}/deep","markdown":${'['.repeat(50_000)}${']'.repeat(50_000)}}`,
        `{"url":"${ORIGIN}/cut","markdown":"the export was cut off in the midd`,
      ]),
    );
    const hostile = cli(
      ['import', '--source', 'docs', 'hostile.jsonl', '--config', config, '--json'],
      dir,
    );
    expect(hostile.stderr).not.toMatch(/heap out of memory|FATAL ERROR|LEASE_HELD/);
    expect(hostile.code).toBe(EXIT.rowsRefused);
    const { report } = JSON.parse(hostile.stdout) as { report: Report };
    expect(report.counts).toMatchObject({
      rows: 8,
      refused: 6,
      unreadable: 1,
      published: 1,
      stale: 0,
    });
    expect(report.refusedBy).toEqual({
      'record-too-large': 1,
      'metadata-address': 1,
      'ssrf-refused': 1,
      'off-source-host': 1,
      'future-fetch-time': 1,
      'record-too-deep': 1,
    });
    const refused = report.events.filter((e) => e.event === 'refused');
    expect(
      refused
        .find((e) => e.url === `${ORIGIN}/huge`)
        ?.reasons.map(reasonLine)
        .join(' '),
    ).toMatch(/row 1 of hostile\.jsonl/);
    expect(
      refused.find((e) => e.url === 'http://10.0.0.1/internal')?.reasons.map(reasonLine)[0],
    ).toMatch(/fetch\.allow/);

    // At once: the lease was released by the run that refused the rows.
    writeFileSync(join(dir, 'good.jsonl'), jsonl([page('/b')]));
    const good = cli(
      ['import', '--source', 'docs', 'good.jsonl', '--config', config, '--json'],
      dir,
    );
    expect(good.stderr).not.toMatch(/LEASE_HELD|holds the publish lease/);
    expect(good.code).toBe(EXIT.ok);
    expect((JSON.parse(good.stdout) as { report: Report }).report.counts).toMatchObject({
      rows: 1,
      published: 1,
      refused: 0,
    });
  }, 300_000);

  const HOSTILE = [
    {
      format: 'apify-wcc',
      args: [],
      // A JSON array: wrong types, a 9 MB item, invalid UTF-8, cut off inside an item.
      bytes: Buffer.concat([
        Buffer.from(
          `[{"url": 42, "markdown": {"no": "string"}}, {"url":"${ORIGIN}/h","markdown":"${'x '.repeat(4_500_000)}"}, {"url":"${ORIGIN}/u","crawl":{"loadedTime":"${ago(HOUR)}"},"markdown":"caf`,
        ),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('"}, {"url":"'),
      ]),
    },
    {
      format: 'firecrawl',
      args: ['--fetched-at', ago(HOUR)],
      // An envelope whose data holds a deep element and a wrong-typed one, and never closes.
      bytes: Buffer.from(
        `{"status":"completed","total":3,"data":[${'['.repeat(20_000)}${']'.repeat(20_000)}, {"metadata":"not an object","markdown":7}, {"metadata":{"sourceURL":"${ORIGIN}/f"},"markdown":"# F\n\nText`,
      ),
    },
    {
      format: 'webscraper',
      args: ['--map', 'url=page', '--map', 'text=body', '--fetched-at', ago(HOUR)],
      // CSV: a 9 MB field, a row of the wrong shape, a quote never closed.
      bytes: Buffer.from(
        `page,body\n${ORIGIN}/w1,"${'y '.repeat(4_500_000)}"\n,,,,\n${ORIGIN}/w2,"never closed\n`,
      ),
    },
  ];

  it('hostile Apify, Firecrawl and Web Scraper exports: each run ends with exit 7 (a held lease would give 6), and a good import follows at once', () => {
    for (const { format, args, bytes } of HOSTILE) {
      const file = `hostile-${format}`;
      writeFileSync(join(dir, file), bytes);
      const r = cli(
        ['import', '--source', 'docs', '--format', format, ...args, file, '--config', config],
        dir,
      );
      expect(r.stderr, format).not.toMatch(/heap out of memory|FATAL ERROR|LEASE_HELD| {4}at /);
      expect(r.code, format).toBe(EXIT.rowsRefused);
    }
    writeFileSync(join(dir, 'good-after.jsonl'), jsonl([page('/after-formats')]));
    const good = cli(['import', '--source', 'docs', 'good-after.jsonl', '--config', config], dir);
    expect(good.code).toBe(EXIT.ok);
    expect(good.stdout).toMatch(/1 published/);
  }, 300_000);

  it('the text report names each refusal and its count; a file with nothing readable exits 2 with one line', () => {
    writeFileSync(
      join(dir, 'mixed.jsonl'),
      jsonl([page('/c'), { ...page('/x'), url: 'https://elsewhere.example/x' }, 'not json at all']),
    );
    const mixed = cli(['import', '--source', 'docs', 'mixed.jsonl', '--config', config], dir);
    expect(mixed.code).toBe(EXIT.rowsRefused);
    expect(mixed.stdout).toMatch(/1 published, .*1 refused, 1 unreadable/);
    expect(mixed.stdout).toMatch(/^refused: off-source-host 1$/m);
    expect(mixed.stdout).toMatch(/unreadable +row 3 +\(not JSON/);

    const future = cli(
      [
        'import',
        '--source',
        'docs',
        'mixed.jsonl',
        '--fetched-at',
        '2030-01-01T00:00:00Z',
        '--config',
        config,
      ],
      dir,
    );
    expect(future.code).toBe(EXIT.usage);
    expect(future.stderr).toMatch(
      /^ragfresh: --fetched-at 2030-01-01T00:00:00Z is more than 5 minutes ahead/,
    );

    writeFileSync(join(dir, 'junk.jsonl'), '{"no":"url field"}\n{"url": broken\n[1, 2\n');
    const junk = cli(['import', '--source', 'docs', 'junk.jsonl', '--config', config], dir);
    expect(junk.code).toBe(EXIT.usage);
    expect(junk.stdout).toBe('');
    expect(junk.stderr.trim().split('\n')).toHaveLength(1);
    expect(junk.stderr).toMatch(
      /^ragfresh: import: none of the 3 records of junk\.jsonl is a readable crawler row/,
    );
  }, 300_000);
});
