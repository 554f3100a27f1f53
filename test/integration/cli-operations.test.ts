/**
 * Operations for operators: `GET /admin/v1/operations/{id}`, `GET /admin/v1/integrations/{id}/operations` and the
 * CLI's `operations get|list` over them, the CLI as a child process against the served app. Operations are accepted
 * and moved straight in the database (the write workflow is not the subject here), so `get --wait` is seen
 * returning when another process finishes the write. The CLI reaches the API through a proxy that records each poll
 * and what it answered, to check the backoff. No admin reply ever carries the stored request body.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationPollDelayMs } from '../../cli/progress';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { getOperation, moveOperation, operationJson, requestHashOf, type OperationRow } from '../../db/operations';
import type { OperationType } from '../../domain/operations';
import type { TestServer } from '../support/api-server';
import { runCli, type CliRun } from '../support/cli';
import { makeTenant, type Tenant } from '../support/context';
import { onServices } from '../support/services';
import { until } from '../support/until';
import { acceptDriven } from '../support/writes';

type Json = Record<string, any>;
const ROOT = resolve(import.meta.dirname, '../..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');
/** A resident's personal data, in every stored request body: no admin reply or CLI output may show it. */
const PERSONAL = 'Lovelace-7f3a';

let db: Db;
let config: Config;
let api: TestServer;
let doc: Json;
let ajv: InstanceType<typeof Ajv2020>;
let proxy: { url: string; server: Server };
/** Each GET of an Operation through the proxy: when it arrived and what it answered. */
const polls: { id: string; at: number; status: string; attempts: number }[] = [];

onServices({ pool: 3, api: true }, (s) => ({ db, config, api } = s));
beforeAll(async () => {
  doc = (await (await api.get('/admin/v1/openapi.json')).json()) as Json;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'admin.json');
  proxy = await startProxy(api.url);
});
afterAll(async () => {
  await new Promise((r) => proxy?.server.close(r));
});

/** Forwards GETs to the API, noting every Operation read with the state it returned. */
async function startProxy(target: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const at = Date.now();
    void (async () => {
      const r = await fetch(target + req.url, { headers: { authorization: req.headers.authorization ?? '', accept: 'application/json' } });
      const body = Buffer.from(await r.arrayBuffer());
      const m = /^\/admin\/v1\/operations\/([^/?]+)$/.exec(req.url ?? '');
      if (m && r.status === 200) {
        const op = JSON.parse(body.toString()) as Json;
        polls.push({ id: m[1]!, at, status: op.status, attempts: op.reconcile.attempts });
      }
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
      res.end(body);
    })().catch((err: unknown) => {
      res.writeHead(502);
      res.end(String(err));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const cli = (args: string[]): Promise<CliRun> => runCli({ url: api.url, token: config.ADMIN_TOKEN }, args);
/** The CLI through the recording proxy. */
const proxied = (args: string[]): Promise<CliRun> => runCli({ url: proxy.url, token: config.ADMIN_TOKEN }, args);
const pollsOf = (id: string) => polls.filter((p) => p.id === id);

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The admin reply, checked against the admin document for its path and status, and free of any request body. */
async function admin(path: string, documented: string): Promise<{ status: number; type: string; body: Json }> {
  const res = await fetch(`${api.url}/admin/v1${path}`, { headers: { authorization: `Bearer ${config.ADMIN_TOKEN}` } });
  const text = await res.text();
  expect(text).not.toContain(PERSONAL);
  expect(text).not.toContain('"request"');
  const type = res.headers.get('content-type')!.split(';')[0]!;
  const body = JSON.parse(text) as Json;
  const ref = `admin.json#/paths/${escape(documented)}/get/responses/${res.status}/content/${escape(type)}/schema`;
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  expect(validate(body), `${documented} ${res.status}: ${JSON.stringify(validate.errors)}`).toBe(true);
  return { status: res.status, type, body };
}

/** A write accepted as the API accepts it, with a resident's name in its body. */
async function accept(t: Tenant, opts: { type?: OperationType; at?: Date } = {}): Promise<OperationRow> {
  const request = { property_x_id: 'P1', first_name: 'Ada', last_name: PERSONAL, email: 'ada@example.com' };
  const result = await acceptDriven(
    db,
    {
      organizationId: t.organizationId,
      integrationId: t.integrationId,
      mode: t.mode,
      type: opts.type ?? 'resident.create',
      request,
      idempotencyKey: randomUUID(),
      requestHash: requestHashOf('POST', '/v1/residents', request),
    },
    opts.at,
  );
  if (result.outcome !== 'created') throw new Error(`not created: ${result.outcome}`);
  return result.operation;
}

const reload = async (id: string): Promise<OperationRow> => (await getOperation(db, id))!;

const succeed = (id: string) =>
  moveOperation(db, id, 'succeeded', {
    sourceState: 'applied',
    appliedAt: new Date(),
    reconcileState: 'reconciled',
    resourceId: `res_${'0'.repeat(25)}1`,
    resourceXId: 'R77',
  });

function adminView(row: OperationRow) {
  return {
    ...operationJson(row),
    organization_id: row.organizationId,
    integration_id: row.integrationId,
    mode: row.mode,
    updated_at: row.updatedAt.toISOString(),
    workflow_id: row.id,
  };
}

describe('GET /admin/v1/operations/{id}', () => {
  it('is the public Operation plus its organization, integration, mode, updated_at and workflow id', async () => {
    const t = await makeTenant(db);
    const op = await accept(t, { type: 'lease.update' });
    const moved = (await moveOperation(db, op.id, 'running', {
      attempts: 1,
      nextAttemptAt: new Date(Date.now() + 5_000),
      lastError: 'source unavailable (503)',
    }))!;

    const { status, body } = await admin(`/operations/${op.id}`, '/operations/{id}');
    expect(status).toBe(200);
    expect(body).toEqual(adminView(moved));
    expect(body).toMatchObject({
      id: op.id,
      object: 'operation',
      status: 'running',
      workflow_id: op.id,
      reconcile: { attempts: 1, last_error: 'source unavailable (503)' },
    });

    // What a key of the tenant sees is exactly the admin view without the operator fields.
    const pub = (await (await api.get(`/v1/operations/${op.id}`, { key: t.key })).json()) as Json;
    const { organization_id: _o, integration_id: _i, mode: _m, updated_at: _u, workflow_id: _w, ...shared } = body;
    expect(shared).toEqual(pub);
  });

  it('is a 404 problem for an unknown or malformed id', async () => {
    for (const id of ['opr_01JH0000000000000000000000', 'opr_nope', 'syj_01JH0000000000000000000000', `res_${'0'.repeat(26)}`]) {
      const r = await admin(`/operations/${id}`, '/operations/{id}');
      expect(r.status, id).toBe(404);
      expect(r.type).toBe('application/problem+json');
      expect(r.body.detail).toBe(`No operation ${id}.`);
    }
  });
});

describe('GET /admin/v1/integrations/{id}/operations', () => {
  it("pages an integration's Operations newest first, filtered by status and type, never with their bodies", async () => {
    const t = await makeTenant(db);
    const other = await makeTenant(db);
    const base = Date.now() - 60_000;
    const at = (s: number) => new Date(base + s * 1000);
    const queued = await accept(t, { type: 'resident.create', at: at(1) });
    const succeeded = await accept(t, { type: 'lease.update', at: at(2) });
    const failed = await accept(t, { type: 'resident.update', at: at(3) });
    const running = await accept(t, { type: 'lease.update', at: at(4) });
    await accept(other, { at: at(5) });
    await succeed(succeeded.id);
    await moveOperation(db, failed.id, 'failed', { sourceState: 'rejected', reconcileState: 'failed', lastError: 'unit is occupied' });
    await moveOperation(db, running.id, 'running', { attempts: 2 });
    const path = '/integrations/{id}/operations';
    const list = (q = '') => admin(`/integrations/${t.integrationId}/operations${q}`, path);

    const all = await list();
    expect(all.status).toBe(200);
    expect(all.body.meta).toEqual({ limit: 25, offset: 0, hasMore: false });
    expect(all.body.results.map((o: Json) => o.id)).toEqual([running.id, failed.id, succeeded.id, queued.id]);
    expect(all.body.results[1]).toEqual(adminView(await reload(failed.id)));

    const ids = async (q: string) => ((await list(q)).body.results as Json[]).map((o) => o.id);
    expect(await ids('?status=failed,succeeded')).toEqual([failed.id, succeeded.id]);
    expect(await ids('?status=queued')).toEqual([queued.id]);
    expect(await ids('?type=lease.update')).toEqual([running.id, succeeded.id]);
    expect(await ids('?type=lease.update&status=succeeded')).toEqual([succeeded.id]);
    expect(await ids('?type=unit.create')).toEqual([]);

    const page = await list('?limit=2&offset=1');
    expect(page.body.meta).toEqual({ limit: 2, offset: 1, hasMore: true });
    expect(page.body.results.map((o: Json) => o.id)).toEqual([failed.id, succeeded.id]);

    const bad = await list('?status=done,failed');
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([{ pointer: 'status', detail: 'must be one or more of queued, running, succeeded, failed (comma-separated)' }]);
    expect((await list('?type=lease.delete')).status).toBe(422);
    expect((await list('?limit=0')).status).toBe(422);
    expect((await admin(`/integrations/${randomUUID()}/operations`, path)).status).toBe(404);
    expect((await admin('/integrations/nonsense/operations', path)).status).toBe(404);
  });
});

describe('operations get and list', () => {
  it('waits 1 s × 2^attempts between polls, at most 30 s (docs/api.md Operations rule 5)', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 1_000].map((a) => operationPollDelayMs(a))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('prints the admin view, and lists with --status and --limit', async () => {
    const t = await makeTenant(db);
    const a = await accept(t, { at: new Date(Date.now() - 2_000) });
    const b = await accept(t, { type: 'unit.update', at: new Date(Date.now() - 1_000) });
    await succeed(b.id);

    const got = await cli(['operations', 'get', a.id]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stderr).toBe('');
    expect(got.json).toEqual(adminView(await reload(a.id)));

    const listed = await cli(['operations', 'list', t.integrationId, '--status', 'queued,succeeded', '--limit', '1']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json.meta).toEqual({ limit: 1, offset: 0, hasMore: true });
    expect(listed.json.results).toEqual([adminView(await reload(b.id))]);
    const queued = await cli(['operations', 'list', t.integrationId, '--status', 'queued']);
    expect(queued.json.results.map((o: Json) => o.id)).toEqual([a.id]);
    for (const r of [got, listed, queued]) expect(r.stdout).not.toContain(PERSONAL);

    const help = await cli(['--help']);
    expect(help.stdout).toMatch(/operations +Writes \(Operations\).*: get, list/);
  });

  it('get --wait returns as soon as another process makes the write succeed, exit 0', async () => {
    const t = await makeTenant(db);
    const op = await accept(t);
    const run = proxied(['operations', 'get', op.id, '--wait']);
    let exited = false;
    void run.then(() => (exited = true));
    await until('the first poll', () => pollsOf(op.id).length >= 1);
    expect(exited).toBe(false);
    const done = (await succeed(op.id))!;
    const movedAt = Date.now();

    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.json).toEqual(adminView(done));
    // attempts 0: the next poll is a second away, so a fast write returns fast.
    const last = pollsOf(op.id).at(-1)!;
    expect(last.status).toBe('succeeded');
    expect(last.at - movedAt).toBeLessThan(2_000);
  });

  it('get --wait backs off with the attempts and exits 1 with the reason when the write fails', async () => {
    const t = await makeTenant(db);
    const op = await accept(t);
    const run = proxied(['operations', 'get', op.id, '--wait']);
    await until('the first poll', () => pollsOf(op.id).length >= 1);
    await moveOperation(db, op.id, 'running', { attempts: 1, lastError: 'source unavailable (503)', nextAttemptAt: new Date(Date.now() + 5_000) });
    await until('a poll that sees the retry', () => pollsOf(op.id).some((p) => p.attempts === 1));
    await moveOperation(db, op.id, 'running', { attempts: 2, lastError: 'source timed out' });
    await until('a poll that sees the second retry', () => pollsOf(op.id).some((p) => p.attempts === 2));
    const failed = (await moveOperation(db, op.id, 'failed', {
      attempts: 3,
      sourceState: 'rejected',
      reconcileState: 'failed',
      nextAttemptAt: null,
      lastError: 'The source rejected the write:\n  unit 12 is occupied',
    }))!;

    const r = await run;
    expect(r.code).toBe(1);
    expect(r.json).toEqual(adminView(failed));
    expect(r.stderr).toBe(`error: operation ${op.id} failed: The source rejected the write: unit 12 is occupied\n`);

    // Each poll waited 1 s × 2^attempts after the answer before it, and at attempts 0 less than 2 s.
    const seen = pollsOf(op.id);
    expect(seen.at(-1)!.status).toBe('failed');
    for (let i = 1; i < seen.length; i++) {
      const gap = seen[i]!.at - seen[i - 1]!.at;
      expect(gap, `poll ${i} after attempts=${seen[i - 1]!.attempts}`).toBeGreaterThanOrEqual(operationPollDelayMs(seen[i - 1]!.attempts) - 50);
      if (seen[i - 1]!.attempts === 0) expect(gap).toBeLessThan(2_000);
    }
    expect(seen.filter((p) => p.attempts === 2).length).toBeGreaterThanOrEqual(1);
  });

  it('get --wait on a terminal Operation returns at once', async () => {
    const t = await makeTenant(db);
    const op = await accept(t);
    await moveOperation(db, op.id, 'failed', { reconcileState: 'failed', lastError: null });
    const r = await proxied(['operations', 'get', op.id, '--wait']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: operation ${op.id} failed: no error recorded\n`);
    expect(pollsOf(op.id)).toHaveLength(1);
  });

  it('get --wait --timeout gives up with exit 1 and prints the last state seen', async () => {
    const t = await makeTenant(db);
    const op = await accept(t);
    const started = Date.now();
    const r = await proxied(['operations', 'get', op.id, '--wait', '--timeout', '2']);
    expect(r.code).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(r.json).toEqual(adminView(await reload(op.id)));
    expect(r.stderr).toBe(`error: operation ${op.id} is still queued after 2 s; stopped waiting (the write goes on)\n`);
    const seen = pollsOf(op.id);
    expect(seen.at(-1)!.at - seen[0]!.at).toBeGreaterThanOrEqual(1_950);
  });

  it('answers an unknown id with the 404 and refuses a bad --timeout', async () => {
    for (const args of [['opr_01JH0000000000000000000000'], ['nonsense', '--wait']]) {
      const r = await cli(['operations', 'get', ...args]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^error: 404 Not Found: No operation ${args[0]}\\. \\(request \\S+\\)\\n$`));
    }
    const unknownIntegration = await cli(['operations', 'list', randomUUID()]);
    expect(unknownIntegration.code).toBe(1);
    expect(unknownIntegration.stderr).toMatch(/^error: 404 Not Found: No integration /);
    const badStatus = await cli(['operations', 'list', randomUUID(), '--status', 'done']);
    expect(badStatus.code).toBe(1);

    const zero = await cli(['operations', 'get', 'opr_01JH0000000000000000000000', '--wait', '--timeout', '0']);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toBe('error: --timeout must be at least 1 second, got 0\n');
    const noWait = await cli(['operations', 'get', 'opr_01JH0000000000000000000000', '--timeout', '5']);
    expect(noWait.code).toBe(2);
    expect(noWait.stderr).toBe('error: --timeout applies to --wait only\n');
  });

  it('shows a line per change on stderr when it is a terminal', async () => {
    const t = await makeTenant(db);
    const op = await accept(t);
    // util-linux `script` gives the CLI a pseudo-terminal; everything it writes comes back on one stream.
    const command = [TSX, 'cli/main.ts', 'operations', 'get', op.id, '--wait', '--url', proxy.url, '--token', config.ADMIN_TOKEN].join(' ');
    const run: Promise<string> = new Promise((done, fail) =>
      execFile(
        'script',
        ['-qec', command, '/dev/null'],
        { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'xterm' }, timeout: 60_000 },
        (err, stdout) => (err ? fail(err) : done(stdout)),
      ),
    );
    await until('the first poll', () => pollsOf(op.id).length >= 1);
    await moveOperation(db, op.id, 'running', { attempts: 1, lastError: 'source unavailable (503)', nextAttemptAt: new Date('2030-01-01T00:00:00Z') });
    await until('a poll that sees the retry', () => pollsOf(op.id).some((p) => p.attempts === 1));
    await succeed(op.id);
    const lines = (await run).replace(/\r/g, '').split('\n');
    const progress = lines.filter((l) => l.startsWith('operation '));
    expect(progress).toEqual([
      expect.stringMatching(new RegExp(`^operation ${op.id} queued: 0 failed attempt\\(s\\), next attempt at \\S+ \\(00:0\\d\\)$`)),
      expect.stringMatching(
        new RegExp(
          `^operation ${op.id} running: 1 failed attempt\\(s\\), next attempt at 2030-01-01T00:00:00.000Z, last error: source unavailable \\(503\\) \\(00:0\\d\\)$`,
        ),
      ),
      expect.stringMatching(new RegExp(`^operation ${op.id} succeeded: 1 failed attempt\\(s\\), last error: source unavailable \\(503\\) \\(00:0\\d\\)$`)),
    ]);
    expect(lines.join('\n')).toContain('"status": "succeeded"');
  });
});
