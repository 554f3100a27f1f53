/**
 * The admin API's schemas of organizations: the tenants, and the rate-limit overrides of each, beside their routes
 * (organizations.ts).
 */
import { z } from '@hono/zod-openapi';
import { text } from '../schemas';
import { DateTime, Uuid, someField } from './schemas';

const RateLimit = z.number().int().min(1).max(1_000_000);
export const Organization = z
  .object({
    id: Uuid,
    name: z.string(),
    rate_limit_per_minute: RateLimit.nullable().openapi({ description: "Override of the plans' org-wide limit; null = plan limit." }),
    rate_limit_burst: RateLimit.nullable().openapi({ description: 'Override of the burst; null = 10 % of the per-minute budget.' }),
    created_at: DateTime,
  })
  .openapi('Organization');
export const OrganizationCreate = z.strictObject({ name: text(200) }).openapi('OrganizationCreate');
export const OrganizationUpdate = someField(
  z.strictObject({
    name: text(200).optional(),
    rate_limit_per_minute: RateLimit.nullable().optional(),
    rate_limit_burst: RateLimit.nullable().optional(),
  }),
).openapi('OrganizationUpdate');
