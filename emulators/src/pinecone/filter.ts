// Pinecone metadata filters: validated the way the service refuses them, matched per record.
import {
  invalid,
  isObject,
  type Json,
  type JsonObject,
  type Metadata,
  type MetaValue,
} from './wire.js';

const SCALAR_OPS = ['$eq', '$ne'];
const NUMBER_OPS = ['$gt', '$gte', '$lt', '$lte'];
const LIST_OPS = ['$in', '$nin'];

function isScalar(v: unknown): v is string | number | boolean {
  return (
    typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))
  );
}

/** Validates a metadata filter the way the service does; throws 400 on anything malformed. */
export function validatePineconeFilter(f: unknown): void {
  if (!isObject(f)) throw invalid('Invalid filter: filter must be a JSON object');
  for (const [key, value] of Object.entries(f)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0)
        throw invalid(`Invalid filter: ${key} must be a non-empty array`);
      value.forEach(validatePineconeFilter);
      continue;
    }
    if (key.startsWith('$')) throw invalid(`Invalid filter: unknown operator ${key}`);
    if (value === null) throw invalid(`Invalid filter: null value for field '${key}'`);
    if (!isObject(value)) {
      if (!isScalar(value)) throw invalid(`Invalid filter: unsupported value for field '${key}'`);
      continue;
    }
    const ops = Object.entries(value);
    if (ops.length === 0) throw invalid(`Invalid filter: empty operator object for field '${key}'`);
    for (const [op, arg] of ops) {
      if (SCALAR_OPS.includes(op)) {
        if (!isScalar(arg))
          throw invalid(
            `Invalid filter: ${op} for field '${key}' needs a string, number or boolean`,
          );
      } else if (NUMBER_OPS.includes(op)) {
        if (typeof arg !== 'number' || !Number.isFinite(arg))
          throw invalid(`Invalid filter: ${op} for field '${key}' needs a number`);
      } else if (LIST_OPS.includes(op)) {
        if (!Array.isArray(arg))
          throw invalid(`Invalid filter: ${op} for field '${key}' needs an array`);
        if (arg.length === 0)
          throw invalid(`Invalid filter: ${op} for field '${key}' must have at least one value`);
        if (arg.length > 10_000)
          throw invalid(`Invalid filter: ${op} for field '${key}' has more than 10000 values`);
        if (!arg.every(isScalar))
          throw invalid(
            `Invalid filter: ${op} for field '${key}' needs strings, numbers or booleans`,
          );
      } else if (op === '$exists') {
        if (typeof arg !== 'boolean')
          throw invalid(`Invalid filter: $exists for field '${key}' needs a boolean`);
      } else {
        throw invalid(`Invalid filter: unknown operator ${op} for field '${key}'`);
      }
    }
  }
}

function eq(field: MetaValue | undefined, v: Json): boolean {
  if (field === undefined) return false;
  return Array.isArray(field) ? field.includes(v as string) : field === v;
}

export function matchPineconeFilter(meta: Metadata | undefined, f: JsonObject): boolean {
  const m = meta ?? {};
  for (const [key, value] of Object.entries(f)) {
    if (key === '$and') {
      if (!(value as JsonObject[]).every((x) => matchPineconeFilter(m, x))) return false;
      continue;
    }
    if (key === '$or') {
      if (!(value as JsonObject[]).some((x) => matchPineconeFilter(m, x))) return false;
      continue;
    }
    const field = m[key];
    const ops: JsonObject = isObject(value) ? value : { $eq: value };
    for (const [op, arg] of Object.entries(ops)) {
      const n = typeof field === 'number' ? field : undefined;
      const ok =
        op === '$eq'
          ? eq(field, arg)
          : op === '$ne'
            ? !eq(field, arg)
            : op === '$in'
              ? (arg as Json[]).some((x) => eq(field, x))
              : op === '$nin'
                ? !(arg as Json[]).some((x) => eq(field, x))
                : op === '$exists'
                  ? (field !== undefined) === arg
                  : n !== undefined &&
                    (op === '$gt'
                      ? n > (arg as number)
                      : op === '$gte'
                        ? n >= (arg as number)
                        : op === '$lt'
                          ? n < (arg as number)
                          : n <= (arg as number));
      if (!ok) return false;
    }
  }
  return true;
}
