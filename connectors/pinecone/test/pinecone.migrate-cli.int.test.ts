import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Pinecone } from '@pinecone-database/pinecone';
import { cosineSimilarity, describeEmbeddingSpace, HashingEmbeddings } from '@ragfresh/core';
import { type PineconeEmulator, startPineconeEmulator } from '@ragfresh/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The sim web site, by path: a test-only helper this package does not depend on.
import { migrationConfig, runCli } from '../../../packages/cli/test/migrate-config.js';
import { startSimWeb } from '../../../packages/sim/src/index.js';
import {
  EPOCH_INDEX_KEY,
  EPOCH_SPACE_KEY,
  EPOCH_VECTOR_ID,
  epochNamespace,
  spaceIndexName,
} from '../src/index.js';

// `ragfresh migrate embeddings` to other dimensions on Pinecone, through the built CLI against
// the wire emulator (the real v9 client in the CLI process): the migration opens an index of its
// own for the new space, every later role opens it from the space record, the configured index
// is emptied of ragfresh's chunks after the grace but not deleted.

const BIN = resolve(import.meta.dirname, '../../../packages/cli/dist/bin.js');
const PACKAGE = resolve(import.meta.dirname, '..');
const A = { kind: 'hashing', dimensions: 64 } as const;
const B = { kind: 'hashing', dimensions: 96 } as const;

const run = (args: string[], cwd: string) => runCli(args, cwd, 180_000);

let emu: PineconeEmulator;
beforeAll(async () => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first.`);
  emu = await startPineconeEmulator({ indexReadyAfterMs: 300 });
});
afterAll(async () => {
  await emu?.close();
});

describe('migrate embeddings to other dimensions on Pinecone (CLI, emulator)', () => {
  it('moves readers into an index of its own; the configured index is emptied, not deleted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ragfresh-pinecone-migrate-'));
    mkdirSync(join(dir, 'node_modules', '@ragfresh'), { recursive: true });
    symlinkSync(PACKAGE, join(dir, 'node_modules', '@ragfresh', 'connector-pinecone'));
    await using sim = await startSimWeb({ seed: 11, hosts: 1, pagesPerHost: 4 });
    const apiKey = `k-${new URL(emu.url).port}`;
    const connector = {
      store: 'pinecone',
      apiKey,
      controllerHostUrl: emu.url,
      indexName: 'docs',
      namespace: 'kb',
      createIndex: { cloud: 'aws', region: 'us-east-1' },
      maxLagMs: 1_000,
    };
    const { write, args: config } = migrationConfig(
      dir,
      `${sim.origin(sim.hosts()[0]!)}/sitemap.xml`,
      connector,
    );
    const pc = new Pinecone({ apiKey, controllerHostUrl: emu.url, maxRetries: 0 });
    const idsIn = async (host: string) => {
      const page = await pc.index({ host, namespace: 'kb' }).listPaginated({ limit: 100 });
      return (page.vectors ?? []).length;
    };
    try {
      write(A);
      const refreshed = await run(['refresh', ...config, '--quiet'], dir);
      expect(refreshed.code, refreshed.stderr).toBe(0);
      const configuredHost = (await pc.describeIndex('docs')).host;
      const stored = await idsIn(configuredHost);
      expect(stored).toBeGreaterThan(0);

      write(B);
      const to = await describeEmbeddingSpace(new HashingEmbeddings(B));
      const refused = await run(['query', 'pricing', ...config], dir);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('ragfresh migrate embeddings');

      const migrated = await run(['migrate', 'embeddings', '--json', ...config], dir);
      expect(migrated.code, migrated.stderr).toBe(0);
      const report = JSON.parse(migrated.stdout) as {
        outcome: string;
        chunks: number;
        embedded: number;
        namespace: string;
        retiredChunks: number;
      };
      expect(report).toMatchObject({ outcome: 'migrated', namespace: to.id });
      expect(report.embedded).toBe(report.chunks);
      expect(report.retiredChunks).toBe(report.chunks);

      // The space's index: created like the configured one at 96 dimensions, tagged, holding
      // every chunk, its pointer naming the space and itself.
      const name = spaceIndexName('docs', to.id);
      const model = await pc.describeIndex(name);
      expect(model.schema.fields._values).toMatchObject({ dimension: 96, metric: 'cosine' });
      expect(model.tags).toMatchObject({ ragfresh: 'space-index', ragfresh_space: to.id });
      expect(await idsIn(model.host)).toBe(report.chunks);
      const pointer = await pc
        .index({ host: model.host, namespace: epochNamespace('kb') })
        .fetch({ ids: [EPOCH_VECTOR_ID] });
      expect(pointer.records[EPOCH_VECTOR_ID]?.metadata).toMatchObject({
        [EPOCH_SPACE_KEY]: to.id,
        [EPOCH_INDEX_KEY]: name,
      });
      // The configured index: still there, emptied of ragfresh's chunks after the grace (0 here).
      expect((await pc.describeIndex('docs')).status.ready).toBe(true);
      expect(await idsIn(configuredHost)).toBe(0);

      // A later role (query, refresh) opens the space's index from the space record.
      const asked = await run(
        ['query', 'pricing plans and limits', '-k', '20', '--no-collapse', '--json', ...config],
        dir,
      );
      expect(asked.code, asked.stderr).toBe(0);
      const hits = JSON.parse(asked.stdout) as { text: string; versionId: string; score: number }[];
      expect(hits.length).toBeGreaterThan(0);
      const model96 = new HashingEmbeddings(B);
      const q = await model96.embedQuery('pricing plans and limits');
      for (const h of hits) {
        expect(h.versionId.endsWith(`~${to.id}`)).toBe(true);
        expect(h.score).toBeCloseTo(cosineSimilarity(q, await model96.embedQuery(h.text)), 4);
      }
      const creates = emu.requests.get('POST /indexes') ?? 0;
      const again = await run(['refresh', '--all', '--json', ...config], dir);
      expect(again.code, again.stderr).toBe(0);
      const counts = (
        JSON.parse(again.stdout) as {
          report: { sources: { counts: { chunksEmbedded: number; published: number } }[] };
        }
      ).report.sources[0]!.counts;
      expect(counts).toMatchObject({ chunksEmbedded: 0, published: 0 });
      expect(emu.requests.get('POST /indexes') ?? 0).toBe(creates);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
