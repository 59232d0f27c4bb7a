import { type CanonicalPolicy, normalizeAccess } from '@ragfresh/core';
import { decodeBody, type RawSnapshot } from '@ragfresh/fetch';
import { DEFAULT_PAGE_LIMITS, type PageLimits, processBounded } from './bounds.js';
import type { PageOutcome, PagePipeline } from './extract.js';

/** Whose page a raw snapshot is: what the pipeline needs besides the bytes. */
export interface SnapshotSubject {
  readonly documentId: string;
  readonly sourceId: string;
  readonly url: string;
  readonly authority?: string;
  readonly access?: readonly string[];
  readonly canonical?: CanonicalPolicy;
  /** When the body was observed; default the snapshot's own `fetchedAt`. */
  readonly retrievedAt?: string;
}

/**
 * What a source adds to each of its pages' provenance: its authority label, its access scope
 * (part of the versionId when non-empty) and its canonical policy.
 */
export function sourceProvenance(source: {
  readonly authority?: string | undefined;
  readonly access?: readonly string[] | undefined;
  readonly canonical?: CanonicalPolicy | undefined;
}): {
  readonly authority?: string;
  readonly access?: readonly string[];
  readonly canonical?: CanonicalPolicy;
} {
  return {
    ...(source.authority === undefined ? {} : { authority: source.authority }),
    ...(source.access === undefined || source.access.length === 0
      ? {}
      : { access: normalizeAccess(source.access) }),
    ...(source.canonical === undefined ? {} : { canonical: source.canonical }),
  };
}

/**
 * Whether a document's current version was published under another access scope than its
 * source has now. Such a document is re-extracted (from its raw snapshot) or fetched without
 * validators, so the scope change becomes a new version even though the page did not change:
 * a 304, or a text-hash match, must never keep the old scope.
 */
export function scopeChanged(
  record: { readonly currentVersionId?: string; readonly access?: readonly string[] },
  source: { readonly access?: readonly string[] | undefined },
): boolean {
  if (record.currentVersionId === undefined) return false;
  const was = normalizeAccess(record.access);
  const now = normalizeAccess(source.access);
  return was.length !== now.length || was.some((g, i) => g !== now[i]);
}

/**
 * Extracts a stored raw snapshot again, without network: the bytes decoded by their recorded
 * content type and run through the pipeline behind the same pre-screen as a live page. The one
 * path for re-extraction (pipeline change), store repair, approving a held candidate and the
 * UI's version texts, so each shows the text that was, or would be, published.
 */
export async function extractSnapshot(
  pipeline: PagePipeline,
  raw: RawSnapshot,
  subject: SnapshotSubject,
  limits: PageLimits = DEFAULT_PAGE_LIMITS,
): Promise<{ readonly outcome: PageOutcome; readonly retrievedAt: string }> {
  const contentType = raw.meta.contentType ?? raw.meta.headers['content-type'] ?? 'text/html';
  const retrievedAt = subject.retrievedAt ?? raw.meta.fetchedAt;
  const outcome = await processBounded(
    pipeline,
    {
      text: decodeBody(raw.body, contentType).text,
      contentType,
      url: subject.url,
      finalUrl: raw.meta.finalUrl,
      acquisition: /markdown/.test(contentType) ? 'markdown-twin' : 'raw',
    },
    {
      documentId: subject.documentId,
      sourceId: subject.sourceId,
      retrievedAt,
      ...(raw.meta.region === undefined ? {} : { region: raw.meta.region }),
      ...sourceProvenance(subject),
    },
    limits,
  );
  return { outcome, retrievedAt };
}
