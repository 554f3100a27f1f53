/**
 * The admin API's schemas of integrations: a connected source, its plan and its sync cadences, beside their routes
 * (integrations.ts).
 */
import { z } from '@hono/zod-openapi';
import { PLAN_RULES, PLANS } from '../../domain/plans';
import { DEFAULT_FULL_SYNC_INTERVAL_SECONDS, MAX_FULL_SYNC_INTERVAL_SECONDS } from '../../domain/contract';
import { SOURCE_DIALECTS } from '../../source/connector';
import { plainText } from '../../domain/scalars';
import { text } from '../schemas';
import { Mode, Plan, DateTime, Uuid, someField } from './schemas';

/**
 * The fastest cadence of any plan: the bound the document can state. Each plan's own (the plan may be the stored
 * one, on a PATCH) is checked by the route, and said in words.
 */
const FASTEST_CADENCE = Math.min(...PLANS.map((p) => PLAN_RULES[p].fastestSyncIntervalSeconds));
const Interval = z
  .number()
  .int()
  .min(FASTEST_CADENCE, `must be at least ${FASTEST_CADENCE} seconds, the fastest cadence of any plan`)
  .max(7 * 24 * 3600)
  .openapi({
    description: `Seconds between scheduled syncs; no faster than the plan's fastest cadence (${PLANS.map((p) => `${p} ${PLAN_RULES[p].fastestSyncIntervalSeconds}`).join(', ')}), else 422.`,
  });
const SandboxSource = z
  .strictObject({
    type: z.literal('sandbox'),
    dialect: z.enum(SOURCE_DIALECTS).optional().openapi({
      description:
        'The wire the sandbox company speaks: the Entrata-style JSON-RPC (default) or the Buildium-style REST API, which can list what changed (delta runs).',
    }),
    size: z.number().int().min(1).max(250_000).optional().openapi({ description: 'Leases to generate (default 50).' }),
    seed: z.number().int().min(0).max(2_147_483_647).optional().openapi({ description: 'Generator seed (default random).' }),
  })
  .openapi('SandboxSource');
/** Where a real source answers; integrations.ts refuses http:// for a live integration. */
const BaseUrl = z.url({ protocol: /^https?$/ }).openapi({ description: 'https:// for a live integration; a test-mode one may use http://.' });
/** A setting of a real source: plain text, 1 to 500 characters. */
const setting = (description: string) => plainText().min(1).max(500).openapi({ description });
const EntrataSource = z
  .strictObject({
    type: z.literal('entrata'),
    base_url: BaseUrl,
    api_key: setting('Stored encrypted; never shown again.'),
  })
  .openapi('EntrataSource');
const BuildiumSource = z
  .strictObject({
    type: z.literal('buildium'),
    base_url: BaseUrl,
    client_id: setting('The API client id, sent with every request.'),
    client_secret: setting('The API client secret. Stored encrypted; never shown again.'),
  })
  .openapi('BuildiumSource');
/**
 * Seconds between full runs where the source can list what changed. Its lower bound is the integration's own
 * cadence (a state-dependent rule the route checks and says in words); the document states the fastest of any plan.
 */
const FullInterval = z
  .number()
  .int()
  .min(FASTEST_CADENCE, `must be at least ${FASTEST_CADENCE} seconds, the fastest cadence of any plan`)
  .max(MAX_FULL_SYNC_INTERVAL_SECONDS, `must be at most ${MAX_FULL_SYNC_INTERVAL_SECONDS} seconds (30 days)`)
  .openapi({
    description: `Seconds between full runs (the only runs that find deletions) of a source that can list what changed; the runs between read only the changes. At least the integration's sync interval and at most 30 days, else 422; null = the service default (${DEFAULT_FULL_SYNC_INTERVAL_SECONDS} s unless configured otherwise).`,
  });
export const IntegrationCreate = z
  .strictObject({
    name: text(200).nullable().optional(),
    mode: Mode,
    plan: Plan,
    source: z.discriminatedUnion('type', [SandboxSource, EntrataSource, BuildiumSource]),
    sync_interval_seconds: Interval.nullable().optional(),
    full_sync_interval_seconds: FullInterval.nullable().optional(),
    initial_sync: z.boolean().optional().openapi({ description: 'Start the first sync at once (default true).' }),
  })
  .openapi('IntegrationCreate', {
    // A sandbox source is for test mode only: a live integration connects to a real system.
    oneOf: [
      { type: 'object', properties: { mode: { const: 'test' } } },
      { type: 'object', properties: { mode: { const: 'live' }, source: { type: 'object', properties: { type: { enum: ['entrata', 'buildium'] } } } } },
    ],
  } as never);
export const IntegrationUpdate = someField(
  z.strictObject({
    name: text(200).nullable().optional(),
    plan: Plan.optional(),
    sync_interval_seconds: Interval.nullable().optional().openapi({ description: 'Override of the cadence; null = plan default.' }),
    full_sync_interval_seconds: FullInterval.nullable().optional(),
  }),
).openapi('IntegrationUpdate');
export const Integration = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    name: z.string().nullable(),
    mode: Mode,
    plan: Plan,
    source: z.object({
      type: z.enum(['sandbox', 'entrata', 'buildium']),
      dialect: z.enum(SOURCE_DIALECTS).openapi({ description: 'The wire the source speaks (a sandbox speaks the one it was created in).' }),
    }),
    sync_interval_seconds: z.number().int().openapi({ description: 'The effective cadence: the override, else the plan default.' }),
    full_sync_interval_seconds: z.number().int().openapi({
      description:
        'The effective seconds between full runs: the override, else the service default or the sync interval, whichever is longer (every run is a full one when runs come less often than the default). Applies only where the source can list what changed; other sources read everything on every run.',
    }),
    created_at: DateTime,
  })
  .openapi('Integration');
