import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { FIELDS, HashingEmbeddings } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueryHitView } from '../src/commands.js';
import { loadConfig } from '../src/config.js';
import { openReader } from '../src/reader.js';
import { type ReturnsSite, startReturnsSite } from '../src/returns-site.js';
import { openConnector } from '../src/runtime.js';
import type { RegisterEntry } from '../src/sources.js';

// Access scope through the built CLI on embedded LanceDB: a scoped source never answers an
// unscoped query, `--access` opens it to its groups, and narrowing the scope (support loses
// the returns source) leaves no moment in which a support reader, polling the store while the
// refresh republishes, sees the returns page again once it stopped seeing it; nor can a reader
// still holding the previous epoch read it afterwards.
const BIN = resolve(import.meta.dirname, '../dist/bin.js');

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      done({ code, stdout, stderr });
    });
  });
}

describe('access scope through the CLI', () => {
  let dir: string;
  let site: ReturnsSite;
  let configFile: string;
  const writeConfig = (returnsAccess: readonly string[]) =>
    writeFileSync(
      configFile,
      JSON.stringify({
        userAgent: 'ragfresh-test/0.1 (+https://example.org/bot)',
        dataDir: join(dir, 'data'),
        sources: [
          { id: 'returns', urls: [site.returnsUrl], access: returnsAccess, retention: '30d' },
          {
            id: 'shipping',
            urls: [site.shippingUrl],
            owner: 'web team',
            permission: { basis: 'public-web', note: 'our own site' },
            licence: 'CC-BY-4.0',
            intendedUse: 'customer support answers',
          },
        ],
        fetch: { minIntervalMs: 0, allowPrivateNetworks: true },
      }),
    );
  const query = async (extra: string[]) => {
    const r = await cli([
      'query',
      'return window days refund',
      '-k',
      '5',
      '--json',
      '--config',
      configFile,
      ...extra,
    ]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as QueryHitView[];
  };
  const sourceOf = (h: QueryHitView) => h.documentId.split(':')[0];

  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-access-'));
    site = await startReturnsSite();
    configFile = join(dir, 'ragfresh.config.json');
    writeConfig(['support', 'staff']);
    const cold = await cli(['refresh', '--all', '--config', configFile]);
    expect(cold.code, cold.stderr).toBe(0);
  });
  afterAll(async () => {
    await site?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a scoped source never answers an unscoped query; its groups see it', async () => {
    const unscoped = await query([]);
    expect(unscoped.length).toBeGreaterThan(0);
    expect(new Set(unscoped.map(sourceOf))).toEqual(new Set(['shipping']));
    const outsider = await query(['--access', 'marketing']);
    expect(new Set(outsider.map(sourceOf))).toEqual(new Set(['shipping']));
    const support = await query(['--access', 'support']);
    expect(support.map(sourceOf)).toContain('returns');
    expect(support[0]?.text).toContain('30 days');
  });

  it("the MCP reader: the server's groups reach the store filter; a scoped source is invisible to others", async () => {
    const config = await loadConfig(configFile);
    const outsider = await openReader(config);
    try {
      const hits = await outsider.search({ query: 'return window days refund', k: 5 });
      expect(hits.results.length).toBeGreaterThan(0);
      expect(new Set(hits.results.map((h) => h.documentId.split(':')[0]))).toEqual(
        new Set(['shipping']),
      );
      expect(outsider.sourceIds).toEqual(['shipping']);
      const fresh = await outsider.freshness({});
      expect(fresh.sources.map((s) => s.sourceId)).toEqual(['shipping']);
      await expect(outsider.getDocument({ url: site.returnsUrl, maxChunks: 5 })).rejects.toThrow(
        /is not a known document/,
      );
      await expect(outsider.explain({ url: site.returnsUrl })).rejects.toThrow(
        /is not a known document/,
      );
    } finally {
      await outsider.close();
    }
    const support = await openReader(config, { identity: { access: ['support'] } });
    try {
      const hits = await support.search({ query: 'return window days refund', k: 5 });
      expect(hits.results.map((h) => h.documentId.split(':')[0])).toContain('returns');
      const doc = await support.getDocument({ url: site.returnsUrl, maxChunks: 5 });
      expect(doc.chunkCount).toBeGreaterThan(0);
    } finally {
      await support.close();
    }
  });

  it('a bad --access is one usage line, exit 2', async () => {
    const r = await cli(['query', 'x', '--access', 'support,no spaces', '--config', configFile]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('"no spaces" is not a group name');
  });

  it('sources prints the register and flags a source without owner or permission basis', async () => {
    const text = await cli(['sources', '--config', configFile]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(
      /returns\s.*staff, support.*30\.0d.*! no owner, no permission basis/,
    );
    expect(text.stdout).toMatch(/shipping\s+web team\s+public-web \(our own site\)\s+CC-BY-4\.0/);
    const json = await cli(['sources', '--json', '--config', configFile]);
    const rows = JSON.parse(json.stdout) as RegisterEntry[];
    expect(rows.map((r) => [r.sourceId, r.access, r.retentionMs ?? null, r.gaps])).toEqual([
      ['returns', ['staff', 'support'], 30 * 86_400_000, ['no owner', 'no permission basis']],
      ['shipping', [], null, []],
    ]);
  });

  it('narrowing: a polling support reader never sees the page again once it stopped', {
    timeout: 120_000,
  }, async () => {
    const config = await loadConfig(configFile);
    const connector = await openConnector(config);
    const probe = await new HashingEmbeddings({ dimensions: 256 }).embedQuery(
      'return window days refund',
    );
    try {
      const before = await connector.readEpoch();
      const returnsSeen = async (epoch?: number) => {
        const hits =
          epoch === undefined
            ? await connector.searchCurrent(probe, 10, { access: ['support'], sourceId: 'returns' })
            : await connector.query(probe, 10, {
                view: { kind: 'epoch', epoch },
                access: ['support'],
                sourceId: 'returns',
              });
        return hits.length;
      };
      expect(await returnsSeen()).toBeGreaterThan(0);
      writeConfig(['staff']);
      const child = spawn(process.execPath, [BIN, 'refresh', '--all', '--config', configFile], {
        stdio: 'ignore',
      });
      const exited = new Promise<number>((done) => child.on('exit', (code) => done(code ?? 1)));
      let done = false;
      void exited.then(() => {
        done = true;
      });
      const observations: number[] = [];
      while (!done) observations.push(await returnsSeen());
      expect(await exited).toBe(0);
      observations.push(await returnsSeen());
      // Visible, then gone, never back: after the first empty answer every later one is empty.
      const firstGone = observations.indexOf(0);
      expect(firstGone).toBeGreaterThanOrEqual(0);
      expect(observations.slice(firstGone).every((n) => n === 0)).toBe(true);
      // A reader still holding the previous epoch reads nothing of the narrowed source either.
      expect(await returnsSeen(before)).toBe(0);
      const staff = await connector.searchCurrent(probe, 10, {
        access: ['staff'],
        sourceId: 'returns',
      });
      expect(staff.length).toBeGreaterThan(0);
      expect(staff.every((h) => JSON.stringify(h.metadata[FIELDS.access]) === '["staff"]')).toBe(
        true,
      );
      expect(await connector.readEpoch()).toBe(before + 1);
    } finally {
      await connector.close();
    }
    expect((await query(['--access', 'support'])).map(sourceOf)).not.toContain('returns');
  });
});
