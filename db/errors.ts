/**
 * Whether a failure means the database cannot be reached or answer in time (rather than a bug or a bad query): a
 * connection refused, reset, closed or not established within the connect time-out, a statement cancelled by its
 * time-out or its lock time-out, or a server shutting down, starting up or out of connections. The API answers these with a 503 and
 * Retry-After instead of a 500. Looks through wrappers (Drizzle's "Failed query" keeps the driver's error as cause).
 */

/** Socket and postgres.js codes of a connection that could not be made or was lost. */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
]);
/** Socket and postgres.js codes of a connection that took too long. */
export const TIMEOUT_CODES: ReadonlySet<string> = new Set(['ETIMEDOUT', 'CONNECT_TIMEOUT']);
const CONNECTION_CODES = new Set([...UNREACHABLE_CODES, ...TIMEOUT_CODES]);

/**
 * SQLSTATEs: query_canceled (the statement time-out), lock_not_available (a lock time-out: the row is held by a
 * session that does not let go), admin and crash shutdown, cannot_connect_now (starting up), too_many_connections, and
 * every connection exception (class 08).
 */
const UNAVAILABLE_STATES = new Set(['57014', '55P03', '57P01', '57P02', '57P03', '53300']);

export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 6; e = e.cause as typeof e, depth++) {
    if (typeof e !== 'object') return false;
    if (typeof e.code === 'string' && (CONNECTION_CODES.has(e.code) || UNAVAILABLE_STATES.has(e.code) || /^08[0-9A-Z]{3}$/.test(e.code))) return true;
  }
  return false;
}
