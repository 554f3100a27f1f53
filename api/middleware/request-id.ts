/** Correlation id of every request: a caller's well-formed `x-request-id` is echoed, anything else gets `req_` + ULID. */
import type { MiddlewareHandler } from 'hono';
import { newId } from '../../db/ids';

/** Long enough for UUIDs, ULIDs and trace ids; restricted so a header value can never smuggle anything into logs. */
const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFrom(header: string | undefined): string {
  return header && VALID.test(header) ? header : newId('request');
}

export const requestId = (): MiddlewareHandler => async (c, next) => {
  const id = requestIdFrom(c.req.header('x-request-id'));
  c.set('requestId' as never, id as never);
  await next();
  c.header('x-request-id', id);
};
