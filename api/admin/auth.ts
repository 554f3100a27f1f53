/** Bearer auth of the admin API: the configured ADMIN_TOKEN only (API keys are for the public API). */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../problem';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function adminAuth(token: string): MiddlewareHandler {
  // Comparing fixed-length digests keeps the comparison constant-time whatever the presented length.
  const expected = digest(token);
  const challenge = { headers: { 'www-authenticate': 'Bearer realm="admin"' } };
  return async (c, next) => {
    const header = c.req.header('authorization');
    if (!header) throw new ApiError('unauthorized', 'Missing Authorization header; send `Authorization: Bearer <ADMIN_TOKEN>`.', challenge);
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (!match) throw new ApiError('unauthorized', 'Malformed Authorization header; expected `Bearer <ADMIN_TOKEN>`.', challenge);
    if (!timingSafeEqual(digest(match[1]!), expected)) throw new ApiError('unauthorized', 'The admin token is not valid.', challenge);
    await next();
  };
}
