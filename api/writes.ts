/**
 * What every write endpoint shares (docs/api.md Operations rules, docs/decisions.md Writes): the `write` scope and the
 * `Idempotency-Key` header, checked before the body; 422s that name each unknown or non-writable field; finding the
 * target integration; the check of coded fields against the source's write options (api/write-options.ts); and
 * accepting the write as an Operation, committed first and only then handed to Temporal.
 * Temporal unreachable is a 502 `enqueue_failed` that names the Operation, which stays queued: a retry with the
 * same key, or the sweeper, starts its workflow.
 */
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { retrySchedulesOf } from '../config';
import { acceptOperation, heldIdempotencyKey, operationJson, requestHashOf, type AcceptResult, type OperationRow } from '../db/operations';
import { integrationsHoldingProperty, liveIntegrationIdsOf, liveRecordOf, propertyXIdOf } from '../db/write-options';
import { nestsDeeperThan } from '../domain/content';
import { writeTaskQueueOf } from '../domain/contract';
import { ID_PREFIX, isId } from '../domain/ids';
import { operationTypeOf, type WritableEntity, type WriteAction } from '../domain/operations';
import type { ApiDeps } from './deps';
import type { AppEnv, Principal } from './middleware/env';
import { requireScope, WRITE } from './middleware/scopes';
import { rejectUnstorable, validationError } from './middleware/validation';
import { okHeaders, problemResponses } from './openapi';
import { ApiError } from './problem';
import { Operation } from './schemas';
import type { OptionList, OptionsAt, WriteOptions } from './write-options';

/** Longest Idempotency-Key accepted. */
const MAX_KEY_LENGTH = 255;
const KEY_CHARS = /^[\x21-\x7e]+$/;

const IdempotencyHeader = z.object({
  'idempotency-key': z.string().openapi({
    pattern: '^[\\x21-\\x7e]{1,255}$',
    description:
      'A caller-generated key, one per logical write (a UUID is a good choice; at most 255 visible ASCII characters). The same key with the same request returns the same Operation; with a different request, 409. Remembered 24 hours.',
    example: '5f0c2a8e-3b1d-4c55-9a43-0d6f1f7a9e21',
  }),
});

/** The `write` scope, the Idempotency-Key header, then no query string: all before the body is read. */
const writeGuard: MiddlewareHandler<AppEnv> = async (c, next) => {
  requireScope(c.get('principal'), WRITE);
  const key = c.req.header('idempotency-key');
  if (key === undefined || key.trim() === '') {
    throw new ApiError(
      'bad_request',
      'Missing `Idempotency-Key` header: every write needs a caller-generated key, one per logical write (for example a UUID).',
    );
  }
  if (key.length > MAX_KEY_LENGTH || !KEY_CHARS.test(key)) {
    throw new ApiError('bad_request', `Malformed \`Idempotency-Key\` header: at most ${MAX_KEY_LENGTH} visible ASCII characters, no spaces.`);
  }
  // A write takes no query parameter: one sent (a `dry_run=true`, a field misplaced in the URL) is refused, not
  // ignored while the write goes ahead (a write never silently drops what the caller sent).
  const issues = Object.keys(c.req.queries()).map((name) => ({
    code: 'custom' as const,
    path: [name],
    message: 'a write takes no query parameters: its fields go in the JSON body',
    input: undefined,
  }));
  if (issues.length > 0) throw validationError(new z.ZodError(issues), 'query');
  await next();
};

/**
 * The validation hook of a write route: every unknown field under its own pointer, and a field of the record that
 * cannot be written said to be so (a write never silently drops what the caller sent). A body that fails under an
 * Idempotency-Key already held is answered as the key says instead (heldKeyAnswer).
 */
function writeHook(deps: ApiDeps, notWritable: ReadonlySet<string>) {
  return async (result: { success: boolean; error?: z.ZodError; data?: unknown; target: string }, c: Context<AppEnv>): Promise<Response | undefined> => {
    try {
      refuseInvalid(result, notWritable);
      return undefined;
    } catch (err) {
      const held = await heldKeyAnswer(c, deps);
      if (held) return held;
      throw err;
    }
  };
}

/** The 422 of a body the schema refused (or one holding a NUL), each unknown or non-writable field under its own pointer. */
function refuseInvalid(result: { success: boolean; error?: z.ZodError; data?: unknown; target: string }, notWritable: ReadonlySet<string>): void {
  if (result.success) return rejectUnstorable(result.data, result.target as Parameters<typeof rejectUnstorable>[1]);
  if (!result.error) return;
  const unknown = (key: PropertyKey, path: PropertyKey[]) =>
    path.length === 0 && notWritable.has(String(key)) ? `${String(key)} is not writable` : 'Unknown field.';
  throw validationError(result.error, result.target as Parameters<typeof validationError>[1], unknown);
}

/** The fields of a record schema that a body of `writable` fields may not set. */
function notWritableOf(record: z.ZodObject, writable: z.ZodType): ReadonlySet<string> {
  const shapeOf = (s: z.ZodType): Record<string, unknown> => {
    const def = (s as unknown as { def?: { shape?: Record<string, unknown>; in?: z.ZodType } }).def;
    return def?.shape ?? (def?.in ? shapeOf(def.in) : {});
  };
  const allowed = new Set(Object.keys(shapeOf(writable)));
  return new Set(Object.keys(record.shape).filter((k) => !allowed.has(k)));
}

const choiceError = (detail: string) =>
  new ApiError('validation_error', `Invalid field \`integration_id\`: ${detail}`, { errors: [{ pointer: 'integration_id', detail }] });

/**
 * The integration of a lease create: the one holding `property_x_id`. The cache may lag the source, so a property
 * it does not know is left for the source to judge, in the only integration there is or the one the body names.
 */
export async function integrationForPropertyXId(deps: ApiDeps, p: Principal, propertyXId: string, chosen?: string): Promise<string> {
  const own = await liveIntegrationIdsOf(deps.db, p.organizationId, p.mode);
  if (chosen !== undefined) {
    const id = chosen.toLowerCase();
    // Like any id of another organization or mode: not confirmed to exist.
    if (!own.includes(id)) throw new ApiError('not_found', `No integration ${chosen} (\`integration_id\`) for this ${p.mode}-mode key.`);
    return id;
  }
  const holders = await integrationsHoldingProperty(deps.db, p.organizationId, p.mode, propertyXId);
  const candidates = holders.filter((id) => own.includes(id));
  if (candidates.length === 1) return candidates[0]!;
  if (candidates.length > 1) throw choiceError(`property_x_id ${propertyXId} is held by several of your integrations (${candidates.join(', ')}); say which.`);
  if (own.length === 1) return own[0]!;
  if (own.length === 0) throw new ApiError('not_found', `No integration of this ${p.mode}-mode key holds a property ${propertyXId}.`);
  throw choiceError(`property_x_id ${propertyXId} is not in the cache yet and you have ${own.length} integrations; say which.`);
}

export interface TargetRecord {
  id: string;
  xId: string;
  integrationId: string;
}

/** A live record of the key's organization and mode, by CDM id; anything else is a 404, as on a read. */
export async function visibleRecord(deps: ApiDeps, p: Principal, entity: WritableEntity | 'property', id: string, field?: string): Promise<TargetRecord> {
  const row = isId(entity, id) ? await liveRecordOf(deps.db, entity, p.organizationId, p.mode, id) : undefined;
  if (!row) throw new ApiError('not_found', `No ${entity} with id ${id}${field ? ` (\`${field}\`)` : ''}.`);
  return row;
}

export interface WriteRequest {
  entity: WritableEntity;
  action: WriteAction;
  integrationId: string;
  /** What to send, in the connector's terms (source/connector.ts CreateInputOf / UpdateInputOf). */
  request: Record<string, unknown>;
  /** The record an update changes. */
  target?: TargetRecord;
  /** What the Temporal UI shows as the target (ids only). */
  targetLabel?: string;
  /** The x_id of the property whose write options the body's coded fields are checked against. */
  optionsAt?: OptionsAt;
}

/** Start an Operation's workflow within the enqueue time-out; false when Temporal could not be reached. */
async function enqueue(deps: ApiDeps, op: OperationRow, label: string | null): Promise<boolean> {
  const timeoutMs = deps.config.WRITE_ENQUEUE_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Temporal did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const start = async () => {
      const [{ startWriteWorkflow }, client] = await Promise.all([import('../control/operations'), deps.temporal()]);
      await startWriteWorkflow(
        { client, taskQueue: writeTaskQueueOf(deps.config.TEMPORAL_TASK_QUEUE), timeoutMs, schedule: retrySchedulesOf(deps.config).write },
        { ...op, targetId: label },
      );
    };
    await Promise.race([start(), timeout]);
  } catch (err) {
    deps.logger.warn({ err, operation_id: op.id }, 'could not start the workflow of an operation');
    return false;
  } finally {
    clearTimeout(timer);
  }
  // No mark that it started: the workflow's first change to the Operation records that, and until then a sweeper
  // that finds it unmarked starts it again, which the workflow id makes a no-op.
  return true;
}

/** Deeper than any write body its schema admits (the deepest is three levels: a resident's body, its phones, a phone). */
const MAX_WRITE_BODY_DEPTH = 16;

/** A body's media type is JSON (as the validator reads it): `application/json` or `application/…+json`. */
const JSON_MEDIA = /^application\/([\w.-]+\+)?json$/i;

/**
 * The body as the caller sent it, parsed (the validator's parse of it, which Hono keeps): what an Idempotency-Key
 * is bound to, with the method and the path, as canonical JSON; undefined when it is not JSON.
 */
async function sentBody(c: Context<AppEnv>): Promise<unknown> {
  const mediaType = (c.req.header('content-type') ?? '').split(';')[0]!.trim();
  if (!JSON_MEDIA.test(mediaType)) return undefined;
  return c.req.json().catch(() => undefined);
}

/**
 * A write whose body or target now fails (a 422, a 404), sent under an Idempotency-Key held for the last 24 hours:
 * answered as the key says (docs/decisions.md Writes): the same method, path and body replay the key's Operation,
 * anything else is a 409. A replay of a write accepted before stays a replay when its record has been deleted since
 * or its property has become ambiguous. Undefined when the key is not held, or the body is not JSON (its 400 or 415
 * stands). Asked only once a write fails: an accepted write pays no look-up for it.
 */
async function heldKeyAnswer(c: Context<AppEnv>, deps: ApiDeps): Promise<Response | undefined> {
  const principal = c.get('principal');
  const key = c.req.header('idempotency-key')!;
  const held = await heldIdempotencyKey(deps.db, { organizationId: principal.organizationId, mode: principal.mode, key });
  if (!held) return undefined;
  const sent = await sentBody(c);
  if (sent === undefined) return undefined;
  // A body nested deeper than any write's schema goes cannot be the one the key was made with (that one passed the
  // schema): a conflict, without canonicalizing it, which would run out of stack at some thousands of levels.
  const accepted: AcceptResult =
    !nestsDeeperThan(sent, MAX_WRITE_BODY_DEPTH) && requestHashOf(c.req.method, c.req.path, sent) === held.requestHash
      ? { outcome: 'replayed', operation: held.operation }
      : { outcome: 'conflict', operationId: held.operation.id };
  return answerAccepted(c, deps, accepted, held.operation.targetId);
}

/**
 * Accept a write: the Operation under the caller's idempotency key (created, or the one the key already made), its
 * workflow started, and the 202. The key binds the method, the path and the canonical body as sent (the validator
 * parsed it as JSON, and Hono keeps the parse).
 */
async function acceptWrite(c: Context<AppEnv>, deps: ApiDeps, w: WriteRequest): Promise<Response> {
  const principal = c.get('principal');
  const key = c.req.header('idempotency-key')!;
  const accepted = await acceptOperation(deps.db, {
    organizationId: principal.organizationId,
    integrationId: w.integrationId,
    mode: principal.mode,
    type: operationTypeOf(w.entity, w.action),
    request: w.request,
    targetId: w.target?.id,
    targetXId: w.target?.xId,
    idempotencyKey: key,
    requestHash: requestHashOf(c.req.method, c.req.path, await c.req.json()),
  });
  return answerAccepted(c, deps, accepted, w.targetLabel ?? w.target?.id ?? null);
}

/** The 202 of an accepted or replayed write (its workflow started if no one has yet), or the 409 of a key in use. */
async function answerAccepted(c: Context<AppEnv>, deps: ApiDeps, accepted: AcceptResult, label: string | null): Promise<Response> {
  const key = c.req.header('idempotency-key')!;
  if (accepted.outcome === 'conflict') {
    throw new ApiError(
      'idempotency-key-conflict',
      `Idempotency-Key ${JSON.stringify(key)} was used for a different request (Operation ${accepted.operationId}). Use a new key for a new write; resend the original request unchanged to get its Operation.`,
    );
  }
  const op = accepted.operation;
  if (op.status === 'queued' && op.workflowStartedAt === null) {
    const started = await enqueue(deps, op, label);
    if (!started) {
      throw new ApiError(
        'enqueue_failed',
        `The write was stored as Operation ${op.id} but could not be queued. Poll GET /v1/operations/${op.id}; if it stays queued, resend the same request with the same Idempotency-Key.`,
        { extra: { operation_id: op.id } },
      );
    }
  }
  c.header('Location', `/v1/operations/${op.id}`);
  if (accepted.outcome === 'replayed') c.header('Idempotent-Replayed', 'true');
  return c.json(operationJson(op), 202);
}

export interface WriteRouteSpec<B extends z.ZodType> {
  method: 'post' | 'patch';
  /** `leases`, `units`, `residents`. */
  path: string;
  tag: string;
  entity: WritableEntity;
  body: B;
  /** The record schema: its fields that `body` lacks are "not writable". */
  record: z.ZodObject;
  summary: string;
  description: string;
  /** The write to make, from the validated body (and the path id of a PATCH). */
  build: (c: Context<AppEnv>, body: z.infer<B>, id: string | undefined) => Promise<Omit<WriteRequest, 'entity' | 'action'>>;
  /** The fields whose values must be among the source's write options, and the list of each. */
  coded?: Partial<Record<string, OptionList>>;
}

export function registerWrite<B extends z.ZodType>(app: OpenAPIHono<AppEnv>, deps: ApiDeps, options: WriteOptions, spec: WriteRouteSpec<B>): void {
  const action: WriteAction = spec.method === 'post' ? 'create' : 'update';
  const type = operationTypeOf(spec.entity, action);
  options.register(type, spec.body, spec.coded ?? {});
  const path = action === 'create' ? `/v1/${spec.path}` : `/v1/${spec.path}/{id}`;
  const params =
    action === 'update'
      ? {
          params: z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' }, example: `${ID_PREFIX[spec.entity]}01JH0000000000000000000000` }) }),
        }
      : {};
  app.openapi(
    createRoute({
      method: spec.method,
      path,
      tags: [spec.tag],
      operationId: `${action}_${spec.entity}`,
      summary: spec.summary,
      description: spec.description,
      middleware: [writeGuard] as const,
      request: {
        ...params,
        headers: IdempotencyHeader,
        body: { content: { 'application/json': { schema: spec.body } }, required: true },
      },
      responses: {
        202: {
          description: `Accepted: the Operation (\`${operationTypeOf(spec.entity, action)}\`). Poll \`Location\` until \`status\` is \`succeeded\` or \`failed\`.`,
          headers: {
            ...okHeaders,
            Location: { description: 'The Operation to poll.', schema: { type: 'string' as const } },
            'Idempotent-Replayed': { description: '`true` when the key had made this Operation already.', schema: { type: 'string' as const } },
          },
          content: { 'application/json': { schema: Operation } },
          links: {
            GetOperation: {
              operationId: 'retrieve_operation',
              parameters: { id: '$response.body#/id' },
              description: 'Poll the Operation until it is terminal.',
            },
          },
        },
        ...problemResponses(400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 502, 503),
      },
    }),
    async (c) => {
      const body = c.req.valid('json' as never) as z.infer<B>;
      const id = action === 'update' ? c.req.param('id') : undefined;
      const ctx = c as unknown as Context<AppEnv>;
      let w: Omit<WriteRequest, 'entity' | 'action'>;
      try {
        w = await spec.build(ctx, body, id);
        await options.check(ctx, type, w.integrationId, w.optionsAt, body as Record<string, unknown>);
      } catch (err) {
        // A target gone or now ambiguous, or a code the source no longer offers: a held key answers first.
        const held = err instanceof ApiError && (err.status === 404 || err.status === 422) ? await heldKeyAnswer(ctx, deps) : undefined;
        if (held) return held as never;
        throw err;
      }
      return acceptWrite(ctx, deps, { ...w, entity: spec.entity, action }) as never;
    },
    writeHook(deps, notWritableOf(spec.record, spec.body)) as never,
  );
}

/** `integration_id` in a body whose property already decides the integration narrows the look-up: no such property there is a 404. */
function sameIntegration(property: TargetRecord, chosen: string | undefined): void {
  if (chosen !== undefined && chosen.toLowerCase() !== property.integrationId) {
    throw new ApiError('not_found', `No property with id ${property.id} in integration ${chosen} (\`integration_id\`).`);
  }
}

/** The write of a unit or resident create: to the integration of the body's `property_id`, referenced by its x_id. */
export function atProperty(deps: ApiDeps) {
  return async (c: Context<AppEnv>, body: { property_id: string; integration_id?: string }): Promise<Omit<WriteRequest, 'entity' | 'action'>> => {
    const { property_id, integration_id, ...fields } = body;
    const property = await visibleRecord(deps, c.get('principal'), 'property', property_id, 'property_id');
    sameIntegration(property, integration_id);
    return {
      integrationId: property.integrationId,
      request: { property_x_id: property.xId, ...fields },
      targetLabel: property.id,
      optionsAt: async () => property.xId,
    };
  };
}

/** The write of a PATCH: to the record's integration, the body as it is. */
export function ofRecord(deps: ApiDeps, entity: WritableEntity) {
  return async (c: Context<AppEnv>, body: Record<string, unknown>, id: string | undefined): Promise<Omit<WriteRequest, 'entity' | 'action'>> => {
    const target = await visibleRecord(deps, c.get('principal'), entity, id!);
    return { integrationId: target.integrationId, request: body, target, optionsAt: () => propertyXIdOf(deps.db, entity, target.id) };
  };
}
