// Validates recorded HTTP exchanges against Qdrant's own OpenAPI document (vendored from
// qdrant/qdrant v1.19.0, docs/redoc/master/openapi.json; Apache-2.0, see fixtures/README.md).
import { readFileSync } from 'node:fs';
import { Validator } from '@cfworker/json-schema';
import type { Exchange } from './recording-proxy.js';

type Node = { [key: string]: unknown };

const SPEC_FILE = new URL('../fixtures/qdrant-openapi-v1.19.0.json', import.meta.url);

/** OpenAPI 3.0 `nullable` → JSON Schema: `type: [t, 'null']`, or `anyOf` with `{ type: 'null' }`. */
function toJsonSchema(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(toJsonSchema);
  if (typeof v !== 'object' || v === null) return v;
  const node: Node = {};
  for (const [k, x] of Object.entries(v)) if (k !== 'nullable') node[k] = toJsonSchema(x);
  if ((v as Node).nullable !== true) return node;
  if (Object.keys(node).filter((k) => k !== 'description').length === 0) return { type: 'null' };
  if (typeof node.type === 'string') return { ...node, type: [node.type, 'null'] };
  return { anyOf: [node, { type: 'null' }] };
}

interface Operation {
  readonly template: string;
  readonly regex: RegExp;
  readonly literals: number;
  readonly method: string;
  readonly query: Map<string, Node>;
  readonly body: Node | undefined;
  readonly responses: Node;
}

export class QdrantOpenApi {
  readonly version: string;
  readonly #components: unknown;
  readonly #operations: Operation[] = [];
  readonly #validators = new Map<string, Validator>();

  constructor() {
    const spec = JSON.parse(readFileSync(SPEC_FILE, 'utf8')) as {
      info: { version: string };
      components: unknown;
      paths: Record<string, Record<string, Node>>;
    };
    this.version = spec.info.version;
    this.#components = toJsonSchema(spec.components);
    for (const [template, methods] of Object.entries(spec.paths)) {
      const parts = template.split('/').filter(Boolean);
      const regex = new RegExp(
        `^/${parts.map((p) => (p.startsWith('{') ? '[^/]+' : p.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/')}$`,
      );
      for (const [method, op] of Object.entries(methods)) {
        const query = new Map<string, Node>();
        for (const p of (op.parameters ?? []) as Node[])
          if (p.in === 'query') query.set(String(p.name), toJsonSchema(p.schema) as Node);
        const content = (op.requestBody as Node | undefined)?.content as Node | undefined;
        this.#operations.push({
          template,
          regex,
          literals: parts.filter((p) => !p.startsWith('{')).length,
          method: method.toUpperCase(),
          query,
          body: (content?.['application/json'] as Node | undefined)?.schema as Node | undefined,
          responses: op.responses as Node,
        });
      }
    }
  }

  #validate(schema: Node, value: unknown): string[] {
    const key = JSON.stringify(schema);
    let v = this.#validators.get(key);
    if (v === undefined) {
      v = new Validator(
        { ...(toJsonSchema(schema) as Node), components: this.#components },
        '2019-09',
        false,
      );
      this.#validators.set(key, v);
    }
    const r = v.validate(value);
    return r.valid
      ? []
      : r.errors
          .filter(
            (e) => e.keyword !== 'anyOf' && e.keyword !== 'properties' && e.keyword !== '$ref',
          )
          .slice(0, 3)
          .map((e) => `${e.instanceLocation}: ${e.error}`);
  }

  /** The operation an exchange calls, most specific template first. */
  operation(method: string, path: string): Operation | undefined {
    return this.#operations
      .filter((o) => o.method === method && o.regex.test(path))
      .sort((a, b) => b.literals - a.literals)[0];
  }

  /** Every way the request or its answer departs from the OpenAPI document (empty = conforms). */
  violations(x: Exchange): string[] {
    const where = `${x.method} ${x.path}`;
    const op = this.operation(x.method, x.path);
    if (op === undefined) return [`${where}: no such operation in Qdrant's OpenAPI`];
    const out: string[] = [];
    for (const [name, value] of x.query) {
      const schema = op.query.get(name);
      if (schema === undefined) {
        out.push(`${where}: query parameter ${name} is not in ${op.method} ${op.template}`);
        continue;
      }
      const typed =
        value === 'true'
          ? true
          : value === 'false'
            ? false
            : Number.isNaN(Number(value))
              ? value
              : Number(value);
      for (const e of this.#validate(schema, typed)) out.push(`${where}?${name}: ${e}`);
    }
    if (op.body !== undefined && x.requestBody !== undefined)
      for (const e of this.#validate(op.body, x.requestBody)) out.push(`${where} request ${e}`);
    const responses = op.responses;
    const answer = (responses[String(x.status)] ??
      responses[`${String(x.status)[0]}XX`] ??
      responses.default) as Node | undefined;
    const schema = ((answer?.content as Node | undefined)?.['application/json'] as Node | undefined)
      ?.schema as Node | undefined;
    if (answer === undefined) out.push(`${where}: status ${x.status} is not documented`);
    else if (schema !== undefined)
      for (const e of this.#validate(schema, x.responseBody))
        out.push(`${where} response ${x.status} ${e}`);
    return out;
  }
}
