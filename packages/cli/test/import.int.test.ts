import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentId, FIELDS, type StoreTarget, stableStringify } from '@ragfresh/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../src/index.js';
import {
  BIN,
  cli,
  cliAfterKill,
  readOnly,
  SHORT_LEASE,
  start,
  until,
  visible,
  writeConfig,
} from './import-harness.js';

const ORIGIN = 'https://docs.example.org';
const docId = (path: string) => documentId('docs', `${ORIGIN}${path}`);
const jsonl = (rows: object[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;

// The seed's synthetic trap: a changed-page delta mentions only the page that changed.
const BASELINE = jsonl([
  {
    url: `${ORIGIN}/docs/install`,
    loadedTime: '2026-10-01T00:00:00Z',
    markdown: '# Install\n\nInstall the package.\n\nLegacy setup.',
    chunks: [
      { text: 'Install the package.', headingPath: ['Install'] },
      { text: 'Legacy setup.', headingPath: ['Install', 'Legacy'] },
    ],
  },
  {
    url: `${ORIGIN}/docs/reference`,
    loadedTime: '2026-10-01T00:00:00Z',
    markdown: '# Reference\n\nReference material.',
    chunks: [{ text: 'Reference material.', headingPath: ['Reference'] }],
  },
]);
const DELTA = jsonl([
  {
    url: `${ORIGIN}/docs/install`,
    loadedTime: '2026-10-16T12:00:05.123Z',
    markdown: '# Install\n\nInstall the current package.',
    chunks: [{ text: 'Install the current package.', headingPath: ['Install'] }],
  },
]);

const stores: Array<{
  name: string;
  connector: (dir: string) => Promise<{ config: ConnectorConfig; stop: () => Promise<void> }>;
}> = [
  {
    name: 'lancedb',
    connector: async (dir) => ({
      config: { store: 'lancedb', path: join(dir, 'lance'), table: 'imports' },
      stop: async () => {},
    }),
  },
  {
    name: 'chroma',
    connector: async () => {
      const { fixture } = await import('@ragfresh/connector-chroma/fixture');
      const target: StoreTarget = await fixture.start();
      const url = String(target.connectorSpec('imports').options.url);
      return {
        config: { store: 'chroma', url, collection: `imports${Date.now()}` },
        stop: () => target.stop(),
      };
    },
  },
];

describe.each(stores)('ragfresh import: the synthetic trap on real $name', ({ connector }) => {
  let dir: string;
  let config: string;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    if (!existsSync(BIN))
      throw new Error(`${BIN} is missing: build first (npx -y pnpm@10 run build).`);
    dir = mkdtempSync(join(tmpdir(), 'ragfresh-import-'));
    const store = await connector(dir);
    stop = store.stop;
    config = writeConfig(dir, store.config);
    writeFileSync(join(dir, 'baseline.jsonl'), BASELINE);
    writeFileSync(join(dir, 'delta.jsonl'), DELTA);
    writeFileSync(join(dir, 'inventory.txt'), `${ORIGIN}/docs/install\n`);
  }, 120_000);
  afterAll(async () => {
    await stop?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it('replaces the changed page as a group, leaves the unmentioned page byte-identical, is a no-op twice, and only nominates on an inventory', async () => {
    const base = cli(
      ['import', '--source', 'docs', 'baseline.jsonl', '--config', config, '--json'],
      dir,
    );
    expect(base.stderr).not.toMatch(/"level":"warn"/);
    expect(base.code).toBe(0);
    expect(JSON.parse(base.stdout).report.counts.published).toBe(2);

    let rt = await readOnly(config);
    const oldIds = (await visible(rt, docId('/docs/install'))).map((c) => c.id);
    const refRecord = JSON.stringify(await rt.state.getDocument(docId('/docs/reference')));
    const refChunks = stableStringify(await visible(rt, docId('/docs/reference')));
    const epoch = await rt.connector.readEpoch();
    expect(oldIds).toHaveLength(2);
    await rt.close();

    const delta = cli(
      ['import', '--source', 'docs', 'delta.jsonl', '--config', config, '--json'],
      dir,
    );
    expect(delta.code).toBe(0);
    const d = JSON.parse(delta.stdout).report;
    expect(d.counts).toMatchObject({ rows: 1, published: 1 });

    rt = await readOnly(config);
    const install = await visible(rt, docId('/docs/install'));
    const newIds = install.map((c) => c.id);
    const record = await rt.state.getDocument(docId('/docs/install'));
    // Exactly the old version's chunk ids left the view; fewer chunks came in than went out.
    expect(newIds.filter((i) => oldIds.includes(i))).toEqual([]);
    expect(oldIds.every((i) => i.includes(`#${oldIds[0]!.split('#')[1]}#`))).toBe(true);
    expect(newIds.length).toBeLessThan(oldIds.length);
    expect(install.map((c) => c.text)).toEqual(['Install the current package.']);
    expect([...(record?.currentChunkIds ?? [])].sort()).toEqual(newIds);
    expect(record?.timestamps.retrievedAt).toBe('2026-10-16T12:00:05.123Z');
    const all = (await rt.connector.listChunks(docId('/docs/install'))).filter(
      (c) => Number(c.metadata[FIELDS.to]) > epoch + 1,
    );
    expect(all.map((c) => c.id).sort()).toEqual(newIds); // no old chunk still open
    // The page the delta does not mention: byte-identical in state and store.
    expect(JSON.stringify(await rt.state.getDocument(docId('/docs/reference')))).toBe(refRecord);
    expect(stableStringify(await visible(rt, docId('/docs/reference')))).toBe(refChunks);
    const epochAfter = await rt.connector.readEpoch();
    await rt.close();

    // The same delta again adds no work.
    const again = cli(
      ['import', '--source', 'docs', 'delta.jsonl', '--config', config, '--json'],
      dir,
    );
    expect(again.code).toBe(0);
    const a = JSON.parse(again.stdout).report.counts;
    expect(a).toMatchObject({
      candidates: 0,
      published: 0,
      chunksEmbedded: 0,
      storeWrites: 0,
      review: 0,
    });
    rt = await readOnly(config);
    expect(await rt.connector.readEpoch()).toBe(epochAfter);
    await rt.close();

    // An inventory without /docs/reference nominates it into review; nothing is deleted.
    const partial = cli(
      ['reconcile', '--source', 'docs', '--inventory', 'inventory.txt', '--config', config],
      dir,
    );
    expect(partial.code).toBe(2);
    expect(partial.stdout).toMatch(/nothing nominated/);
    const rec = cli(
      [
        'reconcile',
        '--source',
        'docs',
        '--inventory',
        'inventory.txt',
        '--coverage',
        'complete',
        '--config',
        config,
      ],
      dir,
    );
    expect(rec.code).toBe(0);
    rt = await readOnly(config);
    const items = await rt.state.listReviewItems({ status: 'pending' });
    expect(items.map((i) => [i.kind, i.url])).toEqual([['deletion', `${ORIGIN}/docs/reference`]]);
    expect(stableStringify(await visible(rt, docId('/docs/reference')))).toBe(refChunks);
    expect((await rt.state.getDocument(docId('/docs/reference')))?.currentVersionId).toBeDefined();
    await rt.close();
  }, 300_000);
});

describe('ragfresh import killed with SIGKILL, then run again (LanceDB)', () => {
  it('loses no document, leaves none with two versions, applies nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-import-kill-'));
    try {
      const config = writeConfig(dir, {
        store: 'lancedb',
        path: join(dir, 'lance'),
        table: 'kill',
      });
      const n = 40;
      const rows = Array.from({ length: n }, (_, i) => ({
        url: `${ORIGIN}/p/${i}`,
        loadedTime: '2026-10-02T00:00:00Z',
        markdown: `# Page ${i}\n\nBody of page ${i}, with its own words number ${i * 7}.`,
      }));
      writeFileSync(join(dir, 'many.jsonl'), jsonl(rows));
      const { child, out } = start(
        ['import', '--source', 'docs', 'many.jsonl', '--batch-size', '4', '--config', config],
        dir,
        SHORT_LEASE,
      );
      const exited = new Promise<NodeJS.Signals | null>((r) =>
        child.on('exit', (_c, sig) => r(sig)),
      );
      await until(
        () => /"event":"import-batch"/.test(out.stderr) || child.exitCode !== null,
        'the first published batch',
      );
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');

      let rt = await readOnly(config);
      let before = 0;
      for (const r of rows)
        if (
          (await rt.state.getDocument(docId(new URL(r.url).pathname)))?.currentVersionId !==
          undefined
        )
          before++;
      await rt.close();
      expect(before).toBeGreaterThan(0);
      expect(before).toBeLessThan(n);

      const rerun = await cliAfterKill(
        [
          'import',
          '--source',
          'docs',
          'many.jsonl',
          '--batch-size',
          '4',
          '--config',
          config,
          '--json',
        ],
        dir,
      );
      expect(rerun.code).toBe(0);
      const counts = JSON.parse(rerun.stdout).report.counts;
      // Nothing applied twice: what was current before the kill is unchanged now, the rest is
      // published once. A kill after a batch's epoch moved but before its records were written
      // is rolled forward by the rerun's publisher, so that one batch (4) is unchanged too.
      expect([before, before + 4]).toContain(counts.unchanged);
      expect(counts.published).toBe(n - counts.unchanged);

      rt = await readOnly(config);
      for (const r of rows) {
        const id = docId(new URL(r.url).pathname);
        const record = await rt.state.getDocument(id);
        expect(record?.currentVersionId).toBeDefined();
        const chunks = await visible(rt, id);
        expect(new Set(chunks.map((c) => c.metadata[FIELDS.versionId]))).toEqual(
          new Set([record!.currentVersionId]),
        );
      }
      expect(await rt.state.getJournal()).toBeUndefined();
      await rt.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
