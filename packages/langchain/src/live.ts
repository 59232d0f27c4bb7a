import { Document } from '@langchain/core/documents';
import { type Chunk, FIELDS, reasonLine } from '@ragfresh/core';
import type { EngineSource } from '@ragfresh/engine';
import {
  type JudgeContext,
  judgePage,
  observePage,
  sourceProvenance,
} from '@ragfresh/engine/stages';
import { mapOrdered } from './concurrency.js';
import { type LiveFetchOptions, READER_FIELDS } from './fields.js';

type LiveOutcome =
  | { readonly kind: 'fresh' }
  | { readonly kind: 'revalidated'; readonly at: string }
  | {
      readonly kind: 'live';
      readonly at: string;
      readonly versionId: string;
      readonly chunks: readonly Chunk[];
    }
  | { readonly kind: 'failed'; readonly at: string; readonly reason: string };

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

function words(s: string): Set<string> {
  return new Set(s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

function overlap(a: Set<string>, b: Set<string>): number {
  let n = 0;
  for (const w of a) if (b.has(w)) n++;
  return n / Math.max(1, a.size + b.size - n);
}

/**
 * Revalidates the documents behind `docs` whose last good observation is older than the
 * objective, one conditional request per document (validators from the engine's state), through
 * the engine composed for the `live` role, so a page is observed as a refresh of its source
 * observes it: the fetcher of `fetch.*`, the source's acquisition, Markdown twin and proxy, the
 * page limits, the hosts' learned boilerplate as stored, and the source's classify stage
 * (`classify.ignore`, host evidence, reviewers' acceptances):
 * - 304: the stored copy is confirmed (`rf_revalidated_at`);
 * - 200 and the document: the page is re-extracted; a chunk whose section (heading path) no
 *   longer contains its stored text is replaced by the live text of that section (`rf_live: true`);
 * - anything else (a failed fetch, a page over a limit or judged not the document, a source
 *   the settings do not list): the stored copy stays, labelled `rf_live_fetch_failed` with the
 *   reason.
 * No record is written (the fetcher caches robots.txt in the state, as in every role): the
 * refresh engine, not a reader, publishes new versions.
 */
export async function liveRefresh(
  docs: Document[],
  options: LiveFetchOptions,
): Promise<Document[]> {
  const { engine } = options;
  const { state } = engine;
  const now = (options.now ?? (() => new Date()))();
  const observer = engine.observer();
  const sources = new Map<string, EngineSource>(engine.settings.sources.map((s) => [s.id, s]));
  // One classify stage per source for this call (its host evidence shared by its pages).
  const judges = new Map<string, JudgeContext>();
  const judgeOf = (sourceId: string): JudgeContext => {
    let judge = judges.get(sourceId);
    if (judge === undefined) {
      judge = engine.judge(sourceId);
      judges.set(sourceId, judge);
    }
    return judge;
  };
  const byDoc = new Map<string, Document[]>();
  for (const d of docs) {
    const id = d.metadata[FIELDS.documentId];
    if (typeof id !== 'string') continue;
    const list = byDoc.get(id) ?? [];
    list.push(d);
    byDoc.set(id, list);
  }
  const outcomes = new Map<string, LiveOutcome>();
  const work = [...byDoc.entries()];
  const run = async ([docId, group]: [string, Document[]]): Promise<void> => {
    const first = group[0]!;
    const m = first.metadata as Record<string, unknown>;
    const record = await state.getDocument(docId);
    const lastGood =
      record?.lastGoodAt ??
      record?.timestamps.retrievedAt ??
      (typeof m[FIELDS.retrievedAt] === 'string' ? (m[FIELDS.retrievedAt] as string) : undefined);
    const age =
      lastGood === undefined ? Number.POSITIVE_INFINITY : now.getTime() - Date.parse(lastGood);
    if (age <= options.objectiveMs) {
      outcomes.set(docId, { kind: 'fresh' });
      return;
    }
    const url = typeof m[FIELDS.url] === 'string' ? (m[FIELDS.url] as string) : record?.url;
    const attemptedAt = new Date().toISOString();
    const fail = (reason: string, at = attemptedAt) =>
      outcomes.set(docId, { kind: 'failed', at, reason });
    if (url === undefined) return void fail('no url in metadata');
    const sourceId = String(m[FIELDS.sourceId] ?? record?.sourceId ?? docId.split(':')[0]);
    const source = sources.get(sourceId);
    if (source === undefined)
      return void fail(
        `no source ${JSON.stringify(sourceId)} in the live engine's settings (sources: ${[...sources.keys()].join(', ') || 'none'})`,
      );
    try {
      const validators = record?.validators;
      // Validators are used under the pipeline key they were recorded with (the engine's), so
      // a 304 confirms the stored copy without a parse.
      const acquired = await observePage(observer, {
        url,
        documentId: docId,
        sourceId,
        provenance: sourceProvenance(source),
        ...(validators === undefined ? {} : { validators, pipelineKey: validators.pipelineKey }),
        ...(source.acquisition === undefined ? {} : { acquisition: source.acquisition }),
        ...(source.markdownTwin === true ? { markdownTwin: true } : {}),
        ...(source.proxy === undefined ? {} : { proxy: source.proxy }),
      });
      if (acquired.kind === 'not-modified') {
        outcomes.set(docId, { kind: 'revalidated', at: acquired.result.fetchedAt });
        return;
      }
      if (acquired.kind === 'unreadable')
        return void fail(
          `not the document: ${acquired.reasons.map(reasonLine).join('; ')}`,
          acquired.result.fetchedAt,
        );
      if (acquired.kind !== 'page') {
        const { result } = acquired;
        return void fail(
          `${result.outcome}${result.status === 0 ? '' : ` (HTTP ${result.status})`}`,
          result.fetchedAt,
        );
      }
      const { result } = acquired;
      const verdict = await judgePage(
        judgeOf(sourceId),
        { url, documentId: docId, ...(record === undefined ? {} : { record }) },
        acquired.outcome,
        result,
      );
      if (verdict.kind === 'not-the-document')
        return void fail(
          `not the document: ${verdict.reasons.map(reasonLine).join('; ')}`,
          result.fetchedAt,
        );
      outcomes.set(docId, {
        kind: 'live',
        at: result.fetchedAt,
        versionId: verdict.doc.versionId,
        chunks: verdict.doc.chunks,
      });
    } catch (err) {
      fail(err instanceof Error ? err.message : String(err));
    }
  };
  for await (const _ of mapOrdered(work, options.concurrency ?? 4, run)) {
    // results are in `outcomes`
  }
  return docs.map((d) => {
    const id = d.metadata[FIELDS.documentId];
    const outcome = typeof id === 'string' ? outcomes.get(id) : undefined;
    if (outcome === undefined || outcome.kind === 'fresh') return d;
    const m = { ...d.metadata } as Record<string, unknown>;
    if (outcome.kind === 'revalidated') {
      m[READER_FIELDS.revalidatedAt] = outcome.at;
      return withMetadata(d, d.pageContent, m);
    }
    if (outcome.kind === 'failed') {
      m[READER_FIELDS.liveFetchFailed] = outcome.reason;
      m[READER_FIELDS.liveAttemptedAt] = outcome.at;
      return withMetadata(d, d.pageContent, m);
    }
    const live = sectionText(outcome.chunks, d);
    if (live === undefined) {
      // The section is gone from the live page: the stored text is unconfirmed.
      m[READER_FIELDS.liveFetchFailed] = 'section not found in the live page';
      m[READER_FIELDS.liveAttemptedAt] = outcome.at;
      return withMetadata(d, d.pageContent, m);
    }
    if (live.unchanged) {
      m[READER_FIELDS.revalidatedAt] = outcome.at;
      return withMetadata(d, d.pageContent, m);
    }
    m[READER_FIELDS.live] = true;
    m[READER_FIELDS.liveFetchedAt] = outcome.at;
    m[READER_FIELDS.liveVersion] = outcome.versionId;
    return withMetadata(d, live.text, m);
  });
}

function withMetadata(
  d: Document,
  pageContent: string,
  metadata: Record<string, unknown>,
): Document {
  return new Document({ pageContent, metadata, ...(d.id === undefined ? {} : { id: d.id }) });
}

/** The live counterpart of a stored chunk: the chunks under the same heading path. */
function sectionText(
  chunks: readonly Chunk[],
  stored: Document,
): { unchanged: boolean; text: string } | undefined {
  const heading = stored.metadata[FIELDS.headingPath];
  const path = typeof heading === 'string' ? heading : JSON.stringify([]);
  const same = chunks.filter((c) => JSON.stringify(c.headingPath) === path);
  if (same.length === 0) return undefined;
  const storedText = squash(stored.pageContent);
  if (same.some((c) => squash(c.text).includes(storedText)))
    return { unchanged: true, text: stored.pageContent };
  // The section was cut differently or edited: take its live chunk closest to the stored one.
  const target = words(stored.pageContent);
  let best = same[0]!;
  let bestScore = -1;
  for (const c of same) {
    const s = overlap(words(c.text), target);
    if (s > bestScore) {
      best = c;
      bestScore = s;
    }
  }
  return { unchanged: false, text: best.text };
}
