/**
 * The events feed while real syncs record events: a reader pages GET /v1/events with `after` during two
 * organizations' sync runs (the Temporal workflow over the sandbox PMS, whose unit and resident pages commit side by
 * side), and sees each of its organization's events exactly once, SYNC_COMPLETE after the run's changes.
 */
import { eq } from 'drizzle-orm';
import { expect, it } from 'vitest';
import type { Db } from '../../db/client';
import { events } from '../../db/schema';
import { createApiKey } from '../../db/tenants';
import type { TestServer } from '../support/api-server';
import { onServices } from '../support/services';
import { runSync, sandbox, sandboxIntegration, type TestWorker } from '../support/sync';
import type { WebhookStack } from '../support/webhooks';
import { until } from '../support/until';

let db: Db;
let worker: TestWorker;
let stack: WebhookStack;
let api: TestServer;

onServices({ pool: 8, settings: { WORKER_RECONCILE_SCHEDULES: 'false' }, worker: true, webhooks: true, api: true }, (s) => {
  ({ db, worker, webhooks: stack, api } = s);
});

async function page(key: string, after: string | undefined): Promise<{ results: { id: string; type: string }[]; meta: { hasMore: boolean } }> {
  const res = await api.get(`/v1/events?limit=10${after ? `&after=${after}` : ''}`, { key });
  expect(res.status).toBe(200);
  return (await res.json()) as never;
}

it('a reader paging while syncs record events sees each of its events exactly once, in production order', async () => {
  const [a, b] = await Promise.all([sandboxIntegration(db, { size: 60, plan: 'scale' }), sandboxIntegration(db, { size: 60, plan: 'scale', seed: 11 })]);
  for (const s of [a, b]) stack.orgs.add(s.row.organizationId);
  const { key } = await createApiKey(db, { organizationId: a.row.organizationId, mode: 'test' });
  await Promise.all([runSync(worker, db, a.row), runSync(worker, db, b.row)]);
  for (const s of [a, b]) {
    await sandbox().applyChanges(s.companyId, {
      update: { lease: 15, resident: 15, unit: 10, property: 2 },
      create: { resident: 8, unit: 4 },
      delete: { lease: 3 },
      lease_transitions: 6,
    });
  }

  const seen: { id: string; type: string }[] = [];
  let after: string | undefined;
  let syncing = true;
  const syncs = Promise.all([runSync(worker, db, a.row), runSync(worker, db, b.row)]).finally(() => (syncing = false));
  const read = async () => {
    for (;;) {
      const p = await page(key, after);
      seen.push(...p.results);
      if (p.results.length > 0) after = p.results.at(-1)!.id;
      if (!p.meta.hasMore) return;
    }
  };
  let readWhileSyncing = 0;
  while (syncing) {
    const before = seen.length;
    await read();
    if (syncing) readWhileSyncing += seen.length - before;
    // Paces the reader (not an absence proof): what it saw is checked once the feed can no longer change.
    await new Promise((r) => setTimeout(r, 25));
  }
  const [second] = await syncs;
  // The runs have ended, so every event of theirs is recorded; once the relay has numbered them all (within a second
  // of their commit) nothing more can enter the feed, and a last read to its end sees what the reader will ever see.
  const recorded = await until(
    'the relay to number every event of the organization',
    () => db.select({ id: events.id, position: events.position }).from(events).where(eq(events.organizationId, a.row.organizationId)),
    (rows) => rows.every((r) => r.position !== null),
    20_000,
  );
  await read();

  expect(second!.recordsUpdated + second!.recordsNew).toBeGreaterThan(10);
  expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
  expect(seen.map((e) => e.id).sort()).toEqual(recorded.map((r) => r.id).sort());
  expect(seen[0]!.type).toBe('FIRST_SYNC_COMPLETE');
  expect(seen.at(-1)!.type).toBe('SYNC_COMPLETE');
  expect(seen.filter((e) => e.type === 'SYNC_COMPLETE')).toHaveLength(1);
  // The reader did read while the runs were recording (beyond the first run's FIRST_SYNC_COMPLETE).
  expect(readWhileSyncing).toBeGreaterThan(1);
}, 180_000);
