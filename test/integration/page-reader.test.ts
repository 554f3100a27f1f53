/**
 * The sync's page reader against the running sandbox: pages read on a thread are the connector's pages, mapped and
 * hashed, the same as on the event loop; source failures keep their kind across the thread boundary.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { createPageReader, PageReaderError, type PageReader } from '../../activities/page-reader';
import { hashRecord, recordOf } from '../../domain/content';
import { sandboxControlClient, type SandboxControl } from '../../sandbox/control';
import { createConnector, SourcePermanentError, SourceTransientError, type EntrataSettings } from '../../source';

let ctl: SandboxControl;
let settings: EntrataSettings;
let threaded: PageReader;
let inline: PageReader;
const companyId = `pr-${randomUUID()}`;

beforeAll(async () => {
  ctl = sandboxControlClient(inject('sandboxUrl'), inject('sandboxControlToken'));
  const { api_key } = await ctl.createCompany({ companyId, size: 40, seed: 5 });
  settings = { base_url: inject('sandboxUrl'), api_key };
  const connector = { backoffMs: 10, maxAttempts: 2 };
  threaded = createPageReader({ threads: 1, connector });
  inline = createPageReader({ threads: 0, connector });
});
afterAll(async () => {
  await threaded.close();
  await inline.close();
});

describe('page reader', () => {
  it.each(['property', 'unit', 'resident', 'lease'] as const)('reads %s pages on a thread exactly as the connector reads them', async (entity) => {
    const direct = await createConnector(settings).readPage(entity, 2, 7);
    const [onThread, onLoop] = await Promise.all([threaded.read(settings, entity, 2, 7), inline.read(settings, entity, 2, 7)]);
    expect(onThread).toEqual(onLoop);
    expect(onThread.page).toBe(2);
    expect(onThread.hasMore).toBe(direct.hasMore);
    expect(onThread.records.map((r) => r.x_id)).toEqual(direct.records.map((r) => r.x_id));
    expect(onThread.records.map((r) => r.hash)).toEqual(direct.records.map((r) => hashRecord(r).hash));
    expect(onThread.records.map((r) => recordOf(r))).toEqual(direct.records);
  });

  it('reports the last page', async () => {
    const last = await threaded.read(settings, 'property', 1, 1000);
    expect(last.hasMore).toBe(false);
    expect(last.records.length).toBeGreaterThan(0);
  });

  it('keeps a permanent failure permanent across the thread', async () => {
    const err = await threaded.read({ ...settings, api_key: 'not-a-key' }, 'lease', 1, 10).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourcePermanentError);
    expect((err as Error).message).toMatch(/\S/);
  });

  it("a slow source's page never holds up another source's on the same thread", async () => {
    const slowId = `pr-slow-${randomUUID()}`;
    const { api_key } = await ctl.createCompany({ companyId: slowId, size: 5, seed: 6 });
    await ctl.setFault(slowId, { kind: 'slow', delay_ms: 4_000, methods: 'reads' });
    try {
      const order: string[] = [];
      const slow = threaded.read({ ...settings, api_key }, 'lease', 1, 10).then(() => order.push('slow'));
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The other source answers at once: its page must not wait for the slow one's (one thread, several in flight).
      await threaded.read(settings, 'lease', 1, 10).then(() => order.push('fast'));
      await slow;
      expect(order).toEqual(['fast', 'slow']);
    } finally {
      await ctl.clearFaults(slowId);
    }
  });

  it('keeps a transient failure transient across the thread', async () => {
    await ctl.setFault(companyId, { kind: 'unavailable', count: 5 });
    try {
      const err = await threaded.read(settings, 'lease', 1, 10).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SourceTransientError);
    } finally {
      await ctl.clearFaults(companyId);
    }
  });
});

describe('a page-reading thread that cannot load its code', () => {
  it.each([
    ['throws while loading', fileURLToPath(new URL('../support/broken-page-task.mjs', import.meta.url)), /a broken build/],
    ['is missing', fileURLToPath(new URL('../support/no-such-page-task.mjs', import.meta.url)), /Cannot find module/],
  ])('fails the read, and every later one, with the reason; the process carries on (its file %s)', async (_, taskFile, reason) => {
    const heard: Error[] = [];
    const broken = createPageReader({ threads: 1, taskFile, onThreadError: (e) => heard.push(e) });
    try {
      for (let i = 0; i < 2; i++) {
        const err = await broken.read(settings, 'lease', 1, 10).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PageReaderError);
        expect((err as Error).message).toContain(taskFile);
        expect((err as Error).message).toMatch(reason);
      }
      expect(heard.length).toBeGreaterThanOrEqual(1);
      expect(heard[0]!.message).toMatch(reason);
      // The readers that work are untouched.
      expect((await threaded.read(settings, 'property', 1, 5)).records.length).toBeGreaterThan(0);
    } finally {
      await broken.close();
    }
  });
});
