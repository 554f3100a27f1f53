/**
 * A query string whose percent-encoding does not decode (`%FF`, a cut-off `%E2%82`, a lone `%`) is a malformed
 * request: 400 naming the parameter. Hono's parser keeps such text as it came (its tryDecode), so `name=%FF` would
 * otherwise filter on the literal `%FF`. The app's read routes (routes/resource.ts) refuse it with this middleware, and
 * the read fast path (api/fast-reads.ts) leaves such a request to them.
 */
import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../problem';

const DETAIL = 'is not valid percent-encoded UTF-8 (each `%` starts a `%XX` byte, and the bytes must be UTF-8 text)';

/** A raw name or value decoded as the query's parser decodes it (`+` is a space), or undefined when it does not decode. */
function decoded(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/**
 * What is wrong with the query of `url` (a path or an absolute URL), split as Hono's getQueryParams splits it (on
 * `&`, then the first `=`, up to any `#`): the first parameter whose name or value does not decode, named as sent
 * (decoded when the name itself decodes), or undefined when every one does.
 */
export function malformedQueryParameter(url: string): { name: string; part: 'name' | 'value' } | undefined {
  const start = url.indexOf('?');
  if (start === -1) return undefined;
  const hash = url.indexOf('#', start);
  const query = url.slice(start + 1, hash === -1 ? undefined : hash);
  if (!query.includes('%')) return undefined;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    // A parameter without a name is one the parser drops: nothing reads it.
    if (name === '') continue;
    const decodedName = decoded(name);
    if (decodedName === undefined) return { name, part: 'name' };
    if (eq !== -1 && decoded(pair.slice(eq + 1)) === undefined) return { name: decodedName, part: 'value' };
  }
  return undefined;
}

/** The 400 of a parameter that does not decode, in the words of the other unparseable parameters (middleware/validation.ts). */
export function malformedQueryError(found: { name: string; part: 'name' | 'value' }): ApiError {
  const what = found.part === 'name' ? `the name of query parameter \`${found.name}\`` : `query parameter \`${found.name}\``;
  return new ApiError('bad_request', `Malformed request: ${what} ${DETAIL}.`);
}

/** Refuses a request whose query does not decode, before anything reads it. */
export const wellEncodedQuery: MiddlewareHandler = async (c, next) => {
  const found = malformedQueryParameter(c.req.url);
  if (found) throw malformedQueryError(found);
  await next();
};
