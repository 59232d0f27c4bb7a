// pnpm bench:migrate — what a model change costs: `migrateEmbeddingSpace` on real LanceDB at
// CHUNKS chunks (default 10,000; DOCS documents of CHUNKS / DOCS chunks each), once to a space of
// the same dimensions (another HashingEmbeddings seed: same table) and once to other dimensions
// (a new table). Measures wall and CPU time, texts embedded (must equal the chunks), a polling
// reader's answers holding two spaces (must be 0), and the store's size on disk before, at its
// largest during, and after. Runs built code (tsc -b first); Node strips the types.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LanceDbConnector } from '@ragfresh/connector-lancedb';
import {
  CountingEmbeddings,
  chunkId,
  documentId,
  FIELDS,
  HashingEmbeddings,
  InMemoryStateStore,
  type PublishCandidate,
  readSpaceRecord,
  sha256Hex,
  versionId,
} from '@ragfresh/core';
import { composeEngine, resolveEngineSettings } from '@ragfresh/engine';
import { migrateEmbeddingSpace } from '@ragfresh/engine/migrate';

const CHUNKS = Number(process.env.CHUNKS ?? 10_000);
const DOCS = Number(process.env.DOCS ?? 500);
const PER_DOC = Math.ceil(CHUNKS / DOCS);
const DIMS = 256;

function sizeOf(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    total += e.isDirectory() ? sizeOf(p) : statSync(p).size;
  }
  return total;
}

const mb = (bytes: number) => (bytes / 1_048_576).toFixed(1);

function corpus(): Array<Omit<PublishCandidate, 'chunks'> & { texts: string[] }> {
  const words = ['pricing', 'quota', 'limits', 'plans', 'support', 'regions', 'billing', 'tokens'];
  return Array.from({ length: DOCS }, (_, d) => {
    const url = `https://docs.example.org/page-${d}`;
    const texts = Array.from(
      { length: PER_DOC },
      (_, o) =>
        `Section ${o} of page ${d}: the ${words[(d + o) % words.length]} of plan ${d % 17} are ${o * 3 + d} per minute, ` +
        `with ${words[(d * 3 + o) % words.length]} documented for region ${o % 5}.`,
    );
    const text = texts.join('\n\n');
    return {
      documentId: documentId('docs', url),
      versionId: versionId({
        text,
        chunks: texts.map((t) => ({ text: t, headingPath: [] })),
        versions: { extractor: 'bench', chunker: 'bench', schema: '1' },
      }),
      sourceId: 'docs',
      url,
      contentHash: sha256Hex(text),
      textChars: text.length,
      texts,
    };
  });
}

async function run(to: { dimensions: number; seed: number }, label: string) {
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-bench-migrate-'));
  const state = new InMemoryStateStore();
  const settings = resolveEngineSettings({
    sources: [],
    fetch: { userAgent: 'ragfresh-bench/0.1 (+https://example.org/bot)' },
    publish: { retireGraceMs: 0 },
  });
  const lance = () => new LanceDbConnector({ path: dir, table: 'bench' });
  const old = new HashingEmbeddings({ dimensions: DIMS });
  // Build the index: DOCS documents published in batches of 100, vectors of the old space.
  const build = await composeEngine(
    settings,
    { connector: lance(), state, embeddings: old },
    'refresh',
  );
  const docs = corpus();
  const at = new Date().toISOString();
  for (let i = 0; i < docs.length; i += 100) {
    const batch = docs.slice(i, i + 100).map(({ texts, ...d }) => {
      const vectors = texts.map((t) => old.embedText(t));
      return {
        ...d,
        retrievedAt: at,
        chunks: texts.map((text, ordinal) => ({
          chunkId: chunkId(d.documentId, d.versionId, ordinal),
          documentId: d.documentId,
          versionId: d.versionId,
          sourceId: 'docs',
          ordinal,
          text,
          headingPath: [],
          tokenCount: Math.ceil(text.length / 4),
          contentHash: sha256Hex(text),
          provenance: {
            url: d.url,
            finalUrl: d.url,
            title: `Page ${i}`,
            retrievedAt: at,
            contentChangedAt: at,
            acquisition: 'raw' as const,
          },
          embedding: vectors[ordinal]!,
        })),
      };
    });
    await build.publisher!.publish(batch);
  }
  await build.close();
  const before = sizeOf(dir);

  const embeddings = new CountingEmbeddings(to);
  const rt = await composeEngine(settings, { connector: lance(), state, embeddings }, 'migrate');
  // A polling reader on its own connectors, as another process would read.
  const readers = {
    old: lance(),
    new: to.dimensions === DIMS ? lance() : lance().forNamespace(rt.space.id),
  };
  await readers.old.open({ dimensions: DIMS });
  let stop = false;
  const tally = { reads: 0, mixed: 0, maxBytes: before };
  const qOld = old.embedText('pricing limits per minute');
  const qNew = await new HashingEmbeddings(to).embedQuery('pricing limits per minute');
  const reader = (async () => {
    while (!stop) {
      const record = await readSpaceRecord(state);
      const inNew = record?.active.id === rt.space.id;
      const connector = inNew ? readers.new : readers.old;
      if (inNew && connector.dimensions === undefined)
        await connector.open({ dimensions: to.dimensions });
      const hits = await connector.searchCurrent(inNew ? qNew : qOld, 20);
      if (new Set(hits.map((h) => h.metadata[FIELDS.space])).size > 1) tally.mixed++;
      tally.reads++;
      tally.maxBytes = Math.max(tally.maxBytes, sizeOf(dir));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const report = await migrateEmbeddingSpace(rt, { batchSize: 256, concurrency: 2 });
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  stop = true;
  await reader;
  tally.maxBytes = Math.max(tally.maxBytes, sizeOf(dir));
  await rt.close();
  await readers.old.close();
  if (readers.new.dimensions !== undefined) await readers.new.close();
  const after = sizeOf(dir);
  rmSync(dir, { recursive: true, force: true });
  return {
    label,
    chunks: report.chunks,
    embedded: embeddings.texts,
    wallS: (wall / 1000).toFixed(1),
    cpuS: ((cpu.user + cpu.system) / 1e6).toFixed(1),
    reads: tally.reads,
    mixed: tally.mixed,
    before: mb(before),
    during: mb(tally.maxBytes),
    after: mb(after),
    retired: report.retiredChunks,
  };
}

const rows = [
  await run({ dimensions: DIMS, seed: 7 }, `same dims (${DIMS}, seed 7)`),
  await run({ dimensions: 384, seed: 0 }, `new dims (${DIMS} -> 384)`),
];
console.log(
  `migrate embeddings on LanceDB, ${CHUNKS} chunks in ${DOCS} documents (Node ${process.versions.node})`,
);
console.log(
  '| change | chunks | embedded | wall s | CPU s | reader polls | mixed-space answers | store MB before | max during | after | retired chunks |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${r.label} | ${r.chunks} | ${r.embedded} | ${r.wallS} | ${r.cpuS} | ${r.reads} | ${r.mixed} | ${r.before} | ${r.during} | ${r.after} | ${r.retired} |`,
  );
