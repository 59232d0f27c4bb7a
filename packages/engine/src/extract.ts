import type { Chunk, Reason } from '@ragfresh/core';
import {
  BoilerplateModel,
  boilerplateDigests,
  markdownToPlainText,
  type NotTheDocumentPage,
  type PageContext,
  type PageInput,
  type PagePreparation,
  type PreparedDocument,
  type PreparedPage,
  prepareDocument,
  prepareDocumentWithSplitter,
  preparePage,
  recutWithSplitter,
  stripTitleAffixes,
  type TitleAffixes,
} from '@ragfresh/extract';
import { type Chunking, type ChunkingOptions, chunkingFor } from './chunk.js';

// The page types are @ragfresh/extract's, so the engine and the LangChain loader agree.
export type { PageContext, PageInput } from '@ragfresh/extract';

export interface ExtractedDocument {
  readonly kind: 'document';
  readonly title: string;
  /** Normalised Markdown of the whole page. */
  readonly text: string;
  readonly contentHash: string;
  readonly versionId: string;
  /** The page's canonical, accepted by its source's policy; `canonicalClaim` when refused. */
  readonly canonicalUrl?: string;
  readonly canonicalClaim?: string;
  /** Chunks without vectors; `provenance.contentChangedAt` is this observation's time. */
  readonly chunks: readonly Chunk[];
  /**
   * The prepared document this version is (text, chunks, fingerprint, pipeline versions), as
   * `ExtractPipeline` cut it; a pipeline of your own may leave it out. The LangChain loader keeps
   * it as its page copy.
   */
  readonly prepared?: PreparedDocument;
  /** What the page showed the per-host learner (set by `processLearned` only). */
  readonly learning?: PageLearning;
  /**
   * Status phrases the page shows without interstitial evidence on it (`soft_404: …`): the
   * classify stage looks for host evidence before it calls the page not the document.
   */
  readonly suspected?: readonly Reason[];
}

/** The learned model of one host in force for a page (see `boilerplate.ts`). */
export interface LearnedHostModel {
  /** Digest of blocks and affixes: what a document's facts record it was cut under. */
  readonly digest: string;
  /** Block digests treated as the host's chrome. */
  readonly blocks: ReadonlySet<string>;
  readonly model: BoilerplateModel;
  readonly titleAffixes?: TitleAffixes;
}

/**
 * The model to cut a page under, or a callback that receives what the page shows (its block
 * digests and root title, before anything is dropped) and answers with the model: the engine's
 * learner counts the page and, for a host's warm-up pages, waits for the host's others first.
 */
export type LearnedModelChoice =
  | LearnedHostModel
  | undefined
  | ((page: {
      readonly digests: readonly string[];
      readonly rootTitle: string;
    }) => Promise<LearnedHostModel | undefined>);

/** What one page contributes to, and took from, its host's learned model. */
export interface PageLearning {
  /** Block digests of the page before anything learned was dropped, in page order. */
  readonly digests: readonly string[];
  /** Those of them the model in force holds (dropped unless a guard kept them). */
  readonly matched: readonly string[];
  /** The heading-path root before learned title affixes were dropped, and after. */
  readonly rootTitle: string;
  readonly root: string;
}

export interface NotTheDocument {
  readonly kind: 'not-the-document';
  /** Stable reason codes with detail, e.g. `{ code: 'consent_wall', detail: … }`. */
  readonly reasons: readonly Reason[];
  /**
   * The page cut as a document all the same (the host's learned model not applied, the learner
   * not fed), for a source's `classify.ignore` or an accepted review item; absent without text.
   */
  readonly asDocument?: ExtractedDocument;
}

export type PageOutcome = ExtractedDocument | NotTheDocument;

/**
 * Classification, extraction and chunking of one decoded page, as the engine sees it. One
 * call is one parse: the page is classified on its untouched tree before anything is
 * extracted (`@ragfresh/extract`'s `preparePage`). `pipelineKey` names the versions; a change
 * re-extracts from raw snapshots.
 */
export interface PagePipeline {
  readonly pipelineKey: string;
  process(input: PageInput, context: PageContext): Promise<PageOutcome>;
}

export type ExtractPipelineOptions = ChunkingOptions;

/** The engine's page pipeline on `@ragfresh/extract` (the same steps the LangChain loader runs). */
export class ExtractPipeline implements PagePipeline {
  readonly #chunking: Chunking;

  constructor(options: ExtractPipelineOptions = {}) {
    this.#chunking = chunkingFor(options);
  }

  get pipelineKey(): string {
    return this.#chunking.pipelineKey;
  }

  async process(input: PageInput, ctx: PageContext): Promise<PageOutcome> {
    const page = this.#prepare(input, ctx);
    return page.kind === 'not-the-document'
      ? this.#notTheDocument(page)
      : this.#cut(documentOf(page), page);
  }

  async #notTheDocument(page: NotTheDocumentPage): Promise<NotTheDocument> {
    const { reasons, asDocument } = page;
    if (asDocument === undefined) return { kind: 'not-the-document', reasons };
    return {
      kind: 'not-the-document',
      reasons,
      asDocument: await this.#cut(documentOf(asDocument), asDocument),
    };
  }

  /** With a splitter of the user's, the page's Markdown is cut again by it (nothing is parsed again). */
  async #cut(out: ExtractedDocument, page: PreparedPage): Promise<ExtractedDocument> {
    const { splitter, counter } = this.#chunking;
    if (splitter === undefined) return out;
    const recut = await recutWithSplitter(page.prepared, splitter, counter, page.rootTitle);
    return {
      ...out,
      text: recut.text,
      contentHash: recut.contentHash,
      versionId: recut.versionId,
      chunks: recut.chunks,
      prepared: recut,
    };
  }

  #prepare(input: PageInput, ctx: PageContext): PagePreparation {
    const { counter, maxTokens } = this.#chunking;
    return preparePage(input, ctx, {
      counter,
      ...(maxTokens === undefined ? {} : { maxTokens }),
    });
  }

  /**
   * `process` that also reports what the page showed the per-host learner and drops what the
   * host's learned model calls chrome. One parse: the page is extracted without the model (the
   * learner must see the chrome it counts), then the model's blocks are dropped from the
   * Markdown and only a page that lost something is cut again. Guards: a heading is never
   * dropped (heading paths stay), nor code or tables (the model never holds them), nor the
   * page's only text. A page the model does not touch gets the version `process` gives.
   */
  async processLearned(
    input: PageInput,
    ctx: PageContext,
    choice: LearnedModelChoice,
  ): Promise<PageOutcome> {
    const page = this.#prepare(input, ctx);
    if (page.kind === 'not-the-document') return this.#notTheDocument(page);
    const out = documentOf(page);
    if (out.chunks.length === 0) return this.#cut(out, page);
    const { rootTitle } = page;
    const digests = boilerplateDigests(out.text);
    const learned = typeof choice === 'function' ? await choice({ digests, rootTitle }) : choice;
    const matched = learned === undefined ? [] : digests.filter((d) => learned.blocks.has(d));
    const root =
      learned?.titleAffixes === undefined
        ? rootTitle
        : stripTitleAffixes(rootTitle, learned.titleAffixes);
    const learning: PageLearning = { digests, matched, rootTitle, root };
    const markdown = learned === undefined ? out.text : stripLearned(out.text, matched, learned);
    if (markdown === out.text && root === rootTitle)
      return { ...(await this.#cut(out, page)), learning };
    const { counter, maxTokens, splitter } = this.#chunking;
    const input2 = {
      documentId: ctx.documentId,
      sourceId: ctx.sourceId,
      markdown,
      provenance: out.chunks[0]!.provenance,
      chunking: { counter, title: root, ...(maxTokens === undefined ? {} : { maxTokens }) },
    };
    const prepared =
      splitter === undefined
        ? prepareDocument(input2)
        : await prepareDocumentWithSplitter(input2, splitter);
    return {
      ...out,
      text: prepared.text,
      contentHash: prepared.contentHash,
      versionId: prepared.versionId,
      chunks: prepared.chunks,
      prepared,
      learning,
    };
  }
}

function documentOf(page: PreparedPage): ExtractedDocument {
  return {
    kind: 'document',
    title: page.title,
    text: page.prepared.text,
    contentHash: page.prepared.contentHash,
    versionId: page.prepared.versionId,
    ...(page.canonicalUrl === undefined ? {} : { canonicalUrl: page.canonicalUrl }),
    ...(page.canonicalClaim === undefined ? {} : { canonicalClaim: page.canonicalClaim }),
    chunks: page.prepared.chunks,
    prepared: page.prepared,
    ...(page.suspected === undefined ? {} : { suspected: page.suspected }),
  };
}

const HEADING_LINE = /^\s{0,3}#{1,6}\s/;

/** The page's Markdown without the learned blocks it holds, under the guards of `processLearned`. */
function stripLearned(text: string, matched: readonly string[], learned: LearnedHostModel): string {
  if (matched.length === 0) return text;
  // A heading whose text is also a chrome line elsewhere stays: heading paths are content.
  const headings = new Set<string>();
  for (const line of text.split('\n'))
    if (HEADING_LINE.test(line)) for (const d of boilerplateDigests(line)) headings.add(d);
  let model = learned.model;
  if (matched.some((d) => headings.has(d))) {
    const json = model.toJSON();
    model = BoilerplateModel.fromJSON({
      ...json,
      blocks: json.blocks.filter((d) => !headings.has(d)),
    });
  }
  const stripped = model.strip(text).markdown;
  const rest = stripped
    .split('\n')
    .filter((l) => !HEADING_LINE.test(l))
    .join('\n');
  // Never the page's only text: a page that is all chrome by the model keeps it.
  return markdownToPlainText(rest).trim() === '' ? text : stripped;
}
