/**
 * Turns zod failures into the 400-versus-422 split of docs/api.md/docs/decisions.md. In the query, path and headers a value
 * that cannot be parsed (not a number, not a datetime, not a boolean, a repeated parameter) is 400; one that parses
 * but breaks a rule (out of range, unknown sort field) is 422 with `errors[].pointer` = the parameter name.
 * A JSON body that parsed is well-formed, so everything wrong in it is 422 with a pointer to the field.
 */
import type { z } from 'zod';
import { ApiError, type FieldError } from '../problem';
import { NUL_DETAIL } from '../../domain/scalars';

/** Marks a custom zod issue as a rule violation (422) rather than a parse failure (400). */
export { RULE } from '../../domain/filters';

const RULE_CODES = new Set(['too_small', 'too_big', 'not_multiple_of', 'unrecognized_keys']);

type Target = 'query' | 'param' | 'header' | 'json' | 'form' | 'cookie';

function isRule(issue: z.core.$ZodIssue): boolean {
  return RULE_CODES.has(issue.code) || (issue.code === 'custom' && (issue.params as { rule?: boolean } | undefined)?.rule === true);
}

/** A top-level field by its name, a nested one as a JSON pointer (`/source/base_url`). */
function pointerOf(target: Target, path: PropertyKey[]): string {
  if (path.length === 0) return target === 'json' ? '/' : target;
  if (path.length === 1) return String(path[0]);
  return `/${path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

const WHERE: Record<Target, string> = {
  query: 'query parameter',
  param: 'path parameter',
  header: 'header',
  json: 'field',
  form: 'field',
  cookie: 'cookie',
};

/**
 * The 400 or 422 of what zod refused in `target`; a body's issues one per field (fieldIssues, an unknown field's
 * message from `unknown`).
 */
export function validationError(error: z.ZodError, target: Target, unknown?: UnknownField): ApiError {
  const issues = onePerPlace(target === 'json' || target === 'form' ? error.issues.flatMap((i) => fieldIssues(i, unknown)) : error.issues);
  if (target === 'json' || target === 'form') {
    const errors: FieldError[] = issues.map((i) => ({ pointer: pointerOf(target, i.path), detail: i.message }));
    return new ApiError('validation_error', describe(errors, 'field'), { errors });
  }
  const unparseable = issues.filter((i) => !isRule(i));
  if (unparseable.length > 0) {
    const parts = unparseable.map((i) => `${WHERE[target]} \`${pointerOf(target, i.path)}\`: ${i.message}`);
    return new ApiError('bad_request', `Malformed request: ${parts.join('; ')}.`);
  }
  const errors: FieldError[] = issues.map((i) => ({ pointer: pointerOf(target, i.path), detail: i.message }));
  return new ApiError('validation_error', describe(errors, WHERE[target]), { errors });
}

/**
 * One issue per parameter or field (a value can break two checks at once: `offset=9007199254740992` is both too big
 * and not a safe integer), the one that decides between 400 and 422 kept: a value that does not parse is a 400.
 */
function onePerPlace(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  const byPlace = new Map<string, z.core.$ZodIssue>();
  for (const i of issues) {
    const place = JSON.stringify(i.path.map(String));
    const kept = byPlace.get(place);
    if (!kept || (isRule(kept) && !isRule(i))) byPlace.set(place, i);
  }
  return [...byPlace.values()];
}

/** The message of an unknown body field `key` of the object at `path`. */
export type UnknownField = (key: PropertyKey, path: PropertyKey[]) => string;

/**
 * A body's issues one per field: each unknown field under its own pointer (`nonsense`, not the enclosing object, with
 * `unknown(key, path)` as its message), and a value that fits none of a union's shapes (an address that is neither an
 * address nor null, a replay's `{status}` or `{since, until}`) judged against the shape it comes closest to, field by
 * field, instead of one "Invalid input" at the union. Closest: a shape whose type the value has (an object for an
 * object) before one it has not, then the fewest problems, the first on a tie. A value of none of the shapes' types
 * is one issue naming them (`expected object or null`).
 */
function fieldIssues(i: z.core.$ZodIssue, unknown: UnknownField = () => 'Unknown field.'): z.core.$ZodIssue[] {
  if (i.code === 'unrecognized_keys') return i.keys.map((key) => ({ ...i, keys: [key], path: [...i.path, key], message: unknown(key, i.path) }));
  if (i.code !== 'invalid_union' || i.errors.length === 0) return [i];
  const wrongType = (b: readonly z.core.$ZodIssue[]) => b.length === 1 && b[0]!.code === 'invalid_type' && b[0]!.path.length === 0;
  const fitting = i.errors.filter((b) => !wrongType(b));
  if (fitting.length === 0) {
    const expected = [...new Set(i.errors.map((b) => (b[0] as { expected?: string }).expected).filter(Boolean))];
    return [{ ...i, message: expected.length > 0 ? `Invalid input: expected ${expected.join(' or ')}` : i.message }];
  }
  const branches = fitting.map((b) => b.flatMap((issue) => fieldIssues(issue, unknown)));
  const closest = branches.reduce((best, b) => (b.length < best.length ? b : best));
  return closest.map((b) => ({ ...b, path: [...i.path, ...b.path] }));
}

function describe(errors: FieldError[], noun: string): string {
  if (errors.length === 1) return `Invalid ${noun} \`${errors[0]!.pointer}\`: ${errors[0]!.detail}`;
  return `${errors.length} invalid values: ${errors.map((e) => `\`${e.pointer}\``).join(', ')}.`;
}

/**
 * Why a string cannot be stored, or undefined: Postgres text cannot hold NUL, and neither text nor JSON can hold an
 * unpaired UTF-16 surrogate (`"\ud800"` is valid JSON, but no Unicode text: a json column refuses it and a text
 * column would store U+FFFD instead).
 */
function unstorable(s: string): string | undefined {
  if (s.includes('\u0000')) return NUL_DETAIL;
  if (LONE_SURROGATE.test(s)) return LONE_SURROGATE_DETAIL;
  return undefined;
}

/** A surrogate code point: with the `u` flag a well-formed pair reads as one other code point, so only a lone one matches. */
const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATE_DETAIL = 'must be valid Unicode text: it holds an unpaired UTF-16 surrogate (\\ud800 to \\udfff)';

/** Path and reason of the first string (a value or a member's name) that cannot be stored, at any depth of a validated value. */
function unstorableAt(value: unknown, path: PropertyKey[] = []): { path: PropertyKey[]; detail: string } | undefined {
  if (typeof value === 'string') {
    const detail = unstorable(value);
    return detail ? { path, detail } : undefined;
  }
  if (value === null || typeof value !== 'object' || value instanceof Date) return undefined;
  const list = Array.isArray(value);
  for (const [k, v] of Object.entries(value)) {
    const at = [...path, list ? Number(k) : k];
    const detail = list ? undefined : unstorable(k);
    if (detail) return { path: at, detail };
    const found = unstorableAt(v, at);
    if (found) return found;
  }
  return undefined;
}

/**
 * A value Postgres cannot hold (a NUL, an unpaired surrogate) would fail deep in a query as a 500, or be stored
 * altered. It is refused here, like any other value that cannot be used: 400 in the query or headers, 422 with its
 * pointer in a JSON body. Path ids are left to their routes, which check their format and answer 404 for a malformed one.
 */
export function rejectUnstorable(data: unknown, target: Target): void {
  if (target === 'param') return;
  const found = unstorableAt(data);
  if (!found) return;
  const { path, detail } = found;
  // A query list arrives split into an array; the caller knows it by the parameter's name.
  const pointer = target === 'json' || target === 'form' ? pointerOf(target, path) : pointerOf(target, path.slice(0, 1));
  if (target === 'json' || target === 'form') {
    throw new ApiError('validation_error', `Invalid field \`${pointer}\`: ${detail}`, { errors: [{ pointer, detail }] });
  }
  throw new ApiError('bad_request', `Malformed request: ${WHERE[target]} \`${pointer}\` ${detail}.`);
}

/** The defaultHook of the app's OpenAPIHono: every route validates through here. */
export function validationHook(result: { success: boolean; error?: z.ZodError; data?: unknown; target: string }): void {
  if (!result.success && result.error) throw validationError(result.error, result.target as Target);
  if (result.success) rejectUnstorable(result.data, result.target as Target);
}
