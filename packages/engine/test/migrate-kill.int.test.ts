import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  describeEmbeddingSpace,
  FIELDS,
  HashingEmbeddings,
  isRagfreshError,
  JOURNAL_STEPS,
  readSpaceRecord,
} from '@ragfresh/core';
import { startSimWeb } from '@ragfresh/sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateEmbeddingSpace } from '../src/migrate-space.js';
import { composeOnDisk, type IndexOnDisk } from './fixtures/migration-index.mjs';

// SIGKILL anywhere in a migration: a child process runs `migrate embeddings` on an index on disk
// (the memory connector's persisted file and a SQLite state) and kills itself after the first
// embedded batch or right after the journal recorded each publisher step; the next migration run
// resumes (rolled back before the epoch move, forward after it) and the index ends in the new
// space with exactly the chunks it had, none of the old space in the current view.

const CHILD = join(import.meta.dirname, 'fixtures', 'migrate-kill-child.mjs');
const A = { dimensions: 32, seed: 0 };

function runChild(index: IndexOnDisk, step: string, to: { dimensions: number; seed: number }) {
  return new Promise<{ signal: NodeJS.Signals | null; output: string }>((done, fail) => {
    const child = spawn(process.execPath, [
      CHILD,
      JSON.stringify(index),
      step,
      String(to.dimensions),
      String(to.seed),
    ]);
    let output = '';
    child.stdout.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.on('error', fail);
    child.on('exit', (_code, signal) => done({ signal, output }));
  });
}

/** Every current chunk as `document#ordinal text`, and the spaces they are in. */
async function currentView(index: IndexOnDisk, embeddings: HashingEmbeddings) {
  const rt = await composeOnDisk(index, embeddings, 'read');
  try {
    const hits = await rt.connector.searchCurrent(await embeddings.embedQuery('pricing'), 500);
    return {
      chunks: hits
        .map(
          (h) =>
            `${String(h.metadata[FIELDS.documentId])}#${String(h.metadata[FIELDS.ordinal])} ${h.text}`,
        )
        .sort(),
      spaces: new Set(hits.map((h) => h.metadata[FIELDS.space])),
      space: rt.space.id,
    };
  } finally {
    await rt.close();
  }
}

describe('migrate embeddings killed anywhere', () => {
  let base: string;
  let sitemap: string;
  let before: Awaited<ReturnType<typeof currentView>>;
  let stopSim: () => Promise<void>;
  beforeAll(async () => {
    base = mkdtempSync(join(tmpdir(), 'ragfresh-kill-'));
    const sim = await startSimWeb({ seed: 9, hosts: 1, pagesPerHost: 4 });
    stopSim = () => sim.stop();
    sitemap = `${sim.origin(sim.hosts()[0]!)}/sitemap.xml`;
    const rt = await composeOnDisk({ dir: base, sitemap }, new HashingEmbeddings(A), 'refresh');
    await rt.engine.refresh({ all: true });
    await rt.close();
    before = await currentView({ dir: base, sitemap }, new HashingEmbeddings(A));
  });
  afterAll(async () => {
    await stopSim();
    rmSync(base, { recursive: true, force: true });
  });

  const points = [
    ...['embedding', ...JOURNAL_STEPS].map((step) => ({ step, to: { dimensions: 32, seed: 7 } })),
    // Other dimensions: before and after the epoch move of the new namespace.
    ...['staged', 'promoting', 'flagged'].map((step) => ({
      step,
      to: { dimensions: 40, seed: 0 },
    })),
  ];
  it.each(points)(
    'killed at $step (to $to.dimensions dimensions): the next run ends in the new space',
    async ({ step, to }) => {
      const dir = mkdtempSync(join(tmpdir(), 'ragfresh-kill-case-'));
      try {
        cpSync(base, dir, { recursive: true });
        const index = { dir, sitemap };
        const killed = await runChild(index, step, to);
        expect(killed.signal, killed.output).toBe('SIGKILL');

        const next = new HashingEmbeddings(to);
        const rt = await composeOnDisk(index, next, 'migrate');
        try {
          // The killed run's lease is held until it expires: busy, then resumed.
          let report: Awaited<ReturnType<typeof migrateEmbeddingSpace>> | undefined;
          for (let attempt = 0; report === undefined; attempt++) {
            report = await migrateEmbeddingSpace(rt).catch(async (err: unknown) => {
              if (!isRagfreshError(err, 'LEASE_HELD') || attempt > 20) throw err;
              await new Promise((r) => setTimeout(r, 200));
              return undefined;
            });
          }
          expect(report.outcome).toBe('migrated');
        } finally {
          await rt.close();
        }
        const after = await currentView(index, next);
        expect(after.spaces).toEqual(new Set([after.space]));
        expect(after.chunks).toEqual(before.chunks);
        const record = await (async () => {
          const r = await composeOnDisk(index, next, 'read');
          try {
            return await readSpaceRecord(r.state);
          } finally {
            await r.close();
          }
        })();
        expect(record?.active.id).toBe((await describeEmbeddingSpace(next)).id);
        expect(record?.migration).toBeUndefined();
        // The old embeddings are refused from now on.
        const old = await composeOnDisk(index, new HashingEmbeddings(A), 'read').catch(
          (e: unknown) => e,
        );
        expect(isRagfreshError(old, 'SPACE_MISMATCH')).toBe(true);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
