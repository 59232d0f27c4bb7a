import type { DocumentRecord } from '@ragfresh/core';
import { stripTitleAffixes } from '@ragfresh/extract';
import type { LearnedHostModel } from './extract.js';

/** What one document was cut under, to decide whether a model change touches it. */
export interface DocumentLearningFacts {
  readonly format: 'ragfresh-boilerplate-doc/1';
  readonly key: string;
  readonly versionId: string;
  /** Digest of the model the version was cut under. */
  readonly model: string;
  /** The page's block digests that model held (the dropped ones, before the guards). */
  readonly matched: readonly string[];
  /** Bloom filter (4 probes, base64) of all the page's block digests. */
  readonly bloom: string;
  readonly rootTitle: string;
  readonly root: string;
}

// Bloom filter over 64-bit hex digests: 4 probes of 16 bits each, 12+ bits per digest.
function bloomBits(n: number): number {
  let bits = 512;
  while (bits < n * 12 && bits < 16_384) bits *= 2;
  return bits;
}

function probes(digest: string, bits: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < 4; i++) out.push(Number.parseInt(digest.slice(i * 4, i * 4 + 4), 16) % bits);
  return out;
}

export function bloomOf(digests: readonly string[]): string {
  const bits = bloomBits(digests.length);
  const bytes = new Uint8Array(bits / 8);
  for (const d of digests) for (const p of probes(d, bits)) bytes[p >> 3]! |= 1 << (p & 7);
  return Buffer.from(bytes).toString('base64');
}

function bloomHas(bloom: Uint8Array, digest: string): boolean {
  const bits = bloom.length * 8;
  return probes(digest, bits).every((p) => (bloom[p >> 3]! & (1 << (p & 7))) !== 0);
}

/** Whether a model change touches what the document was cut from (false: same version). */
export function touchedBy(
  facts: DocumentLearningFacts | undefined,
  record: DocumentRecord,
  next: LearnedHostModel,
): boolean {
  if (facts === undefined || facts.versionId !== record.currentVersionId) return true;
  if (facts.model === next.digest) return false;
  const matched = new Set(facts.matched);
  for (const d of matched) if (!next.blocks.has(d)) return true;
  const bloom = new Uint8Array(Buffer.from(facts.bloom, 'base64'));
  // A Bloom false positive only costs one re-extraction that gives the same version.
  for (const d of next.blocks) if (!matched.has(d) && bloomHas(bloom, d)) return true;
  const root =
    next.titleAffixes === undefined
      ? facts.rootTitle
      : stripTitleAffixes(facts.rootTitle, next.titleAffixes);
  return root !== facts.root;
}
