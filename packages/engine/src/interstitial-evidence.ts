import { sha256Hex } from '@ragfresh/core';
import { extractPage, markdownToPlainText } from '@ragfresh/extract';
import type { Fetcher, OkResult } from '@ragfresh/fetch';

/**
 * Host evidence for a status phrase (a "404" or "Too Many Requests" title the page alone does
 * not prove). A page about an error code reads like an error page; what tells them apart is
 * how the host behaves around it: a Retry-After or challenge header on the answer, the same
 * body at several of the host's URLs, the host's answer to a URL that cannot exist, or a
 * published version the page was before it turned into this.
 */

/** Several URLs of one host serving this very body in one run: a catch-all page, not a document. */
export const SAME_BODY_URLS = 2;
/** Share of words a page must share with the host's answer to a probe to be that answer. */
export const PROBE_SIMILARITY = 0.8;
/** A page that kept less than this share of its published version's text turned into something else. */
export const TURNED_INTO_SHARE = 0.5;

/** What a status phrase is checked against. */
export interface SuspectPage {
  readonly url: string;
  readonly documentId: string;
  /** The code of the phrase (`soft_404`, `rate_limited`, `error_page`, `bot_challenge`). */
  readonly code: string;
  /** Extracted Markdown of the page. */
  readonly text: string;
  readonly contentHash: string;
  readonly result: OkResult;
  /** The published version's length, when the page had one. */
  readonly publishedChars?: number;
}

interface ProbeAnswer {
  readonly url: string;
  /** `ok` (with its words), or the fetch outcome (`gone`, `rate-limited`, `server-error`, …). */
  readonly outcome: string;
  readonly status: number;
  readonly words?: ReadonlySet<string>;
}

const wordsOf = (markdown: string): Set<string> =>
  new Set(
    markdownToPlainText(markdown)
      .toLowerCase()
      .match(/[\p{L}\p{N}_]+/gu) ?? [],
  );

function pathWords(url: string): Set<string> {
  const path = new URL(url).pathname;
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // A malformed escape: the words as they are.
  }
  return new Set(decoded.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []);
}

const without = (words: ReadonlySet<string>, drop: ReadonlySet<string>): Set<string> =>
  new Set([...words].filter((w) => !drop.has(w)));

function plainMarkdown(html: string, url: string): string {
  try {
    return extractPage(html, { url }).markdown;
  } catch {
    return ''; // unreadable: nothing to compare
  }
}

function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return shared / (a.size + b.size - shared);
}

/** A URL of the page's folder on its host that cannot exist (stable, so runs agree). */
export function probeUrlFor(url: string): string {
  const u = new URL(url);
  const folder = u.pathname.slice(0, u.pathname.lastIndexOf('/') + 1) || '/';
  const token = sha256Hex(`${u.origin}${folder}`).slice(0, 12);
  return `${u.origin}${folder}ragfresh-probe-${token}`;
}

/**
 * One run's host evidence: bodies seen per host and one probe per folder, each asked at most
 * once (the answer is shared by every page of that folder). Lives on the source's run.
 */
export class HostEvidence {
  readonly #bodies = new Map<string, Set<string>>();
  readonly #probes = new Map<string, Promise<ProbeAnswer>>();

  /** Evidence for the page's status phrase, as one line, or undefined when none was found. */
  async find(
    fetcher: Pick<Fetcher, 'fetch'>,
    sourceId: string,
    page: SuspectPage,
  ): Promise<string | undefined> {
    const urls = this.#remember(page);
    return (
      this.#fromHeaders(page) ??
      this.#fromPublished(page) ??
      (urls >= SAME_BODY_URLS
        ? `the host served this same body for ${urls} URLs in this run`
        : undefined) ??
      (await this.#fromProbe(fetcher, sourceId, page))
    );
  }

  /** Counts the page's body for its host; returns how many URLs served it in this run. */
  #remember(page: SuspectPage): number {
    const key = `${new URL(page.url).host} ${page.contentHash}`;
    const seen = this.#bodies.get(key) ?? new Set<string>();
    this.#bodies.set(key, seen.add(page.documentId));
    return seen.size;
  }

  #fromHeaders(page: SuspectPage): string | undefined {
    const h = page.result.headers;
    if (h['cf-mitigated'] === 'challenge') return 'the answer carries cf-mitigated: challenge';
    if (h['retry-after'] !== undefined)
      return `the answer carries Retry-After: ${h['retry-after']}`;
    return undefined;
  }

  #fromPublished(page: SuspectPage): string | undefined {
    const before = page.publishedChars;
    if (before === undefined || before === 0) return undefined;
    return page.text.length < before * TURNED_INTO_SHARE
      ? `the page had a published version of ${before} chars and now has ${page.text.length}`
      : undefined;
  }

  async #fromProbe(
    fetcher: Pick<Fetcher, 'fetch'>,
    sourceId: string,
    page: SuspectPage,
  ): Promise<string | undefined> {
    const url = probeUrlFor(page.url);
    let answer = this.#probes.get(url);
    if (answer === undefined) {
      answer = probe(fetcher, sourceId, url);
      this.#probes.set(url, answer);
    }
    const a = await answer;
    if (a.outcome === 'rate-limited' && page.code === 'rate_limited')
      return `the host answers ${a.url} (a URL that cannot exist) with HTTP 429 too`;
    if (a.outcome === 'server-error' && page.code === 'error_page')
      return `the host answers ${a.url} (a URL that cannot exist) with HTTP ${a.status} too`;
    if (a.words === undefined) return undefined;
    // Both cut by the plain extractor (the page's own text may have lost learned chrome), and
    // the words of both paths left out: a catch-all page echoes the path it was asked for.
    const echoed = new Set([...pathWords(page.url), ...pathWords(a.url)]);
    const own = wordsOf(plainMarkdown(page.result.text, page.result.finalUrl));
    const share = jaccard(without(a.words, echoed), without(own, echoed));
    return share >= PROBE_SIMILARITY
      ? `the host answers ${a.url} (a URL that cannot exist) with this page (${Math.round(share * 100)}% of the words shared)`
      : undefined;
  }
}

async function probe(
  fetcher: Pick<Fetcher, 'fetch'>,
  sourceId: string,
  url: string,
): Promise<ProbeAnswer> {
  try {
    const r = await fetcher.fetch(url, { sourceId });
    if (r.outcome !== 'ok') return { url, outcome: r.outcome, status: r.status };
    return {
      url,
      outcome: r.outcome,
      status: r.status,
      words: wordsOf(plainMarkdown(r.text, r.finalUrl)),
    };
  } catch {
    return { url, outcome: 'network-error', status: 0 };
  }
}
