// Point payloads and vectors: payload selectors, vector parsing and scoring, payload paths.
import {
  type Distance,
  denyFields,
  format,
  isObject,
  type Json,
  type JsonObject,
  type Point,
  wrongInput,
} from './wire.js';
export function selectPayload(
  p: Point,
  withPayload: Json | undefined,
  dflt: boolean,
): JsonObject | undefined {
  const w = withPayload ?? dflt;
  if (w === false || w === null) return undefined;
  if (w === true) return structuredClone(p.payload);
  if (Array.isArray(w)) return pick(p.payload, w as string[]);
  if (isObject(w) && Array.isArray(w.include)) return pick(p.payload, w.include as string[]);
  if (isObject(w) && Array.isArray(w.exclude)) {
    const out = structuredClone(p.payload);
    for (const k of w.exclude as string[]) delete out[k];
    return out;
  }
  return structuredClone(p.payload);
}

export function pick(payload: JsonObject, keys: readonly string[]): JsonObject {
  const out: JsonObject = {};
  for (const k of keys) {
    const [head, ...rest] = k.split('.');
    const v = payload[head!];
    if (v === undefined) continue;
    if (rest.length === 0 || !isObject(v)) out[head!] = structuredClone(v);
    else out[head!] = { ...((out[head!] as JsonObject) ?? {}), ...pick(v, [rest.join('.')]) };
  }
  return out;
}

export function validateWithPayload(v: unknown): void {
  if (v === undefined || v === null || typeof v === 'boolean') return;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return;
  if (isObject(v) && Array.isArray(v.include)) {
    denyFields(v, ['include'], 'PayloadSelectorInclude');
    return;
  }
  if (isObject(v) && Array.isArray(v.exclude)) {
    denyFields(v, ['exclude'], 'PayloadSelectorExclude');
    return;
  }
  throw format('data did not match any variant of untagged enum WithPayloadInterface');
}

export function validateWithVector(v: unknown): void {
  if (v === undefined || v === null || typeof v === 'boolean') return;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return;
  throw format('data did not match any variant of untagged enum WithVector');
}

export function toF32(v: readonly number[]): number[] {
  return v.map((x) => Math.fround(x));
}

export function normalise(v: readonly number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return n === 0 ? toF32(v) : toF32(v.map((x) => x / n));
}

export function score(distance: Distance, a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let l2 = 0;
  let l1 = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    l2 += (x - y) ** 2;
    l1 += Math.abs(x - y);
  }
  if (distance === 'Euclid') return Math.sqrt(l2);
  if (distance === 'Manhattan') return l1;
  return dot;
}

export function vectorOf(v: unknown, size: number, what = 'vector'): number[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    throw format(`invalid type for \`${what}\`, expected a sequence of numbers`);
  }
  if (v.length !== size)
    throw wrongInput(`Vector dimension error: expected dim: ${size}, got ${v.length}`);
  return v as number[];
}

export function setAtPath(
  target: JsonObject,
  path: string | null | undefined,
  value: JsonObject,
): void {
  let obj = target;
  if (path) {
    for (const part of path.split('.')) {
      const next = obj[part];
      if (!isObject(next)) obj[part] = {};
      obj = obj[part] as JsonObject;
    }
  }
  for (const [k, v] of Object.entries(value)) obj[k] = structuredClone(v);
}
