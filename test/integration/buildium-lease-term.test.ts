/**
 * A lease update in the sandbox's buildium flavour keeps what it was not asked to change: TermMonths is not a
 * writable field (docs/sources/buildium.md), and an AtWill lease's end is not on the wire, so a PUT that sends the
 * lease back as read (as the connector's update does, with the patch over it) leaves both as they were. A PUT that
 * does change the type or a date still derives them again.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { InputOf } from '../../domain/cdm';
import { sandboxControlClient } from '../../sandbox/control';
import { createConnector, type SourceConnector } from '../../source';

let conn: SourceConnector;
let headers: Record<string, string>;
let leases: InputOf['lease'][];

async function readAll(): Promise<InputOf['lease'][]> {
  const out: InputOf['lease'][] = [];
  for (let page = 1; ; page++) {
    const p = await conn.readPage('lease', page, 1000);
    out.push(...p.records);
    if (!p.hasMore) return out;
  }
}

/** A lease the source still takes writes for, of a type, with a term other than one month. */
const open = (type: string) => leases.find((l) => l.type === type && (l.status === 'active' || l.status === 'pending') && l.term_months !== 1)!;

/** The lease as read before, with a new rent and its source's new update time. */
const withRent = (l: InputOf['lease'], amount: number): InputOf['lease'] => ({
  ...l,
  rent_amount: { amount, currency: 'USD' },
  custom_data: { ...l.custom_data, LastUpdatedDateTime: expect.any(String) },
});

beforeAll(async () => {
  const ctl = sandboxControlClient(inject('sandboxUrl'), inject('sandboxControlToken'));
  const id = `lt-${randomUUID()}`;
  const creds = await ctl.createCompany({ companyId: id, size: 300, seed: 41, dialect: 'buildium' });
  const settings = { dialect: 'buildium' as const, base_url: inject('sandboxUrl'), client_id: creds.client_id!, client_secret: creds.client_secret! };
  headers = { 'x-buildium-client-id': settings.client_id, 'x-buildium-client-secret': settings.client_secret, 'content-type': 'application/json' };
  conn = createConnector(settings, { backoffMs: 20 });
  leases = await readAll();
});

describe('a buildium lease whose rent alone is updated through the connector', () => {
  it('keeps a month-to-month lease’s term_months and every other field', async () => {
    const before = open('month_to_month');
    expect(before.term_months).toBeGreaterThan(1);
    await conn.update('lease', before.x_id, { rent_amount: { amount: 123400, currency: 'USD' } });
    expect(await conn.readOne('lease', before.x_id)).toEqual(withRent(before, 123400));
  });

  it('keeps a fixed lease’s term_months, end date and every other field', async () => {
    const before = open('fixed');
    await conn.update('lease', before.x_id, { rent_amount: { amount: 98700, currency: 'USD' } });
    expect(await conn.readOne('lease', before.x_id)).toEqual(withRent(before, 98700));
  });
});

describe('a buildium lease PUT that changes its type or dates', () => {
  const put = async (id: string, body: Record<string, unknown>) => {
    const res = await fetch(`${inject('sandboxUrl')}/v1/leases/${id}`, { method: 'PUT', headers, body: JSON.stringify(body) });
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  };

  it('derives TermMonths again from the new dates, and a month for a lease turned AtWill', async () => {
    const l = leases.filter((x) => x.type === 'fixed' && (x.status === 'active' || x.status === 'pending'))[1]!;
    const same = { MoveInDate: l.move_in_date, Occupants: 1, Rent: 1000 };
    const longer = await put(l.x_id, { ...same, LeaseType: 'Fixed', LeaseFromDate: '2025-01-01', LeaseToDate: '2026-12-31' });
    expect(longer).toMatchObject({ LeaseFromDate: '2025-01-01', LeaseToDate: '2026-12-31', TermMonths: 24 });
    const atWill = await put(l.x_id, { ...same, LeaseType: 'AtWill', LeaseFromDate: '2025-01-01', LeaseToDate: null });
    expect(atWill).toMatchObject({ LeaseType: 'AtWill', LeaseToDate: null, TermMonths: 1 });
  });
});
