// pnpm bench:connectors — what each connector costs per publish step, for CHUNKS chunks.
// For every store named in STORES (default: all below), starts its fixture target (local
// server, embedded dir, ...) and measures on one fresh namespace:
//   stage    upsert CHUNKS chunks (DOCS documents x CHUNKS/DOCS chunks) as staged   chunks/s
//   verify   per document: exact count + listed ids + smoke query with own vector  ms (median, p95)
//   promote  the epoch compare-and-set that publishes a batch                       ms (median, p95)
//   flag     rf_current flip of one document (set new, clear old)                   ms (median)
//   search   what a reader does: read the epoch, top-5 in its snapshot view          ms (median, p95)
//   retire   delete the previous version of every document                          chunks/s
// Runs built code (tsc -b first); Node strips the types of this file. To add a store, add
// one line to STORES with the module exporting its `fixture`.
import { chunkId, FIELDS, OPEN_EPOCH, type StoredChunk, type StoreFixture } from '@ragfresh/core';

const STORES: Record<string, () => Promise<{ fixture: StoreFixture }>> = {
  chroma: () => import('@ragfresh/connector-chroma/fixture'),
  lancedb: () => import('@ragfresh/connector-lancedb/fixture'),
  pgvector: () => import('@ragfresh/connector-pgvector/fixture'),
};

const CHUNKS = Number(process.env.CHUNKS ?? 10_000);
const PER_DOC = Number(process.env.PER_DOC ?? 10);
const DIMS = Number(process.env.DIMS ?? 384);
const VERIFY_SAMPLE = Number(process.env.VERIFY_SAMPLE ?? 100);
const PROMOTIONS = Number(process.env.PROMOTIONS ?? 20);
const selected = (process.env.STORES ?? Object.keys(STORES).join(','))
  .split(',')
  .filter((s) => s !== '');

/** mulberry32: 32-bit integer arithmetic, so every seed gives a distinct, well-spread vector. */
function embed(seed: number): number[] {
  let a = (seed * 0x9e3779b1) >>> 0;
  const v: number[] = [];
  for (let i = 0; i < DIMS; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    v.push((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1);
  }
  return v;
}

function versionChunks(doc: number, version: string, from: number): StoredChunk[] {
  const docId = `bench:${doc.toString(16).padStart(24, '0')}`;
  return Array.from({ length: PER_DOC }, (_, i) => {
    const id = chunkId(docId, version, i);
    const text = `doc ${doc} ${version} chunk ${i}: ${'lorem ipsum dolor sit amet '.repeat(20)}`;
    return {
      id,
      text,
      embedding: embed(doc * 1000 + i + (version === 'v2' ? 500 : 0)),
      metadata: {
        [FIELDS.chunkId]: id,
        [FIELDS.documentId]: docId,
        [FIELDS.versionId]: version,
        [FIELDS.sourceId]: 'bench',
        [FIELDS.ordinal]: i,
        [FIELDS.from]: from,
        [FIELDS.to]: OPEN_EPOCH,
        [FIELDS.current]: false,
        [FIELDS.source]: docId,
        [FIELDS.url]: `https://docs.example/page/${doc}`,
        [FIELDS.finalUrl]: `https://docs.example/page/${doc}`,
        [FIELDS.title]: `Doc ${doc}`,
        [FIELDS.retrievedAt]: '2026-11-30T00:00:00.000Z',
        [FIELDS.contentChangedAt]: '2026-11-30T00:00:00.000Z',
        [FIELDS.contentHash]: `h${doc}-${i}`,
        [FIELDS.tokenCount]: 120,
        [FIELDS.acquisition]: 'raw',
      },
    };
  });
}

const now = () => performance.now();
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};
const ms = (x: number) => x.toFixed(1);
const rate = (n: number, elapsed: number) =>
  Math.round((n / elapsed) * 1000).toLocaleString('en-US');

interface Row {
  store: string;
  target: string;
  stage: string;
  verify: string;
  promote: string;
  flag: string;
  search: string;
  retire: string;
}

async function benchStore(name: string): Promise<Row> {
  const load = STORES[name];
  if (load === undefined)
    throw new Error(`unknown store ${name}; known: ${Object.keys(STORES).join(', ')}`);
  const { fixture } = await load();
  const target = await fixture.start();
  try {
    const connector = await target.createConnector(`bench-${Date.now().toString(36)}`);
    await connector.open({ dimensions: DIMS });
    const docs = Math.ceil(CHUNKS / PER_DOC);
    const v1 = Array.from({ length: docs }, (_, d) => versionChunks(d, 'v1', 1)).flat();
    const v2 = Array.from({ length: docs }, (_, d) => versionChunks(d, 'v2', 2)).flat();
    // Baseline state: v1 published at epoch 1 (not timed).
    await connector.upsert(v1);
    await connector.advanceEpoch(await connector.readEpoch(), 1);

    let t = now();
    await connector.upsert(v2);
    const stage = now() - t;

    const verify: number[] = [];
    for (let d = 0; d < Math.min(VERIFY_SAMPLE, docs); d++) {
      const chunks = v2.slice(d * PER_DOC, (d + 1) * PER_DOC);
      const docId = String(chunks[0]!.metadata[FIELDS.documentId]);
      t = now();
      const count = await connector.countChunks(docId, 'v2');
      const listed = await connector.listChunks(docId, 'v2');
      const hits = await connector.query(chunks[0]!.embedding, 1, {
        view: { kind: 'all' },
        documentId: docId,
        versionId: 'v2',
      });
      verify.push(now() - t);
      if (
        count !== PER_DOC ||
        listed.length !== PER_DOC ||
        hits[0]?.metadata[FIELDS.chunkId] !== chunks[0]!.id
      ) {
        throw new Error(
          `${name}: verify of ${docId} failed (count ${count}, listed ${listed.length}, top hit ${hits[0]?.metadata[FIELDS.chunkId]})`,
        );
      }
    }

    // Bound the old versions (part of promotion prep, not the promote itself).
    for (let d = 0; d < docs; d++)
      await connector.patchValidity(`bench:${d.toString(16).padStart(24, '0')}`, 'v1', { to: 2 });
    const promote: number[] = [];
    for (let i = 0; i < PROMOTIONS; i++) {
      const e = await connector.readEpoch();
      t = now();
      await connector.advanceEpoch(e, e + 1);
      promote.push(now() - t);
    }

    const flag: number[] = [];
    for (let d = 0; d < Math.min(VERIFY_SAMPLE, docs); d++) {
      const docId = `bench:${d.toString(16).padStart(24, '0')}`;
      t = now();
      await connector.patchValidity(docId, 'v2', { current: true });
      await connector.patchValidity(docId, 'v1', { current: false });
      flag.push(now() - t);
    }

    const search: number[] = [];
    for (let i = 0; i < Math.min(VERIFY_SAMPLE, docs); i++) {
      t = now();
      const hits = await connector.searchCurrent(v2[i * PER_DOC]!.embedding, 5);
      search.push(now() - t);
      if (hits.length !== 5) throw new Error(`${name}: searchCurrent returned ${hits.length} hits`);
    }

    t = now();
    for (let d = 0; d < docs; d++)
      await connector.deleteVersion(`bench:${d.toString(16).padStart(24, '0')}`, 'v1');
    const retire = now() - t;
    const left = await connector.countChunks('bench:000000000000000000000000', 'v1');
    if (left !== 0) throw new Error(`${name}: retire left ${left} chunks`);
    await connector.close();
    return {
      store: name,
      target: target.kind,
      stage: `${rate(v2.length, stage)}`,
      verify: `${ms(quantile(verify, 0.5))} / ${ms(quantile(verify, 0.95))}`,
      promote: `${ms(quantile(promote, 0.5))} / ${ms(quantile(promote, 0.95))}`,
      flag: ms(quantile(flag, 0.5)),
      search: `${ms(quantile(search, 0.5))} / ${ms(quantile(search, 0.95))}`,
      retire: `${rate(v1.length, retire)}`,
    };
  } finally {
    await target.stop();
  }
}

const rows: Row[] = [];
for (const name of selected) {
  process.stderr.write(`bench ${name}...\n`);
  rows.push(await benchStore(name));
}
const head = [
  'store',
  'target',
  'stage chunks/s',
  'verify ms/doc p50 / p95',
  'promote ms p50 / p95',
  'flag flip ms/doc p50',
  'search ms p50 / p95',
  'retire chunks/s',
];
console.log(
  `connectors: ${CHUNKS.toLocaleString('en-US')} chunks (${PER_DOC}/document), ${DIMS} dimensions, node ${process.version}`,
);
console.log(`| ${head.join(' | ')} |`);
console.log(`|${head.map(() => '---').join('|')}|`);
for (const r of rows)
  console.log(
    `| ${[r.store, r.target, r.stage, r.verify, r.promote, r.flag, r.search, r.retire].join(' | ')} |`,
  );
