import { citationUrl } from './canonical.js';
import { decodeChunkMetadata, FIELDS, type FlatMetadata } from './metadata.js';
import type { DocumentStatus } from './model.js';

/** What a reader is told about one retrieved chunk, prepended at prompt-assembly time. */
export interface EvidenceProvenance {
  /** The cited URL: the accepted canonical, else the URL fetched after redirects (`citationUrl`). */
  readonly source: string;
  readonly title?: string;
  readonly fetched: string;
  readonly section?: string;
  /** Set when the document is degraded or quarantined: the last good observation time. */
  readonly staleSince?: string;
  readonly status?: DocumentStatus;
  readonly documentId?: string;
  readonly versionId?: string;
}

/**
 * The cited URL of any chunk's metadata (stored, loaded, or another app's with ragfresh's keys):
 * `canonical_url`, else `final_url`, else `url`, the first that is http(s) (`citationUrl`).
 */
export function metadataCitation(metadata: Readonly<Record<string, unknown>>): string | undefined {
  const s = (key: string) =>
    typeof metadata[key] === 'string' ? (metadata[key] as string) : undefined;
  return citationUrl({
    canonicalUrl: s(FIELDS.canonicalUrl),
    finalUrl: s(FIELDS.finalUrl),
    url: s(FIELDS.url),
  });
}

/** Provenance of a stored chunk from its metadata (and, when known, its document's status). */
export function provenanceOf(
  metadata: FlatMetadata,
  doc?: {
    readonly status: DocumentStatus;
    readonly lastGoodAt?: string;
    readonly retrievedAt?: string;
  },
): EvidenceProvenance {
  const d = decodeChunkMetadata(metadata);
  const stale = doc !== undefined && (doc.status === 'degraded' || doc.status === 'quarantined');
  const fetched = doc?.retrievedAt ?? d.provenance.retrievedAt;
  return {
    source: citationUrl(d.provenance) ?? d.provenance.url,
    title: d.provenance.title,
    fetched,
    ...(d.headingPath.length === 0 ? {} : { section: d.headingPath.join(' > ') }),
    ...(stale
      ? { staleSince: doc?.lastGoodAt ?? fetched, status: doc!.status }
      : doc === undefined
        ? {}
        : { status: doc.status }),
    documentId: d.documentId,
    versionId: d.versionId,
  };
}

/** `Source: … / Fetched: … / Section: …` (+ `STALE since …`), one line each. */
export function provenanceHeader(p: EvidenceProvenance): string {
  const lines = [`Source: ${p.source}${p.title ? ` (${p.title})` : ''}`, `Fetched: ${p.fetched}`];
  if (p.section !== undefined) lines.push(`Section: ${p.section}`);
  if (p.staleSince !== undefined)
    lines.push(
      `STALE since ${p.staleSince} (${p.status ?? 'degraded'}: the page could not be refreshed; this is the last good copy)`,
    );
  return lines.join('\n');
}
