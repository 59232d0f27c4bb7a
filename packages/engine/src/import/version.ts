import {
  type CanonicalJudgement,
  type CanonicalPolicy,
  type ChunkProvenance,
  chunkId,
  httpUrl,
  judgeCanonical,
  type Reason,
  SCHEMA_VERSION,
  sameSite,
  versionId,
} from '@ragfresh/core';
import {
  chunkHash,
  EXTRACTOR_VERSION,
  normalizedTextHash,
  normalizeMarkdown,
  tiktokenCounter,
  unlinkUnsafeMarkdown,
} from '@ragfresh/extract';
import { processBounded } from '../bounds.js';
import { classifyOutcome } from '../classify.js';
import type { EngineContext } from '../context.js';
import type { ExtractedDocument } from '../extract.js';
import type { ImportRow } from './row.js';

/** How an imported page is cut: the export's own chunks when it has them, or ragfresh's chunker. */
export type ImportChunking = 'provided' | 'rechunk';

/**
 * Names the export's own cut in every versionId of a document whose chunks the export
 * provided, so the same chunks give the same version on any machine, and a re-chunked copy
 * of the same Markdown is another version.
 */
export const PROVIDED_CHUNKER = 'provided-1';

export interface RowContext {
  readonly documentId: string;
  readonly sourceId: string;
  readonly retrievedAt: string;
  readonly authority?: string;
  readonly access?: readonly string[];
  readonly canonical?: CanonicalPolicy;
}

/**
 * The URLs a row's chunks are cited by, under the rules a fetched page follows: the export's
 * `loadedUrl` counts as the fetched URL only when it is http(s) on the requested URL's site (a
 * crawler's redirect elsewhere cannot be checked here), and its `canonicalUrl` is judged by the
 * source's `canonical` policy against that URL.
 */
export function rowUrls(
  row: ImportRow,
  policy?: CanonicalPolicy,
): { readonly finalUrl: string; readonly canonical: CanonicalJudgement } {
  const requested = httpUrl(row.url);
  const loaded = row.loadedUrl === undefined ? undefined : httpUrl(row.loadedUrl);
  const finalUrl =
    loaded !== undefined && requested !== undefined && sameSite(loaded, requested)
      ? loaded.href
      : row.url;
  return { finalUrl, canonical: judgeCanonical(row.canonicalUrl, finalUrl, policy) };
}

export type RowVersion =
  | { readonly kind: 'document'; readonly doc: ExtractedDocument; readonly body: string }
  | { readonly kind: 'not-the-document'; readonly reasons: readonly Reason[] };

/** The body of a row: its Markdown, else its text, else its chunks' texts. */
export function rowBody(row: ImportRow): string {
  if (row.markdown !== undefined && row.markdown.trim() !== '') return row.markdown;
  if (row.text !== undefined && row.text.trim() !== '') return row.text;
  return (row.chunks ?? []).map((c) => c.text).join('\n\n');
}

function provenance(row: ImportRow, rc: RowContext, title: string): ChunkProvenance {
  const urls = rowUrls(row, rc.canonical);
  return {
    url: row.url,
    finalUrl: urls.finalUrl,
    ...urls.canonical,
    title,
    retrievedAt: rc.retrievedAt,
    contentChangedAt: rc.retrievedAt,
    acquisition: 'export',
    ...(rc.authority === undefined ? {} : { authority: rc.authority }),
    ...(rc.access === undefined || rc.access.length === 0 ? {} : { access: rc.access }),
  };
}

/** A version cut exactly where the export cut it: boundaries and heading paths are the export's. */
function fromProvidedChunks(row: ImportRow, rc: RowContext): ExtractedDocument {
  const counter = tiktokenCounter();
  const pieces = (row.chunks ?? [])
    .map((c) => ({
      text: unlinkUnsafeMarkdown(c.text.normalize('NFC')).trim(),
      headingPath: c.headingPath,
    }))
    .filter((c) => c.text !== '');
  const text = normalizeMarkdown(unlinkUnsafeMarkdown(rowBody(row)));
  const verId = versionId({
    text,
    chunks: pieces,
    versions: {
      extractor: EXTRACTOR_VERSION,
      chunker: `${PROVIDED_CHUNKER}+${counter.name}`,
      schema: SCHEMA_VERSION,
    },
    ...(rc.access === undefined ? {} : { access: rc.access }),
  });
  const title = row.title ?? pieces[0]?.headingPath[0] ?? row.url;
  const prov = provenance(row, rc, title);
  return {
    kind: 'document',
    title,
    text,
    contentHash: normalizedTextHash(text),
    versionId: verId,
    ...rowUrls(row, rc.canonical).canonical,
    chunks: pieces.map((p, ordinal) => ({
      chunkId: chunkId(rc.documentId, verId, ordinal),
      documentId: rc.documentId,
      versionId: verId,
      sourceId: rc.sourceId,
      ordinal,
      text: p.text,
      headingPath: [...p.headingPath],
      tokenCount: counter.count(p.text),
      contentHash: chunkHash(p.text),
      provenance: prov,
    })),
  };
}

/**
 * A row enters where a fetched page would after acquisition: a body is a Markdown page whose
 * acquisition is an export, classified, extracted and chunked by the engine's page pipeline
 * (one parse), behind the same limits. Provided chunks skip only the cut, which the export
 * already made (`rowLimitRefusals` bounds them before this).
 */
export async function versionOfRow(
  ctx: EngineContext,
  row: ImportRow,
  rc: RowContext,
  chunking: ImportChunking,
): Promise<RowVersion> {
  const body = rowBody(row);
  const urls = rowUrls(row, rc.canonical);
  if (chunking === 'provided' && (row.chunks ?? []).some((c) => c.text.trim() !== ''))
    return { kind: 'document', doc: fromProvidedChunks(row, rc), body };
  // The fetch path's own bounded call: pre-screen, chunk count, and a throw is this row's only.
  const outcome = await processBounded(
    ctx.deps.pipeline,
    {
      text: body,
      contentType: 'text/markdown',
      url: row.url,
      finalUrl: urls.finalUrl,
      acquisition: 'export',
    },
    {
      documentId: rc.documentId,
      sourceId: rc.sourceId,
      retrievedAt: rc.retrievedAt,
      ...(rc.authority === undefined ? {} : { authority: rc.authority }),
      ...(rc.access === undefined ? {} : { access: rc.access }),
    },
    ctx.pageLimits,
  );
  const verdict = classifyOutcome(row.url, outcome);
  if (verdict.kind === 'not-the-document')
    return { kind: 'not-the-document', reasons: verdict.reasons };
  // The chunks get the row's provenance below: the prepared document they came from would not match.
  const { prepared: _cut, ...doc } = verdict.doc;
  // Canonical and loaded URLs are provenance: they ride on the chunks, never on the id.
  const title = row.title ?? doc.title;
  return {
    kind: 'document',
    body,
    doc: {
      ...doc,
      title,
      ...urls.canonical,
      chunks: doc.chunks.map((c) => ({
        ...c,
        provenance: { ...c.provenance, title, ...urls.canonical },
      })),
    },
  };
}
