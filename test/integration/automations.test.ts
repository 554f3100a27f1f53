/**
 * Automations against the real stack: a synced sandbox integration, the automation worker and its workflows on the
 * Temporal dev server, a real local HTTP destination and a directory; the CSV parsed back equals what the API lists;
 * transient failures retried on the (shrunk) schedule, a permanent one failing at once; AUTOMATION_COMPLETED and
 * AUTOMATION_FAILED recorded once and delivered to a subscriber; a schedule firing starts a run whose id is its
 * workflow id.
 */
import { mkdtemp, readdir, readFile, rm, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { NativeConnection } from '@temporalio/worker';
import { parse } from 'csv-parse/sync';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../config';
import { automationControlOf, ensureAutomationSchedule, startAutomationRun } from '../../control/automations';
import { closeDb, type Db } from '../../db/client';
import { getRun, insertAutomation, type AutomationRow } from '../../db/automations';
import { newId } from '../../db/ids';
import { automationRuns, events } from '../../db/schema';
import { automationRunWorkflowIdOf, automationScheduleIdOf } from '../../domain/contract';
import { csvColumns, MONEY_FIELDS, RECORD_FIELDS } from '../../domain/automations';
import type { Entity } from '../../domain/cdm';
import { sealAutomationHeaders } from '../../domain/secrets';
import { createAutomationActivities } from '../../activities/automations';
import type { ExportDeps } from '../../activities/export';
import { createAutomationWorker } from '../../worker/roles/automations';
import { startApi, type TestServer } from '../support/api-server';
import { testConfig, testDb, testKeyring } from '../support/context';
import { runSync, sandboxIntegration, startTestWorker, until, type SandboxIntegration, type TestWorker } from '../support/sync';
import { startReceiver, startWebhookStack, type Receiver, storeSubscription, type WebhookStack } from '../support/webhooks';
import { getJson, keyFor } from '../support/writes';

let db: Db;
let config: Config;
let syncs: TestWorker;
let stack: WebhookStack;
let api: TestServer;
let exportRoot: string;
let destination: Receiver;
let subscriber: Receiver;
let s: SandboxIntegration;
let key: string;
let client: Client;
let connection: NativeConnection;
let stopExports: () => Promise<void>;

beforeAll(async () => {
  db = testDb();
  exportRoot = await mkdtemp(join(tmpdir(), 'propsync-exports-'));
  config = testConfig({ WORKER_RECONCILE_SCHEDULES: 'false', AUTOMATION_RETRY_SCHEDULE_MS: '0,300,300,300', EXPORT_ROOT: exportRoot });
  [syncs, stack, api, destination, subscriber] = await Promise.all([
    startTestWorker(config, db),
    startWebhookStack(config, db),
    startApi(db, config),
    startReceiver(),
    startReceiver(),
  ]);
  connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS! });
  client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const worker = await createAutomationWorker({ config, db, connection });
  const running = worker.run();
  stopExports = async () => {
    worker.shutdown();
    await running;
  };
  s = await sandboxIntegration(db, { size: 40, plan: 'scale' });
  stack.orgs.add(s.row.organizationId);
  await runSync(syncs, db, s.row);
  key = await keyFor(db, s.row.organizationId);
  await storeSubscription(db, s.row, subscriber.url, { eventTypes: ['AUTOMATION_COMPLETED', 'AUTOMATION_FAILED'] });
}, 120_000);
afterAll(async () => {
  await stopExports?.();
  await connection?.close();
  await api?.close();
  await stack?.stop();
  await syncs?.stop();
  await destination?.close();
  await subscriber?.close();
  await closeDb(db);
  if (exportRoot) await rm(exportRoot, { recursive: true, force: true });
});

let n = 0;
async function automation(over: Partial<AutomationRow> & { headers?: Record<string, string> } = {}): Promise<AutomationRow> {
  n++;
  const id = newId('automation');
  const { headers, ...rest } = over;
  return insertAutomation(db, {
    id,
    organizationId: s.row.organizationId,
    integrationId: s.row.id,
    name: `Active leases ${n}`,
    entity: 'lease',
    filters: { status: 'active' },
    schedule: { every: 3600 },
    destination: { type: 'http', url: `${destination.url}/upload`, method: 'PUT' },
    destinationHeaders: headers ? sealAutomationHeaders(testKeyring(), id, headers) : null,
    status: 'active',
    ...rest,
  });
}

const control = () => ({ ...automationControlOf(client, config), db });

async function runToEnd(a: AutomationRow) {
  const run = await startAutomationRun(control(), a);
  await client.workflow
    .getHandle(automationRunWorkflowIdOf(run.id))
    .result()
    .catch(() => undefined);
  return (await getRun(db, run.id))!;
}

/** Fields whose values are objects or arrays: JSON text in the file, compared parsed. */
const JSON_FIELDS = new Set(['address', 'phones', 'media', 'custom_data', 'residents', 'resident_ids']);

/**
 * What the API lists for `query`, every page, as the file's cells of `fields`: Money as amount and currency, null as
 * '', objects and arrays as values (the file's JSON text parsed), text escaped for spreadsheets (OWASP, on by
 * default: a leading `'` before = + - @ TAB CR).
 */
async function listedRows(entity: Entity, path: string, query: string, fields = RECORD_FIELDS[entity]): Promise<unknown[][]> {
  const out: unknown[][] = [];
  const money = new Set(MONEY_FIELDS[entity]);
  const text = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);
  for (let offset = 0; ; offset += 100) {
    const page = (await getJson(api.url, `/v1/${path}?${query}&limit=100&offset=${offset}&integration_id=${s.row.id}`, key)).body;
    for (const r of page.results as Record<string, unknown>[]) {
      out.push(
        fields.flatMap((f): unknown[] => {
          const v = r[f];
          if (money.has(f)) return v ? [String((v as { amount: number }).amount), text((v as { currency: string }).currency)] : ['', ''];
          if (v === null || v === undefined) return [''];
          if (typeof v === 'object') return [v];
          return [typeof v === 'string' ? text(v) : String(v)];
        }),
      );
    }
    if (!page.meta.hasMore) return out;
  }
}

function parsed(body: Buffer | string): string[][] {
  return parse(body, { bom: true, relax_column_count: false }) as string[][];
}

/** A file's data rows with their JSON cells parsed, as listedRows gives them. */
function cellsOf(header: string[], rows: string[][]): unknown[][] {
  return rows.map((row) => row.map((cell, i) => (JSON_FIELDS.has(header[i]!) && cell !== '' ? (JSON.parse(cell) as unknown) : cell)));
}

describe('a run', () => {
  it('PUTs the CSV of the filtered leases to the destination; it equals what the API lists, row for row', async () => {
    const a = await automation({ headers: { authorization: 'Bearer dest-secret' } });
    const before = destination.received.length;
    const run = await runToEnd(a);
    expect(run).toMatchObject({ status: 'succeeded', attempts: 1, error: null, fileName: `Active leases ${n}-${run.id}.csv` });
    const got = destination.received.slice(before);
    expect(got).toHaveLength(1);
    const req = got[0]!;
    expect(req.headers['content-type']).toMatch(/^text\/csv/);
    expect(req.headers.authorization).toBe('Bearer dest-secret');
    const [header, ...rows] = parsed(req.raw);
    expect(header).toEqual(csvColumns('lease'));
    const want = await listedRows('lease', 'leases', 'status=active');
    expect(want.length).toBeGreaterThan(3);
    expect(cellsOf(header!, rows)).toEqual(want);
    expect(run.recordsExported).toBe(want.length);

    const evs = await db.select().from(events).where(eq(events.automationRunId, run.id));
    expect(evs.map((e) => e.type)).toEqual(['AUTOMATION_COMPLETED']);
    expect(evs[0]!.data).toEqual({ automation_id: a.id, automation_name: a.name, run_id: run.id, records_exported: want.length, file_name: run.fileName });
    const delivered = await subscriber.waitFor((r) => r.some((x) => (x.body.data as { run_id?: string })?.run_id === run.id));
    const envelope = delivered.find((x) => (x.body.data as { run_id?: string })?.run_id === run.id)!.body;
    expect(envelope).toMatchObject({ type: 'AUTOMATION_COMPLETED', category: 'automation', integration_id: s.row.id });
  });

  it('writes the file into its directory under the export root, whole, and only the chosen columns', async () => {
    await mkdir(join(exportRoot, 'nightly'), { recursive: true });
    const a = await automation({
      entity: 'unit',
      filters: {},
      columns: ['id', 'unit_number', 'market_rent', 'address'],
      destination: { type: 'directory', path: 'nightly' },
    });
    const run = await runToEnd(a);
    expect(run.status).toBe('succeeded');
    expect(await readdir(join(exportRoot, 'nightly'))).toEqual([run.fileName]);
    const [header, ...rows] = parsed(await readFile(join(exportRoot, 'nightly', run.fileName)));
    expect(header).toEqual(['id', 'unit_number', 'market_rent_amount', 'market_rent_currency', 'address']);
    expect(cellsOf(header!, rows)).toEqual(await listedRows('unit', 'units', 'include_deleted=false', ['id', 'unit_number', 'market_rent', 'address']));
  });
});

describe('a firing', () => {
  it('asking again (its answer was lost) gets the run it made, not a second one', async () => {
    const a = await automation();
    const acts = createAutomationActivities({ db, exports: {} as ExportDeps });
    const firing = new MockActivityEnvironment({ workflowExecution: { workflowId: `automation-tick-${a.id}-${randomUUID()}`, runId: randomUUID() } });
    const first: { runId: string } | null = await firing.run(acts.createScheduledRun, { automationId: a.id });
    const again: { runId: string } | null = await firing.run(acts.createScheduledRun, { automationId: a.id });
    expect(again).toEqual(first);
    expect(await db.select().from(automationRuns).where(eq(automationRuns.automationId, a.id))).toHaveLength(1);
    // Another firing makes a run of its own.
    const next = new MockActivityEnvironment({ workflowExecution: { workflowId: `automation-tick-${a.id}-${randomUUID()}`, runId: randomUUID() } });
    const other: { runId: string } | null = await next.run(acts.createScheduledRun, { automationId: a.id });
    expect(other?.runId).not.toBe(first?.runId);
  });
});

describe('failures', () => {
  it('a transient failure is retried on the schedule; the third attempt delivers', async () => {
    const a = await automation();
    let calls = 0;
    destination.reply(() => (++calls <= 2 ? 503 : 200));
    try {
      const run = await runToEnd(a);
      expect(run).toMatchObject({ status: 'succeeded', attempts: 3 });
      expect(calls).toBe(3);
    } finally {
      destination.reply(() => 200);
    }
  });

  it('is running (with its start time) while its first attempt is under way, and succeeded after it', async () => {
    const a = await automation();
    destination.reply(() => ({ status: 200, afterMs: 1_500 }));
    try {
      const run = await startAutomationRun(control(), a);
      expect(run.status).toBe('queued');
      let row = (await getRun(db, run.id))!;
      for (let i = 0; row.status === 'queued' && i < 200; i++) {
        await new Promise((r) => setTimeout(r, 25));
        row = (await getRun(db, run.id))!;
      }
      expect(row).toMatchObject({ status: 'running', attempts: 0, finishedAt: null });
      expect(row.startedAt).toBeInstanceOf(Date);
      await client.workflow.getHandle(automationRunWorkflowIdOf(run.id)).result();
      expect((await getRun(db, run.id))!).toMatchObject({ status: 'succeeded', attempts: 1, startedAt: row.startedAt });
    } finally {
      destination.reply(() => 200);
    }
  });

  it('a permanent failure (4xx) fails at once: AUTOMATION_FAILED with attempt 1 and the reason', async () => {
    const a = await automation();
    let calls = 0;
    destination.reply(() => (++calls, 403));
    try {
      const run = await runToEnd(a);
      expect(run).toMatchObject({ status: 'failed', attempts: 1 });
      expect(run.error).toMatch(/403/);
      expect(calls).toBe(1);
      const [ev] = await db.select().from(events).where(eq(events.automationRunId, run.id));
      expect(ev!.type).toBe('AUTOMATION_FAILED');
      expect(ev!.data).toMatchObject({
        automation_id: a.id,
        run_id: run.id,
        attempt_number: 1,
        error_message: expect.stringMatching(/403/),
        file_name: run.fileName,
      });
      await subscriber.waitFor((r) => r.some((x) => x.body.type === 'AUTOMATION_FAILED' && (x.body.data as { run_id?: string }).run_id === run.id));
    } finally {
      destination.reply(() => 200);
    }
  });

  it('transient failures to the last retry fail the run after 4 attempts, reported once', async () => {
    const a = await automation();
    destination.reply(() => 500);
    try {
      const run = await runToEnd(a);
      expect(run).toMatchObject({ status: 'failed', attempts: 4 });
      const evs = await db.select().from(events).where(eq(events.automationRunId, run.id));
      expect(evs.map((e) => [e.type, (e.data as { attempt_number: number }).attempt_number])).toEqual([['AUTOMATION_FAILED', 4]]);
    } finally {
      destination.reply(() => 200);
    }
  });

  it('a directory outside the export root fails at once and writes nothing', async () => {
    const a = await automation({ destination: { type: 'directory', path: '../outside' } });
    const run = await runToEnd(a);
    expect(run).toMatchObject({ status: 'failed', attempts: 1 });
  });
});

describe('the schedule', () => {
  it('a firing creates a run whose workflow id is the run id, and it runs to its end', async () => {
    const a = await automation();
    await ensureAutomationSchedule(automationControlOf(client, config), db, a);
    const handle = client.schedule.getHandle(automationScheduleIdOf(a.id));
    try {
      await handle.trigger();
      const run = await until('the scheduled run', async () => {
        const [row] = await db.select({ id: automationRuns.id }).from(automationRuns).where(eq(automationRuns.automationId, a.id));
        return row?.id;
      });
      // The run row is written by the firing's first activity, its workflow started just after: wait for the end.
      const ended = await until('the scheduled run to end', async () => {
        const row = await getRun(db, run);
        return row && (row.status === 'succeeded' || row.status === 'failed') ? row : undefined;
      });
      expect(ended).toMatchObject({ status: 'succeeded', trigger: 'schedule' });
      const described = await client.workflow.getHandle(automationRunWorkflowIdOf(run)).describe();
      expect(described.type).toBe('runAutomation');
    } finally {
      await handle.delete();
    }
  });
});
