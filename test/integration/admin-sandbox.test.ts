/**
 * The admin API with the sandbox PMS and a real worker behind it: a sandbox integration is provisioned, synced at
 * once and readable with a key made by the admin API; sandbox changes and faults (with their delay and scope) reach
 * the source; deletion removes the company; an unreachable sandbox leaves nothing behind.
 */
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { Config } from '../../config';
import type { Db } from '../../db/client';
import { integrations } from '../../db/schema';
import { openSourceConfig } from '../../domain/secrets';
import { createConnector, SourceTransientError } from '../../source';
import { startApi, type TestServer } from '../support/api-server';
import { testKeyring } from '../support/context';
import { onApi, onServices } from '../support/services';
import { sandbox, until } from '../support/sync';

let db: Db;
let config: Config;
let api: TestServer;

onServices({ pool: 4, sandbox: true, api: true, worker: true }, (s) => ({ db, config, api } = s));

async function admin(method: string, path: string, body?: unknown, base = api.url): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${config.ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function newOrg(): Promise<string> {
  return (await admin('POST', '/organizations', { name: 'Sandbox Org' })).body.id;
}

async function finished(jobId: string): Promise<any> {
  return until(
    `sync job ${jobId}`,
    async () => {
      const job = (await admin('GET', `/sync_jobs/${jobId}`)).body;
      return job.status === 'succeeded' || job.status === 'failed' ? job : undefined;
    },
    60_000,
  );
}

describe('sandbox integrations', () => {
  let orgId: string;
  let integration: any;

  beforeAll(async () => {
    orgId = await newOrg();
    const r = await admin('POST', `/organizations/${orgId}/integrations`, {
      mode: 'test',
      plan: 'enterprise',
      source: { type: 'sandbox', size: 12, seed: 42 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    integration = r.body;
  });

  it('are provisioned in the sandbox PMS, synced at once and readable with a key from the admin API', async () => {
    expect(integration).toMatchObject({ mode: 'test', source: { type: 'sandbox' }, sync_interval_seconds: 900 });
    const [row] = await db.select().from(integrations).where(eq(integrations.id, integration.id));
    // The source key is stored encrypted, and shown nowhere.
    expect(row!.sourceConfig).toEqual({ base_url: inject('sandboxUrl'), api_key: expect.stringMatching(/^enc:v1:dev:/), size: 12, seed: 42 });
    const apiKey = (openSourceConfig(testKeyring(), row!) as { api_key: string }).api_key;
    expect(apiKey).toMatch(/^sbx_/);
    expect(JSON.stringify(integration)).not.toContain(apiKey);
    expect(await sandbox().getCompany(integration.id)).toBeDefined();

    const jobs = (await admin('GET', `/integrations/${integration.id}/sync_jobs`)).body.results;
    expect(jobs).toHaveLength(1);
    const job = await finished(jobs[0].id);
    expect(job).toMatchObject({ trigger: 'initial', status: 'succeeded', error: null });
    expect(job.records_new).toBeGreaterThan(12);
    expect(Object.values(job.progress).every((p: any) => p.done)).toBe(true);

    const key = (await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'test', scopes: ['read'] })).body.key;
    const leases = await api.get('/v1/leases?limit=100', { key });
    expect(leases.status).toBe(200);
    expect(((await leases.json()) as { results: unknown[] }).results).toHaveLength(12);
  });

  it('of the buildium dialect: provisioned, synced at once, and read through the public API in the same shapes as an entrata one', async () => {
    const r = await admin('POST', `/organizations/${orgId}/integrations`, {
      mode: 'test',
      plan: 'enterprise',
      source: { type: 'sandbox', dialect: 'buildium', size: 12, seed: 42 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const buildium = r.body;
    expect(buildium).toMatchObject({ mode: 'test', source: { type: 'sandbox', dialect: 'buildium' } });
    const [row] = await db.select().from(integrations).where(eq(integrations.id, buildium.id));
    // Its client secret is stored encrypted, and shown nowhere.
    expect(row!.sourceConfig).toMatchObject({ dialect: 'buildium', base_url: inject('sandboxUrl'), client_secret: expect.stringMatching(/^enc:v1:dev:/) });
    const secret = (openSourceConfig(testKeyring(), row!) as { client_secret: string }).client_secret;
    expect(JSON.stringify(buildium)).not.toContain(secret);

    const [first] = (await admin('GET', `/integrations/${buildium.id}/sync_jobs`)).body.results;
    const job = await finished(first.id);
    expect(job).toMatchObject({ trigger: 'initial', kind: 'full', status: 'succeeded', error: null });
    expect(job.records_new).toBeGreaterThan(12);

    // This organization's entrata integration (the first test's) is of the same size and seed: the same records.
    const key = (await admin('POST', `/organizations/${orgId}/api_keys`, { mode: 'test', scopes: ['read'] })).body.key;
    const read = async (integrationId: string) => {
      const res = await api.get(`/v1/leases?limit=100&integration_id=${integrationId}`, { key });
      expect(res.status).toBe(200);
      return ((await res.json()) as { results: Record<string, unknown>[] }).results;
    };
    const [fromBuildium, fromEntrata] = [await read(buildium.id), await read(integration.id)];
    expect(fromBuildium).toHaveLength(12);
    expect(fromBuildium.every((l) => l.integration_id === buildium.id)).toBe(true);
    const shape = (l: Record<string, unknown>) => Object.keys(l).sort();
    for (const l of fromBuildium) {
      expect(shape(l)).toEqual(shape(fromEntrata[0]!));
      expect(l.id).toMatch(/^lse_/);
      expect(l.rent_amount).toEqual({ amount: expect.any(Number), currency: 'USD' });
      expect(l.start_date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(l.residents).toEqual(
        expect.arrayContaining([{ resident_id: expect.stringMatching(/^res_/), x_id: expect.any(String), role: expect.any(String) }]),
      );
    }
    // Field by field, the same JSON types where both hold a value.
    const typeOf = (v: unknown) => (v === null ? null : Array.isArray(v) ? 'array' : typeof v);
    for (const k of shape(fromEntrata[0]!)) {
      const types = (ls: Record<string, unknown>[]) => new Set(ls.map((l) => typeOf(l[k])).filter((t) => t !== null));
      const [b, e] = [types(fromBuildium), types(fromEntrata)];
      if (b.size && e.size) expect([...b], k).toEqual([...e]);
    }
    expect((await admin('DELETE', `/integrations/${buildium.id}`)).status).toBe(204);
  });

  it('take scripted changes that the next manual sync picks up', async () => {
    const r = await admin('POST', `/integrations/${integration.id}/sandbox/changes`, { update: { lease: 2 }, create: { resident: 1 }, lease_transitions: 1 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.updated.lease).toHaveLength(2);
    expect(r.body.created.resident).toHaveLength(1);
    expect(r.body.lease_transitions).toHaveLength(1);
    expect(r.body.lease_transitions[0]).toEqual({ x_id: expect.any(String), from: expect.any(String), to: expect.any(String) });
    // The reply has exactly the fields the admin document promises (renewals included).
    const doc = (await (await fetch(`${api.url}/admin/v1/openapi.json`)).json()) as any;
    const documented = doc.components.schemas.SandboxChangeResult;
    expect(Object.keys(r.body).sort()).toEqual(Object.keys(documented.properties).sort());
    expect([...documented.required].sort()).toEqual(Object.keys(documented.properties).sort());
    expect(r.body.renewals).toEqual(expect.any(Array));

    const started = await admin('POST', `/integrations/${integration.id}/syncs`);
    expect(started.status).toBe(202);
    const job = await finished(started.body.id);
    expect(job).toMatchObject({ trigger: 'manual', status: 'succeeded' });
    // A transition may bring a renewal lease of its own, so at least what was asked for.
    expect(job.records_new).toBeGreaterThanOrEqual(1);
    expect(job.records_updated).toBeGreaterThanOrEqual(2);
  });

  it('take faults that the source shows until cleared', async () => {
    const [row] = await db.select().from(integrations).where(eq(integrations.id, integration.id));
    const connector = createConnector(openSourceConfig(testKeyring(), row!), { maxAttempts: 1 });
    const set = await admin('POST', `/integrations/${integration.id}/sandbox/faults`, { kind: 'unavailable' });
    expect(set).toEqual({ status: 200, body: { integration_id: integration.id, kind: 'unavailable', count: null, delay_ms: null, methods: 'all' } });
    await expect(connector.readPage('property', 1, 10)).rejects.toBeInstanceOf(SourceTransientError);
    expect((await admin('DELETE', `/integrations/${integration.id}/sandbox/faults`)).status).toBe(204);
    expect((await connector.readPage('property', 1, 10)).records.length).toBeGreaterThan(0);
    expect((await admin('POST', `/integrations/${integration.id}/sandbox/faults`, { kind: 'rate_limited', count: 2 })).body.count).toBe(2);
    expect((await admin('DELETE', `/integrations/${integration.id}/sandbox/faults`)).status).toBe(204);
  });

  it('take a slow fault’s delay and a fault’s scope, and document both', async () => {
    const [row] = await db.select().from(integrations).where(eq(integrations.id, integration.id));
    const connector = createConnector(openSourceConfig(testKeyring(), row!), { maxAttempts: 1, timeoutMs: 200 });
    const set = await admin('POST', `/integrations/${integration.id}/sandbox/faults`, { kind: 'slow', count: 1, delay_ms: 1000, methods: 'writes' });
    expect(set).toEqual({ status: 200, body: { integration_id: integration.id, kind: 'slow', count: 1, delay_ms: 1000, methods: 'writes' } });
    // Scoped to writes: a read is served at once, and does not use the fault up.
    const [unit] = (await connector.readPage('unit', 1, 1)).records;
    const slow = await connector.update('unit', unit!.x_id, { note: 'slow write' }).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(SourceTransientError);
    expect(slow).toMatchObject({ maybeApplied: true });
    expect((await connector.readOne('unit', unit!.x_id))?.note).toBe('slow write');

    expect((await admin('POST', `/integrations/${integration.id}/sandbox/faults`, { kind: 'unavailable', methods: 'reads' })).body.methods).toBe('reads');
    await expect(connector.readPage('unit', 1, 1)).rejects.toBeInstanceOf(SourceTransientError);
    await expect(connector.update('unit', unit!.x_id, { note: null })).resolves.toEqual({ x_id: unit!.x_id, related: [] });
    expect((await admin('DELETE', `/integrations/${integration.id}/sandbox/faults`)).status).toBe(204);

    for (const bad of [
      { kind: 'slow', delay_ms: 600_001 },
      { kind: 'slow', delay_ms: 1.5 },
      { kind: 'slow', methods: 'some' },
      { kind: 'reject_writes', methods: 'reads' },
    ]) {
      const r = await admin('POST', `/integrations/${integration.id}/sandbox/faults`, bad);
      expect(r.status, JSON.stringify(bad)).toBe(422);
    }

    const doc = (await (await fetch(`${api.url}/admin/v1/openapi.json`)).json()) as any;
    const { properties } = doc.components.schemas.SandboxFault;
    expect(properties.delay_ms).toMatchObject({ type: 'integer', minimum: 0, maximum: 600000, description: expect.stringContaining('slow') });
    expect(properties.methods).toMatchObject({ enum: ['all', 'reads', 'writes'], description: expect.stringContaining('reads only or writes only') });
    expect(Object.keys(doc.components.schemas.SandboxFaultSet.properties).sort()).toEqual(['count', 'delay_ms', 'integration_id', 'kind', 'methods']);
  });

  it('are removed from the sandbox PMS when deleted', async () => {
    const orgId2 = await newOrg();
    const i = (
      await admin('POST', `/organizations/${orgId2}/integrations`, { mode: 'test', plan: 'growth', source: { type: 'sandbox', size: 3 }, initial_sync: false })
    ).body;
    const [row] = await db.select().from(integrations).where(eq(integrations.id, i.id));
    expect(row!.sourceConfig.size).toBe(3);
    expect(row!.sourceConfig.seed).toEqual(expect.any(Number));
    expect((await admin('DELETE', `/integrations/${i.id}`)).status).toBe(204);
    expect(await sandbox().getCompany(i.id)).toBeUndefined();
  });

  it('answer 409 when the sandbox no longer has the company', async () => {
    const orgId3 = await newOrg();
    const i = (
      await admin('POST', `/organizations/${orgId3}/integrations`, { mode: 'test', plan: 'growth', source: { type: 'sandbox', size: 3 }, initial_sync: false })
    ).body;
    await sandbox().deleteCompany(i.id);
    const r = await admin('POST', `/integrations/${i.id}/sandbox/changes`, { update: 1 });
    expect(r.status).toBe(409);
    expect(r.body.detail).toContain('no company');
  });
});

describe('when the sandbox PMS is unreachable', () => {
  const down = onApi(() => startApi(db, { ...config, SANDBOX_URL: 'http://127.0.0.1:1' }));

  it('creating a sandbox integration is a 503 that leaves nothing behind', async () => {
    const orgId = await newOrg();
    const r = await admin('POST', `/organizations/${orgId}/integrations`, { mode: 'test', plan: 'scale', source: { type: 'sandbox' } }, down.url);
    expect(r.status).toBe(503);
    expect(r.body.detail).toContain('sandbox PMS');
    expect((await admin('GET', `/organizations/${orgId}/integrations`)).body.results).toEqual([]);
  });
});
