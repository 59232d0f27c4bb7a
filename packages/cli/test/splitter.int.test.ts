import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type SimWeb, startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `chunking.splitter` through the built CLI: a real LangChain RecursiveCharacterTextSplitter in
// an .mjs config (resolved from the user's project, as a user would install it) cuts every
// section; changing its settings re-cuts every page from the stored raw snapshots.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');
const SPLITTERS = resolve(import.meta.dirname, '../node_modules/@langchain/textsplitters');

function cli(args: string[], cwd: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(process.execPath, [BIN, ...args], { cwd, timeout: 120_000 }, (err, stdout, stderr) =>
      done({
        code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
        stdout,
        stderr,
      }),
    );
  });
}

interface Hit {
  text: string;
  header: string;
}

describe('chunking.splitter: a LangChain TextSplitter as the chunker, through the CLI', () => {
  let sim: SimWeb;
  let dir: string;
  let pages: string[];
  const config = (
    chunkSize: number,
  ) => `import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
export default {
  userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
  sources: [{ id: 'docs', urls: ${JSON.stringify(pages)} }],
  fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
  chunking: { splitter: new RecursiveCharacterTextSplitter({ chunkSize: ${chunkSize}, chunkOverlap: 0 }) },
};`;

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-splitter-'));
    mkdirSync(join(dir, 'node_modules/@langchain'), { recursive: true });
    symlinkSync(SPLITTERS, join(dir, 'node_modules/@langchain/textsplitters'), 'dir');
    writeFileSync(
      join(dir, 'package.json'),
      '{"name":"splitter-project","private":true,"type":"module"}',
    );
    sim = await startSimWeb({ seed: 23, hosts: 1, pagesPerHost: 4 });
    pages = sim.urls(sim.hosts()[0]!);
  });
  afterAll(async () => {
    await sim?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('cuts every section with the splitter, keeps heading paths, and re-cuts from snapshots when its settings change', async () => {
    writeFileSync(join(dir, 'ragfresh.config.mjs'), config(160));
    const first = await cli(['refresh', '--all', '--json'], dir);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).report.totals.published).toBe(pages.length);
    const q = await cli(['query', 'guide', '-k', '20', '--no-collapse', '--json'], dir);
    expect(q.code, q.stderr).toBe(0);
    const hits = JSON.parse(q.stdout) as Hit[];
    expect(hits.length).toBeGreaterThan(pages.length);
    // RecursiveCharacterTextSplitter counts characters: no piece is over its chunkSize.
    for (const h of hits) expect(h.text.length).toBeLessThanOrEqual(160);
    // Heading paths ride on the pieces (the citation header names the section).
    expect(hits.some((h) => h.header.includes(' > '))).toBe(true);

    writeFileSync(join(dir, 'ragfresh.config.mjs'), config(400));
    sim.clearLog();
    const second = await cli(['refresh', '--all', '--json'], dir);
    expect(second.code, second.stderr).toBe(0);
    const totals = JSON.parse(second.stdout).report.totals;
    expect(totals.reextracted).toBe(pages.length);
    expect(sim.log().filter((e) => e.status === 200)).toEqual([]);
    const again = JSON.parse(
      (await cli(['query', 'guide', '-k', '20', '--no-collapse', '--json'], dir)).stdout,
    ) as Hit[];
    expect(Math.max(...again.map((h) => h.text.length))).toBeGreaterThan(160);
  });

  it('a splitter that is not one is one config line naming the field, exit 2', async () => {
    const p = join(dir, 'bad.config.mjs');
    writeFileSync(
      p,
      `export default { userAgent: 'b/1 (+https://e.org/b)', sources: [{ id: 'docs', urls: ['https://e.org/'] }], chunking: { splitter: { name: 'mine' } } };`,
    );
    const r = await cli(['status', '--config', p], dir);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^ragfresh: config chunking\.splitter: \{"name":"mine"\} is not a splitter; give a LangChain TextSplitter/,
    );
  });
});
