import {
  type Canary,
  type CanaryResult,
  canonicalKey,
  documentId,
  RagfreshError,
  type RunSummary,
  type UrlIdentityPolicy,
} from '@ragfresh/core';

/**
 * A publication canary as written in the config: a real question and what must answer it.
 * `expect` is a phrase, a URL or a section, or an object with any of the three:
 * - a string starting with `http://` or `https://` is the page the answer must come from;
 * - any other string is a phrase the retrieved chunk must contain;
 * - `{ phrase?, url?, section? }` combines them (section: a heading the chunk sits under).
 * A canary that names a URL guards that document's promotions (it runs against the staged view
 * before promotion and holds the document when it fails); every canary also runs against the
 * current view after each promotion of its source.
 */
export interface CanaryConfig {
  readonly query: string;
  readonly expect:
    | string
    | { readonly phrase?: string; readonly url?: string; readonly section?: string };
  /** How deep the expected passage may be. Default 5. */
  readonly k?: number;
}

function bad(field: string, problem: string, fix: string): RagfreshError {
  return new RagfreshError('INVALID_CONFIG', `config ${field}: ${problem}; ${fix}.`, {
    scope: 'config',
    details: { field },
  });
}

const isUrl = (s: string) => /^https?:\/\//i.test(s.trim());

/**
 * Validates `sources[i].canaries` and resolves each expected URL to its documentId with the
 * source's identity policy. The URL kept in `expect.url` is the source's own `urls` entry for
 * that document when there is one, since chunks carry the URL as it was listed.
 */
export function resolveCanaries(
  raw: unknown,
  source: { readonly id: string; readonly urls?: readonly unknown[] },
  policy: UrlIdentityPolicy,
  field: string,
): Canary[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw))
    throw bad(field, 'expected a list', 'write canaries: [{ query, expect }]');
  return raw.map((entry: unknown, i): Canary => {
    const f = `${field}[${i}]`;
    if (typeof entry !== 'object' || entry === null)
      throw bad(f, 'is not an object', 'write { query: "…", expect: "a phrase" }');
    const c = entry as CanaryConfig;
    if (typeof c.query !== 'string' || c.query.trim() === '')
      throw bad(`${f}.query`, 'is missing', 'give the question a reader would ask');
    const given =
      typeof c.expect === 'string'
        ? isUrl(c.expect)
          ? { url: c.expect.trim() }
          : { phrase: c.expect }
        : c.expect;
    if (typeof given !== 'object' || given === null)
      throw bad(`${f}.expect`, 'is missing', 'give a phrase, a URL or { phrase, url, section }');
    const expect: { phrase?: string; url?: string; section?: string } = {};
    for (const key of ['phrase', 'url', 'section'] as const) {
      const v = given[key];
      if (v === undefined) continue;
      if (typeof v !== 'string' || v.trim() === '')
        throw bad(`${f}.expect.${key}`, 'is not a non-empty string', 'give text or remove it');
      expect[key] = v;
    }
    if (Object.keys(expect).length === 0)
      throw bad(`${f}.expect`, 'names nothing', 'give a phrase, a URL or a section');
    if (c.k !== undefined && !(Number.isInteger(c.k) && c.k >= 1 && c.k <= 100))
      throw bad(`${f}.k`, `${String(c.k)} is not a depth`, 'use an integer from 1 to 100');
    let docId: string | undefined;
    if (expect.url !== undefined) {
      try {
        docId = documentId(source.id, expect.url, policy);
      } catch (err) {
        const detail = (err as Error).message.replace(/^\[ragfresh\] \[[^\]]+\] /, '');
        throw bad(`${f}.expect.url`, detail.replace(/\.$/, ''), 'fix the URL');
      }
      const key = canonicalKey(expect.url, policy);
      const listed = (source.urls ?? []).find((u) => {
        try {
          return typeof u === 'string' && canonicalKey(u, policy) === key;
        } catch {
          return false;
        }
      });
      if (typeof listed === 'string') expect.url = listed;
    }
    return {
      query: c.query,
      expect,
      ...(docId === undefined ? {} : { documentId: docId }),
      ...(c.k === undefined ? {} : { k: c.k }),
    };
  });
}

/**
 * The latest canary results of a source: those of the newest run that ran any (a run that
 * published nothing runs no canary, so it does not hide the previous results), the last one per
 * canary and phase (every batch of a source runs its canaries against the current view again).
 */
export function latestCanaries(runs: readonly RunSummary[]): {
  readonly runAt?: string;
  readonly results: readonly CanaryResult[];
} {
  for (const run of runs) {
    const all = run.canaries ?? [];
    if (all.length === 0) continue;
    const last = new Map<string, CanaryResult>();
    for (const r of all) {
      const key = `${r.phase}\u0000${r.query}`;
      last.delete(key);
      last.set(key, r);
    }
    return { runAt: run.startedAt, results: [...last.values()] };
  }
  return { results: [] };
}

/** One line per canary: its last outcome, phase, epoch and rank (or why it failed). */
export function renderCanaryLine(sourceId: string, r: CanaryResult): string {
  const verdict = r.ok ? `ok rank ${r.rank}` : 'FAILED';
  const detail = r.ok ? `version ${r.versionId ?? '-'}` : (r.reason ?? '');
  return `  ${sourceId}: canary ${verdict} (${r.phase}, epoch ${r.epoch}, ${r.at}) "${r.query}" ${detail}`.trimEnd();
}
