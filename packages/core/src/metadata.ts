import { PUBLIC_ACCESS, storedAccess } from './access.js';
import { RagfreshError } from './errors.js';
import type { AcquisitionMode, ChunkProvenance, EmbeddedChunk } from './model.js';

/**
 * Metadata values every supported store accepts: scalars, and lists of strings (only `rf_access`
 * is written as one by ragfresh). Never null, never nested objects.
 */
export type FlatValue = string | number | boolean | readonly string[];
export type FlatMetadata = Readonly<Record<string, FlatValue>>;

/** Upper bound of a validity interval that has not ended (fits int32 in every store). */
export const OPEN_EPOCH = 2_147_483_647;

/**
 * Field names ragfresh writes into store metadata. Apps filter on these; they are part of
 * the stored-schema contract (SCHEMA_VERSION).
 */
export const FIELDS = Object.freeze({
  chunkId: 'rf_chunk',
  documentId: 'rf_doc',
  versionId: 'rf_version',
  sourceId: 'rf_source',
  ordinal: 'rf_ordinal',
  from: 'rf_from',
  to: 'rf_to',
  current: 'rf_current',
  /**
   * Near-duplicate group of the chunk's document (optional; added in the near-duplicate change,
   * additive). Readers collapse hits sharing `content_hash`, or `rf_dup` and `rf_ordinal`.
   */
  duplicateGroup: 'rf_dup',
  /**
   * The embedding space of the chunk's vector (core `space.ts`; optional, additive: chunks
   * written before it belong to the space the index first recorded).
   */
  space: 'rf_space',
  /** LangChain convention: `source` identifies the document a chunk came from. */
  source: 'source',
  url: 'url',
  finalUrl: 'final_url',
  /**
   * The page's canonical URL when its source's `canonical` policy accepted it (same site by
   * default): it is then cited instead of `final_url`. Always http(s).
   */
  canonicalUrl: 'canonical_url',
  /**
   * A canonical the page claimed that its source's policy did not accept (another site under
   * `same-site`): kept as the page's claim, never cited, never identity (optional; additive).
   */
  canonicalClaim: 'canonical_claim',
  title: 'title',
  heading: 'heading',
  headingPath: 'heading_path',
  retrievedAt: 'retrieved_at',
  contentChangedAt: 'content_changed_at',
  sourceModifiedAt: 'source_modified_at',
  contentHash: 'content_hash',
  tokenCount: 'token_count',
  acquisition: 'acquisition',
  region: 'region',
  authority: 'authority',
  /**
   * Groups that may read the chunk, a list of strings: the source's `access` groups, or `['*']`
   * (`PUBLIC_ACCESS`) when public. Readers filter on list membership (see `access.ts`); a chunk
   * without it is visible to no reader (additive; fails closed).
   */
  access: 'rf_access',
});

/** What a connector stores for one chunk: id, text, vector and flat metadata. */
export interface StoredChunk {
  readonly id: string;
  readonly text: string;
  readonly embedding: readonly number[];
  readonly metadata: FlatMetadata;
}

/** Validity of a stored chunk, read back from its metadata. */
export interface ChunkValidity {
  readonly from: number;
  readonly to: number;
  readonly current: boolean;
}

export const HEADING_SEPARATOR = ' > ';

/**
 * Flattens an embedded chunk into stored form with validity `[from, OPEN_EPOCH)`, not current,
 * naming the embedding space of its vector when given.
 */
export function toStoredChunk(
  chunk: EmbeddedChunk,
  fromEpoch: number,
  spaceId?: string,
): StoredChunk {
  const p = chunk.provenance;
  const meta: Record<string, FlatValue> = {
    [FIELDS.chunkId]: chunk.chunkId,
    [FIELDS.documentId]: chunk.documentId,
    [FIELDS.versionId]: chunk.versionId,
    [FIELDS.sourceId]: chunk.sourceId,
    [FIELDS.ordinal]: chunk.ordinal,
    [FIELDS.from]: fromEpoch,
    [FIELDS.to]: OPEN_EPOCH,
    [FIELDS.current]: false,
    [FIELDS.source]: chunk.documentId,
    [FIELDS.url]: p.url,
    [FIELDS.finalUrl]: p.finalUrl,
    [FIELDS.title]: p.title,
    [FIELDS.heading]: chunk.headingPath.join(HEADING_SEPARATOR),
    [FIELDS.headingPath]: JSON.stringify(chunk.headingPath),
    [FIELDS.retrievedAt]: p.retrievedAt,
    [FIELDS.contentChangedAt]: p.contentChangedAt,
    [FIELDS.contentHash]: chunk.contentHash,
    [FIELDS.tokenCount]: chunk.tokenCount,
    [FIELDS.acquisition]: p.acquisition,
    [FIELDS.access]: storedAccess(p.access),
  };
  if (p.canonicalUrl !== undefined) meta[FIELDS.canonicalUrl] = p.canonicalUrl;
  if (p.canonicalClaim !== undefined) meta[FIELDS.canonicalClaim] = p.canonicalClaim;
  if (p.sourceModifiedAt !== undefined) meta[FIELDS.sourceModifiedAt] = p.sourceModifiedAt;
  if (p.region !== undefined) meta[FIELDS.region] = p.region;
  if (p.authority !== undefined) meta[FIELDS.authority] = p.authority;
  if (chunk.duplicateGroup !== undefined) meta[FIELDS.duplicateGroup] = chunk.duplicateGroup;
  if (spaceId !== undefined) meta[FIELDS.space] = spaceId;
  return { id: chunk.chunkId, text: chunk.text, embedding: chunk.embedding, metadata: meta };
}

function str(meta: FlatMetadata, key: string): string {
  const v = meta[key];
  if (typeof v !== 'string') {
    throw new RagfreshError(
      'INVALID_METADATA',
      `stored chunk lacks string field ${key}; was it written by ragfresh?`,
    );
  }
  return v;
}

function num(meta: FlatMetadata, key: string): number {
  const v = meta[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new RagfreshError(
      'INVALID_METADATA',
      `stored chunk lacks numeric field ${key}; was it written by ragfresh?`,
    );
  }
  return v;
}

function optStr(meta: FlatMetadata, key: string): string | undefined {
  const v = meta[key];
  return typeof v === 'string' ? v : undefined;
}

/** Decoded view of a stored chunk's metadata. */
export interface DecodedChunk {
  readonly chunkId: string;
  readonly documentId: string;
  readonly versionId: string;
  readonly sourceId: string;
  readonly ordinal: number;
  readonly headingPath: readonly string[];
  readonly tokenCount: number;
  readonly contentHash: string;
  readonly validity: ChunkValidity;
  readonly provenance: ChunkProvenance;
  readonly duplicateGroup?: string;
}

export function decodeChunkMetadata(meta: FlatMetadata): DecodedChunk {
  let headingPath: string[] = [];
  const hp = meta[FIELDS.headingPath];
  if (typeof hp === 'string' && hp !== '') {
    const parsed: unknown = JSON.parse(hp);
    if (Array.isArray(parsed)) headingPath = parsed.map(String);
  }
  const provenance: ChunkProvenance = {
    url: str(meta, FIELDS.url),
    finalUrl: str(meta, FIELDS.finalUrl),
    title: str(meta, FIELDS.title),
    retrievedAt: str(meta, FIELDS.retrievedAt),
    contentChangedAt: str(meta, FIELDS.contentChangedAt),
    acquisition: str(meta, FIELDS.acquisition) as AcquisitionMode,
    ...(optStr(meta, FIELDS.canonicalUrl) === undefined
      ? {}
      : { canonicalUrl: optStr(meta, FIELDS.canonicalUrl)! }),
    ...(optStr(meta, FIELDS.canonicalClaim) === undefined
      ? {}
      : { canonicalClaim: optStr(meta, FIELDS.canonicalClaim)! }),
    ...(optStr(meta, FIELDS.sourceModifiedAt) === undefined
      ? {}
      : { sourceModifiedAt: optStr(meta, FIELDS.sourceModifiedAt)! }),
    ...(optStr(meta, FIELDS.region) === undefined ? {} : { region: optStr(meta, FIELDS.region)! }),
    ...(optStr(meta, FIELDS.authority) === undefined
      ? {}
      : { authority: optStr(meta, FIELDS.authority)! }),
    ...decodeAccess(meta),
  };
  return {
    chunkId: str(meta, FIELDS.chunkId),
    documentId: str(meta, FIELDS.documentId),
    versionId: str(meta, FIELDS.versionId),
    sourceId: str(meta, FIELDS.sourceId),
    ordinal: num(meta, FIELDS.ordinal),
    headingPath,
    tokenCount: num(meta, FIELDS.tokenCount),
    contentHash: str(meta, FIELDS.contentHash),
    validity: readValidity(meta),
    provenance,
    ...(optStr(meta, FIELDS.duplicateGroup) === undefined
      ? {}
      : { duplicateGroup: optStr(meta, FIELDS.duplicateGroup)! }),
  };
}

/** `rf_access` back as provenance: its groups (the public token dropped), absent when public. */
function decodeAccess(meta: FlatMetadata): { access?: readonly string[] } {
  const v = meta[FIELDS.access];
  if (!Array.isArray(v)) return {};
  const groups = v.filter((g) => g !== PUBLIC_ACCESS);
  return groups.length === 0 ? {} : { access: groups };
}

export function readValidity(meta: FlatMetadata): ChunkValidity {
  return {
    from: num(meta, FIELDS.from),
    to: num(meta, FIELDS.to),
    current: meta[FIELDS.current] === true,
  };
}

/**
 * Checks that metadata is flat and null-free and, when `maxBytes` is given, that its JSON
 * encoding fits. Throws INVALID_METADATA naming the field.
 */
export function assertFlatMetadata(
  meta: unknown,
  scope: string,
  maxBytes?: number,
): asserts meta is FlatMetadata {
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) {
    throw new RagfreshError('INVALID_METADATA', 'metadata must be a flat object.', { scope });
  }
  for (const [key, value] of Object.entries(meta)) {
    const t = typeof value;
    if (value === null || value === undefined) {
      throw new RagfreshError(
        'INVALID_METADATA',
        `metadata field ${key} is ${String(value)}; omit the field instead.`,
        { scope },
      );
    }
    if (Array.isArray(value)) {
      if (!value.every((v) => typeof v === 'string')) {
        throw new RagfreshError(
          'INVALID_METADATA',
          `metadata field ${key} is a list with a non-string entry; only lists of strings are stored.`,
          { scope },
        );
      }
      continue;
    }
    if (t !== 'string' && t !== 'number' && t !== 'boolean') {
      throw new RagfreshError(
        'INVALID_METADATA',
        `metadata field ${key} is ${t}; only string, number, boolean and lists of strings are stored.`,
        { scope },
      );
    }
    if (t === 'number' && !Number.isFinite(value)) {
      throw new RagfreshError('INVALID_METADATA', `metadata field ${key} is not a finite number.`, {
        scope,
      });
    }
  }
  if (maxBytes !== undefined) {
    const size = Buffer.byteLength(JSON.stringify(meta), 'utf8');
    if (size > maxBytes) {
      throw new RagfreshError(
        'INVALID_METADATA',
        `metadata is ${size} bytes, over the store's ${maxBytes}-byte limit; shorten the chunk text or lower the chunk token budget.`,
        { scope },
      );
    }
  }
}
