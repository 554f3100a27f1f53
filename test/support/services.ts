/**
 * What most integration test files start before their tests and stop after them: a pool of their own on the test
 * database, a configuration with their own task queue, and the services they ask for on those (the API over HTTP, the
 * sync worker, the webhook delivery worker with its relay, the write worker, a local webhook receiver, a Temporal
 * client); or, for the files whose facts no other file may touch, a database of their own.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import postgres from 'postgres';
import { afterAll, beforeAll, inject } from 'vitest';
import type { Resolver } from '../../activities/webhook-http';
import type { Config } from '../../config';
import { closeDb, createDb, type Db } from '../../db/client';
import { migrateDatabase } from '../../db/migrate';
import { startApi, type TestServer } from './api-server';
import { testConfig, testDb } from './context';
import { startTestWorker, type TestWorker } from './sync';
import { startReceiver, startWebhookStack, type Receiver, type WebhookStack } from './webhooks';
import { startWriteWorker, type WriteWorker } from './writes';

/** The services a file may ask for, by the name it asks with. */
interface Available {
  /** The app served over HTTP on the file's pool (startApi). */
  api: TestServer;
  /** Two apps, each on a pool of its own, as two API processes sharing the database are. */
  apis: [TestServer, TestServer];
  /** The sync worker of the file's task queue (startTestWorker). */
  worker: TestWorker;
  /** The webhook delivery worker and the outbox relay of the file's organizations (startWebhookStack). */
  webhooks: WebhookStack;
  /** The write worker of the file's task queue (startWriteWorker). */
  writes: WriteWorker;
  /** A local webhook receiver (startReceiver). */
  receiver: Receiver;
  /** A Temporal client on its own connection, to see workflows and schedules as Temporal has them. */
  temporal: Client;
}

export interface ServicesOptions {
  /** Connections of the file's pool (testDb's default when left out). */
  pool?: number;
  /** Settings over testConfig()'s. */
  settings?: Record<string, string>;
  /** The API's sandbox routes reach the test sandbox (SANDBOX_URL and its control token). */
  sandbox?: boolean;
  api?: boolean;
  apis?: boolean;
  worker?: boolean;
  /** `resolver`: how the delivery worker resolves receivers' host names. */
  webhooks?: boolean | { resolver: Resolver };
  writes?: boolean;
  receiver?: boolean;
  temporal?: boolean;
}

/** The file's pool and configuration, and each service the options ask for. */
export type Services<O extends ServicesOptions> = { db: Db; config: Config } & {
  [K in keyof Available as K extends keyof O ? (O[K] extends false | undefined ? never : K) : never]: Available[K];
};

type Started = { db?: Db; config?: Config; pools: Db[]; apis: TestServer[] } & { [K in Exclude<keyof Available, 'apis'>]?: Available[K] };

/** Stops what was started, the APIs first and the pools last, so that nothing is left using what stops before it. */
async function stopAll(s: Started): Promise<void> {
  await s.api?.close();
  // (map passes over the place of an API that did not start)
  await Promise.all(s.apis.map((api) => api.close()));
  await s.webhooks?.stop();
  await s.worker?.stop();
  await s.writes?.stop();
  await s.receiver?.close();
  await s.temporal?.connection.close();
  for (const db of s.pools) await closeDb(db);
}

/** A pool of the file's, closed after its tests. */
function pool(s: Started, max: number | undefined): Db {
  const db = testDb(max);
  s.pools.push(db);
  return db;
}

/**
 * Before the file's (or the describe block's) tests: its pool, its configuration and the services `opts` asks for,
 * started side by side and handed to `set`; after them, whatever started is stopped and the pools are closed. Hooks
 * registered after this call run after the services start, and their afterAll hooks before the services stop.
 */
export function onServices<O extends ServicesOptions>(opts: O, set: (started: Services<O>) => void): void {
  const s: Started = { pools: [], apis: [] };
  beforeAll(async () => {
    const db = pool(s, opts.pool);
    const sandbox: Record<string, string> = opts.sandbox ? { SANDBOX_URL: inject('sandboxUrl'), SANDBOX_CONTROL_TOKEN: inject('sandboxControlToken') } : {};
    const config = testConfig({ ...sandbox, ...opts.settings });
    Object.assign(s, { db, config });
    const webhooks = opts.webhooks;
    // Each start records what it started as soon as it has, so that a failure of another leaves nothing running.
    const starts = await Promise.allSettled([
      opts.api && startApi(db, config).then((api) => (s.api = api)),
      ...(opts.apis ? [db, pool(s, opts.pool)].map((own, i) => startApi(own, config).then((api) => (s.apis[i] = api))) : []),
      opts.worker && startTestWorker(config, db).then((worker) => (s.worker = worker)),
      webhooks && startWebhookStack(config, db, webhooks === true ? {} : webhooks).then((stack) => (s.webhooks = stack)),
      opts.writes && startWriteWorker(config, db).then((writes) => (s.writes = writes)),
      opts.receiver && startReceiver().then((receiver) => (s.receiver = receiver)),
      opts.temporal && Connection.connect({ address: config.TEMPORAL_ADDRESS! }).then((connection) => (s.temporal = new Client({ connection }))),
    ]);
    for (const start of starts) if (start.status === 'rejected') throw start.reason;
    set(s as unknown as Services<O>);
  });
  afterAll(() => stopAll(s));
}

/**
 * An extra app for the tests of the describe block it is called in (a misconfigured one, say): `start` serves it
 * before them, and it is closed after them. What it returns gives the app's address to those tests.
 */
export function onApi(start: () => Promise<TestServer>): { readonly url: string } {
  let api: TestServer | undefined;
  beforeAll(async () => {
    api = await start();
  });
  afterAll(() => api?.close());
  return {
    get url() {
      if (!api) throw new Error('the app is served from the beforeAll hooks on: read its url in a test');
      return api.url;
    },
  };
}

/**
 * A migrated database of the file's own (`propsync_<name>_…`, on the test server), for facts no other file's rows may
 * change: made before the file's tests with a pool of `max` connections on it, both handed to `set`; after them (and
 * after the afterAll hooks registered later, which stop what uses it) the pool is closed and the database dropped.
 */
export function onOwnDatabase(name: string, set: (own: { url: string; db: Db }) => void, max = 3): void {
  let url: string | undefined;
  let db: Db | undefined;
  beforeAll(async () => {
    const u = new URL(inject('adminDatabaseUrl'));
    u.pathname = `/propsync_${name}_${randomUUID().slice(0, 8)}`;
    url = u.toString();
    await migrateDatabase(url);
    db = createDb(url, { max });
    set({ url, db });
  });
  afterAll(async () => {
    if (db) await closeDb(db);
    if (!url) return;
    const sql = postgres(inject('adminDatabaseUrl'), { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists "${new URL(url).pathname.slice(1)}" with (force)`).catch(() => {});
    await sql.end();
  });
}
