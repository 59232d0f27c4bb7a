// The control-plane calls the connector makes: describe an index, create a serverless one and
// wait until it is ready. Pinecone itself through the client (API 2026-07); Pinecone Local
// speaks API 2025-01, whose create body and index model the v9 client does not write or read:
// a control plane whose index model has neither `schema` nor `deployment` is taken for it, and
// from then on spoken to with that version's shapes.
import { createHash } from 'node:crypto';
import type { Pinecone } from '@pinecone-database/pinecone';

/** What ragfresh reads of an index model (either API version). */
export interface IndexInfo {
  readonly name: string;
  readonly host: string;
  readonly ready: boolean;
  readonly metric: 'cosine' | 'euclidean' | 'dotproduct';
  readonly cloud: string;
  readonly region: string;
  readonly deletionProtection: 'enabled' | 'disabled';
  readonly tags: Readonly<Record<string, string>>;
}

export type CreateSpec = Pick<
  IndexInfo,
  'name' | 'metric' | 'cloud' | 'region' | 'deletionProtection' | 'tags'
> & { readonly dimension: number };

/** Pinecone index names: lower-case alphanumerics or '-', 1-45 characters. */
export const MAX_INDEX_NAME = 45;
/** Tag key ragfresh puts on every index it creates; its value says why. */
export const OWNER_TAG = 'ragfresh';
/** Owner tag value of an index created for an embedding space of other dimensions. */
export const SPACE_INDEX_TAG_VALUE = 'space-index';
/** How long a created index may take to become ready (Pinecone documents no bound). */
export const INDEX_READY_TIMEOUT_MS = 300_000;

/**
 * The index of the embedding space `suffix` beside index `index`: `<index>-<suffix>` with `_`
 * as `-`, or, past 45 characters, its first 34 and a hash of both (deterministic, so every
 * role derives the same name).
 */
export function spaceIndexName(index: string, suffix: string): string {
  const full = `${index}-${suffix.replace(/_/g, '-')}`;
  if (full.length <= MAX_INDEX_NAME) return full;
  const hash = createHash('sha256').update(`${index}\0${suffix}`).digest('hex').slice(0, 10);
  return `${full.slice(0, MAX_INDEX_NAME - 11).replace(/-+$/, '')}-${hash}`;
}

const METRICS = new Set(['cosine', 'euclidean', 'dotproduct']);

function metricOf(v: unknown): IndexInfo['metric'] {
  return typeof v === 'string' && METRICS.has(v) ? (v as IndexInfo['metric']) : 'cosine';
}

function tagsOf(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof v === 'object' && v !== null)
    for (const [k, t] of Object.entries(v)) if (typeof t === 'string') out[k] = t;
  return out;
}

/** An HTTP refusal of the Local control plane, shaped like the client's errors for `call`. */
class LocalControlError extends Error {
  constructor(status: number, text: string) {
    super(`HTTP status ${status}: ${text}`);
    this.name = status === 404 ? 'PineconeNotFoundError' : 'LocalControlError';
  }
}

/** One request to Pinecone Local's control plane (API 2025-01); the parsed JSON answer. */
async function localRequest(
  url: string,
  apiKey: string,
  fetchApi: typeof fetch,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const res = await fetchApi(`${url}${path}`, {
    method,
    headers: {
      'Api-Key': apiKey,
      'X-Pinecone-Api-Version': '2025-01',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new LocalControlError(res.status, text);
  return text === '' ? {} : JSON.parse(text);
}

/**
 * Creates a serverless index on Pinecone Local with the API 2025-01 body it speaks
 * (`{ name, dimension, metric, spec }`; the v9 client sends the 2026-07 schema-only body, which
 * Pinecone Local refuses). An index of that name already there (409) is not an error.
 */
export async function createLocalIndex(
  url: string,
  apiKey: string,
  spec: Pick<CreateSpec, 'name' | 'dimension'> & Partial<CreateSpec>,
  fetchApi: typeof fetch = fetch,
): Promise<void> {
  try {
    await localRequest(url, apiKey, fetchApi, 'POST', '/indexes', {
      name: spec.name,
      dimension: spec.dimension,
      metric: spec.metric ?? 'cosine',
      spec: { serverless: { cloud: spec.cloud ?? 'aws', region: spec.region ?? 'us-east-1' } },
      ...(spec.deletionProtection === undefined
        ? {}
        : { deletion_protection: spec.deletionProtection }),
      ...(spec.tags === undefined || Object.keys(spec.tags).length === 0
        ? {}
        : { tags: spec.tags }),
    });
  } catch (err) {
    if (!String(err).includes('HTTP status 409')) throw err;
  }
}

export class ControlPlane {
  /** The control plane answered an API 2025-01 index model (Pinecone Local). */
  #legacy = false;

  constructor(
    readonly pinecone: Pinecone,
    /** `controllerHostUrl`; undefined for Pinecone's own (never 2025-01). */
    readonly url: string | undefined,
    readonly apiKey: string,
    readonly fetchApi: typeof fetch,
  ) {}

  #local(method: string, path: string): Promise<unknown> {
    return localRequest(this.url!, this.apiKey, this.fetchApi, method, path);
  }

  /** The index model; throws the client's PineconeNotFoundError (or its like) when absent. */
  async describe(name: string): Promise<IndexInfo> {
    if (!this.#legacy) {
      const m = await this.pinecone.describeIndex(name);
      if (m.schema !== undefined || m.deployment !== undefined || this.url === undefined) {
        const values = m.schema?.fields?._values as { metric?: unknown } | undefined;
        const deployment = m.deployment as { cloud?: string; region?: string } | undefined;
        return {
          name,
          host: m.host,
          ready: m.status?.ready === true,
          metric: metricOf(values?.metric),
          cloud: deployment?.cloud ?? 'aws',
          region: deployment?.region ?? 'us-east-1',
          deletionProtection: m.deletionProtection === 'enabled' ? 'enabled' : 'disabled',
          tags: tagsOf(m.tags),
        };
      }
      this.#legacy = true;
    }
    return this.#describeLegacy(name);
  }

  /** API 2025-01 IndexModel: dimension / metric / spec at the top level. */
  async #describeLegacy(name: string): Promise<IndexInfo> {
    const m = (await this.#local('GET', `/indexes/${encodeURIComponent(name)}`)) as {
      host?: string;
      metric?: string;
      spec?: { serverless?: { cloud?: string; region?: string } };
      status?: { ready?: boolean };
      deletion_protection?: string;
      tags?: unknown;
    };
    return {
      name,
      host: m.host ?? '',
      ready: m.status?.ready === true,
      metric: metricOf(m.metric),
      cloud: m.spec?.serverless?.cloud ?? 'aws',
      region: m.spec?.serverless?.region ?? 'us-east-1',
      deletionProtection: m.deletion_protection === 'enabled' ? 'enabled' : 'disabled',
      tags: tagsOf(m.tags),
    };
  }

  /** The name of the index served at `host` (listing the project's indexes), if any. */
  async nameOfHost(host: string): Promise<string | undefined> {
    const bare = (h: string) => h.replace(/^https?:\/\//, '').replace(/\/+$/, '');
    const list = !this.#legacy
      ? ((await this.pinecone.listIndexes()).indexes ?? [])
      : (((await this.#local('GET', '/indexes')) as { indexes?: { name: string; host: string }[] })
          .indexes ?? []);
    return list.find((ix) => bare(ix.host) === bare(host))?.name;
  }

  /** Creates a serverless dense index; an index of that name already there is not an error. */
  async create(spec: CreateSpec): Promise<void> {
    if (this.#legacy) return createLocalIndex(this.url!, this.apiKey, spec, this.fetchApi);
    await this.pinecone.createIndex({
      name: spec.name,
      dimension: spec.dimension,
      metric: spec.metric,
      spec: { serverless: { cloud: spec.cloud as 'aws', region: spec.region } },
      deletionProtection: spec.deletionProtection,
      ...(Object.keys(spec.tags).length === 0 ? {} : { tags: { ...spec.tags } }),
      // A create retried after a lost answer meets its own index: 409, not an error.
      suppressConflicts: true,
    });
  }

  /**
   * Describes `name` until it reports ready (a conflict-suppressed create does not wait);
   * undefined when it was not ready within `timeoutMs`.
   */
  async waitReady(
    name: string,
    timeoutMs = INDEX_READY_TIMEOUT_MS,
  ): Promise<IndexInfo | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (let delay = 100; ; delay = Math.min(delay * 2, 5_000)) {
      const info = await this.describe(name);
      if (info.ready) return info;
      if (Date.now() + delay > deadline) return undefined;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
