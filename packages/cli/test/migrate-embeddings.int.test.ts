import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { StoreTarget } from '@ragfresh/core';
import { cosineSimilarity, describeEmbeddingSpace, HashingEmbeddings } from '@ragfresh/core';
import { startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationConfig, runCli } from './migrate-config.js';

// A model change through the built CLI on real LanceDB and on pgvector (PGlite with the real
// pgvector extension, served over the Postgres wire protocol): refused before the migration,
// migrated from the stored chunk texts without one request to the site, and ranked with the
// new model afterwards. "A new model" is HashingEmbeddings with another seed (the same
// dimensions, another vector space) or with other dimensions.

const BIN = resolve(import.meta.dirname, '../dist/bin.js');
const REPO = resolve(import.meta.dirname, '../../..');

const run = (args: string[], cwd: string) => runCli(args, cwd, 120_000);

interface Hit {
  readonly text: string;
  readonly versionId: string;
  readonly score: number;
}

const A = { kind: 'hashing', dimensions: 64 } as const;
// The checks that do not depend on the kind of change run once per store (CI time).
const changes = [
  {
    name: 'same dimensions (another seed)',
    next: { kind: 'hashing', dimensions: 64, seed: 7 },
    refusedCommands: [
      ['query', 'pricing', '--json'],
      ['refresh', '--quiet'],
    ],
    oldRefusedAfter: false,
  },
  {
    name: 'new dimensions',
    next: { kind: 'hashing', dimensions: 96 },
    refusedCommands: [['query', 'pricing', '--json']],
    oldRefusedAfter: true,
  },
] as const;

describe.each(['lancedb', 'pgvector'] as const)('migrate embeddings on %s', (store) => {
  let pg: StoreTarget | undefined;
  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build first.`);
    if (store === 'pgvector') {
      const { fixture } = await import('@ragfresh/connector-pgvector/fixture');
      pg = await fixture.start();
    }
  });
  afterAll(async () => {
    await pg?.stop();
  });

  it.each(changes)(
    '$name: refused, migrated without a refetch, ranked by the new model',
    async ({ next, refusedCommands, oldRefusedAfter }) => {
      const dir = mkdtempSync(join(tmpdir(), 'ragfresh-migrate-'));
      // The config's folder resolves the connector package, as a user's project would.
      mkdirSync(join(dir, 'node_modules', '@ragfresh'), { recursive: true });
      symlinkSync(
        join(REPO, 'connectors', store),
        join(dir, 'node_modules', '@ragfresh', `connector-${store}`),
      );
      await using sim = await startSimWeb({ seed: 11, hosts: 1, pagesPerHost: 4 });
      const table = `mig_${Math.random().toString(36).slice(2, 8)}`;
      const connector =
        store === 'lancedb'
          ? { store, path: join(dir, 'lance'), table }
          : { store, connectionString: pg!.connectorSpec(table).options.connectionString, table };
      const { write, args: config } = migrationConfig(
        dir,
        `${sim.origin(sim.hosts()[0]!)}/sitemap.xml`,
        connector,
      );
      try {
        write(A);
        const refreshed = await run(['refresh', ...config, '--quiet'], dir);
        expect(refreshed.code, refreshed.stderr).toBe(0);
        const requests = sim.log().length;

        write(next);
        const to = await describeEmbeddingSpace(new HashingEmbeddings(next));
        const from = await describeEmbeddingSpace(new HashingEmbeddings(A));
        for (const args of refusedCommands) {
          const refused = await run([...args, ...config], dir);
          expect(refused.code).toBe(1);
          const lines = refused.stderr.trim().split('\n');
          expect(lines).toHaveLength(1);
          expect(lines[0]).toContain(to.id);
          expect(lines[0]).toContain(from.id);
          expect(lines[0]).toContain('ragfresh migrate embeddings');
        }

        const dry = await run(
          ['migrate', 'embeddings', '--dry-run', '--price', '0.02', ...config],
          dir,
        );
        expect(dry.code, dry.stderr).toBe(0);
        const planned = /dry run: (\d+) documents, (\d+) chunks, (\d+) tokens/.exec(dry.stdout);
        expect(planned, dry.stdout).not.toBeNull();
        expect(Number(planned![2])).toBeGreaterThan(0);
        expect(Number(planned![3])).toBeGreaterThan(Number(planned![2]));

        const migrated = await run(['migrate', 'embeddings', '--json', ...config], dir);
        expect(migrated.code, migrated.stderr).toBe(0);
        const report = JSON.parse(migrated.stdout) as {
          outcome: string;
          chunks: number;
          embedded: number;
          namespace: string;
          retiredChunks: number;
          retiredNamespaceDropped?: boolean;
        };
        expect(report.outcome).toBe('migrated');
        // Other dimensions: the configured table, emptied after the (zero) grace, is dropped.
        const moved = next.dimensions !== A.dimensions;
        expect(report.retiredNamespaceDropped).toBe(moved ? true : undefined);
        if (store === 'lancedb') {
          expect(existsSync(join(dir, 'lance', `${table}.lance`))).toBe(!moved);
          expect(existsSync(join(dir, 'lance', `${table}__rf_epoch.lance`))).toBe(!moved);
          expect(existsSync(join(dir, 'lance', `${table}__${to.id}.lance`))).toBe(moved);
        }
        expect(report.chunks).toBe(Number(planned![2]));
        expect(report.embedded).toBe(report.chunks);
        expect(report.namespace).toBe(next.dimensions === A.dimensions ? 'same' : to.id);
        // Re-embedded from the stored texts: the site saw no request.
        expect(sim.log().length).toBe(requests);

        // Ranked by the new model: the top hit is the chunk the new embeddings put nearest.
        const asked = await run(
          ['query', 'pricing plans and limits', '-k', '20', '--no-collapse', '--json', ...config],
          dir,
        );
        expect(asked.code, asked.stderr).toBe(0);
        const hits = JSON.parse(asked.stdout) as Hit[];
        expect(hits.length).toBeGreaterThan(0);
        for (const h of hits) expect(h.versionId.endsWith(`~${to.id}`)).toBe(true);
        const model = new HashingEmbeddings(next);
        const q = await model.embedQuery('pricing plans and limits');
        for (const h of hits)
          expect(h.score).toBeCloseTo(cosineSimilarity(q, await model.embedQuery(h.text)), 4);

        // The old embeddings are refused now; the new ones refresh with nothing re-embedded.
        if (oldRefusedAfter) {
          write(A);
          expect((await run(['query', 'pricing', ...config], dir)).code).toBe(1);
          write(next);
        }
        const again = await run(['refresh', '--all', '--json', ...config], dir);
        expect(again.code, again.stderr).toBe(0);
        const counts = (
          JSON.parse(again.stdout) as {
            report: { sources: { counts: { chunksEmbedded: number; published: number } }[] };
          }
        ).report.sources[0]!.counts;
        expect(counts.chunksEmbedded).toBe(0);
        expect(counts.published).toBe(0);

        if (store === 'lancedb' && next.dimensions !== A.dimensions) {
          // status reads the epoch of the namespace the space record names, through the light
          // probe: healthy although the configured table's epoch table was dropped with it (a
          // read of that one would be STORE_LOST); that namespace's epoch table gone is
          // STORE_LOST, and status leaves the folder gone (opening recreates it).
          const epochTables = () =>
            readdirSync(join(dir, 'lance')).filter((f) => f.endsWith('__rf_epoch.lance'));
          const moved = epochTables().find((f) => f !== `${table}__rf_epoch.lance`)!;
          expect(epochTables()).toEqual([moved]);
          expect(existsSync(join(dir, 'lance', moved, 'ragfresh-epoch.json'))).toBe(true);
          const healthy = await run(['status', ...config], dir);
          expect(healthy.stderr).not.toMatch(/STORE_LOST/);
          rmSync(join(dir, 'lance', moved), { recursive: true });
          const lost = await run(['status', ...config], dir);
          expect(lost.code).toBe(1);
          expect(lost.stderr).toMatch(
            /the lancedb store is at epoch 0, behind the state's \d+.*\(code STORE_LOST\)/,
          );
          expect(existsSync(join(dir, 'lance', moved))).toBe(false);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
