/**
 * A JSON request body is UTF-8 (RFC 8259 §8.1), checked before any route reads it: bytes that are not UTF-8 would
 * otherwise be decoded leniently into U+FFFD and stored (and sent to the source) altered, which docs/decisions.md's
 * "a write never silently drops what the caller sent" forbids. A body in another declared charset is a 415; one
 * whose bytes are not UTF-8 is a 400, as bad JSON is. The body read here is kept for the route (Hono caches it).
 */
import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../problem';

const JSON_TYPE = /^\s*application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export const utf8JsonBody: MiddlewareHandler = async (c, next) => {
  const method = c.req.method;
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return next();
  const type = c.req.header('content-type');
  if (!type || !JSON_TYPE.test(type)) return next();
  const charset = CHARSET.exec(type)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError(
      'unsupported_media_type',
      `A JSON body is UTF-8; this one declares charset=${charset.slice(0, 40)}. Send it as UTF-8 (or without a charset).`,
    );
  }
  // Spaces before a parameter's `;` are allowed (RFC 9110 §5.6.6), but not by the routes' JSON check: written without.
  const tidy = type.trim().replace(/\s*;\s*/g, '; ');
  if (tidy !== type) c.req.raw.headers.set('content-type', tidy);
  try {
    strictUtf8.decode(await c.req.arrayBuffer());
  } catch (err) {
    if (err instanceof TypeError) throw new ApiError('bad_request', 'The request body is not valid UTF-8: JSON is sent as UTF-8.');
    throw err;
  }
  return next();
};
