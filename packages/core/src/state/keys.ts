import { RagfreshError } from '../errors.js';
import type { AggregateKeys } from './aggregates.js';

/**
 * Encodes one key component so it holds only `[A-Za-z0-9._%-]`. The alphabet keeps `:` free
 * as the separator and is inert in SQL `LIKE`/range scans and Redis `MATCH` globs, so one
 * prefix can never match a neighbouring component (`src1` never matches `src1:x`).
 */
export function encodeKeyPart(part: string): string {
  try {
    return encodeURIComponent(part).replace(
      /[!'()*~]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
  } catch (cause) {
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      `state key ${JSON.stringify(part)} is not well-formed Unicode; pass a valid string.`,
      {
        scope: 'state',
        cause,
      },
    );
  }
}

/**
 * The key layout of one namespace. Every key starts with `<namespace>:`, or with `{<namespace>}:`
 * when `hashTag` is set (a Redis Cluster hashes only the tag, so every key of the namespace lands
 * in one slot and multi-key scripts and MGET stay legal there).
 */
export class StateKeys {
  readonly root: string;

  constructor(namespace: string, options: { readonly hashTag?: boolean } = {}) {
    const encoded = encodeKeyPart(namespace);
    this.root = options.hashTag === true ? `{${encoded}}` : encoded;
  }

  /** Prefix (without trailing `:`) of a collection, for prefix scans. */
  collection(name: string, ...parts: string[]): string {
    return [this.root, name, ...parts.map(encodeKeyPart)].join(':');
  }

  document(documentId: string): string {
    return this.collection('doc', documentId);
  }
  documentsOfSource(sourceId: string): string {
    return this.collection('docsrc', sourceId);
  }
  documentSourceIndex(sourceId: string, documentId: string): string {
    return this.collection('docsrc', sourceId, documentId);
  }
  journal(): string {
    return this.collection('journal');
  }
  retirement(documentId: string, versionId: string): string {
    return this.collection('retire', documentId, versionId);
  }
  reviewItem(id: string): string {
    return this.collection('review', id);
  }
  tombstone(documentId: string): string {
    return this.collection('tomb', documentId);
  }
  /** Zero-padded so the keys sort by epoch. */
  epochRecord(epoch: number): string {
    return this.collection('epoch', String(epoch).padStart(12, '0'));
  }
  robots(host: string): string {
    return this.collection('robots', host);
  }
  runsOfSource(sourceId: string): string {
    return this.collection('run', sourceId);
  }
  run(sourceId: string, runId: string): string {
    return this.collection('run', sourceId, runId);
  }
  lease(name: string): string {
    return this.collection('lease', name);
  }
  learned(kind: string, id: string): string {
    return this.collection('learned', kind, id);
  }
  /** Says the aggregates below are complete (written last by a rebuild). */
  aggregatesBuilt(): string {
    return this.collection('aggregates');
  }
  /** Ordered-index keys of the per-source aggregates (`agg:<sourceId>:<index>`). */
  readonly aggregates: AggregateKeys = {
    counters: (sourceId) => this.collection('agg', sourceId, 'count'),
    index: (sourceId, index) => this.collection('agg', sourceId, index),
    pendingDocuments: () => this.collection('aggrev', 'docs'),
  };
}
