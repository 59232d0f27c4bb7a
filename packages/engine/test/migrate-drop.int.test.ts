import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryConnector } from '@ragfresh/connector-memory';
import { FIELDS, HashingEmbeddings, readSpaceRecord } from '@ragfresh/core';
import { startSimWeb } from '@ragfresh/sim';
import { describe, expect, it } from 'vitest';
import { migrateEmbeddingSpace } from '../src/migrate-space.js';
import { composeOnDisk } from './fixtures/migration-index.mjs';

// After a migration to other dimensions, the namespace left behind (here the configured one: the
// memory connector's persisted file) is emptied after the grace and then dropped — unless it
// still holds a chunk no document of this index owns, which keeps it (and that chunk).

const FROM = 32;
const TO = 48;

describe('migrate embeddings to other dimensions drops the namespace it retired', () => {
  it.each([
    { foreign: false, dropped: true },
    { foreign: true, dropped: false },
  ])(
    'a chunk of another index there: $foreign; dropped: $dropped',
    async ({ foreign, dropped }) => {
      const dir = mkdtempSync(join(tmpdir(), 'ragfresh-migrate-drop-'));
      await using sim = await startSimWeb({ seed: 5, hosts: 1, pagesPerHost: 3 });
      const index = { dir, sitemap: `${sim.origin(sim.hosts()[0]!)}/sitemap.xml` };
      const configured = join(dir, 'index.json');
      try {
        const first = await composeOnDisk(
          index,
          new HashingEmbeddings({ dimensions: FROM }),
          'refresh',
        );
        await first.engine.refresh({ all: true });
        await first.close();
        if (foreign) {
          // A chunk written into the same file by something else: no document of this state.
          const other = createMemoryConnector({ persistPath: configured });
          await other.open({ dimensions: FROM });
          await other.upsert([
            {
              id: 'foreign#0',
              text: 'not ours',
              embedding: new Array<number>(FROM).fill(0).map((_, i) => (i === 0 ? 1 : 0)),
              metadata: {
                [FIELDS.documentId]: 'foreign',
                [FIELDS.versionId]: 'v1',
                [FIELDS.chunkId]: 'foreign#0',
                [FIELDS.ordinal]: 0,
                [FIELDS.from]: 0,
                [FIELDS.to]: Number.MAX_SAFE_INTEGER,
                [FIELDS.current]: true,
              },
            },
          ]);
          await other.close();
        }

        const rt = await composeOnDisk(index, new HashingEmbeddings({ dimensions: TO }), 'migrate');
        let report: Awaited<ReturnType<typeof migrateEmbeddingSpace>>;
        try {
          report = await migrateEmbeddingSpace(rt, { sleep: async () => {} });
        } finally {
          await rt.close();
        }
        expect(report.outcome).toBe('migrated');
        expect(report.namespace).toBe(rt.space.id);
        // Every chunk of ours was deleted from the namespace left behind, either way.
        expect(report.retiredChunks).toBe(report.chunks);
        expect(report.retiredNamespaceDropped).toBe(dropped ? true : undefined);
        expect(existsSync(configured)).toBe(!dropped);
        expect(existsSync(`${configured}.epoch`)).toBe(!dropped);
        expect(existsSync(`${configured}__${rt.space.id}`)).toBe(true);

        const reader = await composeOnDisk(
          index,
          new HashingEmbeddings({ dimensions: TO }),
          'read',
        );
        try {
          const record = await readSpaceRecord(reader.state);
          expect(record?.retiring).toBeUndefined();
          expect(record?.namespace).toBe(reader.space.id);
          expect(
            await reader.connector.searchCurrent(
              new HashingEmbeddings({ dimensions: TO }).embedText('pricing'),
              100,
            ),
          ).toHaveLength(report.chunks);
        } finally {
          await reader.close();
        }
        if (foreign) {
          const left = createMemoryConnector({ persistPath: configured });
          await left.open({ dimensions: FROM });
          const chunks: string[] = [];
          for await (const page of left.scanChunks()) chunks.push(...page.map((c) => c.id));
          await left.close();
          expect(chunks).toEqual(['foreign#0']);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
