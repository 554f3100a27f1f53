/** The admin API's schemas of aPI keys of an organization, beside their routes (api-keys.ts). */
import { z } from '@hono/zod-openapi';
import { Mode, DateTime, Uuid } from './schemas';

const Scopes = z.array(z.enum(['read', 'write'])).min(1);
export const ApiKeyCreate = z.strictObject({ mode: Mode, scopes: Scopes.optional() }).openapi('ApiKeyCreate');
export const ApiKey = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    mode: Mode,
    scopes: Scopes,
    key_prefix: z.string(),
    created_at: DateTime,
    revoked_at: DateTime.nullable(),
    last_used_at: DateTime.nullable(),
  })
  .openapi('ApiKey');
export const ApiKeyCreated = ApiKey.extend({
  key: z.string().openapi({ description: 'The secret key. Shown only in this response.' }),
}).openapi('ApiKeyCreated');
