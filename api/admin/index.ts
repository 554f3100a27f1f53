/** Admin API (/admin/v1). Placeholder until the admin routes land. */
import { Hono } from 'hono';
import type { ApiDeps } from '../deps';

export function createAdminRoutes(_deps: ApiDeps): Hono {
  return new Hono();
}
