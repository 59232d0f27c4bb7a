import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Vendor export endpoints read as streams: a page of a dataset is handed to the export reader
 * byte by byte (`readExport`), so one vendor page never sits in memory whole, however large its
 * items. Requests that fail before their body starts (a network error, 429 or 5xx) are retried
 * with backoff; other statuses fail at once with the vendor's own error message.
 */

export interface StreamedPage {
  /** The response body, still unread. */
  readonly body: AsyncIterable<Uint8Array>;
  /** Apify's `X-Apify-Pagination-*` headers (absent on other vendors). */
  readonly offset?: number;
  readonly count?: number;
  readonly total?: number;
}

export interface VendorRequest {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** What the request is, for error lines: e.g. `Apify dataset ds1 items 0-249`. */
  readonly what: string;
  /** Attempts for retryable failures. Default 3. */
  readonly attempts?: number;
  readonly signal?: AbortSignal;
}

const retryable = (status: number) => status === 429 || status >= 500;

/** Why the vendor refused, in its own words where it says them (`{ error: { message } }`). */
async function refusal(res: Response): Promise<string> {
  const text = (await res.text().catch(() => '')).slice(0, 2000);
  try {
    const parsed = JSON.parse(text) as { error?: { type?: string; message?: string } };
    const e = parsed.error;
    if (e?.message !== undefined)
      return `${e.message}${e.type === undefined ? '' : ` (${e.type})`}`;
  } catch {
    // not JSON: the status line says enough
  }
  return res.statusText;
}

function header(res: Response, name: string): number | undefined {
  const raw = res.headers.get(name);
  if (raw === null) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** GETs a vendor endpoint and returns its body unread (a stream), retrying what is retryable. */
export async function getStreamed(request: VendorRequest): Promise<StreamedPage> {
  const attempts = Math.max(1, request.attempts ?? 3);
  let last = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    let res: Response;
    try {
      res = await fetch(request.url, {
        ...(request.headers === undefined ? {} : { headers: request.headers }),
        ...(request.signal === undefined ? {} : { signal: request.signal }),
      });
    } catch (err) {
      if (request.signal?.aborted === true) throw err;
      last = (err as { cause?: { code?: string } }).cause?.code ?? String(err);
      if (attempt < attempts) await sleep(250 * 2 ** (attempt - 1));
      continue;
    }
    if (res.ok && res.body !== null) {
      const offset = header(res, 'x-apify-pagination-offset');
      const count = header(res, 'x-apify-pagination-count');
      const total = header(res, 'x-apify-pagination-total');
      return {
        body: res.body as unknown as AsyncIterable<Uint8Array>,
        ...(offset === undefined ? {} : { offset }),
        ...(count === undefined ? {} : { count }),
        ...(total === undefined ? {} : { total }),
      };
    }
    last = `${res.status} ${await refusal(res)}`;
    if (!retryable(res.status)) break;
    if (attempt < attempts) await sleep(250 * 2 ** (attempt - 1));
  }
  throw new Error(`${request.what}: the vendor answered ${last}`);
}

/** Apify's dataset items endpoint (`GET /v2/datasets/:id/items`), one page as a stream. */
export function apifyItemsPage(options: {
  readonly baseUrl: string;
  readonly token?: string;
  readonly datasetId: string;
  readonly offset: number;
  readonly limit: number;
}): Promise<StreamedPage> {
  const url = new URL(
    `v2/datasets/${encodeURIComponent(options.datasetId)}/items`,
    `${options.baseUrl.replace(/\/+$/, '')}/`,
  );
  url.searchParams.set('format', 'json');
  url.searchParams.set('offset', String(options.offset));
  url.searchParams.set('limit', String(options.limit));
  return getStreamed({
    url: url.href,
    what: `Apify dataset ${options.datasetId} items from ${options.offset}`,
    ...(options.token === undefined
      ? {}
      : { headers: { authorization: `Bearer ${options.token}` } }),
  });
}
