/** Correlation id of every request: a caller's `x-request-id` is echoed, one we cannot carry gets `req_` + ULID. */
import type { MiddlewareHandler } from 'hono';
import { newUlid } from '../../db/ids';
import { ID_PREFIX } from '../../domain/ids';

/**
 * What is echoed: printable ASCII (spaces inside, not at either end), up to 200 characters: UUIDs, ULIDs, trace
 * headers such as `Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1`, whatever a caller's gateway makes. No control
 * character or byte beyond ASCII ever reaches a log line, a span or a problem body through it.
 */
const VALID = /^[\x21-\x7e](?:[\x20-\x7e]{0,198}[\x21-\x7e])?$/;

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
