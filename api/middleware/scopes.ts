/**
 * What an API key's scopes let it do (docs/decisions.md Tenancy): `read` for the records and the events, `write` for
 * the writes; an Operation and a write's options are answered to either (a write-only key polls the writes it made).
 * A key without the scope a route needs is a 403 whose `detail` is the contract's words, `Insufficient permissions`,
 * and whose `required_scopes` names what would admit it; checked before the request's parameters or body are read.
 */
import type { MiddlewareHandler } from 'hono';
import type { Scope } from '../../db/tenants';
import { ApiError } from '../problem';
import type { AppEnv, Principal } from './env';

/** The scopes of a route: any one of them admits a key. */
export const READ: readonly Scope[] = ['read'];
export const WRITE: readonly Scope[] = ['write'];
export const READ_OR_WRITE: readonly Scope[] = ['read', 'write'];

/** A 403 unless `principal` holds one of `scopes`. */
export function requireScope(principal: Principal, scopes: readonly Scope[]): void {
  if (scopes.some((s) => principal.scopes.includes(s))) return;
  throw new ApiError('forbidden', 'Insufficient permissions', { extra: { required_scopes: [...scopes] } });
}

/** The route middleware of requireScope. */
export const scopeGuard =
  (scopes: readonly Scope[]): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    requireScope(c.get('principal'), scopes);
    await next();
  };
