/**
 * The admin API's schemas of sandbox controls: changes and faults of the sandbox PMS behind a sandbox integration,
 * beside their routes (sandbox.ts).
 */
import { z } from '@hono/zod-openapi';
import { ENTITIES } from '../../domain/cdm';
import { Uuid, problemResponse } from './schemas';

export const conflictResponse = { 409: problemResponse('The integration does not have a sandbox source.') } as const;

const Count = z.number().int().min(0).max(100_000);
const PerEntityCount = z.strictObject(
  Object.fromEntries(ENTITIES.map((e) => [e, Count.optional()])) as Record<(typeof ENTITIES)[number], z.ZodOptional<typeof Count>>,
);
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
  description:
    'Which requests the fault affects, and is counted against: every request (the default), reads only or writes only. `reject_writes` affects writes only (`reads` is refused).',
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
