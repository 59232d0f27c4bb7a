import { RagfreshError, sha256Hex } from '@ragfresh/core';
import { BoilerplateModel, learnTitleAffixes } from '@ragfresh/extract';
import type { LearnedHostModel, PageLearning } from './extract.js';

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
  /** Pages of each host extracted first in every refresh, before the rest (see `warmUp`). Default 16. */
  readonly warmUpPages?: number;
  /** Block digests kept per sampled page (its first and last halves). Default 128. */
  readonly blocksPerPage?: number;
  /** Learn and drop the site affixes of the host's titles from heading-path roots. Default true. */
  readonly titleAffixes?: boolean;
}

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

/** Resolved `BoilerplateLearningOptions`. */
export interface BoilerplateSettings {
  readonly minShare: number;
  readonly keepShare: number;
  readonly minPages: number;
  readonly samplePages: number;
  readonly warmUpPages: number;
  readonly blocksPerPage: number;
  readonly titleAffixes: boolean;
}

export function settingsOf(options: BoilerplateLearningOptions): BoilerplateSettings {
  const minShare = options.minShare ?? 0.6;
  const s: BoilerplateSettings = {
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

export const rankOf = (documentId: string) =>
  Number.parseInt(sha256Hex(documentId).slice(0, 12), 16);

function modelOf(
  key: string,
  pages: number,
  minShare: number,
  blocks: readonly string[],
  titleAffixes: LearnedHostModel['titleAffixes'],
): LearnedHostModel {
  const sorted = [...blocks].sort();
  const digest = sha256Hex(
    JSON.stringify({ blocks: sorted, titleAffixes: titleAffixes ?? null }),
  ).slice(0, 16);
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

  observe(
    documentId: string,
    learning: Pick<PageLearning, 'digests' | 'rootTitle'>,
    s: BoilerplateSettings,
  ): void {
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
  compute(s: BoilerplateSettings): LearnedHostModel {
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
  adjust(s: BoilerplateSettings): LearnedHostModel {
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
