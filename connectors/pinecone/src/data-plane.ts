// The data-plane calls whose answers the high-level client hides: the LSN headers of
// Pinecone's freshness barrier and `matchedRecords` of an update by filter. They go through the
// API classes generated inside the installed client, so the wire shapes stay the client's own.
import {
  Configuration,
  type DeleteRequest,
  type QueryRequest,
  type QueryResponse,
  ResponseError,
  type UpdateRequest,
  type UpsertRequest,
  VectorOperationsApi,
  X_PINECONE_API_VERSION,
} from '@pinecone-database/pinecone/dist/pinecone-generated-ts-fetch/db_data/index.js';
import { RagfreshError } from '@ragfresh/core';

/** Header carrying the LSN Pinecone assigned to a write (upsert, update, delete). */
export const REQUEST_LSN_HEADER = 'x-pinecone-request-lsn';
/** Header carrying the highest LSN a query's answer reflects. */
export const MAX_INDEXED_LSN_HEADER = 'x-pinecone-max-indexed-lsn';

/** A refused data-plane request, with the status the fallback classification needs. */
export class DataPlaneError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`HTTP ${status}: ${detail}`);
    this.name = 'DataPlaneError';
  }
}

/**
 * Whether a refusal means "this index has no such operation" (the fallback applies): 404, 501,
 * or a 400 saying so. Any other refusal is an error of this request only and is thrown.
 */
export function isUnsupported(err: unknown): boolean {
  const cause = err instanceof RagfreshError ? err.cause : err;
  if (!(cause instanceof DataPlaneError)) return false;
  if (cause.status === 404 || cause.status === 501) return true;
  return (
    cause.status === 400 && /not (be )?supported|unsupported|not implemented/i.test(cause.detail)
  );
}

/** Per-call options: `signal` aborts the call and its retries (the epoch claim's deadline). */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

function lsnOf(headers: Headers, name: string): number | undefined {
  const raw = headers.get(name);
  if (raw === null || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

export class DataPlane {
  readonly #api: VectorOperationsApi;

  constructor(host: string, apiKey: string, fetchApi: typeof fetch) {
    this.#api = new VectorOperationsApi(
      new Configuration({
        basePath: host,
        apiKey,
        headers: { 'X-Pinecone-Api-Version': X_PINECONE_API_VERSION, 'User-Agent': 'ragfresh' },
        fetchApi,
      }),
    );
  }

  async #raw<T>(run: () => Promise<{ raw: Response; value(): Promise<T> }>): Promise<{
    value: T;
    headers: Headers;
  }> {
    try {
      const r = await run();
      return { value: await r.value(), headers: r.raw.headers };
    } catch (err) {
      if (err instanceof ResponseError) {
        const text = await err.response.text().catch(() => '');
        let detail = text;
        try {
          const body = JSON.parse(text) as { message?: unknown; error?: { message?: unknown } };
          detail = String(body.message ?? body.error?.message ?? text);
        } catch {}
        throw new DataPlaneError(err.response.status, detail);
      }
      throw err;
    }
  }

  /** Upserts; returns the write's LSN (undefined where the index sends none). */
  async upsert(request: UpsertRequest, options: CallOptions = {}): Promise<number | undefined> {
    const r = await this.#raw(() =>
      this.#api.upsertVectorsRaw(
        {
          xPineconeApiVersion: X_PINECONE_API_VERSION,
          upsertRequest: request,
        },
        options,
      ),
    );
    return lsnOf(r.headers, REQUEST_LSN_HEADER);
  }

  /** Updates by id or by filter; returns the LSN and, by filter, how many records matched. */
  async update(
    request: UpdateRequest,
    options: CallOptions = {},
  ): Promise<{ lsn: number | undefined; matchedRecords: number | undefined }> {
    const r = await this.#raw(() =>
      this.#api.updateVectorRaw(
        {
          xPineconeApiVersion: X_PINECONE_API_VERSION,
          updateRequest: request,
        },
        options,
      ),
    );
    return { lsn: lsnOf(r.headers, REQUEST_LSN_HEADER), matchedRecords: r.value.matchedRecords };
  }

  async delete(request: DeleteRequest, options: CallOptions = {}): Promise<number | undefined> {
    const r = await this.#raw(() =>
      this.#api.deleteVectorsRaw(
        {
          xPineconeApiVersion: X_PINECONE_API_VERSION,
          deleteRequest: request,
        },
        options,
      ),
    );
    return lsnOf(r.headers, REQUEST_LSN_HEADER);
  }

  /** Queries; returns the matches and the highest LSN the answer reflects. */
  async query(
    request: QueryRequest,
    options: CallOptions = {},
  ): Promise<{ value: QueryResponse; maxIndexedLsn: number | undefined }> {
    const r = await this.#raw(() =>
      this.#api.queryVectorsRaw(
        {
          xPineconeApiVersion: X_PINECONE_API_VERSION,
          queryRequest: request,
        },
        options,
      ),
    );
    return { value: r.value, maxIndexedLsn: lsnOf(r.headers, MAX_INDEXED_LSN_HEADER) };
  }
}
