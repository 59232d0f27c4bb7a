// Qdrant filters: validated as serde would refuse them, matched per point, and checked against
// strict mode's payload-index requirements.
import { HttpError } from '../server.js';
import {
  body,
  type Collection,
  denyFields,
  fields,
  format,
  idKey,
  isObject,
  type Json,
  type JsonObject,
  type Point,
  type PointId,
  parsePointId,
  validation,
  wrongInput,
} from './wire.js';
export function compareIds(a: PointId, b: PointId): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function conditionList(v: Json | undefined): Json[] {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}

/** Values at a dotted payload path; arrays on the way are flattened like Qdrant does. */
export function valuesAt(payload: Json, key: string): Json[] {
  let current: Json[] = [payload];
  for (const part of key.split('.')) {
    const next: Json[] = [];
    for (const c of current) {
      const items = Array.isArray(c) ? c : [c];
      for (const item of items) {
        if (isObject(item) && part in item) next.push(item[part] as Json);
      }
    }
    current = next;
  }
  return current.flatMap((v) => (Array.isArray(v) ? v : [v]));
}

export function validateFilter(v: unknown): void {
  if (v === null || v === undefined) return;
  const f = denyFields(v, ['must', 'should', 'must_not', 'min_should'], 'Filter');
  for (const k of ['must', 'should', 'must_not'] as const) {
    for (const c of conditionList(f[k])) validateCondition(c);
  }
  if (f.min_should !== undefined && f.min_should !== null) {
    const m = fields(f.min_should, ['conditions', 'min_count'], 'MinShould');
    for (const c of conditionList(m.conditions)) validateCondition(c);
    if (typeof m.min_count !== 'number') throw format('missing field `min_count`');
  }
}

export const FIELD_CONDITIONS = [
  'match',
  'range',
  'geo_bounding_box',
  'geo_radius',
  'geo_polygon',
  'values_count',
  'is_empty',
  'is_null',
];

export function validateCondition(c: unknown): void {
  if (!isObject(c)) throw format('data did not match any variant of untagged enum Condition');
  if ('key' in c) {
    const fc = fields(
      c,
      [
        'key',
        'match',
        'range',
        'geo_bounding_box',
        'geo_radius',
        'geo_polygon',
        'values_count',
        'is_empty',
        'is_null',
      ],
      'FieldCondition',
    );
    if (typeof fc.key !== 'string') throw format('invalid type for `key`, expected a string');
    const present = FIELD_CONDITIONS.filter((k) => fc[k] !== null && fc[k] !== undefined);
    if (present.length === 0) throw validation('At least one field condition must be specified');
    if (fc.match !== undefined && fc.match !== null) validateMatch(fc.match);
    if (fc.range !== undefined && fc.range !== null) {
      const r = fields(fc.range, ['lt', 'gt', 'gte', 'lte'], 'Range');
      for (const [k, x] of Object.entries(r)) {
        if (x !== null && typeof x !== 'number')
          throw format(`invalid type for range \`${k}\`, expected a number`);
      }
    }
    if (fc.geo_bounding_box || fc.geo_radius || fc.geo_polygon || fc.values_count) {
      throw wrongInput(
        'geo and values_count conditions are not supported by the ragfresh emulator',
      );
    }
    return;
  }
  if ('is_empty' in c || 'is_null' in c) {
    const k = 'is_empty' in c ? 'is_empty' : 'is_null';
    const inner = fields(c, [k], 'IsEmptyCondition')[k];
    if (typeof fields(inner, ['key'], 'PayloadField').key !== 'string')
      throw format('missing field `key`');
    return;
  }
  if ('has_id' in c) {
    const ids = fields(c, ['has_id'], 'HasIdCondition').has_id;
    if (!Array.isArray(ids)) throw format('invalid type for `has_id`, expected a sequence');
    ids.forEach(parsePointId);
    return;
  }
  if ('must' in c || 'should' in c || 'must_not' in c || 'min_should' in c) {
    validateFilter(c);
    return;
  }
  if ('nested' in c || 'has_vector' in c || 'slice' in c) {
    throw wrongInput(
      'nested, has_vector and slice conditions are not supported by the ragfresh emulator',
    );
  }
  throw format('data did not match any variant of untagged enum Condition');
}

export function validateMatch(m: unknown): void {
  if (!isObject(m)) throw format('data did not match any variant of untagged enum Match');
  const keys = Object.keys(m);
  if (keys.length !== 1) throw format('data did not match any variant of untagged enum Match');
  const [k] = keys as [string];
  const v = m[k];
  if (k === 'value') {
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
      throw format('data did not match any variant of untagged enum ValueVariants');
    }
    if (typeof v === 'number' && !Number.isInteger(v)) {
      throw format('data did not match any variant of untagged enum ValueVariants');
    }
  } else if (k === 'any' || k === 'except') {
    if (
      !Array.isArray(v) ||
      !(v.every((x) => typeof x === 'string') || v.every((x) => Number.isInteger(x)))
    ) {
      throw format('data did not match any variant of untagged enum AnyVariants');
    }
  } else if (['text', 'text_any', 'phrase', 'prefix'].includes(k)) {
    if (typeof v !== 'string') throw format(`invalid type for \`${k}\`, expected a string`);
  } else {
    throw format('data did not match any variant of untagged enum Match');
  }
}

export function matchFilter(p: Point, f: Json | undefined): boolean {
  if (f === undefined || f === null) return true;
  const filter = f as JsonObject;
  const must = conditionList(filter.must);
  const should = conditionList(filter.should);
  const mustNot = conditionList(filter.must_not);
  if (!must.every((c) => matchCondition(p, c))) return false;
  if (mustNot.some((c) => matchCondition(p, c))) return false;
  if (should.length > 0 && !should.some((c) => matchCondition(p, c))) return false;
  if (isObject(filter.min_should)) {
    const conds = conditionList(filter.min_should.conditions);
    const n = conds.filter((c) => matchCondition(p, c)).length;
    if (n < Number(filter.min_should.min_count)) return false;
  }
  return true;
}

export function matchCondition(p: Point, c: Json): boolean {
  const cond = c as JsonObject;
  if ('key' in cond) {
    const values = valuesAt(p.payload, cond.key as string);
    if (cond.is_empty === true && values.some((v) => v !== null)) return false;
    if (cond.is_empty === false && !values.some((v) => v !== null)) return false;
    if (cond.is_null === true && !values.some((v) => v === null)) return false;
    if (isObject(cond.match)) {
      const m = cond.match;
      if ('value' in m && !values.some((v) => v === m.value)) return false;
      if ('any' in m && !values.some((v) => (m.any as Json[]).includes(v))) return false;
      if ('except' in m && values.some((v) => (m.except as Json[]).includes(v))) return false;
      if ('text' in m && !values.some((v) => typeof v === 'string' && v.includes(m.text as string)))
        return false;
      if (
        'prefix' in m &&
        !values.some((v) => typeof v === 'string' && v.startsWith(m.prefix as string))
      )
        return false;
    }
    if (isObject(cond.range)) {
      const r = cond.range;
      const ok = values.some(
        (v) =>
          typeof v === 'number' &&
          (r.lt == null || v < (r.lt as number)) &&
          (r.gt == null || v > (r.gt as number)) &&
          (r.lte == null || v <= (r.lte as number)) &&
          (r.gte == null || v >= (r.gte as number)),
      );
      if (!ok) return false;
    }
    return true;
  }
  if ('is_empty' in cond) {
    const values = valuesAt(p.payload, (cond.is_empty as JsonObject).key as string);
    return !values.some((v) => v !== null);
  }
  if ('is_null' in cond) {
    return valuesAt(p.payload, (cond.is_null as JsonObject).key as string).some((v) => v === null);
  }
  if ('has_id' in cond) {
    const key = idKey(p.id);
    return (cond.has_id as Json[]).some((id) => idKey(parsePointId(id)) === key);
  }
  return matchFilter(p, cond);
}

export const INDEX_FOR_VALUE = (v: Json): string[] =>
  typeof v === 'string' ? ['keyword', 'uuid'] : typeof v === 'boolean' ? ['bool'] : ['integer'];

/**
 * The first filter key without a payload index able to serve its condition, with the index
 * types that would (Qdrant's `one_unindexed_key`, lib/collection/src/operations/verification/mod.rs).
 */
export function oneUnindexedKey(
  c: Collection,
  f: Json | undefined,
): readonly [string, readonly string[]] | undefined {
  if (!isObject(f)) return undefined;
  const conds = [
    ...conditionList(f.must),
    ...conditionList(f.should),
    ...conditionList(f.must_not),
    ...(isObject(f.min_should) ? conditionList(f.min_should.conditions) : []),
  ];
  for (const cond of conds) {
    if (!isObject(cond)) continue;
    if ('must' in cond || 'should' in cond || 'must_not' in cond || 'min_should' in cond) {
      const inner = oneUnindexedKey(c, cond);
      if (inner) return inner;
      continue;
    }
    if (typeof cond.key !== 'string') continue;
    let types: string[] = [];
    if (isObject(cond.match)) {
      const m = cond.match;
      const v =
        'value' in m
          ? m.value
          : Array.isArray(m.any)
            ? m.any[0]
            : Array.isArray(m.except)
              ? m.except[0]
              : undefined;
      types =
        'text' in m || 'phrase' in m
          ? ['text']
          : v === undefined
            ? ['keyword']
            : INDEX_FOR_VALUE(v);
    } else if (isObject(cond.range)) types = ['integer', 'float', 'datetime'];
    else continue;
    const schema = c.indexes.get(cond.key);
    const type = isObject(schema) ? schema.type : schema;
    if (!types.includes(type as string)) return [cond.key, types];
  }
  return undefined;
}

/** Strict mode: 400 on a filter key without a usable payload index. */
export function checkStrict(
  c: Collection,
  filter: Json | undefined,
  use: 'retrieve' | 'update',
): void {
  const strict = c.strict;
  if (strict?.enabled !== true) return;
  const allowed =
    use === 'update' ? strict.unindexed_filtering_update : strict.unindexed_filtering_retrieve;
  if (allowed !== false) return;
  const missing = oneUnindexedKey(c, filter);
  if (missing === undefined) return;
  throw new HttpError(
    400,
    body(
      `Bad request: Index required but not found for "${missing[0]}" of one of the following types: [${[...missing[1]].sort().join(', ')}]. Help: Create an index for this key or use a different filter.`,
    ),
  );
}
