import { type DocumentRecord, RagfreshError, type StateStore, sha256Hex } from '@ragfresh/core';
import { BoilerplateModel, learnTitleAffixes, stripTitleAffixes } from '@ragfresh/extract';
import type { EngineContext, SourceRun } from './context.js';
import type {
  LearnedHostModel,
  PageContext,
  PageInput,
  PageLearning,
  PageOutcome,
  PagePipeline,
} from './extract.js';
import type { PublishQueue } from './publish.js';
import { reextractSource } from './reextract.js';

/**
 * Per-host boilerplate learning in the refresh engine (`EngineDeps.boilerplate`). Defaults are
 * chosen so a small host is never gutted: nothing is learned below `minPages` pages.
 */
export interface BoilerplateLearningOptions {
  /** Share of a host's sampled pages a block must appear on to be chrome. Default 0.6. */
  readonly minShare?: number;
  /** Sampled pages a block must appear on, whatever the share. Default 5 (minimum 2). */
  readonly minPages?: number;
  /** A block already treated as chrome stays until its share falls below this. Default minShare - 0.1. */
  readonly keepShare?: number;
  /** Pages per host kept in the sample the counts come from. Default 64. */
  readonly samplePages?: number;
  /** Pages of a host without a sample extracted first, before the rest, to learn from. Default 16. */
  readonly warmUpPages?: number;
  /** Block digests kept per sampled page (its first and last halves). Default 128. */
  readonly blocksPerPage?: number;
  /** Learn and drop the site affixes of the host's titles from heading-path roots. Default true. */
  readonly titleAffixes?: boolean;
}

/** State kinds (`StateStore.putLearned`) of the host sample and the per-document facts. */
export const BOILERPLATE_HOST_KIND = 'boilerplate-host';
export const BOILERPLATE_DOC_KIND = 'boilerplate-doc';

interface SampledPage {
  readonly rank: number;
  readonly blocks: readonly string[];
  readonly title: string;
}

/** One host's stored sample and the model in force after the last settle. */
export interface HostSampleJson {
  readonly format: 'ragfresh-host-sample/1';
  readonly key: string;
  readonly model: {
    readonly digest: string;
    readonly blocks: readonly string[];
    readonly titleAffixes?: LearnedHostModel['titleAffixes'];
  };
  readonly pages: readonly ({ readonly id: string } & SampledPage)[];
}

/** What one document was cut under, to decide whether a model change touches it. */
export interface DocumentLearningFacts {
  readonly format: 'ragfresh-boilerplate-doc/1';
  readonly key: string;
  readonly versionId: string;
  /** Digest of the model the version was cut under. */
  readonly model: string;
  /** The page's block digests that model held (the dropped ones, before the guards). */
  readonly matched: readonly string[];
  /** Bloom filter (4 probes, base64) of all the page's block digests. */
  readonly bloom: string;
  readonly rootTitle: string;
  readonly root: string;
}

/** `<sourceId> <host>`: a model is learned per host within a source. */
export function learningKey(sourceId: string, url: string): string {
  let host: string;
  try {
    host = new URL(url).host.toLowerCase();
  } catch {
    host = '';
  }
  return `${sourceId} ${host}`;
}

// --- Bloom filter over 64-bit hex digests ----------------------------------------------

function bloomBits(n: number): number {
  let bits = 512;
  while (bits < n * 12 && bits < 16_384) bits *= 2;
  return bits;
}

function probes(digest: string, bits: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < 4; i++) out.push(Number.parseInt(digest.slice(i * 4, i * 4 + 4), 16) % bits);
  return out;
}

function bloomOf(digests: readonly string[]): string {
  const bits = bloomBits(digests.length);
  const bytes = new Uint8Array(bits / 8);
  for (const d of digests) for (const p of probes(d, bits)) bytes[p >> 3]! |= 1 << (p & 7);
  return Buffer.from(bytes).toString('base64');
}

function bloomHas(bloom: Uint8Array, digest: string): boolean {
  const bits = bloom.length * 8;
  return probes(digest, bits).every((p) => (bloom[p >> 3]! & (1 << (p & 7))) !== 0);
}

// --- The learner ---------------------------------------------------------------------------

interface Settings {
  readonly minShare: number;
  readonly keepShare: number;
  readonly minPages: number;
  readonly samplePages: number;
  readonly warmUpPages: number;
  readonly blocksPerPage: number;
  readonly titleAffixes: boolean;
}

function settingsOf(options: BoilerplateLearningOptions): Settings {
  const minShare = options.minShare ?? 0.6;
  const s: Settings = {
    minShare,
    keepShare: options.keepShare ?? Math.max(0.01, minShare - 0.1),
    minPages: options.minPages ?? 5,
    samplePages: options.samplePages ?? 64,
    warmUpPages: options.warmUpPages ?? 16,
    blocksPerPage: options.blocksPerPage ?? 128,
    titleAffixes: options.titleAffixes ?? true,
  };
  const bad = (what: string) => {
    throw new RagfreshError('INVALID_ARGUMENT', `boilerplate learning: ${what}.`, {
      scope: 'engine',
    });
  };
  if (!(s.minShare > 0 && s.minShare <= 1)) bad(`minShare must be in (0, 1], got ${s.minShare}`);
  if (!(s.keepShare > 0 && s.keepShare <= s.minShare))
    bad(`keepShare must be in (0, minShare], got ${s.keepShare}`);
  if (!Number.isInteger(s.minPages) || s.minPages < 2)
    bad(`minPages must be an integer >= 2, got ${s.minPages}`);
  if (!Number.isInteger(s.samplePages) || s.samplePages < s.minPages)
    bad(`samplePages must be an integer >= minPages, got ${s.samplePages}`);
  if (!Number.isInteger(s.warmUpPages) || s.warmUpPages < 0 || s.warmUpPages > s.samplePages)
    bad(`warmUpPages must be an integer in [0, samplePages], got ${s.warmUpPages}`);
  if (!Number.isInteger(s.blocksPerPage) || s.blocksPerPage < 2)
    bad(`blocksPerPage must be an integer >= 2, got ${s.blocksPerPage}`);
  return s;
}

const rankOf = (documentId: string) => Number.parseInt(sha256Hex(documentId).slice(0, 12), 16);

function modelOf(
  key: string,
  pages: number,
  minShare: number,
  blocks: readonly string[],
  titleAffixes: LearnedHostModel['titleAffixes'],
): LearnedHostModel {
  const sorted = [...blocks].sort();
  const digest = sha256Hex(JSON.stringify({ blocks: sorted, titleAffixes: titleAffixes ?? null }))
    .slice(0, 16)
    .toString();
  return {
    digest,
    blocks: new Set(sorted),
    model: BoilerplateModel.fromJSON({
      format: 'ragfresh-boilerplate/1',
      host: key,
      pages,
      minShare,
      blocks: sorted,
    }),
    ...(titleAffixes === undefined ? {} : { titleAffixes }),
  };
}

/** The model a stored host sample holds in force (to cut pages the way the engine does). */
export function learnedModelOf(json: HostSampleJson): LearnedHostModel {
  return modelOf(json.key, json.pages.length, 0.6, json.model.blocks, json.model.titleAffixes);
}

/**
 * One host's learning state: a sample of at most `samplePages` of its documents (the ones with
 * the smallest hash of their id, so the sample is deterministic and a refetched page replaces
 * its own entry instead of counting twice), the document frequency of each block digest over
 * that sample, and the model in force.
 */
export class HostSample {
  readonly key: string;
  readonly sourceId: string;
  readonly #pages = new Map<string, SampledPage>();
  readonly #counts = new Map<string, number>();
  /** The model pages are cut under now. */
  inForce: LearnedHostModel;
  /** Digest of the model last written to the state. */
  stored: string;
  dirty = false;
  /** Warm-up pages of this host in the current refresh (set by `warmUp`). */
  scheduled = 0;
  /** Pages observed since the last flush (up to `warmUpPages`) and their block counts. */
  #fresh = 0;
  readonly #freshCounts = new Map<string, number>();

  constructor(key: string, sourceId: string, json: HostSampleJson | undefined, minShare: number) {
    this.key = key;
    this.sourceId = sourceId;
    for (const p of json?.pages ?? []) this.#add(p.id, p);
    const m = json?.model;
    this.inForce = modelOf(key, this.#pages.size, minShare, m?.blocks ?? [], m?.titleAffixes);
    this.stored = json === undefined ? '' : this.inForce.digest;
  }

  get size(): number {
    return this.#pages.size;
  }

  #add(id: string, page: SampledPage): void {
    this.#pages.set(id, page);
    for (const d of page.blocks) this.#counts.set(d, (this.#counts.get(d) ?? 0) + 1);
  }

  #remove(id: string): void {
    const page = this.#pages.get(id);
    if (page === undefined) return;
    this.#pages.delete(id);
    for (const d of page.blocks) {
      const n = (this.#counts.get(d) ?? 0) - 1;
      if (n > 0) this.#counts.set(d, n);
      else this.#counts.delete(d);
    }
  }

  observe(documentId: string, learning: PageLearning, s: Settings): void {
    const all = learning.digests;
    const half = Math.ceil(s.blocksPerPage / 2);
    const blocks =
      all.length <= s.blocksPerPage
        ? [...all]
        : [...all.slice(0, half), ...all.slice(all.length - (s.blocksPerPage - half))];
    if (this.#fresh < s.warmUpPages) {
      this.#fresh++;
      for (const d of new Set(all)) this.#freshCounts.set(d, (this.#freshCounts.get(d) ?? 0) + 1);
    }
    const page: SampledPage = { rank: rankOf(documentId), blocks, title: learning.rootTitle };
    if (!this.#pages.has(documentId) && this.#pages.size >= s.samplePages) {
      let worst: [string, SampledPage] | undefined;
      for (const e of this.#pages) if (worst === undefined || e[1].rank > worst[1].rank) worst = e;
      if (worst === undefined || worst[1].rank <= page.rank) return;
      this.#remove(worst[0]);
    }
    this.#remove(documentId);
    this.#add(documentId, page);
    this.dirty = true;
  }

  /** The model the sample supports now (the one in force keeps its blocks down to `keepShare`). */
  compute(s: Settings): LearnedHostModel {
    const n = this.#pages.size;
    const blocks: string[] = [];
    if (n >= s.minPages) {
      const need = Math.max(s.minPages, Math.ceil(s.minShare * n));
      const keep = Math.max(s.minPages, Math.ceil(s.keepShare * n));
      for (const [d, c] of this.#counts)
        if (c >= need || (c >= keep && this.inForce.blocks.has(d))) blocks.push(d);
    }
    let affixes: LearnedHostModel['titleAffixes'];
    if (s.titleAffixes && n >= s.minPages) {
      const learned = learnTitleAffixes(
        [...this.#pages.values()].map((p) => p.title),
        { minShare: s.minShare, minPages: s.minPages },
      );
      if (learned.suffixes.length > 0 || learned.prefixes.length > 0) affixes = learned;
    }
    return modelOf(this.key, n, s.minShare, blocks, affixes);
  }

  /**
   * The model in force, moved only by unanimous fresh evidence: when every warm-up page of the
   * run answered with a new body (a site-wide change: what a chrome change looks like) and at
   * least `minPages` did, a block on all of them joins and a block on none of them leaves.
   * Anything weaker (a few edited pages) waits for the settle, where the whole sample decides.
   */
  adjust(s: Settings): LearnedHostModel {
    const m = this.inForce;
    if (this.#fresh < Math.max(s.minPages, this.scheduled)) return m;
    const blocks = new Set([...m.blocks].filter((d) => (this.#freshCounts.get(d) ?? 0) > 0));
    for (const [d, c] of this.#freshCounts) if (c === this.#fresh) blocks.add(d);
    return modelOf(this.key, this.#pages.size, s.minShare, [...blocks], m.titleAffixes);
  }

  /** A refresh ended: the next one gathers fresh evidence anew. */
  endRun(): void {
    this.#fresh = 0;
    this.#freshCounts.clear();
  }

  toJSON(): HostSampleJson {
    const m = this.inForce;
    return {
      format: 'ragfresh-host-sample/1',
      key: this.key,
      model: {
        digest: m.digest,
        blocks: [...m.blocks],
        ...(m.titleAffixes === undefined ? {} : { titleAffixes: m.titleAffixes }),
      },
      pages: [...this.#pages].map(([id, p]) => ({ id, ...p })),
    };
  }
}

/** A page pipeline that can cut a page under a learned model (`ExtractPipeline` can). */
export interface LearningPagePipeline extends PagePipeline {
  processLearned(
    input: PageInput,
    context: PageContext,
    learned: LearnedHostModel | undefined,
  ): Promise<PageOutcome>;
}

export function canLearn(pipeline: PagePipeline): pipeline is LearningPagePipeline {
  return typeof (pipeline as Partial<LearningPagePipeline>).processLearned === 'function';
}

/** A learner and the pipeline that feeds it; undefined for a pipeline that cannot learn. */
export function learnerFor(
  state: StateStore,
  pipeline: PagePipeline,
  options: BoilerplateLearningOptions = {},
): { readonly learner: BoilerplateLearner; readonly pipeline: PagePipeline } | undefined {
  if (!canLearn(pipeline)) return undefined;
  const learner = new BoilerplateLearner(state, options);
  return { learner, pipeline: learner.wrap(pipeline) };
}

/**
 * The engine's per-host boilerplate learner. Pages are cut under the model in force for their
 * host (frozen for a refresh, except a host's first pages: see `warmUp`); every extracted page
 * updates the host's sample; at the end of a refresh `settleBoilerplate` computes the new
 * model and re-extracts, from raw snapshots, only the documents the change touches.
 */
export class BoilerplateLearner {
  readonly settings: Settings;
  readonly #state: StateStore;
  readonly #hosts = new Map<string, Promise<HostSample>>();
  readonly #loaded = new Map<string, HostSample>();
  /** Facts of the documents cut since the last flush. */
  readonly #facts = new Map<string, DocumentLearningFacts>();
  /** Used when the state store has no `putLearned` (learning then lasts for the process). */
  readonly #memory = new Map<string, unknown>();

  constructor(state: StateStore, options: BoilerplateLearningOptions = {}) {
    this.#state = state;
    this.settings = settingsOf(options);
  }

  async #get(kind: string, id: string): Promise<unknown> {
    if (this.#state.getLearned === undefined) return this.#memory.get(`${kind}\u0000${id}`);
    return this.#state.getLearned(kind, id);
  }

  async #put(kind: string, id: string, value: unknown): Promise<void> {
    if (this.#state.putLearned === undefined) this.#memory.set(`${kind}\u0000${id}`, value);
    else await this.#state.putLearned(kind, id, value);
  }

  /** The host's sample (`learningKey(sourceId, url)`), read from the state once per process. */
  host(key: string, sourceId: string): Promise<HostSample> {
    let got = this.#hosts.get(key);
    if (got === undefined) {
      got = (async () => {
        const json = (await this.#get(BOILERPLATE_HOST_KIND, key)) as HostSampleJson | undefined;
        const sample = new HostSample(
          key,
          sourceId,
          json?.format === 'ragfresh-host-sample/1' ? json : undefined,
          this.settings.minShare,
        );
        this.#loaded.set(key, sample);
        return sample;
      })();
      this.#hosts.set(key, got);
    }
    return got;
  }

  /** Loaded hosts of one source. */
  hostsOf(sourceId: string): HostSample[] {
    return [...this.#loaded.values()].filter((h) => h.sourceId === sourceId);
  }

  wrap(pipeline: LearningPagePipeline): PagePipeline {
    return new LearningPipeline(pipeline, this);
  }

  observe(host: HostSample, documentId: string, doc: PageOutcome, model: string): void {
    if (doc.kind !== 'document' || doc.learning === undefined) return;
    host.observe(documentId, doc.learning, this.settings);
    this.#facts.set(documentId, {
      format: 'ragfresh-boilerplate-doc/1',
      key: host.key,
      versionId: doc.versionId,
      model,
      matched: doc.learning.matched,
      bloom: bloomOf(doc.learning.digests),
      rootTitle: doc.learning.rootTitle,
      root: doc.learning.root,
    });
  }

  /** The facts a document was last cut under (this run's first, then the state's). */
  async facts(documentId: string): Promise<DocumentLearningFacts | undefined> {
    const got = this.#facts.get(documentId) ?? (await this.#get(BOILERPLATE_DOC_KIND, documentId));
    return (got as DocumentLearningFacts | undefined)?.format === 'ragfresh-boilerplate-doc/1'
      ? (got as DocumentLearningFacts)
      : undefined;
  }

  /** Facts cut since the last flush, by document. */
  observed(): ReadonlyMap<string, DocumentLearningFacts> {
    return this.#facts;
  }

  /** Records that a document's facts hold under another model digest (it was not touched). */
  retag(documentId: string, facts: DocumentLearningFacts, model: string): void {
    this.#facts.set(documentId, { ...facts, model });
  }

  /**
   * The warm-up: `warmUpPages` pages of every host (those with the smallest hash of their
   * document id, spread over the host) go first; `advance` then puts in force, for the rest of
   * the host's pages, the model the sample supports (a new host: cold start) or the model in
   * force moved by unanimous fresh evidence (a host that changed its chrome). Only warm-up
   * pages are cut under an older model, so only they can need a second extraction at the settle.
   */
  async warmUp<
    T extends {
      readonly run: SourceRun;
      readonly entry: { readonly url: string; readonly documentId: string };
    },
  >(work: readonly T[]): Promise<{ first: T[]; rest: T[]; hosts: Map<HostSample, boolean> }> {
    const perKey = new Map<string, { rank: number; w: T }[]>();
    for (const w of work) {
      const k = learningKey(w.run.source.id, w.entry.url);
      const list = perKey.get(k) ?? [];
      list.push({ rank: rankOf(w.entry.documentId), w });
      perKey.set(k, list);
    }
    const firstSet = new Set<T>();
    const hosts = new Map<HostSample, boolean>();
    for (const [k, list] of perKey) {
      const h = await this.host(k, list[0]!.w.run.source.id);
      hosts.set(h, h.size < Math.min(this.settings.warmUpPages, list.length));
      list.sort((a, b) => a.rank - b.rank);
      const warm = list.slice(0, this.settings.warmUpPages);
      h.scheduled = warm.length;
      for (const { w } of warm) firstSet.add(w);
    }
    const first: T[] = [];
    const rest: T[] = [];
    for (const w of work) (firstSet.has(w) ? first : rest).push(w);
    return { first, rest, hosts };
  }

  /** After the warm-up: `true` marks a cold host (see `warmUp`). */
  advance(hosts: ReadonlyMap<HostSample, boolean>): void {
    for (const [h, cold] of hosts)
      h.inForce = cold ? h.compute(this.settings) : h.adjust(this.settings);
  }

  /** Writes changed samples and the facts cut since the last flush. */
  async flush(): Promise<void> {
    for (const h of this.#loaded.values()) {
      if (!h.dirty && h.stored === h.inForce.digest) continue;
      await this.#put(BOILERPLATE_HOST_KIND, h.key, h.toJSON());
      h.stored = h.inForce.digest;
      h.dirty = false;
    }
    for (const h of this.#loaded.values()) h.endRun();
    for (const [id, f] of this.#facts) await this.#put(BOILERPLATE_DOC_KIND, id, f);
    this.#facts.clear();
  }
}

class LearningPipeline implements PagePipeline {
  readonly #inner: LearningPagePipeline;
  readonly #learner: BoilerplateLearner;

  constructor(inner: LearningPagePipeline, learner: BoilerplateLearner) {
    this.#inner = inner;
    this.#learner = learner;
  }

  // The rules decide the pipeline key; the learned data is recorded per document instead.
  get pipelineKey(): string {
    return this.#inner.pipelineKey;
  }

  async process(input: PageInput, context: PageContext): Promise<PageOutcome> {
    const host = await this.#learner.host(
      learningKey(context.sourceId, input.url),
      context.sourceId,
    );
    const learned = host.inForce;
    const out = await this.#inner.processLearned(input, context, learned);
    this.#learner.observe(host, context.documentId, out, learned.digest);
    return out;
  }
}

/** Whether a model change touches what the document was cut from (false: same version). */
export function touchedBy(
  facts: DocumentLearningFacts | undefined,
  record: DocumentRecord,
  next: LearnedHostModel,
): boolean {
  if (facts === undefined || facts.versionId !== record.currentVersionId) return true;
  if (facts.model === next.digest) return false;
  const matched = new Set(facts.matched);
  for (const d of matched) if (!next.blocks.has(d)) return true;
  const bloom = new Uint8Array(Buffer.from(facts.bloom, 'base64'));
  // A Bloom false positive only costs one re-extraction that gives the same version.
  for (const d of next.blocks) if (!matched.has(d) && bloomHas(bloom, d)) return true;
  const root =
    next.titleAffixes === undefined
      ? facts.rootTitle
      : stripTitleAffixes(facts.rootTitle, next.titleAffixes);
  return root !== facts.root;
}

/**
 * The settle stage, after a refresh's pages are published: each host's model is recomputed
 * from its sample; documents cut under another model are checked against the new one, and
 * only those whose dropped blocks or title root it changes are re-extracted from their raw
 * snapshots (and re-embedded where a chunk text changed). When the model did not change, only
 * this run's pages cut under another model are checked (a new host's warm-up pages).
 */
export async function settleBoilerplate(
  ctx: EngineContext,
  queue: PublishQueue,
  runs: readonly SourceRun[],
  learner: BoilerplateLearner,
): Promise<number> {
  let documents = 0;
  for (const run of runs) {
    const hosts = learner.hostsOf(run.source.id);
    if (hosts.length === 0) continue;
    const byKey = new Map<string, DocumentRecord[]>();
    for (const r of await ctx.records.ofSource(run.source.id)) {
      if (r.currentVersionId === undefined || r.status === 'tombstoned') continue;
      const k = learningKey(run.source.id, r.url);
      const list = byKey.get(k);
      if (list === undefined) byKey.set(k, [r]);
      else list.push(r);
    }
    const touched = new Set<string>();
    for (const host of hosts) {
      const next = host.compute(learner.settings);
      const changed = next.digest !== host.stored;
      let checked = 0;
      let n = 0;
      for (const r of byKey.get(host.key) ?? []) {
        const seen = learner.observed().get(r.documentId);
        if (!changed && (seen === undefined || seen.model === next.digest)) continue;
        const facts = seen ?? (await learner.facts(r.documentId));
        checked++;
        if (touchedBy(facts, r, next)) {
          touched.add(r.documentId);
          n++;
        } else if (facts !== undefined && facts.model !== next.digest) {
          learner.retag(r.documentId, facts, next.digest);
        }
      }
      host.inForce = next;
      if (changed || n > 0) {
        ctx.log.info('boilerplate-model', {
          source: run.source.id,
          host: host.key.slice(run.source.id.length + 1),
          sampled: host.size,
          blocks: next.blocks.size,
          checked,
          reextract: n,
        });
      }
    }
    if (touched.size > 0) {
      ctx.count(
        'ragfresh_boilerplate_reextracted_total',
        'Documents re-extracted because their host learned model changed.',
        { source: run.source.id },
        touched.size,
      );
      documents += await reextractSource(ctx, queue, run, touched);
    }
  }
  return documents;
}
