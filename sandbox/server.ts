/**
 * The sandbox PMS as an HTTP service. It serves two flavours, each one wire over the same record model
 * (sandbox/model.ts), generator, change scripts and faults:
 *   entrata   the Entrata-style RPC API (sandbox/entrata/): POST /<service>, key in X-Api-Key;
 *   buildium  the Buildium-style REST API (sandbox/buildium/, docs/sources/buildium.md): /v1/..., client id and
 *             secret headers.
 * A company is created in one flavour and answers only there. Control endpoints under /control (bearer token) serve
 * the admin API, tests and demos:
 *   POST   /control/companies                {companyId, size, seed, dialect?, rate_limit_per_second?}
 *                                            -> 201 {api_key, dialect, client_id?, client_secret?} (200, the same, again)
 *   GET    /control/companies/:id            -> {company_id, dialect, size, seed, change_counter, counts}
 *   DELETE /control/companies/:id            -> 204
 *   POST   /control/companies/:id/changes    SandboxChangeRequest -> 200 SandboxChangeResult
 *   POST   /control/companies/:id/faults     {kind, count?, delay_ms?, methods?} -> 204 (one fault per kind: replaced)
 *   DELETE /control/companies/:id/faults     -> 204
 * Control errors are JSON `{error: {code, message}}` with a fitting status.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import postgres from 'postgres';
import { z } from 'zod';
import { config } from '../config';
import type { Logger } from '../config/logger';
import { applyChanges, ChangeError } from './changes';
import { buildiumRoutes } from './buildium/routes';
import { rpcRoutes } from './entrata/routes';
import { insertGenerated } from './generator';
import { clearFaults, DIALECTS, ensureSchema, FAULT_KINDS, FAULT_SCOPES, setFault, type Dialect, type FaultKind, type FaultScope, type Sql } from './store';

export interface SandboxOptions {
  databaseUrl: string;
  port: number;
  host?: string;
  /** Bearer token of /control; default the configuration's SANDBOX_CONTROL_TOKEN. */
  controlToken?: string;
  /** Delay of a `slow` fault without its own delay; default the configuration's SANDBOX_SLOW_MS. */
  slowMs?: number;
  /** Connections in the sandbox's own pool. */
  poolMax?: number;
  logger?: Logger;
}

export interface RunningSandbox {
  url: string;
  close(): Promise<void>;
}

/** Largest company the generator makes (leases). */
const MAX_SIZE = 250_000;

const companyIdSchema = z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/, 'letters, digits and _ . : - only, at most 200');
const createSchema = z.object({
  companyId: companyIdSchema,
  size: z.number().int().min(1).max(MAX_SIZE),
  seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  /** The wire the company is served in (default entrata). */
  dialect: z.enum(DIALECTS as [Dialect, ...Dialect[]]).default('entrata'),
  /** Requests per second per client the buildium flavour accepts before answering 429 (default 50). */
  rate_limit_per_second: z.number().int().min(1).max(100_000).default(50),
});
const count = z.number().int().min(0).max(100_000);
const perEntity = z.union([count, z.object({ property: count, unit: count, resident: count, lease: count }).partial().strict()]);
const changesSchema = z.object({ update: perEntity, create: perEntity, delete: perEntity, lease_transitions: count, corrupt: perEntity }).partial().strict();
const faultSchema = z
  .object({
    kind: z.enum(FAULT_KINDS as [FaultKind, ...FaultKind[]]),
    count: z.number().int().min(1).max(1_000_000).optional(),
    /** Delay of a `slow` fault; ignored by the other kinds. */
    delay_ms: z.number().int().min(0).max(600_000).optional(),
    /** Which requests the fault affects (default all). */
    methods: z.enum(FAULT_SCOPES as [FaultScope, ...FaultScope[]]).optional(),
  })
  .strict()
  .refine((f) => !(f.kind === 'reject_writes' && f.methods === 'reads'), { path: ['methods'], message: 'reject_writes affects writes only' });

const problem = (c: Context, status: number, code: string, message: string) => c.json({ error: { code, message } }, status as 400);

const digest = (s: string) => createHash('sha256').update(s).digest();

function controlRoutes(sql: Sql, token: string, logger?: Logger): Hono {
  const app = new Hono();
  // Fixed-length digests compared in constant time: neither the token's content nor its length leaks by timing.
  const expected = digest(`Bearer ${token}`);
  app.use('*', async (c, next) => {
    if (!timingSafeEqual(digest(c.req.header('authorization') ?? ''), expected)) return problem(c, 401, 'unauthorized', 'missing or wrong control token');
    return next();
  });

  async function body<T>(c: Context, schema: z.ZodType<T>): Promise<T | Response> {
    let raw: unknown;
    try {
      raw = await c.req.json();
    } catch {
      return problem(c, 400, 'bad_request', 'the body is not JSON');
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      return problem(c, 422, 'validation_error', parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; '));
    }
    return parsed.data;
  }
  const companyId = (c: Context): string | undefined => {
    const id = c.req.param('id');
    return id && companyIdSchema.safeParse(id).success ? id : undefined;
  };
  const exists = async (id: string) => (await sql`select 1 from sandbox.companies where id = ${id}`).length > 0;

  /** What a client of the company's flavour authenticates with. */
  const credentials = (id: string, apiKey: string, dialect: Dialect) =>
    dialect === 'buildium' ? { api_key: apiKey, dialect, client_id: id, client_secret: apiKey } : { api_key: apiKey, dialect };

  app.post('/companies', async (c) => {
    const input = await body(c, createSchema);
    if (input instanceof Response) return input;
    const started = Date.now();
    const created = await sql.begin(async (tx) => {
      const apiKey = `sbx_${randomBytes(24).toString('base64url')}`;
      const [row] = await tx`
        insert into sandbox.companies (id, api_key, seed, size, next_ids, dialect, rate_limit_per_second)
        values (${input.companyId}, ${apiKey}, ${input.seed}, ${input.size}, '{}', ${input.dialect}, ${input.rate_limit_per_second})
        on conflict (id) do nothing returning api_key`;
      if (!row) return undefined;
      const nextIds = await insertGenerated(tx as unknown as Sql, input.companyId, input.seed, input.size);
      await tx`update sandbox.companies set next_ids = ${tx.json(nextIds)} where id = ${input.companyId}`;
      return apiKey;
    });
    if (created) {
      // Fresh pages have no visibility map or statistics yet: without them every page read scans the heap.
      await sql`vacuum analyze sandbox.records`;
      logger?.info({ companyId: input.companyId, dialect: input.dialect, size: input.size, ms: Date.now() - started }, 'sandbox company generated');
      return c.json(credentials(input.companyId, created, input.dialect), 201);
    }
    // The same company again: its own credentials, in the flavour it was created in.
    const [existing] = await sql<{ api_key: string; dialect: Dialect }[]>`select api_key, dialect from sandbox.companies where id = ${input.companyId}`;
    return c.json(credentials(input.companyId, existing!.api_key, existing!.dialect), 200);
  });

  app.get('/companies/:id', async (c) => {
    const id = companyId(c);
    const [row] = id
      ? await sql<{ size: number; seed: string; change_counter: number; dialect: Dialect }[]>`
          select size, seed, change_counter, dialect from sandbox.companies where id = ${id}`
      : [];
    if (!id || !row) return problem(c, 404, 'not_found', 'no such company');
    const counts = await sql<{ entity: string; n: number }[]>`
      select entity, count(*)::int as n from sandbox.records where company_id = ${id} group by entity`;
    return c.json({
      company_id: id,
      dialect: row.dialect,
      size: row.size,
      seed: Number(row.seed),
      change_counter: row.change_counter,
      counts: Object.fromEntries(['property', 'unit', 'resident', 'lease'].map((e) => [e, counts.find((r) => r.entity === e)?.n ?? 0])),
    });
  });

  app.delete('/companies/:id', async (c) => {
    const id = companyId(c);
    if (id) await sql`delete from sandbox.companies where id = ${id}`;
    return c.body(null, 204);
  });

  app.post('/companies/:id/changes', async (c) => {
    const id = companyId(c);
    if (!id || !(await exists(id))) return problem(c, 404, 'not_found', 'no such company');
    const input = await body(c, changesSchema);
    if (input instanceof Response) return input;
    try {
      return c.json(await applyChanges(sql, id, input));
    } catch (err) {
      if (err instanceof ChangeError) return problem(c, 404, 'not_found', err.message);
      throw err;
    }
  });

  app.post('/companies/:id/faults', async (c) => {
    const id = companyId(c);
    if (!id || !(await exists(id))) return problem(c, 404, 'not_found', 'no such company');
    const input = await body(c, faultSchema);
    if (input instanceof Response) return input;
    await setFault(sql, id, { kind: input.kind, remaining: input.count ?? null, delay_ms: input.delay_ms ?? null, methods: input.methods ?? 'all' });
    return c.body(null, 204);
  });

  app.delete('/companies/:id/faults', async (c) => {
    const id = companyId(c);
    if (!id || !(await exists(id))) return problem(c, 404, 'not_found', 'no such company');
    await clearFaults(sql, id);
    return c.body(null, 204);
  });
  return app;
}

/** Build the sandbox's Hono app over a Postgres pool (schema already ensured). */
function sandboxApp(sql: Sql, opts: { controlToken: string; slowMs: number; logger?: Logger }): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.route('/control', controlRoutes(sql, opts.controlToken, opts.logger));
  app.route('/v1', buildiumRoutes({ sql, slowMs: opts.slowMs }));
  app.route('/', rpcRoutes({ sql, slowMs: opts.slowMs }));
  app.notFound((c) => problem(c, 404, 'not_found', `no route for ${c.req.method} ${c.req.path}`));
  app.onError((err, c) => {
    opts.logger?.error({ err }, 'sandbox request failed');
    return problem(c, 500, 'internal_error', 'the sandbox failed to handle the request');
  });
  return app;
}

/** Start the sandbox PMS: ensure its schema, then listen. `port: 0` picks a free port. */
export async function startSandbox(opts: SandboxOptions): Promise<RunningSandbox> {
  const sql = postgres(opts.databaseUrl, {
    max: opts.poolMax ?? 5,
    onnotice: () => {},
    connection: { application_name: 'propsync-sandbox' },
  });
  await ensureSchema(sql);
  const app = sandboxApp(sql, {
    controlToken: opts.controlToken ?? config().SANDBOX_CONTROL_TOKEN,
    slowMs: opts.slowMs ?? config().SANDBOX_SLOW_MS,
    logger: opts.logger,
  });
  const host = opts.host ?? '127.0.0.1';
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: opts.port, hostname: host }, () => resolve(s));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  return {
    url,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await sql.end({ timeout: 5 });
    },
  };
}
