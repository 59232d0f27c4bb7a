import {
  type Chunk,
  type ChunkProvenance,
  chunkId,
  type PipelineVersions,
  RagfreshError,
  SCHEMA_VERSION,
  sha256Hex,
  versionId,
} from '@ragfresh/core';
import {
  type ChunkOptions,
  chunkMarkdown,
  chunkMarkdownWithSplitter,
  type SectionSplitter,
  type TextChunk,
} from './chunk.js';
import { normalizeMarkdown } from './clean.js';
import { chunkHash, normalizedTextHash, simhash64 } from './hashes.js';
import { type TokenCounter, tiktokenCounter } from './tokens.js';

/**
 * Bump when extraction output for the same HTML may change (it is part of every versionId).
 * 9: only http(s), mailto and relative links stay links (`href.ts`); `data:`, `vbscript:`,
 * `file:`, `blob:` and custom schemes keep their text only, as `javascript:` did before.
 * 10: one fenced-code rule for every Markdown pass (`fence.ts`, CommonMark): a backtick line
 * whose info string holds a backtick is text, a tab-indented marker is no fence, a marker with
 * an info string does not close a block, and list items treat indented fences as code.
 */
export const EXTRACTOR_VERSION = '10';
/**
 * Bump when chunk boundaries for the same Markdown may change (it is part of every versionId).
 * 5: fences by `fence.ts` (a tab-indented marker no longer closes a block; a backtick line
 * with a backtick after it no longer stops the splitter).
 */
export const CHUNKER_VERSION = '5';

export interface PrepareDocumentInput {
  readonly documentId: string;
  readonly sourceId: string;
  /** Extracted Markdown (normalised here, so any Markdown is accepted). */
  readonly markdown: string;
  /**
   * The Markdown is already the output of `normalizeMarkdown` (as `extractPage` returns it), so
   * it is not normalised a second time. Wrong only costs correctness of the caller's claim:
   * normalising is idempotent, the flag just skips the pass.
   */
  readonly normalized?: boolean;
  readonly provenance: ChunkProvenance;
  readonly chunking?: ChunkOptions;
}

/** Everything a `DocumentVersion` needs apart from embeddings. */
export interface PreparedDocument {
  readonly documentId: string;
  readonly sourceId: string;
  readonly versionId: string;
  /** Normalised Markdown of the whole document (NFC). */
  readonly text: string;
  /** {@link normalizedTextHash} of the text: decides whether the content changed. */
  readonly contentHash: string;
  readonly textChars: number;
  /** {@link simhash64} of the text, for near-duplicate grouping across URLs. */
  readonly fingerprint: string;
  readonly versions: PipelineVersions;
  readonly chunks: readonly Chunk[];
}

/** The pipeline versions for a token counter: the counter's name is part of the chunker version. */
export function pipelineVersions(counterName: string = tiktokenCounter().name): PipelineVersions {
  return {
    extractor: EXTRACTOR_VERSION,
    chunker: `${CHUNKER_VERSION}+${counterName}`,
    schema: SCHEMA_VERSION,
  };
}

/**
 * Chunks extracted Markdown and builds core `Chunk`s with deterministic ids: the same Markdown,
 * options and provenance give the same versionId and chunkIds on any machine.
 */
export function prepareDocument(input: PrepareDocumentInput): PreparedDocument {
  checkDocumentId(input.documentId);
  const text = input.normalized ? input.markdown : normalizeMarkdown(input.markdown);
  const counter = input.chunking?.counter ?? tiktokenCounter();
  const pieces = chunkMarkdown(text, { title: input.provenance.title, ...input.chunking, counter });
  return assemble(input, text, pieces, pipelineVersions(counter.name));
}

export interface SplitterPreparation {
  /** Any object with LangChain's `splitText(text): Promise<string[]>`. */
  readonly splitter: SectionSplitter;
  /**
   * Stable name of the splitter and its settings (e.g. `recursive:1000/200`): it replaces the
   * chunker part of the pipeline versions, because another splitter cuts differently.
   */
  readonly name: string;
}

/**
 * {@link prepareDocument} with a splitter of your own as the chunker: each section goes to
 * `splitter.splitText`, every piece keeps its section's heading path, ids stay deterministic
 * (the splitter's `name` is part of every versionId).
 */
export async function prepareDocumentWithSplitter(
  input: PrepareDocumentInput,
  chunker: SplitterPreparation,
): Promise<PreparedDocument> {
  checkDocumentId(input.documentId);
  if (chunker.name.trim() === '') {
    throw new RagfreshError('INVALID_ARGUMENT', 'a splitter needs a non-empty stable name.', {
      scope: 'extract',
    });
  }
  const text = input.normalized ? input.markdown : normalizeMarkdown(input.markdown);
  const counter = input.chunking?.counter ?? tiktokenCounter();
  const pieces = await chunkMarkdownWithSplitter(text, chunker.splitter, {
    counter,
    title: input.chunking?.title ?? input.provenance.title,
  });
  const versions = pipelineVersions(counter.name);
  return assemble(input, text, pieces, {
    ...versions,
    chunker: `splitter:${chunker.name}+${counter.name}`,
  });
}

/**
 * A stable name for a splitter: its class plus a hash of its serialisable settings (LangChain's
 * `lc_kwargs`, else `chunkSize` / `chunkOverlap`). Two splitters of one class with the same
 * settings get the same name, so their chunks get the same ids.
 */
export function splitterName(splitter: SectionSplitter): string {
  const s = splitter as SectionSplitter & {
    lc_kwargs?: Record<string, unknown>;
    chunkSize?: number;
    chunkOverlap?: number;
  };
  const settings = s.lc_kwargs ?? { chunkSize: s.chunkSize, chunkOverlap: s.chunkOverlap };
  const keys = Object.keys(settings).sort();
  const kind = splitter.constructor?.name || 'splitter';
  return `${kind}:${sha256Hex(JSON.stringify(settings, keys)).slice(0, 12)}`;
}

/** A bare splitter named by {@link splitterName}, or one given with its own name. */
export function asSplitterPreparation(
  s: SectionSplitter | SplitterPreparation,
): SplitterPreparation {
  if ('splitText' in s && typeof s.splitText === 'function')
    return { splitter: s, name: splitterName(s) };
  return s as SplitterPreparation;
}

/**
 * Cuts a prepared document again with a splitter of your own: the same Markdown (nothing is
 * parsed again) through {@link prepareDocumentWithSplitter}, keeping its provenance. `title`
 * roots the heading paths when the Markdown has no h1 (the page's `rootTitle`; default the
 * provenance title).
 */
export async function recutWithSplitter(
  prepared: PreparedDocument,
  chunker: SplitterPreparation,
  counter: TokenCounter,
  title?: string,
): Promise<PreparedDocument> {
  const provenance = prepared.chunks[0]?.provenance;
  if (provenance === undefined) return prepared;
  return prepareDocumentWithSplitter(
    {
      documentId: prepared.documentId,
      sourceId: prepared.sourceId,
      markdown: prepared.text,
      normalized: true,
      provenance,
      chunking: { counter, ...(title === undefined ? {} : { title }) },
    },
    chunker,
  );
}

function checkDocumentId(documentId: string): void {
  if (documentId === '' || documentId.includes('#')) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `documentId ${JSON.stringify(documentId)} must be non-empty without '#'.`,
      {
        scope: 'extract',
      },
    );
  }
}

function assemble(
  input: PrepareDocumentInput,
  text: string,
  pieces: readonly TextChunk[],
  versions: PipelineVersions,
): PreparedDocument {
  const verId = versionId({
    text,
    chunks: pieces,
    versions,
    ...(input.provenance.access === undefined ? {} : { access: input.provenance.access }),
  });
  const chunks: Chunk[] = pieces.map((p, ordinal) => ({
    chunkId: chunkId(input.documentId, verId, ordinal),
    documentId: input.documentId,
    versionId: verId,
    sourceId: input.sourceId,
    ordinal,
    text: p.text,
    headingPath: p.headingPath,
    tokenCount: p.tokenCount,
    contentHash: chunkHash(p.text),
    provenance: input.provenance,
  }));
  return {
    documentId: input.documentId,
    sourceId: input.sourceId,
    versionId: verId,
    text,
    contentHash: normalizedTextHash(text),
    textChars: text.length,
    fingerprint: simhash64(text),
    versions,
    chunks,
  };
}
