import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import { RagfreshError } from './errors.js';
import { sha256Hex, stableStringify } from './hash.js';
import type { StateStore } from './state/types.js';

/**
 * The vector space a set of chunk vectors lives in. Two vectors are comparable only when they
 * come from one space: the same embeddings class, model and vector-shaping options, the same
 * dimensions, the same user `version`, and the same answer to a fixed probe text (so two models
 * behind one class, or a provider that changed a model under its name, still differ).
 */
export interface EmbeddingSpace {
  /** `es_` + 12 hex of the hash of every other field: what chunks (`rf_space`) and the state record. */
  readonly id: string;
  /** The embeddings class name (`HashingEmbeddings`, `OpenAIEmbeddings`, ...). */
  readonly className: string;
  /** The model name the embeddings expose (`model` or `modelName`), if any. */
  readonly model?: string;
  /** Scalar options that shape the vectors (see `spaceOptionsOf`). */
  readonly options: Readonly<Record<string, string | number | boolean>>;
  readonly dimensions: number;
  /** The user's own version of the space (config `embeddingsVersion`): bump it to force a migration. */
  readonly version?: string;
  /** 16 hex of the hash of the probe text's vector, rounded to `PROBE_DECIMALS`. */
  readonly probe: string;
}

/** The fixed text whose vector fingerprints a space. Never change it: every space id would change. */
export const SPACE_PROBE_TEXT =
  'ragfresh embedding space probe: the quick brown fox jumps over the lazy dog 0123456789';

/**
 * Decimals the probe vector is rounded to before hashing: remote models are not bit-exact from
 * call to call (batching, hardware), but agree far above the third decimal.
 */
export const PROBE_DECIMALS = 3;

/**
 * Option names that shape vectors when an embeddings object exposes them as scalars. Names
 * that only change how vectors are fetched (batch size, concurrency, retries, timeouts, keys)
 * are never read.
 */
const VECTOR_OPTIONS = [
  'dimensions',
  'encodingFormat',
  'stripNewLines',
  'normalize',
  'normalizeEmbeddings',
  'task',
  'taskType',
  'inputType',
  'truncate',
  'seed',
] as const;

/**
 * What an embeddings class may implement to name its space itself (ragfresh's
 * `HashingEmbeddings` does): the model and the options that shape its vectors.
 */
export interface SpaceDescribable {
  spaceIdentity(): {
    /** Default: the constructor's name. */
    readonly className?: string;
    readonly model?: string;
    readonly options: Readonly<Record<string, string | number | boolean>>;
  };
}

function isDescribable(v: unknown): v is SpaceDescribable {
  return typeof (v as Partial<SpaceDescribable>).spaceIdentity === 'function';
}

/** The model and vector-shaping scalar options an embeddings object exposes. */
export function spaceOptionsOf(embeddings: EmbeddingsInterface): {
  className: string;
  model?: string;
  options: Record<string, string | number | boolean>;
} {
  const constructorName = embeddings.constructor?.name || 'Embeddings';
  if (isDescribable(embeddings)) {
    const own = embeddings.spaceIdentity();
    return {
      className: own.className ?? constructorName,
      ...(own.model === undefined ? {} : { model: own.model }),
      options: { ...own.options },
    };
  }
  const e = embeddings as unknown as Record<string, unknown>;
  const model = [e.model, e.modelName].find((m): m is string => typeof m === 'string' && m !== '');
  const options: Record<string, string | number | boolean> = {};
  for (const key of VECTOR_OPTIONS) {
    const v = e[key];
    if (
      typeof v === 'string' ||
      typeof v === 'boolean' ||
      (typeof v === 'number' && Number.isFinite(v))
    )
      options[key] = v;
  }
  return { className: constructorName, ...(model === undefined ? {} : { model }), options };
}

/**
 * Describes the space of `embeddings`: one `embedQuery` of the probe text (its length is the
 * dimensions, its rounded hash the fingerprint).
 */
export async function describeEmbeddingSpace(
  embeddings: EmbeddingsInterface,
  options: { readonly version?: string } = {},
): Promise<EmbeddingSpace> {
  const vector = await embeddings.embedQuery(SPACE_PROBE_TEXT);
  if (!Array.isArray(vector) || vector.length === 0)
    throw new RagfreshError(
      'INVALID_ARGUMENT',
      'the embeddings returned no vector for the space probe; check the embeddings configuration.',
      { scope: 'embeddings' },
    );
  const scale = 10 ** PROBE_DECIMALS;
  // `+ 0` folds -0 into 0, so a component rounding to zero hashes the same either side.
  const rounded = vector.map((x) => Math.round(x * scale) / scale + 0);
  const { className, model, options: shaping } = spaceOptionsOf(embeddings);
  const body = {
    className,
    ...(model === undefined ? {} : { model }),
    options: shaping,
    dimensions: vector.length,
    ...(options.version === undefined ? {} : { version: options.version }),
    probe: sha256Hex(stableStringify(rounded)).slice(0, 16),
  };
  return Object.freeze({ id: `es_${sha256Hex(stableStringify(body)).slice(0, 12)}`, ...body });
}

/** One readable name of a space for messages: `HashingEmbeddings(dimensions=256, seed=1) 256d es_…`. */
export function spaceLabel(space: EmbeddingSpace): string {
  const opts = Object.entries(space.options)
    .filter(([k]) => k !== 'dimensions')
    .map(([k, v]) => `${k}=${String(v)}`);
  const inner = [...(space.model === undefined ? [] : [space.model]), ...opts].join(', ');
  const version = space.version === undefined ? '' : ` version ${space.version}`;
  return `${space.className}${inner === '' ? '' : `(${inner})`} ${space.dimensions}d${version} ${space.id}`;
}

/** The stored version id of a document version re-embedded into `space` by a migration. */
export function spaceVersionId(versionId: string, space: EmbeddingSpace): string {
  return `${contentVersionOf(versionId)}~${space.id}`;
}

/**
 * The stored version id of a current version republished in place (`reextract --republish`):
 * the same content under ids no stored version of the document has had (`~<space>~r<n>`, `n`
 * one more than the current's), so the republished chunks are staged beside the current ones
 * and replace them in one epoch move, as a new version would.
 */
export function republishedVersionId(versionId: string, space: EmbeddingSpace): string {
  const n = /~r(\d+)$/.exec(versionId);
  return `${contentVersionOf(versionId)}~${space.id}~r${n === null ? 1 : Number(n[1]) + 1}`;
}

/** The content version of a stored version id (a migration's `~<space>` suffix removed). */
export function contentVersionOf(versionId: string): string {
  const at = versionId.indexOf('~');
  return at < 0 ? versionId : versionId.slice(0, at);
}

/**
 * Whether two stored version ids hold the same content (the same text, cut and pipeline),
 * whatever space each was embedded in: "unchanged" for every refresh, import and repair.
 */
export function sameContentVersion(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && contentVersionOf(a) === contentVersionOf(b);
}

/**
 * The space record in the state store: the space the index is in (`active`), and while a
 * migration runs, the space it moves to. `namespace` names the store namespace (table,
 * collection) of the active space when a migration to other dimensions moved it out of the
 * configured one.
 */
export interface SpaceRecord {
  readonly active: EmbeddingSpace;
  readonly namespace?: string;
  readonly migration?: SpaceMigration;
  /** The namespace a migration to other dimensions left behind, deleted after the grace. */
  readonly retiring?: {
    readonly namespace?: string;
    /** Dimensions of the space left there (to open it for deletion). */
    readonly dimensions: number;
    readonly at: string;
  };
}

export interface SpaceMigration {
  readonly to: EmbeddingSpace;
  /** Where the new space's chunks are staged: the active namespace (same dimensions) or a new one. */
  readonly namespace?: string;
  readonly startedAt: string;
}

const SPACE_KIND = 'embedding-space';
const SPACE_KEY = 'index';

/** The space record, or undefined for an index that never recorded one. */
export async function readSpaceRecord(state: StateStore): Promise<SpaceRecord | undefined> {
  if (state.getLearned === undefined) return undefined;
  const raw = await state.getLearned(SPACE_KIND, SPACE_KEY);
  if (raw === undefined || raw === null) return undefined;
  const r = raw as Partial<SpaceRecord>;
  if (typeof r.active?.id !== 'string')
    throw new RagfreshError(
      'STATE_CORRUPT',
      'the state store holds an unreadable embedding-space record; restore the state or run `ragfresh recover`.',
      { scope: 'state' },
    );
  return r as SpaceRecord;
}

/** Writes the space record (the space migration and `checkEmbeddingSpace` are its only writers). */
export async function writeSpaceRecord(state: StateStore, record: SpaceRecord): Promise<void> {
  if (state.putLearned === undefined)
    throw new RagfreshError(
      'NOT_SUPPORTED',
      `the ${state.kind} state store cannot keep the embedding space (no putLearned); use the SQLite, Redis or Postgres state store.`,
      { scope: 'state' },
    );
  await state.putLearned(SPACE_KIND, SPACE_KEY, record);
}

/**
 * Records the end of a space migration once its epoch move happened (the publisher's roll
 * forward calls it, so a process killed after the move still ends in the new space): the
 * migration's space becomes the active one, in the migration's namespace; a namespace left
 * behind is marked for retirement. Idempotent.
 */
export async function finishSpaceMigration(
  state: StateStore,
  spaceId: string,
  at: string,
): Promise<void> {
  const record = await readSpaceRecord(state);
  const migration = record?.migration;
  if (record === undefined || migration === undefined || migration.to.id !== spaceId) return;
  const moved = migration.namespace !== record.namespace;
  await writeSpaceRecord(state, {
    active: migration.to,
    ...(migration.namespace === undefined ? {} : { namespace: migration.namespace }),
    ...(moved
      ? {
          retiring: {
            ...(record.namespace === undefined ? {} : { namespace: record.namespace }),
            dimensions: record.active.dimensions,
            at,
          },
        }
      : record.retiring === undefined
        ? {}
        : { retiring: record.retiring }),
  });
}

/** The migration command every refusal names. */
export const MIGRATE_COMMAND = 'ragfresh migrate embeddings';

/** The one-line refusal when the configured space is not the index's. */
export function spaceMismatch(configured: EmbeddingSpace, active: EmbeddingSpace): RagfreshError {
  return new RagfreshError(
    'SPACE_MISMATCH',
    `the configured embeddings are space ${spaceLabel(configured)} but the index is in space ${spaceLabel(active)}: vectors of two spaces cannot be compared, so nothing was read or written. Run \`${MIGRATE_COMMAND}\` to re-embed the index into the configured space, or configure the embeddings the index was built with.`,
    { scope: 'embeddings', details: { configured: configured.id, active: active.id } },
  );
}

/**
 * What every role does before it reads or writes the index: the index's space must be the
 * configured one. An index that never recorded a space (new, or written before spaces were
 * recorded) adopts the configured one when `adopt` (a writing role); a reader leaves it
 * unrecorded. Returns the record in force.
 */
export async function checkEmbeddingSpace(
  state: StateStore,
  configured: EmbeddingSpace,
  options: { readonly adopt: boolean },
): Promise<SpaceRecord | undefined> {
  const record = await readSpaceRecord(state);
  if (record === undefined) {
    if (!options.adopt || state.putLearned === undefined) return undefined;
    const adopted: SpaceRecord = { active: configured };
    await writeSpaceRecord(state, adopted);
    return adopted;
  }
  if (record.active.id !== configured.id) throw spaceMismatch(configured, record.active);
  return record;
}
