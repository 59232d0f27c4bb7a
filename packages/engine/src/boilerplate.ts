import type { DocumentRecord, StateStore } from '@ragfresh/core';
import { bloomOf, type DocumentLearningFacts, touchedBy } from './boilerplate-facts.js';
import {
  type BoilerplateLearningOptions,
  type BoilerplateSettings,
  HostSample,
  type HostSampleJson,
  learnedModelOf,
  rankOf,
  settingsOf,
} from './boilerplate-sample.js';
import type { EngineContext, SourceRun } from './context.js';
import type {
  LearnedHostModel,
  LearnedModelChoice,
  PageContext,
  PageInput,
  PageOutcome,
  PagePipeline,
} from './extract.js';
import type { PublishQueue } from './publish.js';
import { reextractSource } from './reextract.js';

export { type DocumentLearningFacts, touchedBy } from './boilerplate-facts.js';
export {
  type BoilerplateLearningOptions,
  type BoilerplateSettings,
  HostSample,
  type HostSampleJson,
  learnedModelOf,
} from './boilerplate-sample.js';

/** State kinds (`StateStore.putLearned`) of the host sample and the per-document facts. */
export const BOILERPLATE_HOST_KIND = 'boilerplate-host';
export const BOILERPLATE_DOC_KIND = 'boilerplate-doc';

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

/** A page pipeline that can cut a page under a learned model (`ExtractPipeline` can). */
export interface LearningPagePipeline extends PagePipeline {
  processLearned(
    input: PageInput,
    context: PageContext,
    choice: LearnedModelChoice,
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
  readonly settings: BoilerplateSettings;
  readonly #state: StateStore;
  readonly #hosts = new Map<string, Promise<HostSample>>();
  readonly #loaded = new Map<string, HostSample>();
  /** Facts of the documents cut since the last flush. */
  readonly #facts = new Map<string, DocumentLearningFacts>();
  /** Used when the state store has no `putLearned` (learning then lasts for the process). */
  readonly #memory = new Map<string, unknown>();
  /** Warm-up pages that have not reached their cut yet, with their host. */
  readonly #warm = new Map<string, HostSample>();
  /** Warm-up pages that reached their cut: the opening of their host's gate. */
  readonly #arrived = new Map<string, Promise<void>>();
  /** Per host in warm-up: pages still to come, and the gate they wait at. */
  readonly #gates = new Map<
    HostSample,
    { pending: number; cold: boolean; open: () => void; opened: Promise<void> }
  >();

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

  /** Records what a cut page was cut under (its facts for the settle). */
  cut(host: HostSample, documentId: string, doc: PageOutcome, model: string): void {
    if (doc.kind !== 'document' || doc.learning === undefined) return;
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
   * document id, spread over the host) go first, host by host. Each waits at its cut until the
   * host's other warm-up pages have been counted (or finished without a cut); then the host's
   * model for this refresh is put in force and they are all cut under it: the model the sample
   * supports for a host whose sample was smaller than that (a new host: cold start), else the
   * model in force moved by unanimous fresh evidence (a host that changed its chrome). The
   * caller runs `first` with room for a whole host's warm-up at once (`warmUpPages` or more in
   * flight), reports each finished page with `pass`, then calls `endWarmUp`.
   */
  async warmUp<
    T extends {
      readonly run: SourceRun;
      readonly entry: { readonly url: string; readonly documentId: string };
    },
  >(work: readonly T[]): Promise<{ first: T[]; rest: T[] }> {
    // A refresh that threw mid-warm-up left its gates: open them before setting new ones.
    this.endWarmUp();
    this.#gates.clear();
    const perKey = new Map<string, { rank: number; w: T }[]>();
    for (const w of work) {
      const k = learningKey(w.run.source.id, w.entry.url);
      const list = perKey.get(k) ?? [];
      list.push({ rank: rankOf(w.entry.documentId), w });
      perKey.set(k, list);
    }
    const first: T[] = [];
    const firstSet = new Set<T>();
    for (const [k, list] of perKey) {
      const h = await this.host(k, list[0]!.w.run.source.id);
      const cold = h.size < Math.min(this.settings.warmUpPages, list.length);
      list.sort((a, b) => a.rank - b.rank);
      const warm = list.slice(0, this.settings.warmUpPages);
      h.scheduled = warm.length;
      let open = () => {};
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      this.#gates.set(h, { pending: warm.length, cold, open, opened });
      for (const { w } of warm) {
        this.#warm.set(w.entry.documentId, h);
        first.push(w);
        firstSet.add(w);
      }
    }
    return { first, rest: work.filter((w) => !firstSet.has(w)) };
  }

  /** A warm-up page reached its cut or finished without one; the host's last opens its gate. */
  pass(documentId: string): void {
    const h = this.#warm.get(documentId);
    if (h === undefined) return;
    this.#warm.delete(documentId);
    const gate = this.#gates.get(h);
    if (gate === undefined) return;
    this.#arrived.set(documentId, gate.opened);
    if (--gate.pending > 0) return;
    h.inForce = gate.cold ? h.compute(this.settings) : h.adjust(this.settings);
    this.#gates.delete(h);
    gate.open();
  }

  /** Counts a page in its host's sample; a warm-up page then waits for its host's gate. */
  async arrive(
    host: HostSample,
    documentId: string,
    page: { readonly digests: readonly string[]; readonly rootTitle: string },
  ): Promise<LearnedHostModel> {
    host.observe(documentId, page, this.settings);
    this.pass(documentId);
    await this.#arrived.get(documentId);
    return host.inForce;
  }

  /** The warm-up is over: any gate still closed opens (a page that never reported). */
  endWarmUp(): void {
    for (const id of [...this.#warm.keys()]) this.pass(id);
    this.#arrived.clear();
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
    let used = host.inForce;
    const out = await this.#inner.processLearned(input, context, async (page) => {
      used = await this.#learner.arrive(host, context.documentId, page);
      return used;
    });
    this.#learner.cut(host, context.documentId, out, used.digest);
    return out;
  }
}

/**
 * A pipeline that cuts each page under its host's learned model as the state store holds it
 * now, with no learning: nothing is sampled, counted or written. For showing or re-deriving
 * what a stored raw snapshot was published as (`RefreshEngine.snapshotPipeline`, the UI's
 * version texts) from a process that does not refresh. A state store without `getLearned`
 * (learning kept in the refreshing process's memory) gives the plain cut.
 */
class LearnedViewPipeline implements PagePipeline {
  readonly #inner: LearningPagePipeline;
  readonly #state: LearnedModels;

  constructor(inner: LearningPagePipeline, state: LearnedModels) {
    this.#inner = inner;
    this.#state = state;
  }

  get pipelineKey(): string {
    return this.#inner.pipelineKey;
  }

  async process(input: PageInput, context: PageContext): Promise<PageOutcome> {
    const key = learningKey(context.sourceId, input.url);
    const json = (await this.#state.getLearned?.(BOILERPLATE_HOST_KIND, key)) as
      | HostSampleJson
      | undefined;
    const model = json?.format === 'ragfresh-host-sample/1' ? learnedModelOf(json) : undefined;
    return this.#inner.processLearned(input, context, model);
  }
}

/** Where learned models are read from: a state store (the refresh that learns them writes there). */
export type LearnedModels = Pick<StateStore, 'getLearned'>;

/** The read-only view of `pipeline` under the learned models in `state` (see above). */
export function learnedViewPipeline(state: LearnedModels, pipeline: PagePipeline): PagePipeline {
  return canLearn(pipeline) ? new LearnedViewPipeline(pipeline, state) : pipeline;
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
  let fresh = false;
  for (const run of runs) {
    const hosts = learner.hostsOf(run.source.id);
    const models = new Map(hosts.map((h) => [h, h.compute(learner.settings)] as const));
    // Nothing to check (a refresh of 304s, an unchanged model): no scan of the records.
    const cutUnder = new Map<string, Set<string>>();
    for (const f of learner.observed().values()) {
      const set = cutUnder.get(f.key) ?? new Set<string>();
      set.add(f.model);
      cutUnder.set(f.key, set);
    }
    const pending = hosts.filter((h) => {
      const next = models.get(h)!;
      const seen = cutUnder.get(h.key);
      return (
        next.digest !== h.stored || (seen !== undefined && [...seen].some((m) => m !== next.digest))
      );
    });
    for (const h of hosts) if (!pending.includes(h)) h.inForce = models.get(h)!;
    if (pending.length === 0) continue;
    // The snapshot predates this refresh's publications: read the records once, afresh.
    if (!fresh) ctx.records.invalidate();
    fresh = true;
    const byKey = new Map<string, DocumentRecord[]>();
    for (const r of await ctx.records.ofSource(run.source.id)) {
      if (r.currentVersionId === undefined || r.status === 'tombstoned') continue;
      const k = learningKey(run.source.id, r.url);
      const list = byKey.get(k);
      if (list === undefined) byKey.set(k, [r]);
      else list.push(r);
    }
    const touched = new Set<string>();
    for (const host of pending) {
      const next = models.get(host)!;
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
      const before = host.inForce.blocks.size + (host.inForce.titleAffixes === undefined ? 0 : 1);
      host.inForce = next;
      // Said when it matters: documents re-extracted, or a model that drops (or dropped)
      // something. A sample that grew without learning any block is not news.
      const learned = next.blocks.size + (next.titleAffixes === undefined ? 0 : 1);
      if (n > 0 || (changed && (learned > 0 || before > 0))) {
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
