import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  ACCESS_GROUP,
  CANONICAL_POLICIES,
  type CanonicalPolicy,
  type Connector,
  RagfreshError,
  suggestKey,
} from '@ragfresh/core';
import type { SectionSplitter, SplitterPreparation } from '@ragfresh/extract';
// Subpaths, not the package roots: checking a config loads no HTML parser and no HTTP client.
import { NOT_DOCUMENT_CODES } from '@ragfresh/extract/codes';
import { allowEntryProblem } from '@ragfresh/fetch/ssrf';
import { z } from 'zod';
import type { ConfigConnectorFactory } from './connectors.js';
import { isConnector, STORE_NAME } from './connectors.js';

// The config's shape, types and ranges, in one schema: the TypeScript type (`RagfreshConfig`)
// and the JSON Schema for editors (`configJsonSchema`) are derived from it. Unknown keys are
// refused with a suggestion. What needs more than a shape (URLs under an identity policy,
// durations in ms, unique source ids, canary URLs) is checked by `resolveConfig` after it.

/** Messages written here read "<problem>; <fix>" — zod's defaults never contain "; ". */
const DURATION =
  'is not a duration; use milliseconds (a number) or a string like "90s", "6h", "30d"';
const DURATION_TEXT = /^\s*(\d+(\.\d+)?|(\d+(\.\d+)?(ms|s|m|h|d|w))+)\s*$/i;

const duration = () =>
  z.union(
    [
      z.number().nonnegative({ error: DURATION }),
      z.string().regex(DURATION_TEXT, { error: DURATION }),
    ],
    { error: DURATION },
  );
const count = (min: number, max?: number) => {
  const n = z.number().int().min(min);
  return max === undefined ? n : n.max(max);
};
const share = () => z.number().min(0).max(1);
const urlList = () => z.array(z.string()).readonly();

const identitySchema = z.discriminatedUnion(
  'mode',
  [
    z.strictObject({ mode: z.literal('strict') }),
    z.strictObject({
      mode: z.literal('normalize'),
      contentParams: z.array(z.string()).readonly().optional(),
      unknownParams: z.enum(['drop', 'keep']).optional(),
      trackingParams: z.array(z.string()).readonly().optional(),
    }),
  ],
  { error: 'is not an identity policy; use { mode: "normalize" } or { mode: "strict" }' },
);

const contractSchema = z.strictObject({
  minChars: count(0).optional(),
  requiredPhrases: z.array(z.string()).readonly().optional(),
  maxShrink: share().optional(),
  maxChunkCountChange: z.number().nonnegative().optional(),
});

const canarySchema = z.strictObject({
  query: z.string().min(1),
  expect: z.union(
    [
      z.string().min(1),
      z.strictObject({
        phrase: z.string().optional(),
        url: z.string().optional(),
        section: z.string().optional(),
      }),
    ],
    { error: 'is not an expectation; write a phrase, a URL, or { phrase?, url?, section? }' },
  ),
  k: count(1, 100).optional(),
});

/** Grounds on which a source's pages may be fetched and indexed (the register's `permission.basis`). */
export const PERMISSION_BASES = [
  'public-web',
  'licensed',
  'internal',
  'contract',
  'consent',
  'public-domain',
  'other',
] as const;
export type PermissionBasis = (typeof PERMISSION_BASES)[number];

const permissionSchema = z.strictObject({
  basis: z.enum(PERMISSION_BASES, {
    error: `is not a permission basis; use one of ${PERMISSION_BASES.join(', ')}`,
  }),
  /** Where the permission is written down (a licence id, a contract, the page's terms). */
  note: z.string().optional(),
});

const sourceSchema = z.strictObject({
  /** Stable id chosen by you; part of every documentId. Letters, digits, `_`, `.`, `-`. */
  id: z.string({
    error: (i) =>
      i.input === undefined
        ? 'is missing; give every source a stable id such as "docs"'
        : undefined,
  }),
  urls: urlList().optional(),
  sitemaps: urlList().optional(),
  llmsTxt: urlList().optional(),
  authority: z.string().optional(),
  /** Whose word a page's canonical link is: `same-site` (default), `trust` or `ignore`. */
  canonical: z.enum(CANONICAL_POLICIES as [CanonicalPolicy, ...CanonicalPolicy[]]).optional(),
  every: duration().optional(),
  expectedChangeEvery: duration().optional(),
  freshnessObjective: duration().optional(),
  contract: contractSchema.optional(),
  acquisition: z.enum(['raw', 'rendered', 'auto']).optional(),
  markdownTwin: z.boolean().optional(),
  proxy: z.strictObject({ url: z.string().min(1), region: z.string().optional() }).optional(),
  identity: identitySchema.optional(),
  canaries: z.array(canarySchema).readonly().optional(),
  /** Verdict codes that never block this source's pages (still labelled in the run's events). */
  // The source register (docs/governance.md): who answers for the source, on what grounds it
  // is indexed, what for, how long its snapshots are kept, and who may read it.
  /** Person or team answerable for the source (`ragfresh sources` flags a source without one). */
  owner: z
    .string()
    .min(1, { error: 'is empty; name the person or team answerable for the source' })
    .optional(),
  permission: permissionSchema.optional(),
  /** Licence of the content (an SPDX id, or the terms' name). */
  licence: z.string().optional(),
  /** What the index of this source is for (a short sentence). */
  intendedUse: z.string().optional(),
  /** How long raw snapshots and retired versions are kept (`ragfresh gc`); default: forever. */
  retention: duration().optional(),
  /**
   * Groups that may read the source's chunks (`rf_access`); absent or empty: public. Readers pass
   * their groups (`query --access`); the store's filter enforces it.
   */
  access: z
    .array(
      z.string().regex(ACCESS_GROUP, {
        error:
          'is not a group name; use letters, digits and . _ : @ - (at most 64, starting with a letter or digit)',
      }),
    )
    .readonly()
    .optional(),
  classify: z
    .strictObject({
      ignore: z
        .array(
          z.enum(NOT_DOCUMENT_CODES, {
            error: `is not a classification code; use one of ${NOT_DOCUMENT_CODES.join(', ')}`,
          }),
        )
        .readonly()
        .optional(),
    })
    .optional(),
});

/** `{ store: 'x', ...options }`: the package `@ragfresh/connector-x` (or `ragfresh-connector-x`). */
const connectorOptionsSchema = z.looseObject({
  store: z.string().regex(STORE_NAME, {
    error:
      'is not a store name; use the package suffix, e.g. "lancedb" for @ragfresh/connector-lancedb',
  }),
});

const connectorSchema = z.union([
  connectorOptionsSchema,
  z.custom<Connector>(isConnector),
  z.custom<ConfigConnectorFactory>((v) => typeof v === 'function'),
]);

const embeddingsSchema = z.union([
  z.strictObject({
    kind: z.literal('hashing'),
    dimensions: count(1, 65_536).optional(),
    /** Another seed is another vector space of the same dimensions (docs/embeddings.md). */
    seed: count(0, 4_294_967_295).optional(),
  }),
  z.custom<EmbeddingsInterface>(
    (v) =>
      typeof v === 'object' &&
      v !== null &&
      typeof (v as EmbeddingsInterface).embedDocuments === 'function',
  ),
]);

const hasSplitText = (v: unknown): v is SectionSplitter =>
  typeof v === 'object' && v !== null && typeof (v as SectionSplitter).splitText === 'function';

const splitterSchema = z.custom<SectionSplitter | SplitterPreparation>(
  (v) =>
    hasSplitText(v) ||
    (typeof v === 'object' &&
      v !== null &&
      hasSplitText((v as SplitterPreparation).splitter) &&
      typeof (v as SplitterPreparation).name === 'string' &&
      (v as SplitterPreparation).name.trim() !== ''),
  {
    error:
      'is not a splitter; give a LangChain TextSplitter (an object with splitText), or { splitter, name } with a non-empty name',
  },
);

export const configSchema = z.strictObject({
  /** JSON configs may name the schema for editors. */
  $schema: z.string().optional(),
  userAgent: z.string({
    error: (i) =>
      i.input === undefined
        ? 'is missing; set userAgent to something like "mybot/1.0 (+https://example.org/bot)"'
        : undefined,
  }),
  sources: z
    .array(sourceSchema, {
      error: (i) =>
        i.input === undefined
          ? 'is missing or empty; list at least one source with an id and urls or sitemaps'
          : undefined,
    })
    .min(1, {
      error: 'is missing or empty; list at least one source with an id and urls or sitemaps',
    })
    .readonly(),
  dataDir: z.string().min(1).optional(),
  identity: identitySchema.optional(),
  connector: connectorSchema.optional(),
  embeddings: embeddingsSchema.optional(),
  /**
   * Your own version of the embedding space, part of its identity: change it when the model
   * behind the same name and options changed, and `ragfresh migrate embeddings` re-embeds.
   */
  embeddingsVersion: z.string().min(1).max(64).optional(),
  state: z.string().min(1).optional(),
  gates: z
    .strictObject({
      maxRetireShare: z.number().gt(0).max(1).optional(),
      /** A refresh answering fewer of its due pages than this share exits 8 (docs/cli.md). */
      minCoverage: z.number().min(0).max(1).optional(),
    })
    .optional(),
  deletion: z
    .strictObject({
      goneChecks: count(1).optional(),
      minGoneAge: duration().optional(),
      autoApprove: z.boolean().optional(),
      redirectedGone: z.boolean().optional(),
    })
    .optional(),
  retireGrace: duration().optional(),
  /**
   * How long raw snapshots and retired versions are kept (as-of queries, `ragfresh gc`) when a
   * source names no `retention` of its own; absent: retired versions go after retireGrace and
   * gc prunes nothing (docs/governance.md).
   */
  retention: duration().optional(),
  staleReaders: z.enum(['label', 'exclude']).optional(),
  fetch: z
    .strictObject({
      minIntervalMs: z.number().nonnegative().optional(),
      perHostConcurrency: count(1, 64).optional(),
      globalConcurrency: count(1, 1024).optional(),
      allow: z
        .array(
          z
            .string()
            .trim()
            .min(1, {
              error:
                'is not an entry; use a host, host:port or CIDR string, e.g. "127.0.0.1:8080", "docs.internal", "10.1.2.0/24"',
            })
            // The fetcher's own check, so `status` refuses what `refresh` would.
            .superRefine((entry, ctx) => {
              const problem = entry === '' ? undefined : allowEntryProblem(entry);
              if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
            }),
        )
        .readonly()
        .optional(),
      allowPrivateNetworks: z.boolean().optional(),
      robots: z.boolean().optional(),
      timeoutMs: z.number().positive().optional(),
      circuitBreaker: z
        .strictObject({
          failureThreshold: count(1).optional(),
          cooldownMs: z.number().nonnegative().optional(),
        })
        .optional(),
    })
    .optional(),
  chunking: z
    .strictObject({
      maxTokens: count(16, 65_536).optional(),
      encoding: z.string().min(1).optional(),
      /** A LangChain TextSplitter (or `{ splitter, name }`) as the chunker; TS/JS configs only. */
      splitter: splitterSchema.optional(),
    })
    .optional(),
  /** Per-host boilerplate learning (docs/extract.md § 3): on by default, `false` turns it off. */
  boilerplate: z
    .union([
      z.literal(false),
      z.strictObject({
        minShare: z.number().gt(0).max(1).optional(),
        minPages: count(2).optional(),
        samplePages: count(2, 100_000).optional(),
        warmUpPages: count(0).optional(),
        titleAffixes: z.boolean().optional(),
      }),
    ])
    .optional(),
  metricsPort: count(0, 65_535).optional(),
  /** Scale-out (`ragfresh worker`, `watch --distributed`): where the BullMQ queues live. */
  queue: z
    .strictObject({
      redis: z
        .string({
          error: (i) =>
            i.input === undefined
              ? 'is missing; set it to a Redis URL such as "redis://127.0.0.1:6379"'
              : undefined,
        })
        .regex(/^rediss?:\/\/./, {
          error: 'is not a Redis URL; use "redis://host:6379[/db]" or "rediss://…"',
        }),
      // The same pattern as @ragfresh/queue's QUEUE_PREFIX_PATTERN (an optional peer, not
      // importable here); the queue package also checks a cluster's prefix has its hash tag.
      prefix: z
        .string()
        .regex(/^[A-Za-z0-9._-]*(\{[A-Za-z0-9._-]+\})?[A-Za-z0-9._-]*$/, {
          error:
            'is not a key prefix; use letters, digits, ".", "_" or "-" with at most one {hash tag} (default "ragfresh", "{ragfresh}" on a cluster)',
        })
        .min(1)
        .optional(),
      /** `redis` is one node of a Redis Cluster; the prefix then needs a `{hash tag}`. */
      cluster: z.boolean().optional(),
    })
    .optional(),
});

/** The config as written (`ragfresh.config.ts`, `.mjs`, `.json`). */
export type RagfreshConfig = z.input<typeof configSchema>;
export type SourceConfig = RagfreshConfig['sources'][number];
/** `{ store, ...options }`, a Connector instance, or a factory returning one. */
export type ConnectorSetting = NonNullable<RagfreshConfig['connector']>;
export type { ConnectorConfig } from './connectors.js';

// --- one line per problem -------------------------------------------------------------------

/** `sources[0].contract.maxShrink` from zod's path. */
export function fieldOf(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path)
    out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out === '' ? '(root)' : out;
}

/** The closest known key: small edit distance, a different case, or one being a prefix. */
export const suggest = suggestKey;

function schemaAt(path: readonly PropertyKey[]): z.ZodType | undefined {
  let s: z.ZodType | undefined = configSchema;
  for (const p of path) {
    s = unwrap(s);
    if (s instanceof z.ZodObject) s = s.shape[String(p)] as z.ZodType | undefined;
    else if (s instanceof z.ZodArray) s = s.element as z.ZodType;
    else return undefined;
  }
  return unwrap(s);
}

function unwrap(s: z.ZodType | undefined): z.ZodType | undefined {
  let cur = s;
  for (;;) {
    if (cur instanceof z.ZodOptional || cur instanceof z.ZodReadonly)
      cur = cur.unwrap() as z.ZodType;
    else if (cur instanceof z.ZodUnion)
      cur = (cur.options.find((o) => o instanceof z.ZodObject) ?? cur.options[0]) as z.ZodType;
    else return cur;
  }
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let v = raw;
  for (const p of path) v = (v as Record<PropertyKey, unknown> | undefined)?.[p];
  return v;
}

const show = (v: unknown): string =>
  typeof v === 'function' ? 'a function' : (JSON.stringify(v) ?? String(v));

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${show(v)}`;
}

const EXPECTED: Record<string, readonly [string, string]> = {
  boolean: ['a boolean', 'write true or false'],
  number: ['a number', 'write a number'],
  string: ['a string', 'quote it'],
  array: ['a list', 'write it as an array'],
  object: ['an object', 'write { … }'],
};

/** One config problem: the field it is about, and its line (`config <field>: <problem>; <fix>.`). */
interface ConfigProblem {
  readonly field: string;
  readonly line: string;
}

const problem = (field: string, text: string): ConfigProblem => ({
  field,
  line: `config ${field}: ${text}`,
});

function lines(
  issue: z.core.$ZodIssue,
  raw: unknown,
  base: readonly PropertyKey[],
): ConfigProblem[] {
  const path = [...base, ...issue.path];
  const field = fieldOf(path);
  const input = valueAt(raw, path);
  if (issue.code === 'unrecognized_keys') {
    const shape = schemaAt(path);
    const known = shape instanceof z.ZodObject ? Object.keys(shape.shape) : [];
    return issue.keys.map((key) => {
      const at = fieldOf([...path, key]);
      let hint = suggest(key, known);
      // `fetch.network.allowPrivateNetworks`: a known key nested one level too deep.
      const nested = valueAt(raw, [...path, key]);
      if (hint === undefined && typeof nested === 'object' && nested !== null)
        hint = Object.keys(nested).find((k) => known.includes(k));
      const where = fieldOf(hint === undefined ? path : [...path, hint]);
      return hint !== undefined
        ? problem(at, `is not a known key; did you mean ${where}?`)
        : problem(at, `is not a known key; remove it (known here: ${known.join(', ')}).`);
    });
  }
  if (issue.code === 'invalid_union' && !issue.message.includes('; ')) {
    // The first branch is the plain-data form (options object, hashing embeddings).
    const first = issue.errors[0] ?? [];
    if (first.length > 0) return first.flatMap((i) => lines(i, raw, path));
  }
  if (issue.message.includes('; ')) {
    const shown =
      input === undefined || issue.message.startsWith('is missing') ? '' : `${show(input)} `;
    return [problem(field, `${shown}${issue.message.replace(/\.$/, '')}.`)];
  }
  switch (issue.code) {
    case 'invalid_type': {
      if (input === undefined) return [problem(field, `is missing; set it.`)];
      const [want, fix] = EXPECTED[issue.expected] ?? [issue.expected, 'fix the value'];
      return [problem(field, `expected ${want}, got ${typeName(input)}; ${fix}.`)];
    }
    case 'too_small':
    case 'too_big': {
      const small = issue.code === 'too_small';
      const limit = small ? issue.minimum : issue.maximum;
      const inclusive = issue.inclusive !== false;
      if (issue.origin === 'array')
        return [
          problem(
            field,
            `has ${(input as unknown[]).length} entries; list ${small ? 'at least' : 'at most'} ${String(limit)}.`,
          ),
        ];
      if (issue.origin === 'string')
        return [
          problem(
            field,
            `${show(input)} is too ${small ? 'short' : 'long'}; use ${small ? 'at least' : 'at most'} ${String(limit)} characters.`,
          ),
        ];
      const op = small ? (inclusive ? '>=' : '>') : inclusive ? '<=' : '<';
      return [
        problem(field, `${show(input)} is out of range; use a number ${op} ${String(limit)}.`),
      ];
    }
    case 'invalid_value':
      return [
        problem(
          field,
          `${show(input)} is not allowed; use ${issue.values.map((v) => show(v)).join(' or ')}.`,
        ),
      ];
    case 'invalid_format':
      return [problem(field, `${show(input)} is malformed; fix the value.`)];
    default:
      return [
        problem(field, `${show(input)} is not valid here (${issue.message}); fix the value.`),
      ];
  }
}

/** Every problem of a config, one line each (`config <field>: <problem>; <fix>.`). */
export function configProblems(raw: unknown): string[] {
  return [...new Set(problemsOf(raw).map((p) => p.line))];
}

function problemsOf(raw: unknown): ConfigProblem[] {
  const r = configSchema.safeParse(raw);
  return r.success ? [] : r.error.issues.flatMap((issue) => lines(issue, raw, []));
}

/** Throws one INVALID_CONFIG error whose message has one line per problem. */
export function assertConfigShape(raw: unknown): asserts raw is RagfreshConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new RagfreshError(
      'INVALID_CONFIG',
      'config (root): the config is not an object; export default defineConfig({ ... }).',
      { scope: 'config', details: { field: '(root)' } },
    );
  const found = problemsOf(raw);
  if (found.length === 0) return;
  const problems = [...new Set(found.map((p) => p.line))];
  throw new RagfreshError('INVALID_CONFIG', problems.join('\nragfresh: '), {
    scope: 'config',
    details: { field: found[0]!.field, problems },
  });
}

/** The JSON Schema of a JSON config, for editors (`"$schema"`); instances have no JSON form. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      // `readonly` in the TypeScript type is not a JSON Schema "readOnly" (editors grey it out).
      delete ctx.jsonSchema.readOnly;
      const anyOf = ctx.jsonSchema.anyOf;
      if (Array.isArray(anyOf)) {
        const kept = anyOf.filter((s) => Object.keys(s as object).length > 0);
        if (kept.length === 1) {
          delete ctx.jsonSchema.anyOf;
          Object.assign(ctx.jsonSchema, kept[0]);
        } else ctx.jsonSchema.anyOf = kept;
      }
    },
  }) as Record<string, unknown>;
  return { ...schema, title: 'ragfresh config' };
}
