/** Zod schemas of the admin API: they validate requests and generate /admin/v1/openapi.json. */
import { validateHeaderValue } from 'node:http';
import { z } from '@hono/zod-openapi';
import { ENTITIES } from '../../domain/cdm';
import { intParam, listParameters } from '../../domain/filters';
import { AUTOMATION_STATUSES, MIN_EVERY_SECONDS, PLURAL, RUN_STATUSES } from '../../domain/automations';
import { SORT_ORDERS, type SortOrder } from '../../db/order';
import { ALL_EVENT_TYPES, EVENT_CATEGORIES } from '../../domain/events';
import { OPERATION_STATUSES, OPERATION_TYPES } from '../../domain/operations';
import { DELIVERY_STATUSES, SUBSCRIPTION_STATUSES } from '../../domain/webhooks';
import { MODES, PLAN_RULES, PLANS } from '../../domain/plans';
import { DEFAULT_FULL_SYNC_INTERVAL_SECONDS, MAX_FULL_SYNC_INTERVAL_SECONDS, SYNC_KINDS } from '../../domain/contract';
import { SOURCE_DIALECTS } from '../../source/connector';
import { datetimeField, NUL_FREE_PATTERN, plainText, SPACE_CLASS } from '../../domain/scalars';
import { RULE } from '../middleware/validation';
import { Operation as PublicOperation, Problem, text } from '../schemas';

export const Mode = z.enum(MODES);
export const Plan = z.enum(PLANS);
const DateTime = z.iso.datetime().openapi({ example: '2025-01-31T17:04:05.123Z' });
const Uuid = z.uuid();

export const IdParam = (name: string, description: string) =>
  z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' }, description, example: name }) });

/** Paging, parsed as on /v1: an integer written as one (an empty `offset=` is not 0), else 400; out of range 422. */
export const ListQuery = z.object({
  limit: intParam({ min: 1, max: 100, default: 25, description: 'Page size, 1 to 100.' }),
  offset: intParam({ min: 0, max: Number.MAX_SAFE_INTEGER, default: 0, description: 'Zero-based offset.' }),
});

const ORDER_WORDS: Record<SortOrder, string> = { asc: 'Oldest first', desc: 'Newest first' };

/**
 * ListQuery plus `order`, for a list ordered by creation time (ties by id, in the same direction); `dflt` is the order
 * the list has always had. A value other than `asc`/`desc` is a 422 naming the parameter, like an unknown sort field.
 */
export const OrderedListQuery = (dflt: SortOrder) =>
  ListQuery.extend({
    order: z
      .string()
      .default(dflt)
      .transform((s, ctx) => {
        if ((SORT_ORDERS as readonly string[]).includes(s)) return s as SortOrder;
        ctx.addIssue({ code: 'custom', message: 'must be asc or desc', params: RULE });
        return z.NEVER;
      })
      .openapi({
        type: 'string',
        enum: SORT_ORDERS,
        default: dflt,
        description: `By creation time: \`asc\` oldest first, \`desc\` newest first (ties by id, in the same direction). Default: \`${dflt}\` (${ORDER_WORDS[dflt].toLowerCase()}).`,
      } as never) as unknown as z.ZodType<SortOrder, string | undefined>,
  });

/** The description of a list's 200 response: its default order, and that `order` turns it. */
export const orderedDescription = (dflt: SortOrder, rest = '') => `${ORDER_WORDS[dflt]} unless \`order\` says otherwise${rest}.`;

export const listOf = <T extends z.ZodType>(item: T, name: string) =>
  z
    .object({
      meta: z.object({ limit: z.number().int(), offset: z.number().int(), hasMore: z.boolean() }),
      results: z.array(item),
    })
    .openapi(name);

const problemResponse = (description: string) => ({ content: { 'application/problem+json': { schema: Problem } }, description });
/** Error responses every admin route can give. */
export const errorResponses = {
  400: problemResponse('Malformed request: bad JSON or an unparseable query parameter.'),
  401: problemResponse('Missing or wrong admin token.'),
  404: problemResponse('Unknown or malformed id.'),
  413: problemResponse('The request body exceeds 64 KiB.'),
  422: problemResponse('A rule violation; `errors[]` names each field.'),
  429: problemResponse('Too many wrong admin tokens from this address, or beginning like this one: every token is refused for `Retry-After` seconds.'),
} as const;
export const unavailableResponse = {
  503: problemResponse('Temporal or the sandbox PMS is unreachable; nothing was changed. Safe to retry.'),
} as const;
export const conflictResponse = { 409: problemResponse('The integration does not have a sandbox source.') } as const;

export const json = <T extends z.ZodType>(schema: T, description: string, links?: Record<string, { operationId: string; parameters: Record<string, string>; description: string }>) => ({
  content: { 'application/json': { schema } },
  description,
  ...(links ? { links } : {}),
});

/** An OpenAPI link from a response with an `id` (or an `id` at `pointer`) to the operation that reads it. */
export const linkTo = (name: string, operationId: string, what: string, pointer = '/id') => ({
  [name]: { operationId, parameters: { id: `$response.body#${pointer}` }, description: what },
});
export const body = <T extends z.ZodType>(schema: T) => ({ body: { content: { 'application/json': { schema } }, required: true } });

// Organizations

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
/** A PATCH body: at least one field (a request without a body, or `{}`, changes nothing and is refused with 422). */
function someField<T extends z.ZodObject>(schema: T): T {
  return schema
    .refine((b) => Object.values(b as Record<string, unknown>).some((v) => v !== undefined), {
      message: `send at least one of ${Object.keys(schema.shape).join(', ')}`,
      // Only a body that is otherwise valid is checked: an unknown field is its own error.
      when: (payload) => payload.issues.length === 0,
    })
    .openapi({ minProperties: 1 }) as unknown as T;
}
export const OrganizationUpdate = someField(
  z
  .strictObject({
    name: text(200).optional(),
    rate_limit_per_minute: RateLimit.nullable().optional(),
    rate_limit_burst: RateLimit.nullable().optional(),
  }),
).openapi('OrganizationUpdate');

// Integrations

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
export const SandboxSource = z
  .strictObject({
    type: z.literal('sandbox'),
    dialect: z
      .enum(SOURCE_DIALECTS)
      .optional()
      .openapi({ description: 'The wire the sandbox company speaks: the Entrata-style JSON-RPC (default) or the Buildium-style REST API, which can list what changed (delta runs).' }),
    size: z.number().int().min(1).max(250_000).optional().openapi({ description: 'Leases to generate (default 50).' }),
    seed: z.number().int().min(0).max(2_147_483_647).optional().openapi({ description: 'Generator seed (default random).' }),
  })
  .openapi('SandboxSource');
export const EntrataSource = z
  .strictObject({
    type: z.literal('entrata'),
    base_url: z.url({ protocol: /^https?$/ }).openapi({ description: 'https:// for a live integration; a test-mode one may use http://.' }),
    api_key: plainText().min(1).max(500).openapi({ description: 'Stored encrypted; never shown again.' }),
  })
  .openapi('EntrataSource');
export const BuildiumSource = z
  .strictObject({
    type: z.literal('buildium'),
    base_url: z.url({ protocol: /^https?$/ }).openapi({ description: 'https:// for a live integration; a test-mode one may use http://.' }),
    client_id: plainText().min(1).max(500).openapi({ description: 'The API client id, sent with every request.' }),
    client_secret: plainText().min(1).max(500).openapi({ description: 'The API client secret. Stored encrypted; never shown again.' }),
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
  z
  .strictObject({
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
      description: 'The effective seconds between full runs (the override, else the service default). Applies only where the source can list what changed; other sources read everything on every run.',
    }),
    created_at: DateTime,
  })
  .openapi('Integration');

// API keys

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

// Sync jobs

export const SyncJob = z
  .object({
    id: z.string().openapi({ example: 'syj_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    integration_id: Uuid,
    status: z.enum(['queued', 'running', 'succeeded', 'failed']),
    trigger: z.enum(['initial', 'schedule', 'manual']),
    kind: z.enum(SYNC_KINDS).nullable().openapi({
      description: '`full`: reads every record, and alone may soft-delete what the source no longer has. `delta`: reads the records the source says changed in [window_from, window_to] and deletes nothing. Null while the job is queued: the run decides when it starts.',
    }),
    window_from: DateTime.nullable().openapi({ description: 'A delta run: the start of the window of changes it reads (the last covered window end less an overlap). Null for a full run.' }),
    window_to: DateTime.nullable().openapi({ description: "When the run began (the database's clock): the end of what it covers, for either kind. Null while queued." }),
    started_at: DateTime.nullable(),
    finished_at: DateTime.nullable(),
    records_seen: z.number().int(),
    records_new: z.number().int(),
    records_updated: z.number().int(),
    records_soft_deleted: z.number().int(),
    records_skipped: z.number().int().openapi({
      description: 'Records the source served that the mapping could not read: left as they were in the cache (never soft-deleted) and listed under /sync_jobs/{id}/skipped_records. The run still succeeds.',
    }),
    error: z.string().nullable(),
    attempt: z.number().int().openapi({
      description: "The attempt of the run's current step (1 until a step fails; a step retried after a source outage is at 2, 3, …; back to 1 when it succeeds).",
    }),
    last_error: z.string().nullable().openapi({ description: 'Why the last attempt of the current step failed, while it is being retried; null otherwise. A failed run says why in `error`.' }),
    next_attempt_at: DateTime.nullable().openapi({ description: 'When the step is tried again, while the run waits between attempts; null while an attempt runs or none is due.' }),
    progress: z
      .record(z.enum(ENTITIES), z.object({ pages: z.number().int(), done: z.boolean() }))
      .openapi({ description: 'Per entity, in sync order: pages committed so far and whether the entity is complete.' }),
  })
  .openapi('SyncJob');

export const SyncRequest = z
  .strictObject({
    kind: z.enum(SYNC_KINDS).optional().openapi({ description: 'Ask for a full run, or a run of the changes only (sources that can list them); default: as the cadence decides.' }),
  })
  .openapi('SyncRequest');
export type SyncRequest = z.infer<typeof SyncRequest>;

export const SkippedRecord = z
  .object({
    entity: z.enum(ENTITIES),
    x_id: z.string().nullable().openapi({ description: "The record's id in the source; null when even that was unreadable." }),
    reason: z.string().openapi({ example: 'not a decimal amount: "TBD"' }),
    seen_at: DateTime,
  })
  .openapi('SkippedRecord');

// Operations (writes)

export const AdminOperation = PublicOperation.extend({
  organization_id: Uuid,
  integration_id: Uuid,
  mode: Mode,
  updated_at: DateTime,
  workflow_id: z.string().openapi({
    description: 'The Temporal workflow that runs the write (its id is the Operation id): find its history in the Temporal UI.',
    example: 'opr_01JH0000000000000000000000',
  }),
}).openapi('AdminOperation', {
  description: 'The Operation as `GET /v1/operations/{id}` shows it, plus where it belongs and its workflow. The request body (personal data) is never shown.',
});

/**
 * A comma-separated list of enum values, matching any. A value outside the enum parses but names nothing: 422 with
 * the parameter as pointer, like an unknown sort field on /v1.
 */
/** A comma-separated list of `item` (a regex alternation), items padded with spaces, empty items ignored. */
const S = `[${SPACE_CLASS}]*`;
const listPattern = (item: string) => `^${S}(${item})?${S}(,${S}(${item})?${S})*$`;

const enumListParam = <T extends string>(values: readonly T[], description: string) =>
  z
    .string()
    .transform((s, ctx) => {
      const list = [...new Set(s.split(',').map((v) => v.trim()).filter(Boolean))];
      // Empty means no filter, as on /v1 (`status=`).
      if (list.length === 0) return undefined;
      const unknown = list.filter((v) => !values.includes(v as T));
      if (unknown.length > 0) {
        ctx.addIssue({ code: 'custom', message: `must be one or more of ${values.join(', ')} (comma-separated)`, params: RULE });
        return z.NEVER;
      }
      return list as T[];
    })
    .optional()
    .openapi({
      type: 'string',
      pattern: listPattern(values.map((v) => v.replace(/[.]/g, '\\.')).join('|')),
      description: `${description} One of ${values.map((v) => `\`${v}\``).join(', ')}, or a comma-separated list matching any.`,
    } as never) as unknown as z.ZodType<
    T[] | undefined,
    string | undefined
  >;

export const OperationQuery = OrderedListQuery('desc').extend({
  status: enumListParam(OPERATION_STATUSES, 'Only Operations in this status.'),
  type: enumListParam(OPERATION_TYPES, 'Only Operations of this type.'),
});

// Sandbox controls

const Count = z.number().int().min(0).max(100_000);
const PerEntityCount = z.strictObject(Object.fromEntries(ENTITIES.map((e) => [e, Count.optional()])) as Record<(typeof ENTITIES)[number], z.ZodOptional<typeof Count>>);
const Counts = z.union([Count, PerEntityCount]).optional().openapi({ description: 'A total spread over entities, or counts per entity.' });
export const SandboxChanges = z
  .strictObject({
    update: Counts,
    create: Counts,
    delete: Counts,
    lease_transitions: Count.optional(),
    corrupt: Counts.openapi({ description: 'Records to make unreadable by the mapping (a bad date, amount or time), to see the sync quarantine them.' }),
  })
  .openapi('SandboxChanges');
const XIdsPerEntity = z.object(Object.fromEntries(ENTITIES.map((e) => [e, z.array(z.string())])) as Record<(typeof ENTITIES)[number], z.ZodArray<z.ZodString>>);
export const SandboxChangeResult = z
  .object({
    updated: XIdsPerEntity,
    created: XIdsPerEntity,
    deleted: XIdsPerEntity,
    corrupted: XIdsPerEntity,
    lease_transitions: z.array(z.object({ x_id: z.string(), from: z.string(), to: z.string() })),
    renewals: z
      .array(z.object({ x_id: z.string(), previous_x_id: z.string() }))
      .openapi({ description: 'Leases created as renewals of a lease that moved on (they are also in `created.lease`).' }),
  })
  .openapi('SandboxChangeResult');
const FaultKind = z.enum(['unavailable', 'rate_limited', 'slow', 'reject_writes']).openapi({
  description:
    '`unavailable`: 503 with an HTML page; `rate_limited`: 429 with Retry-After; `slow`: replies after `delay_ms` (a slow write is applied first, so a client that gives up sooner sees a timeout for a write that was made); `reject_writes`: writes answered with a business error.',
});
const FaultScope = z.enum(['all', 'reads', 'writes']).openapi({
  description: 'Which requests the fault affects, and is counted against: every request (the default), reads only or writes only. `reject_writes` affects writes only (`reads` is refused).',
});
export const SandboxFault = z
  .strictObject({
    kind: FaultKind,
    count: z.number().int().min(1).max(1_000_000).optional().openapi({ description: 'Requests affected (within `methods`); omitted = until cleared.' }),
    delay_ms: z
      .number()
      .int()
      .min(0)
      .max(600_000)
      .optional()
      .openapi({ description: 'Milliseconds a `slow` fault delays each reply (default: the sandbox’s SANDBOX_SLOW_MS). Ignored by the other kinds.' }),
    methods: FaultScope.optional(),
  })
  .refine((f) => !(f.kind === 'reject_writes' && f.methods === 'reads'), { path: ['methods'], message: 'reject_writes affects writes only' })
  .openapi('SandboxFault', {
    // reject_writes scoped to reads is refused (it would affect nothing).
    not: { type: 'object', required: ['kind', 'methods'], properties: { kind: { const: 'reject_writes' }, methods: { const: 'reads' } } },
  } as never);
export const SandboxFaultSet = z
  .object({
    integration_id: Uuid,
    kind: FaultKind,
    count: z.number().int().nullable().openapi({ description: 'Requests affected; null = until cleared.' }),
    delay_ms: z.number().int().nullable().openapi({ description: 'The delay given for a `slow` fault; null = the sandbox’s default.' }),
    methods: FaultScope,
  })
  .openapi('SandboxFaultSet');

// Webhook subscriptions and deliveries

const EventTypeName = z.enum(['*', ...ALL_EVENT_TYPES]);
const EventTypes = z
  .array(EventTypeName)
  .min(1)
  .max(ALL_EVENT_TYPES.length + 1)
  .openapi({ description: 'Event types to receive, or `["*"]` for every type.', example: ['LEASE_SIGNED', 'LEASE_UPDATED'] });
const WebhookUrl = plainText().min(1).max(2048).openapi({
  description: 'Where events are POSTed. Live integrations: HTTPS to a public host: not `localhost`, nor a loopback, private, link-local or other special-purpose address (IPv4 embedded in IPv6 included), neither as written nor as resolved when sending. Test integrations may use http:// and loopback.',
  example: 'https://example.com/webhooks/propsync',
});
const Description = plainText().max(500).trim().nullable().optional();
const MaxInFlight = z
  .number()
  .int()
  .min(1)
  .max(256)
  .nullable()
  .optional()
  .openapi({
    description:
      'Attempts of this subscription in flight at once (null: the deployment default, WEBHOOK_MAX_IN_FLIGHT, 16). First attempts go out in production order either way; with 1 they also arrive in that order, one after another.',
    example: 16,
  });
const StandardWebhooks = z.boolean().optional().openapi({
  description:
    'Also sign each delivery the Standard Webhooks way: `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,<base64>`), verifiable with the published `standardwebhooks` libraries, besides `X-Service-Signature`. Default on for a new subscription.',
});
export const SubscriptionCreate = z
  .strictObject({ url: WebhookUrl, event_types: EventTypes, description: Description, max_in_flight: MaxInFlight, standard_webhooks: StandardWebhooks })
  .openapi('WebhookSubscriptionCreate');
export const SubscriptionUpdate = someField(
  z.strictObject({
    url: WebhookUrl.optional(),
    event_types: EventTypes.optional(),
    description: Description,
    status: z.enum(SUBSCRIPTION_STATUSES).optional(),
    max_in_flight: MaxInFlight,
    standard_webhooks: StandardWebhooks,
  }),
).openapi('WebhookSubscriptionUpdate');
export const Subscription = z
  .object({
    id: z.string().openapi({ example: 'whs_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    integration_id: Uuid,
    url: z.string(),
    event_types: z.array(z.string()),
    description: z.string().nullable(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    max_in_flight: z.number().int().nullable().openapi({ description: 'Attempts in flight at once; null: the deployment default.' }),
    standard_webhooks: z.boolean().openapi({ description: 'Whether deliveries also carry the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`).' }),
    previous_secret_expires_at: DateTime.nullable().openapi({ description: 'End of the current rotation window, when one is open.' }),
    disabled: z
      .object({
        at: DateTime,
        by: z.enum(['operator', 'failures', 'gone']),
        reason: z.string().nullable(),
      })
      .nullable()
      .openapi('WebhookSubscriptionDisabled', {
        description:
          'Why a `disabled` subscription is disabled: by an `operator`, or by the service, when every attempt had `failures` for WEBHOOK_DISABLE_AFTER_MS (5 days) or the receiver answered 410 (`gone`). Null while active. Enabling it again (PATCH `status: "active"`) clears it and resumes its queue.',
      }),
    health: z
      .object({
        success_rate: z.number().min(0).max(1).nullable().openapi({ description: 'Succeeded attempts over attempts of the last 24 hours (of its 1,000 most recent deliveries at most); null without attempts.' }),
        attempts: z.number().int().openapi({ description: 'Attempts that rate counts.' }),
        last_success_at: DateTime.nullable(),
        last_failure_at: DateTime.nullable(),
        failing_since: DateTime.nullable().openapi({ description: 'Since when every attempt has failed (the first failure after the last success); null when the last outcome was a success.' }),
        pending: z.number().int().openapi({ description: 'Deliveries waiting in its queue for their first attempt.' }),
        retrying: z.number().int().openapi({ description: 'Deliveries waiting for a retry.' }),
        dead_lettered: z.number().int(),
      })
      .openapi('WebhookEndpointHealth', { description: "The receiver's health, from the attempts made to it." }),
    circuit: z
      .object({
        state: z.enum(['closed', 'open']),
        opened_at: DateTime.nullable(),
        next_probe_at: DateTime.nullable(),
      })
      .openapi('WebhookCircuit', {
        description:
          "The dispatcher's circuit breaker. `open` after a run of failed first attempts (WEBHOOK_CIRCUIT_FAILURES): the queue waits, and one delivery probes the receiver at `next_probe_at`; the first success closes it.",
      }),
    created_at: DateTime,
    updated_at: DateTime,
  })
  .openapi('WebhookSubscription');
export const SubscriptionCreated = Subscription.extend({
  secret: z.string().openapi({ description: 'The signing secret (`whsec_…`). Shown only in this response.' }),
}).openapi('WebhookSubscriptionCreated');
export const RotateSecret = z
  .strictObject({
    grace_period_seconds: z.number().int().min(0).max(30 * 86_400).optional().openapi({ description: 'How long the previous secret keeps signing (default 86400).' }),
  })
  .openapi('WebhookSecretRotate');
export const RotatedSecret = z
  .object({
    secret: z.string().openapi({ description: 'The new signing secret. Shown only in this response.' }),
    previous_secret_expires_at: DateTime.openapi({ description: 'Until then deliveries also carry X-Service-Signature-Previous.' }),
  })
  .openapi('WebhookSecretRotated');
export const Attempt = z
  .object({
    number: z.number().int(),
    started_at: DateTime,
    duration_ms: z.number().int(),
    response_status: z.number().int().nullable(),
    error: z.string().nullable().openapi({ description: 'Why the attempt failed (connection error, time-out, guard refusal, HTTP status); null on success.' }),
    response_body: z.string().nullable().openapi({ description: 'The first bytes of the response body.' }),
  })
  .openapi('WebhookAttempt');
export const Delivery = z
  .object({
    id: z.string().openapi({ example: 'whd_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    event_id: z.string(),
    event_type: z.string(),
    subscription_id: z.string(),
    integration_id: Uuid,
    status: z.enum(DELIVERY_STATUSES),
    attempt_count: z.number().int(),
    next_attempt_at: DateTime.nullable(),
    last_attempt_at: DateTime.nullable(),
    created_at: DateTime,
    updated_at: DateTime,
    attempts: z.array(Attempt),
  })
  .openapi('WebhookDelivery');
export const DeliveryWithPayload = Delivery.extend({
  payload: z.record(z.string(), z.unknown()).nullable().openapi({ description: 'The event exactly as sent (null once purged).' }),
}).openapi('WebhookDeliveryWithPayload');
export const DeliveryQuery = OrderedListQuery('desc').extend({
  status: z.enum(DELIVERY_STATUSES).optional(),
  event_type: plainText().max(100).optional(),
});
export const SubscriptionReplay = z
  .union([
    z.strictObject({ status: z.literal('dead_lettered') }),
    z.strictObject({ since: datetimeField('Start of the range.'), until: datetimeField('End of the range.') }),
  ])
  .openapi('WebhookSubscriptionReplay', {
    description: 'Replay every dead-lettered delivery (`{status: "dead_lettered"}`), or every event in a time range of the last 30 days (`{since, until}`).',
  });
export const ReplayResult = z
  .object({ replayed: z.number().int(), delivery_ids: z.array(z.string()) })
  .openapi('WebhookReplayResult');

// Events (the outbox, as an operator reads it)

export const EventQuery = OrderedListQuery('desc').extend({
  type: enumListParam(ALL_EVENT_TYPES, 'Only events of this type.'),
});
export const DeliveryCounts = z
  .object({
    total: z.number().int().openapi({ description: 'Deliveries of the event, one per subscription it was sent (or re-sent) to.' }),
    ...(Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, z.number().int()])) as Record<(typeof DELIVERY_STATUSES)[number], z.ZodNumber>),
  })
  .openapi('EventDeliveryCounts', { description: 'How many deliveries of the event there are, in all and per status.', example: { total: 2, pending: 0, retrying: 0, succeeded: 1, dead_lettered: 1, cancelled: 0, expired: 0 } });
export const Event = z
  .object({
    id: z.string().openapi({ example: 'evt_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    integration_id: Uuid,
    type: z.enum(ALL_EVENT_TYPES),
    category: z.enum(EVENT_CATEGORIES),
    created_at: DateTime,
    sync_job_id: z.string().nullable().openapi({ description: 'The sync run that recorded the event, if any.' }),
    operation_id: z.string().nullable().openapi({ description: 'The write Operation that recorded the event, if any.' }),
    automation_run_id: z.string().nullable().openapi({ description: 'The automation run an AUTOMATION_* event reports.' }),
    record_id: z.string().nullable().openapi({ description: 'The record a data_change event is about.' }),
    dispatched_at: DateTime.nullable().openapi({ description: 'When the outbox relay had started a delivery to every subscription that wanted it; null until then.' }),
    deliveries: DeliveryCounts,
  })
  .openapi('Event');
export const EventWithPayload = Event.extend({
  payload: z
    .record(z.string(), z.unknown())
    .nullable()
    .openapi({ description: 'The envelope exactly as sent to receivers; null while it has not been serialized yet (nothing was sent).' }),
}).openapi('EventWithPayload');
export const EventResendResult = z
  .object({
    resent: z.number().int().openapi({ description: 'Subscriptions the event was sent to again (0: no active subscription wants it).' }),
    delivery_ids: z.array(z.string()).openapi({ description: 'The delivery of each: a new one, or the existing one given one more attempt.' }),
  })
  .openapi('EventResendResult');

// Automations (scheduled CSV exports)

const PLURALS = ENTITIES.map((e) => PLURAL[e]) as [string, ...string[]];
const ExportEntityName = z.enum([...PLURALS, ...ENTITIES]).openapi({
  description: 'The entity to export: `properties`, `units`, `residents` or `leases` (the singular is accepted too). Replies show the plural.',
  example: 'leases',
});
const AutomationName = text(200).openapi({
  description: 'A label; the file of each run is named `<name>-<run id>.csv` (made safe for file systems and URLs).',
  example: 'Nightly leases',
});
/** Every name a filter may have, of some entity (which of them the automation's entity takes is said in words). */
const FILTER_NAMES = [...new Set(ENTITIES.flatMap((e) => listParameters(e)))].filter((n) => n !== 'limit' && n !== 'offset');
const ExportFilters = z.record(plainText(), plainText()).openapi({
  description:
    "The query parameters of the entity's list endpoint (`GET /v1/<entity>`), as strings, exactly as a caller would send them; validated by the same rules when saved (a bad one, or one the entity's list does not have, is a 422 at `/filters/<name>`). `limit` and `offset` do not apply: an export is every matching record.",
  example: { status: 'active,notice', start_date_gte: '2025-01-01', 'order-by': 'start_date:desc' },
  propertyNames: { type: 'string', enum: FILTER_NAMES },
  additionalProperties: { type: 'string', pattern: NUL_FREE_PATTERN },
} as never);
const ExportColumns = z.array(plainText().max(100)).min(1).max(100).openapi({
  description: "Fields of the entity's record to export, in this order (each at most once). Money fields become `<field>_amount` (minor units) and `<field>_currency`.",
  example: ['id', 'unit_id', 'status', 'start_date', 'rent_amount'],
});

/** The cron forms accepted: five fields (minute hour day-of-month month day-of-week), or a predefined name. */
/** One cron field of values in [`min`, `max`]: `*`, a value or a range, each with an optional step, comma-separated. */
const cronField = (value: string) => {
  const item = `(\\*|(${value})(-(${value}))?)(/([1-9][0-9]?))?`;
  return `${item}(,${item})*`;
};
/** What a five-field schedule may say, field by field (minute, hour, day of month, month, day of week). */
const CRON_PATTERN = `^(@(yearly|annually|monthly|weekly|daily|hourly)|${[
  '[0-5]?[0-9]',
  '1?[0-9]|2[0-3]',
  '0?[1-9]|[12][0-9]|3[01]',
  '0?[1-9]|1[0-2]',
  '[0-6]',
].map(cronField).join(' ')})$`;
const CRON = new RegExp(CRON_PATTERN);
/** IANA zones this runtime knows (the document lists them). */
const TIME_ZONES: readonly string[] = ['UTC', ...Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC')];
const MAX_EVERY_SECONDS = 366 * 86_400;


/**
 * One object whose rules say which form it takes, rather than a union: a union's failure points at `schedule` as a
 * whole, while an operator needs to be told which member (`/schedule/every`, `/schedule/cron`) is wrong.
 */
export const AutomationScheduleInput = z
  .strictObject({
    every: z.number().int().min(MIN_EVERY_SECONDS).max(MAX_EVERY_SECONDS).optional().openapi({ description: `Seconds between runs, at least ${MIN_EVERY_SECONDS}.` }),
    cron: z.string().max(200).optional().openapi({ description: 'Five-field cron (`minute hour day-of-month month day-of-week`, single spaces), or `@daily`, `@hourly`, …', example: '0 6 * * 1-5', pattern: CRON_PATTERN }),
    timezone: z.string().max(100).optional().openapi({ description: 'IANA time zone of a `cron` schedule (`Area/City`); default `UTC`.', example: 'America/Chicago', enum: TIME_ZONES } as never),
  })
  .superRefine((s, ctx) => {
    if (s.every === undefined && s.cron === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'give `every` (seconds between runs) or `cron` (with an optional `timezone`)' });
      return;
    }
    if (s.every !== undefined && s.cron !== undefined) ctx.addIssue({ code: 'custom', path: ['cron'], message: 'give either `every` or `cron`, not both' });
    if (s.every !== undefined && s.timezone !== undefined) ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'a time zone applies to a `cron` schedule only' });
    if (s.cron !== undefined && !CRON.test(s.cron)) {
      ctx.addIssue({ code: 'custom', path: ['cron'], message: 'must be five cron fields (minute hour day-of-month month day-of-week, e.g. "0 6 * * 1-5") or one of @yearly, @annually, @monthly, @weekly, @daily, @hourly' });
    }
    if (s.timezone !== undefined && !TIME_ZONES.includes(s.timezone)) {
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'not a known IANA time zone (e.g. America/Chicago, Europe/Paris, UTC)' });
    }
  })
  .openapi('AutomationScheduleInput', {
    description: 'Either `{every}` (an interval) or `{cron, timezone?}`.',
    oneOf: [
      { type: 'object', required: ['every'], not: { anyOf: [{ required: ['cron'] }, { required: ['timezone'] }] } },
      { type: 'object', required: ['cron'], not: { required: ['every'] } },
    ],
    example: { cron: '0 6 * * 1-5', timezone: 'America/Chicago' },
  });

/**
 * Headers that describe the connection and the framing (the export's own, as activities/export.ts keeps them) or the
 * host the URL names: an operator cannot set them. `content-type` may be set (a presigned URL may require one).
 */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_HEADERS = 20;
const MAX_HEADER_VALUE = 4096;

/** Whether the export's HTTP client (node:http) will send this header value; it refuses the whole request if not. */
function nodeSends(value: string): boolean {
  try {
    validateHeaderValue('x', value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a destination header value cannot be sent as given, or null. An RFC 9110 field value, as node:http sends it:
 * visible US-ASCII, with spaces and tabs inside; obs-text (U+0080 to U+00FF) goes out as single bytes, and anything
 * above is refused by Node, so every run would fail. The offending character is named, never the value: it may be a
 * credential (a character HTTP cannot carry is part of no working one).
 */
function headerValueProblem(value: string): string | null {
  if (value.length > MAX_HEADER_VALUE) return `a header value is at most ${MAX_HEADER_VALUE} characters`;
  if (/[\r\n]/.test(value)) return 'a header value is one line: no CR or LF';
  if (!nodeSends(value)) {
    const bad = [...value].find((ch) => !nodeSends(ch))!;
    const code = `U+${bad.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    return `contains ${code}, which an HTTP header cannot carry: use visible ASCII, spaces and tabs (U+0080 to U+00FF are sent as single bytes)`;
  }
  // RFC 9110 trims surrounding whitespace from a field value: the receiver would not get what was given.
  if (/^[ \t]|[ \t]$/.test(value)) return 'a header value may not start or end with a space or tab (HTTP drops them)';
  return null;
}
/** A letter either way: header names are case-insensitive. */
const caseless = (word: string) => [...word].map((ch) => (/[a-z]/.test(ch) ? `[${ch.toUpperCase()}${ch}]` : ch)).join('');
/**
 * What the document can say of destination headers: a name is an HTTP token of at most 100 characters and none of the
 * reserved ones (in any case); a value is a field value as headerValueProblem() takes it. Only a name given twice in
 * different cases is left to words.
 */
const HEADER_NAME_PATTERN = `^(?!(?:${[...RESERVED_HEADERS].map(caseless).join('|')})$)[!#$%&'*+.^_\`|~0-9A-Za-z-]{1,100}$`;
const HEADER_VALUE_PATTERN = '^(?:[!-~\\u0080-\\u00ff](?:[\\t -~\\u0080-\\u00ff]*[!-~\\u0080-\\u00ff])?)?$';
const DestinationHeaders = z
  .record(z.string(), z.string())
  .superRefine((headers, ctx) => {
    const seen = new Set<string>();
    const names = Object.keys(headers);
    if (names.length > MAX_HEADERS) ctx.addIssue({ code: 'custom', path: [], message: `at most ${MAX_HEADERS} headers` });
    for (const name of names) {
      const value = headers[name]!;
      const lower = name.toLowerCase();
      if (!HEADER_NAME.test(name) || name.length > 100) ctx.addIssue({ code: 'custom', path: [name], message: 'not a valid HTTP header name' });
      else if (RESERVED_HEADERS.has(lower)) ctx.addIssue({ code: 'custom', path: [name], message: `${name} describes the connection, not the file; the export sets it itself` });
      else if (seen.has(lower)) ctx.addIssue({ code: 'custom', path: [name], message: 'given twice (header names are case-insensitive)' });
      else {
        const problem = headerValueProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
      }
      seen.add(lower);
    }
  })
  .openapi({
    description:
      `Headers sent with the file (e.g. \`Authorization\`), at most ${MAX_HEADERS}. Names are HTTP tokens; values are RFC 9110 field values of at most ${MAX_HEADER_VALUE} characters: visible ASCII with spaces and tabs inside (not leading or trailing), no line breaks or control characters, and no character above U+00FF (U+0080 to U+00FF are sent as single bytes); anything else is a 422 at \`/destination/headers/<name>\`. Values are stored encrypted and never shown again; replies list the names only.`,
    example: { Authorization: 'Bearer s3cr3t' },
    maxProperties: MAX_HEADERS,
    propertyNames: { type: 'string', pattern: HEADER_NAME_PATTERN },
    additionalProperties: { type: 'string', maxLength: MAX_HEADER_VALUE, pattern: HEADER_VALUE_PATTERN },
  } as never);
const DestinationUrl = plainText().min(1).max(2048).openapi({
  description: 'Where the file is sent. Live integrations: HTTPS to a public host: not `localhost`, nor a loopback, private, link-local or other special-purpose address (IPv4 embedded in IPv6 included), neither as written nor as resolved when sending. Test integrations may use http:// and loopback.',
  example: 'https://files.example.com/exports/leases.csv',
});
const DestinationMethod = z.enum(['PUT', 'POST']).openapi({ description: 'How the file is sent: it is the request body, `content-type: text/csv; charset=utf-8` unless `headers` name another. Default `PUT`.' });
const DirectoryPath = plainText()
  .min(1)
  .max(500)
  .superRefine((path, ctx) => {
    if (/^([/\\]|[A-Za-z]:)/.test(path)) ctx.addIssue({ code: 'custom', message: 'must be relative to the export root (EXPORT_ROOT), not absolute' });
    else if (path.split(/[/\\]/).includes('..')) ctx.addIssue({ code: 'custom', message: 'must not contain `..` segments: a directory destination stays inside the export root' });
  })
  .openapi({ description: 'A directory relative to the deployment\'s export root (EXPORT_ROOT); never absolute, never `..`.', example: 'finance/leases' });

export const HttpDestinationInput = z
  .strictObject({ type: z.literal('http'), url: DestinationUrl, method: DestinationMethod.optional(), headers: DestinationHeaders.optional() })
  .openapi('HttpDestinationInput');
export const DirectoryDestinationInput = z.strictObject({ type: z.literal('directory'), path: DirectoryPath }).openapi('DirectoryDestinationInput');
const DestinationInput = z.discriminatedUnion('type', [HttpDestinationInput, DirectoryDestinationInput]);

const EscapeFormulas = z.boolean().openapi({
  description:
    "CSV-injection protection for spreadsheet users (as OWASP recommends): a text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is written with a leading `'`, and every text cell is quoted, so a spreadsheet shows the value instead of running it as a formula. Numbers (a negative balance), dates, times and ids are never changed. Default `true`; `false` writes every value exactly as the API serves it, for files that programs read.",
  example: true,
});

export const AutomationCreate = z
  .strictObject({
    name: AutomationName,
    entity: ExportEntityName,
    filters: ExportFilters.optional(),
    columns: ExportColumns.optional().openapi({ description: 'Fields to export, in order; default every field of the entity.' }),
    schedule: AutomationScheduleInput,
    destination: DestinationInput,
    escape_formulas: EscapeFormulas.optional(),
  })
  .openapi('AutomationCreate');
export const AutomationUpdate = someField(
  z
  .strictObject({
    name: AutomationName.optional(),
    filters: ExportFilters.optional().openapi({ description: 'Replaces the filters (`{}`: every record).' }),
    columns: ExportColumns.nullable().optional().openapi({ description: 'Replaces the columns; null = every field of the entity.' }),
    schedule: AutomationScheduleInput.optional(),
    destination: DestinationInput.optional().openapi({
      description:
        'Replaces the destination. For an HTTP destination that stays HTTP, omitting `headers` keeps the stored ones (their values are never shown, so they cannot be sent back); `headers: {}` removes them.',
    }),
    status: z.enum(AUTOMATION_STATUSES).optional().openapi({ description: '`paused` stops scheduled runs (a manual run still starts); `active` resumes them.' }),
    escape_formulas: EscapeFormulas.optional(),
  }),
).openapi('AutomationUpdate');

const IntervalSchedule = z.object({ every: z.number().int() }).openapi('IntervalSchedule');
const CronSchedule = z.object({ cron: z.string(), timezone: z.string() }).openapi('CronSchedule');
const HttpDestination = z
  .object({
    type: z.literal('http'),
    url: z.string(),
    method: z.enum(['PUT', 'POST']),
    headers: z.array(z.string()).openapi({ description: 'Names of the headers sent with the file; their values are never shown.', example: ['Authorization'] }),
  })
  .openapi('HttpDestination');
const DirectoryDestination = z.object({ type: z.literal('directory'), path: z.string() }).openapi('DirectoryDestination');

export const Automation = z
  .object({
    id: z.string().openapi({ example: 'atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    integration_id: Uuid,
    organization_id: Uuid,
    name: z.string(),
    entity: z.enum(PLURALS),
    filters: z.record(z.string(), z.string()),
    columns: z.array(z.string()).nullable().openapi({ description: 'Fields exported, in order; null = every field of the entity.' }),
    schedule: z.union([IntervalSchedule, CronSchedule]),
    destination: z.discriminatedUnion('type', [HttpDestination, DirectoryDestination]),
    escape_formulas: EscapeFormulas,
    status: z.enum(AUTOMATION_STATUSES),
    schedule_id: z.string().openapi({ description: "The automation's Temporal Schedule (see it in the Temporal UI).", example: 'automation-schedule-atm_01J8Z5Q3M3W6X9K0V7B2C4D6E8' }),
    created_at: DateTime,
    updated_at: DateTime,
  })
  .openapi('Automation');

export const AutomationRun = z
  .object({
    id: z.string().openapi({ example: 'aru_01J8Z5Q3M3W6X9K0V7B2C4D6E8', description: 'The run id, which is also the id of its Temporal workflow.' }),
    automation_id: z.string(),
    status: z.enum(RUN_STATUSES).openapi({
      description:
        '`queued`: its first attempt is not finished; `running`: an attempt failed transiently and another is scheduled (`next_attempt_at`); `succeeded`: the file was delivered; `failed`: a permanent failure, or the last retry failed (`error`).',
    }),
    trigger: z.enum(['schedule', 'manual']),
    records_exported: z.number().int().nullable(),
    file_name: z.string().openapi({ example: 'Nightly leases-aru_01J8Z5Q3M3W6X9K0V7B2C4D6E8.csv' }),
    attempts: z.number().int().openapi({ description: 'Attempts made so far.' }),
    next_attempt_at: DateTime.nullable(),
    error: z.string().nullable().openapi({ description: 'Why the last attempt failed.' }),
    started_at: DateTime.nullable(),
    finished_at: DateTime.nullable(),
    created_at: DateTime,
  })
  .openapi('AutomationRun');
