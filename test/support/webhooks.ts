/**
 * What the webhook tests share: a local receiver that records every request byte for byte, the delivery worker and
 * the outbox relay of this file (relaying only this file's organizations), and events recorded straight into the
 * outbox as the sync records them.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Resolver } from '../../activities/webhook-http';
import { parseConfig, type Config } from '../../config';
import { createLogger } from '../../config/logger';
import { deliveryControlOf, type DeliveryControlDeps } from '../../control/webhooks';
import type { Db } from '../../db/client';
import { newId } from '../../db/ids';
import { events } from '../../db/schema';
import { createSubscription, type SubscriptionRow } from '../../db/webhooks';
import { createOrganization, type IntegrationRow } from '../../db/tenants';
import { categoryOf, type EventType } from '../../domain/events';
import type { Mode, Plan } from '../../domain/plans';
import { createKeyring } from '../../domain/secrets';
import { createWebhookWorker, type WebhookWorker } from '../../worker/roles/webhooks';
import { startRelay, type Relay } from '../../worker/roles/relay';
import { unsyncedIntegration } from './fixtures';
import { until } from './until';

export interface Received {
  headers: IncomingMessage['headers'];
  raw: Buffer;
  body: Record<string, unknown>;
  at: number;
  path: string;
}

/** How the receiver answers one request: a status, a status after a delay (a slow receiver), or `hang` (never answer). */
export type Reply = number | 'hang' | { status: number; afterMs: number };

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Sets how the next requests are answered (default 200); `fn` sees the request about to be answered. */
  reply(fn: (r: Received) => Reply): void;
  /** Waits until `predicate` holds for what was received. */
  waitFor(predicate: (received: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  let replyFn: (r: Received) => Reply = () => 200;
  const hanging = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        // recorded as is
      }
      const r: Received = { headers: req.headers, raw, body, at: Date.now(), path: req.url ?? '/' };
      received.push(r);
      const reply = replyFn(r);
      if (reply === 'hang') {
        hanging.add(() => res.destroy());
        return;
      }
      const answer = (status: number) =>
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status >= 200 && status < 300 ? 'ok' : `no thanks (${status})`);
      if (typeof reply === 'number') return void answer(reply);
      const timer = setTimeout(() => {
        hanging.delete(cancel);
        answer(reply.status);
      }, reply.afterMs);
      const cancel = () => {
        clearTimeout(timer);
        res.destroy();
      };
      hanging.add(cancel);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    reply(fn) {
      replyFn = fn;
    },
    waitFor(predicate, timeoutMs = 30_000) {
      return until('the receiver to get what was awaited', () => received, predicate, {
        timeoutMs,
        intervalMs: 25,
        detail: () => `${received.length} received`,
      });
    },
    async close() {
      for (const h of hanging) h();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface WebhookStack {
  client: Client;
  control: DeliveryControlDeps;
  relay: Relay;
  webhooks: WebhookWorker;
  /** Organizations whose events this file's relay dispatches. */
  orgs: Set<string>;
  stop(): Promise<void>;
}

/** The delivery worker on the file's webhook task queue, and a relay scoped to the file's organizations. */
export async function startWebhookStack(config: Config, db: Db, opts: { resolver?: Resolver } = {}): Promise<WebhookStack> {
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS! });
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const webhooks = await createWebhookWorker({ config, db, connection, resolver: opts.resolver });
  const running = webhooks.run();
  const control = deliveryControlOf(client, config);
  const orgs = new Set<string>();
  const logger = createLogger('relay-test', { level: 'silent' });
  const relay = startRelay({ db, control, logger, scope: () => [...orgs], pollMs: 200 });
  return {
    client,
    control,
    relay,
    webhooks,
    orgs,
    async stop() {
      await relay.stop();
      webhooks.shutdown();
      await running;
      await webhooks.close();
      await connection.close();
    },
  };
}

/** An organization with one integration (no real source) on a plan and mode, registered with the stack's relay. */
export async function webhookIntegration(db: Db, stack: Pick<WebhookStack, 'orgs'> | null, opts: { plan?: Plan; mode?: Mode } = {}): Promise<IntegrationRow> {
  const org = await createOrganization(db, { name: `wh-${randomUUID().slice(0, 8)}` });
  stack?.orgs.add(org.id);
  return unsyncedIntegration(db, org.id, { mode: opts.mode, plan: opts.plan ?? 'scale' });
}

/**
 * A subscription of `integration` to `url` stored straight in the database, as the admin API stores one (to every
 * event type unless told), its signing secret sealed with the test configuration's key.
 */
export function storeSubscription(
  db: Db,
  integration: Pick<IntegrationRow, 'id' | 'organizationId'>,
  url: string,
  opts: { eventTypes?: string[]; maxInFlight?: number } = {},
): Promise<{ row: SubscriptionRow; secret: string }> {
  return createSubscription(
    db,
    {
      organizationId: integration.organizationId,
      integrationId: integration.id,
      url,
      eventTypes: opts.eventTypes ?? ['*'],
      description: null,
      ...(opts.maxInFlight === undefined ? {} : { maxInFlight: opts.maxInFlight }),
    },
    createKeyring(parseConfig({}).ENCRYPTION_KEYS),
  );
}

/** Record events in the outbox the way the sync does (one insert, one transaction). Returns their ids in order. */
export async function recordEvents(db: Db, integration: IntegrationRow, drafts: { type: EventType; data: Record<string, unknown> }[]): Promise<string[]> {
  const now = new Date();
  const rows = drafts.map((d) => ({
    id: newId('event'),
    organizationId: integration.organizationId,
    integrationId: integration.id,
    mode: integration.mode,
    type: d.type,
    category: categoryOf(d.type),
    data: d.data,
    createdAt: now,
  }));
  await db.insert(events).values(rows);
  return rows.map((r) => r.id);
}

/** `n` RESIDENT_UPDATED events with distinct content. */
export function residentUpdates(n: number, tag = 'x'): { type: EventType; data: Record<string, unknown> }[] {
  return Array.from({ length: n }, (_, i) => ({
    type: 'RESIDENT_UPDATED' as const,
    data: {
      id: `res_${tag}${i}`,
      x_id: String(1000 + i),
      phones: [{ type: 'mobile', number: `555-01${i}`, primary: true }],
      updated_at: new Date().toISOString(),
      changed: ['phones'],
    },
  }));
}
