import {
  type ChunkProvenance,
  chunkId,
  documentId,
  type EmbeddedChunk,
  type PublishCandidate,
  SCHEMA_VERSION,
  sha256Hex,
  versionId,
} from '@ragfresh/core';

/** Vector size of every case: small enough for any store, large enough to separate texts. */
export const DIMENSIONS = 12;

/**
 * A tiny deterministic embedding computed from the text alone: the same text gives the same
 * unit vector on any machine, different texts give different vectors, never the zero vector.
 */
export function embed(text: string, dimensions: number = DIMENSIONS): number[] {
  const bytes = Buffer.from(sha256Hex(`conformance:${text}`), 'hex');
  const raw: number[] = [];
  for (let i = 0; i < dimensions; i++) {
    const b = bytes[i % bytes.length]! ^ (i >= bytes.length ? 0x5a : 0);
    raw.push((b + 1) / 128 - 1);
  }
  const norm = Math.sqrt(raw.reduce((s, x) => s + x * x, 0)) || 1;
  return raw.map((x) => Math.round((x / norm) * 1e6) / 1e6);
}

export interface ChunkSpec {
  readonly text: string;
  readonly headingPath?: readonly string[];
}

export interface VersionOptions {
  /** Volatile observation facts: never part of any id. */
  readonly retrievedAt?: string;
  readonly provenance?: Partial<ChunkProvenance>;
  readonly url?: string;
}

export const PIPELINE_VERSIONS = Object.freeze({
  extractor: 'conformance-1',
  chunker: 'conformance-1',
  schema: SCHEMA_VERSION,
});

/** Builds documents and versions for one case's namespace. */
export class Corpus {
  readonly sourceId: string;
  readonly #namespace: string;
  readonly #dimensions: number;

  constructor(namespace: string, dimensions: number = DIMENSIONS) {
    this.#namespace = namespace;
    this.#dimensions = dimensions;
    this.sourceId = `cf-${namespace.replace(/[^A-Za-z0-9_.-]/g, '-')}`.slice(0, 64);
  }

  url(name: string): string {
    return `https://conformance.ragfresh.test/${encodeURIComponent(this.#namespace)}/${encodeURIComponent(name)}`;
  }

  documentId(name: string): string {
    return documentId(this.sourceId, this.url(name));
  }

  /** `count` distinct chunk texts for a named document and version label. */
  texts(name: string, label: string, count: number): ChunkSpec[] {
    return Array.from({ length: count }, (_, i) => ({
      text: `${name} ${label} chunk ${i}: the quick brown fox jumps over the lazy dog ${label}-${i}.`,
      headingPath: [`${name}`, `Section ${Math.floor(i / 4)}`],
    }));
  }

  /** A candidate version of a named document built from chunk texts. */
  version(
    name: string,
    chunks: readonly ChunkSpec[],
    options: VersionOptions = {},
  ): PublishCandidate {
    const url = options.url ?? this.url(name);
    const docId = documentId(this.sourceId, url);
    const text = chunks.map((c) => c.text).join('\n\n');
    const verId = versionId({
      text,
      chunks: chunks.map((c) => ({ text: c.text, headingPath: c.headingPath ?? [] })),
      versions: PIPELINE_VERSIONS,
      ...(options.provenance?.access === undefined ? {} : { access: options.provenance.access }),
    });
    const retrievedAt = options.retrievedAt ?? '2026-01-01T00:00:00.000Z';
    const provenance: ChunkProvenance = {
      url,
      finalUrl: url,
      title: `Conformance ${name}`,
      retrievedAt,
      contentChangedAt: retrievedAt,
      acquisition: 'raw',
      ...options.provenance,
    };
    const embedded: EmbeddedChunk[] = chunks.map((c, ordinal) => {
      const chunkText = c.text.normalize('NFC');
      return {
        chunkId: chunkId(docId, verId, ordinal),
        documentId: docId,
        versionId: verId,
        sourceId: this.sourceId,
        ordinal,
        text: chunkText,
        headingPath: c.headingPath ?? [],
        tokenCount: chunkText.split(/\s+/).filter(Boolean).length,
        contentHash: sha256Hex(chunkText),
        provenance,
        embedding: embed(chunkText, this.#dimensions),
      };
    });
    return {
      documentId: docId,
      versionId: verId,
      sourceId: this.sourceId,
      url,
      contentHash: sha256Hex(text.normalize('NFC')),
      textChars: text.length,
      text,
      chunks: embedded,
      retrievedAt,
    };
  }

  /** Shorthand: a named document's version `label` with `count` generated chunks. */
  generated(
    name: string,
    label: string,
    count: number,
    options: VersionOptions = {},
  ): PublishCandidate {
    return this.version(name, this.texts(name, label, count), options);
  }
}
