/**
 * What the write-back tests share: a write worker on the file's own task queue, an API key of a sandbox
 * integration's organization, and writing over HTTP: POST/PATCH with an Idempotency-Key, polling the Operation.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { newId } from '../../db/ids';
import { acceptOperation, markWorkflowStarted, type AcceptResult, type NewOperation } from '../../db/operations';
import type { OperationType } from '../../domain/operations';
import type { SourceConnector } from '../../source';
import { createApiKey, type Scope } from '../../db/tenants';
import { createWriteWorker } from '../../worker/roles/writes';
import type { Tenant } from './context';
import { runInProcess, type InProcessWorker } from './sync';
import { until } from './until';

export type WriteWorker = InProcessWorker;

/**
 * An Entrata-style source connector for activity tests: the methods given, every other one failing `unused` (a test
 * that reaches one did something it did not mean to).
 */
export function stubConnector(methods: Partial<Pick<SourceConnector, 'update' | 'readOne'>>): SourceConnector {
  const unused = () => Promise.reject(new Error('unused'));
  return {
    dialect: 'entrata',
    capabilities: { delta: false, idempotentCreates: false },
    update: unused,
    readOne: unused,
    create: unused,
    findCreated: unused,
    readPage: unused,
    readChangedPage: unused,
    readByIds: unused,
    readWriteOptions: unused,
    ...methods,
  };
}

/**
 * Accept an Operation straight into the database as the API does, but with no workflow: the test drives it. It is
 * marked as started all the same, so that no sweeper starts a workflow for it: the test files share one database,
 * and every write worker's schedule sweeps all of it every minute (the writes tests also sweep at once, whatever the
 * Operation's age).
 */
export async function acceptDriven(db: Db, input: NewOperation, now?: Date): Promise<AcceptResult> {
  const accepted = await acceptOperation(db, input, now);
  if (accepted.outcome === 'created') await markWorkflowStarted(db, [accepted.operation.id]);
  return accepted;
}

/** An Operation of `t` accepted straight into the database (no API, no workflow): its id, queued. */
export async function queuedOperation(
  db: Db,
  t: Pick<Tenant, 'organizationId' | 'integrationId' | 'mode'>,
  op: { type: OperationType; request: Record<string, unknown>; targetXId?: string },
): Promise<string> {
  const accepted = await acceptDriven(db, {
    organizationId: t.organizationId,
    integrationId: t.integrationId,
    mode: t.mode,
    ...op,
    idempotencyKey: newId('operation'),
    requestHash: 'h',
  });
  if (accepted.outcome !== 'created') throw new Error(`operation not created: ${accepted.outcome}`);
  return accepted.operation.id;
}

/** The write worker of this file's task queue, in this process until stop(). */
export function startWriteWorker(config: Config, db: Db): Promise<WriteWorker> {
  return runInProcess(config, (connection) => createWriteWorker({ config, db, connection }));
}

export async function keyFor(db: Db, organizationId: string, scopes?: Scope[]): Promise<string> {
  return (await createApiKey(db, { organizationId, mode: 'test', scopes })).key;
}

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

/** A write over HTTP: JSON body, bearer key, and an Idempotency-Key (a fresh one unless given; null: none). */
export async function write(
  url: string,
  method: 'POST' | 'PATCH',
  path: string,
  body: unknown,
  opts: { key: string; idempotencyKey?: string | null; headers?: Record<string, string>; raw?: string | Uint8Array },
): Promise<Reply> {
  const idem = opts.idempotencyKey === undefined ? randomUUID() : opts.idempotencyKey;
  const res = await fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${opts.key}`,
      'content-type': 'application/json',
      ...(idem === null ? {} : { 'idempotency-key': idem }),
      ...opts.headers,
    },
    body: opts.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

export async function getJson(url: string, path: string, key: string): Promise<Reply> {
  const res = await fetch(url + path, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** Poll an Operation (200 in every state, as docs/api.md says) until it is terminal; its last state when time is up. */
export function pollOperation(url: string, key: string, id: string, timeoutMs = 60_000): Promise<any> {
  return until(
    `operation ${id} to succeed or fail`,
    async () => {
      const r = await getJson(url, `/v1/operations/${id}`, key);
      expect(r.status).toBe(200);
      return r.body;
    },
    (op) => op.status === 'succeeded' || op.status === 'failed',
    { timeoutMs, intervalMs: 200 },
  );
}
