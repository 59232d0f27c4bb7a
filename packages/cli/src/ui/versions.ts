import { reasonLine } from '@ragfresh/core';
import {
  extractSnapshot,
  type PagePipeline,
  type SnapshotSubject,
} from '@ragfresh/engine/pipeline';
import type { RawSnapshotStore } from '@ragfresh/fetch';

/** A version's text re-extracted from a raw snapshot (no network). */
export interface SnapshotText {
  readonly digest: string;
  readonly fetchedAt: string;
  readonly versionId?: string;
  readonly title?: string;
  readonly text?: string;
  /** Why no text: not kept, or not extractable (the classifier's reasons). */
  readonly problem?: string;
}

export type { SnapshotSubject } from '@ragfresh/engine/pipeline';

/** How long a listing of the raw snapshots is reused before the store is listed again. */
const INDEX_TTL_MS = 10_000;

/**
 * Texts of versions, from the raw snapshots kept in the data dir: a held candidate by its digest,
 * and every version of a URL whose body is still kept (each snapshot's observation names the URL). Extraction is
 * the engine's own step (`extractSnapshot` over the configured pipeline), so a text shown here is
 * the text that was, or would be, published; results are memoised by digest.
 */
export class VersionTexts {
  readonly #snapshots: RawSnapshotStore;
  readonly #pipeline: PagePipeline;
  readonly #extracted = new Map<string, SnapshotText>();
  #index: { at: number; byUrl: Map<string, { digest: string; fetchedAt: string }[]> } | undefined;

  constructor(snapshots: RawSnapshotStore, pipeline: PagePipeline) {
    this.#snapshots = snapshots;
    this.#pipeline = pipeline;
  }

  /** The text a raw snapshot extracts to. */
  async ofDigest(digest: string, subject: SnapshotSubject): Promise<SnapshotText> {
    const memo = this.#extracted.get(digest);
    if (memo !== undefined) return memo;
    const raw = await this.#snapshots.get(digest).catch(() => undefined);
    if (raw === undefined)
      return { digest, fetchedAt: '', problem: 'its raw snapshot is not kept' };
    const { outcome } = await extractSnapshot(this.#pipeline, raw, subject);
    const result: SnapshotText =
      outcome.kind === 'document'
        ? {
            digest,
            fetchedAt: raw.meta.fetchedAt,
            versionId: outcome.versionId,
            title: outcome.title,
            text: outcome.text,
          }
        : {
            digest,
            fetchedAt: raw.meta.fetchedAt,
            problem: `not extractable: ${outcome.reasons.map(reasonLine).join('; ')}`,
          };
    this.#extracted.set(digest, result);
    return result;
  }

  /** Every kept snapshot of the URL, extracted, newest observation first. */
  async ofUrl(subject: SnapshotSubject): Promise<SnapshotText[]> {
    const entries = (await this.#scan()).get(subject.url) ?? [];
    const out: SnapshotText[] = [];
    for (const e of entries) out.push(await this.ofDigest(e.digest, subject));
    return out.sort((a, b) => b.fetchedAt.localeCompare(a.fetchedAt));
  }

  /** Texts by versionId among the URL's kept snapshots (the newest observation of each). */
  async byVersion(subject: SnapshotSubject): Promise<Map<string, SnapshotText>> {
    const map = new Map<string, SnapshotText>();
    for (const t of await this.ofUrl(subject))
      if (t.versionId !== undefined && !map.has(t.versionId)) map.set(t.versionId, t);
    return map;
  }

  async #scan(): Promise<Map<string, { digest: string; fetchedAt: string }[]>> {
    if (this.#index !== undefined && Date.now() - this.#index.at < INDEX_TTL_MS)
      return this.#index.byUrl;
    const byUrl = new Map<string, { digest: string; fetchedAt: string }[]>();
    for await (const { digest, meta } of this.#snapshots.list()) {
      const list = byUrl.get(meta.url) ?? [];
      list.push({ digest, fetchedAt: meta.fetchedAt });
      byUrl.set(meta.url, list);
    }
    this.#index = { at: Date.now(), byUrl };
    return byUrl;
  }
}
