/**
 * The content identity of a mapped record: JSON with object keys in sorted order, so that equal content is equal
 * text whatever order its keys arrived in, and the content hash a sync compares before anything else. Free of
 * database and Temporal imports: the sync's page-reading threads load it.
 *
 * Impure on purpose (domain/README.md): node:crypto for the hash. `canonicalJson` is also what an idempotency key's
 * request hash is taken over (db/operations.ts), so its output for a JSON body must never change.
 */
import { hash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth (by UTF-16 code unit, integer-like keys included), so equal content
 * always compares equal. Everything else is JSON.stringify's: arrays keep their order, an `undefined` property is
 * left out, an `undefined` array element is `null`, and `undefined` itself is `null` (so a missing field compares
 * equal to a null one). For a JSON body its output is fixed: an idempotency key's stored request hash is taken over it.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  // Most values already have their keys in order: then the native serializer writes the same text, far faster.
  if (inOrder(value)) return JSON.stringify(value);
  // Otherwise a copy with its keys in order, unless integer-like keys (which every object lists first) spoil it.
  const copy = sortedCopy(value);
  return inOrder(copy) ? JSON.stringify(copy) : sortedJson(value);
}

/**
 * Whether a JSON value nests objects and arrays more than `max` levels deep (the value itself is the first level).
 * Walked with a stack of its own, so any depth is safe to ask about, unlike canonicalJson and JSON.stringify, which
 * recurse and run out of stack on a body nested some thousands deep.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [v, depth] = top;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

function sortedCopy(value: object): object {
  if (Array.isArray(value)) return value.map((v: unknown) => (v !== null && typeof v === 'object' ? sortedCopy(v) : v));
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[k];
    const c = v !== null && typeof v === 'object' ? sortedCopy(v) : v;
    // A `__proto__` key (JSON.parse makes it an own key) must stay a key: assigning it would set the prototype.
    if (k === '__proto__') Object.defineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
    else out[k] = c;
  }
  return out;
}

/** Whether JSON.stringify writes `value` exactly as sortedJson would: plain objects whose keys are in sorted order. */
function inOrder(value: object): boolean {
  if (Array.isArray(value)) {
    for (const v of value) if (v !== null && typeof v === 'object' && !inOrder(v)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  let prev: string | undefined;
  for (const k in value) {
    if (prev !== undefined && !(prev < k)) return false;
    const v = (value as Record<string, unknown>)[k];
    if (v !== null && typeof v === 'object' && !inOrder(v)) return false;
    prev = k;
  }
  return true;
}

function sortedJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + sortedJson(value[i]);
    return out + ']';
  }
  const o = value as Record<string, unknown>;
  let out = '{';
  let first = true;
  for (const k of Object.keys(o).sort()) {
    const v = o[k];
    if (v === undefined) continue;
    out += (first ? '' : ',') + JSON.stringify(k) + ':' + sortedJson(v);
    first = false;
  }
  return out + '}';
}

/**
 * `value` itself when its keys are in sorted order at every depth, otherwise a copy that has them in order
 * (integer-like keys still come first, as in every object: the copy's JSON is still the same for the same content).
 */
export function inKeyOrder<T>(value: T): T {
  if (value === null || typeof value !== 'object' || inOrder(value)) return value;
  return sortedCopy(value) as T;
}

/**
 * A mapped record with its content hash, and its JSON: the record itself is parsed back from the JSON only when
 * its content changed (a page read on another thread crosses over as text).
 */
export interface HashedRecord<T = unknown> {
  x_id: string;
  hash: string;
  json: string;
  /** The record, where it is at hand already (otherwise JSON.parse(json)). */
  record?: T;
}

/**
 * sha256 of a mapped record's JSON, with its `custom_data` in key order. The mapping builds every record with its
 * keys in a fixed order and its `custom_data` keys sorted, so equal content is equal text. The hash only spares the
 * comparison of unchanged records: a record whose hash differs is compared field by field (db/apply.ts
 * applyRecords), so another hash of the same content costs a rehash, never an event.
 */
export function hashRecord<T extends { x_id: string; custom_data: unknown }>(input: T, keep = true): HashedRecord<T> {
  const custom = inKeyOrder(input.custom_data);
  const json = JSON.stringify(custom === input.custom_data ? input : { ...input, custom_data: custom });
  return { x_id: input.x_id, hash: hash('sha256', json, 'hex'), json, record: keep ? input : undefined };
}

export function recordOf<T>(r: HashedRecord<T>): T {
  return r.record ?? (JSON.parse(r.json) as T);
}
