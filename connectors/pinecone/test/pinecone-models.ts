// Validates recorded Pinecone exchanges against the request/response models generated inside the
// installed, Apache-2.0 `@pinecone-database/pinecone` (Pinecone's API repository carries no
// licence, so its OpenAPI files are not vendored). A body conforms when the model's `FromJSON`
// → `ToJSON` round trip gives it back unchanged (no unknown or misnamed field, nested models
// included) and the model's `instanceOf…` finds every required field.
import * as control from '@pinecone-database/pinecone/dist/pinecone-generated-ts-fetch/db_control/index.js';
import * as data from '@pinecone-database/pinecone/dist/pinecone-generated-ts-fetch/db_data/index.js';
import type { Exchange } from '../../../emulators/test/spec/recording-proxy.js';

type Models = Record<string, unknown>;

interface Route {
  readonly request?: string;
  readonly response?: string;
  readonly plane: 'control' | 'data';
}

const ROUTES: ReadonlyArray<readonly [string, RegExp, Route]> = [
  [
    'POST',
    /^\/vectors\/upsert$/,
    { plane: 'data', request: 'UpsertRequest', response: 'UpsertResponse' },
  ],
  [
    'POST',
    /^\/vectors\/update$/,
    { plane: 'data', request: 'UpdateRequest', response: 'UpdateResponse' },
  ],
  ['POST', /^\/vectors\/delete$/, { plane: 'data', request: 'DeleteRequest' }],
  ['POST', /^\/query$/, { plane: 'data', request: 'QueryRequest', response: 'QueryResponse' }],
  ['GET', /^\/vectors\/fetch$/, { plane: 'data', response: 'FetchResponse' }],
  ['GET', /^\/vectors\/list$/, { plane: 'data', response: 'ListResponse' }],
  [
    'POST',
    /^\/describe_index_stats$/,
    { plane: 'data', request: 'DescribeIndexStatsRequest', response: 'IndexDescription' },
  ],
  [
    'POST',
    /^\/indexes$/,
    { plane: 'control', request: 'CreateIndexRequest', response: 'IndexModel' },
  ],
  ['GET', /^\/indexes$/, { plane: 'control', response: 'IndexList' }],
  ['GET', /^\/indexes\/[^/]+$/, { plane: 'control', response: 'IndexModel' }],
];

const camel = (k: string) => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Paths where `got` (the wire body) differs from `want` (what the model writes back of it). A
 * field the model reads but never writes (a read-only response field) is known: `typed`, the
 * model's value, holds it.
 */
function differences(want: unknown, got: unknown, typed: unknown, at: string, out: string[]): void {
  if (Array.isArray(got)) {
    if (!Array.isArray(want)) {
      out.push(`${at}: the model does not read an array here`);
      return;
    }
    got.forEach((x, i) => {
      differences(want[i], x, Array.isArray(typed) ? typed[i] : undefined, `${at}[${i}]`, out);
    });
    return;
  }
  if (typeof got === 'object' && got !== null) {
    if (typeof want !== 'object' || want === null) {
      out.push(`${at}: the model does not read an object here`);
      return;
    }
    const t = (typeof typed === 'object' && typed !== null ? typed : {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(got)) {
      if (k in want) {
        differences(
          (want as Record<string, unknown>)[k],
          v,
          t[k] ?? t[camel(k)],
          `${at}.${k}`,
          out,
        );
      } else if ((t[k] ?? t[camel(k)]) === undefined) {
        out.push(`${at}.${k}: unknown field (the model drops it)`);
      }
    }
    return;
  }
  if (want !== got) out.push(`${at}: ${JSON.stringify(got)} reads back as ${JSON.stringify(want)}`);
}

function check(models: Models, name: string, body: unknown, what: string): string[] {
  const fromJson = models[`${name}FromJSON`] as ((j: unknown) => unknown) | undefined;
  const toJson = models[`${name}ToJSON`] as ((v: unknown) => unknown) | undefined;
  const instanceOf = models[`instanceOf${name}`] as ((v: unknown) => boolean) | undefined;
  if (!fromJson || !toJson || !instanceOf) return [`${what}: no model ${name} in the client`];
  if (typeof body !== 'object' || body === null) return [`${what}: body is not a JSON object`];
  const out: string[] = [];
  let typed: unknown;
  try {
    typed = fromJson(body);
  } catch (err) {
    return [`${what}: ${name}FromJSON failed: ${String(err)}`];
  }
  // instanceOf tests `key in value`: on the model's value with its undefined keys dropped.
  if (!instanceOf(JSON.parse(JSON.stringify(typed))))
    out.push(`${what}: a required field of ${name} is missing`);
  const back = JSON.parse(JSON.stringify(toJson(typed) ?? null));
  const diffs: string[] = [];
  differences(back, body, typed, name, diffs);
  for (const d of diffs) out.push(`${what}: ${d}`);
  return out;
}

/** Every way a request or its (successful) answer departs from the client's models. */
export function pineconeViolations(x: Exchange): string[] {
  const route = ROUTES.find(([m, re]) => m === x.method && re.test(x.path))?.[2];
  const where = `${x.method} ${x.path}`;
  if (route === undefined) return [`${where}: not an operation the client's models describe`];
  const models = (route.plane === 'data' ? data : control) as unknown as Models;
  const out: string[] = [];
  if (route.request !== undefined && x.requestBody !== undefined)
    out.push(...check(models, route.request, x.requestBody, `${where} request`));
  if (route.response !== undefined && x.status >= 200 && x.status < 300)
    out.push(...check(models, route.response, x.responseBody, `${where} response ${x.status}`));
  return out;
}
