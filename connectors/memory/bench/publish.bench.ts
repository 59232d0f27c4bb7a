// pnpm bench:publish — throughput of the publish protocol on the memory connector.
// Publishes DOCS documents x CHUNKS chunks in batches (cold), then republishes every
// document with a new version (replace: stage, verify, promote, flag, retire, confirm).
// Counts store operations (connector hook calls) per batch and step. HOOKS=loop replaces the
// memory connector's batch hooks by loops over its single-version hooks, as a connector that
// does not override them gets from the base class (one store operation per document version).
// Runs built code (tsc -b first); Node strips the types of this file.
import { MemoryConnector } from '@ragfresh/connector-memory';
import {
  chunkId,
  documentId,
  type EmbeddedChunk,
  InMemoryStateStore,
  type JournalStep,
  type ListedChunk,
  type PublishCandidate,
  Publisher,
  type QueryFilter,
  type QueryHit,
  type StoredChunk,
  sha256Hex,
  type ValidityPatch,
  type VersionPatch,
  type VersionRef,
  versionId,
} from '@ragfresh/core';

const DOCS = Number(process.env.DOCS ?? 10_000);
const CHUNKS = Number(process.env.CHUNKS ?? 10);
const BATCH = Number(process.env.BATCH ?? 100);
const DIMS = 16;
const LOOP_HOOKS = process.env.HOOKS === 'loop';

/** Counts every hook call: one call is one store operation. */
class CountingConnector extends MemoryConnector {
  operations = 0;
  protected override _upsert(chunks: readonly StoredChunk[]) {
    this.operations++;
    return super._upsert(chunks);
  }
  protected override _patchValidity(d: string, v: string, p: ValidityPatch) {
    this.operations++;
    return super._patchValidity(d, v, p);
  }
  #counting = false;
  protected override async _count(d: string, v: string) {
    this.operations++;
    // The memory connector counts by listing: one operation, not two.
    this.#counting = true;
    try {
      return await super._count(d, v);
    } finally {
      this.#counting = false;
    }
  }
  protected override _list(d: string, v: string | undefined, e: boolean) {
    if (!this.#counting) this.operations++;
    return super._list(d, v, e);
  }
  protected override _deleteVersion(d: string, v: string) {
    this.operations++;
    return super._deleteVersion(d, v);
  }
  protected override _query(v: readonly number[], k: number, f: QueryFilter): Promise<QueryHit[]> {
    this.operations++;
    return super._query(v, k, f);
  }
  protected override _advanceEpoch(e: number, n: number) {
    this.operations++;
    return super._advanceEpoch(e, n);
  }
  protected override async _patchValidityMany(patches: readonly VersionPatch[]) {
    if (LOOP_HOOKS) {
      for (const p of patches) await this._patchValidity(p.documentId, p.versionId, p.patch);
      return;
    }
    this.operations++;
    return super._patchValidityMany(patches);
  }
  protected override async _countMany(refs: readonly VersionRef[]) {
    if (LOOP_HOOKS) {
      const out: number[] = [];
      for (const r of refs) out.push(await this._count(r.documentId, r.versionId));
      return out;
    }
    this.operations++;
    return super._countMany(refs);
  }
  protected override async _listMany(ids: readonly string[], e: boolean): Promise<ListedChunk[]> {
    if (LOOP_HOOKS) {
      const out: ListedChunk[] = [];
      for (const id of ids) out.push(...(await this._list(id, undefined, e)));
      return out;
    }
    this.operations++;
    return super._listMany(ids, e);
  }
  protected override async _deleteVersions(refs: readonly VersionRef[]) {
    if (LOOP_HOOKS) {
      for (const r of refs) await this._deleteVersion(r.documentId, r.versionId);
      return;
    }
    this.operations++;
    return super._deleteVersions(refs);
  }
}

const STEP_OF: Partial<Record<JournalStep, string>> = {
  staging: 'stage',
  staged: 'verify',
  promoting: 'promote',
  flagged: 'flag',
  retired: 'retire',
  confirmed: 'confirm',
};
/** Store operations per protocol step, summed over the current phase. */
let operationsByStep: Record<string, number> = {};
let currentStep = 'validate';
let mark = 0;
function closeStep(): void {
  const n = connector.operations - mark;
  if (n > 0) operationsByStep[currentStep] = (operationsByStep[currentStep] ?? 0) + n;
  mark = connector.operations;
}

function embed(seed: number): number[] {
  const v: number[] = [];
  let x = seed * 2654435761;
  for (let i = 0; i < DIMS; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    v.push((x / 2147483648) * 2 - 1);
  }
  return v;
}

function makeCandidate(d: number, rev: number): PublishCandidate {
  const url = `https://docs-${d % 50}.example/page/${d}`;
  const docId = documentId('bench', url);
  const texts = Array.from(
    { length: CHUNKS },
    (_, i) => `doc ${d} rev ${rev} chunk ${i} lorem ipsum dolor sit amet`,
  );
  const versions = { extractor: 'bench', chunker: 'bench', schema: '1' };
  const text = texts.join('\n\n');
  const verId = versionId({
    text,
    chunks: texts.map((t) => ({ text: t, headingPath: ['H'] })),
    versions,
  });
  const at = new Date(0).toISOString();
  const chunks: EmbeddedChunk[] = texts.map((t, i) => ({
    chunkId: chunkId(docId, verId, i),
    documentId: docId,
    versionId: verId,
    sourceId: 'bench',
    ordinal: i,
    text: t,
    headingPath: ['H', `S${i}`],
    tokenCount: 9,
    contentHash: sha256Hex(t),
    provenance: {
      url,
      finalUrl: url,
      title: `Doc ${d}`,
      retrievedAt: at,
      contentChangedAt: at,
      acquisition: 'raw',
    },
    embedding: embed(d * 1000 + i + rev * 7),
  }));
  return {
    documentId: docId,
    versionId: verId,
    sourceId: 'bench',
    url,
    contentHash: sha256Hex(text),
    textChars: text.length,
    chunks,
  };
}

let peakRss = 0;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 50);

const connector = new CountingConnector();
await connector.open({ dimensions: DIMS });
const state = new InMemoryStateStore();
const publisher = await Publisher.open({
  connector,
  state,
  graceEpochs: 1,
  hooks: {
    beforeStep: (step) => {
      const next = STEP_OF[step];
      if (next === undefined) return;
      closeStep();
      currentStep = next;
    },
  },
});

interface Row {
  phase: string;
  docs: number;
  wallMs: number;
  cpuMs: number;
  steps: Record<string, number>;
  batches: number;
  operations: Record<string, number>;
}
const rows: Row[] = [];

async function phase(name: string, rev: number): Promise<void> {
  const steps: Record<string, number> = {};
  operationsByStep = {};
  let batches = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let start = 0; start < DOCS; start += BATCH) {
    const batch: PublishCandidate[] = [];
    for (let d = start; d < Math.min(DOCS, start + BATCH); d++) batch.push(makeCandidate(d, rev));
    currentStep = 'validate';
    mark = connector.operations;
    const report = await publisher.publish(batch);
    closeStep();
    batches++;
    for (const [k, v] of Object.entries(report.timingsMs)) steps[k] = (steps[k] ?? 0) + v;
    if (report.documents.some((r) => r.outcome !== 'published'))
      throw new Error(`unexpected outcome in ${name}`);
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  rows.push({
    phase: name,
    docs: DOCS,
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    steps,
    batches,
    operations: operationsByStep,
  });
}

await phase('cold publish', 0);
await phase('replace all', 1);
await publisher.collectRetired();
clearInterval(sampler);
peakRss = Math.max(peakRss, process.memoryUsage().rss);

const fmt = (n: number, d = 0) => n.toFixed(d).padStart(10);
console.log(
  `\npublish protocol on the memory connector: ${DOCS} documents x ${CHUNKS} chunks, batches of ${BATCH}, ${DIMS}-dim vectors, ${LOOP_HOOKS ? 'batch hooks looping over single hooks (HOOKS=loop)' : "the connector's batch hooks"}`,
);
console.log(`node ${process.version}, ${process.platform}/${process.arch}\n`);
console.log(
  '| phase        |       docs |    docs/s | ms/doc (protocol) | stage ms | verify ms | promote ms | flag ms | retire ms | confirm ms |',
);
console.log(
  '|--------------|-----------:|----------:|------------------:|---------:|----------:|-----------:|--------:|----------:|-----------:|',
);
for (const r of rows) {
  const s = (k: string) => fmt(r.steps[k] ?? 0);
  console.log(
    `| ${r.phase.padEnd(12)} | ${fmt(r.docs)} | ${fmt((r.docs / r.wallMs) * 1000, 1)} | ${fmt(r.wallMs / r.docs, 3).padStart(17)} | ${s('stage').padStart(8)} | ${s('verify').padStart(9)} | ${s('promote').padStart(10)} | ${s('flag').padStart(7)} | ${s('retire').padStart(9)} | ${s('confirm').padStart(10)} |`,
  );
}
console.log('\nstore operations (hook calls) per batch, by step:\n');
const opSteps = ['stage', 'verify', 'promote', 'flag', 'retire', 'confirm'];
console.log(`| phase        | ${opSteps.map((k) => k.padStart(7)).join(' | ')} |   total |`);
console.log(`|--------------|${opSteps.map(() => '--------:').join('|')}|--------:|`);
for (const r of rows) {
  const per = (k: string) => (r.operations[k] ?? 0) / r.batches;
  const total = Object.values(r.operations).reduce((a, b) => a + b, 0) / r.batches;
  console.log(
    `| ${r.phase.padEnd(12)} | ${opSteps.map((k) => per(k).toFixed(1).padStart(7)).join(' | ')} | ${total.toFixed(1).padStart(7)} |`,
  );
}
// The last batch's replaced versions are still inside their one-epoch grace period.
const lastBatch = DOCS % BATCH === 0 ? Math.min(BATCH, DOCS) : DOCS % BATCH;
const expected = DOCS * CHUNKS + lastBatch * CHUNKS;
console.log(
  `\npeak RSS: ${(peakRss / 1024 / 1024).toFixed(0)} MiB; chunks stored at end: ${connector.size} (expected ${expected}: every current chunk + the last batch's replaced chunks, still in their grace epoch)`,
);
if (connector.size !== expected) {
  console.error('retired chunks were not collected');
  process.exitCode = 1;
}
await publisher.close();
