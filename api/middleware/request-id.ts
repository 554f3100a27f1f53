/** Correlation id of every request: a caller's well-formed `x-request-id` is echoed, anything else gets `req_` + ULID. */
import type { MiddlewareHandler } from 'hono';
import { newUlid } from '../../db/ids';
import { ID_PREFIX } from '../../domain/ids';

/** Long enough for UUIDs, ULIDs and trace ids; restricted so a header value can never smuggle anything into logs. */
const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFrom(header: string | undefined): string {
  return header && VALID.test(header) ? header : ID_PREFIX.request + newUlid();
}

export const requestId = (): MiddlewareHandler => async (c, next) => {
  const id = requestIdFrom(c.req.header('x-request-id'));
  c.set('requestId' as never, id as never);
  // Set before the response exists, so it goes into the response the route builds without re-materializing it;
  // error responses are built apart from the context, so they get it afterwards (reading status is free).
  c.header('x-request-id', id);
  await next();
  if (c.res.status >= 400) c.res.headers.set('x-request-id', id);
};
