/**
 * The Buildium-style wire to the CDM (source/buildium/mapping.ts), and what the client puts on the wire (its
 * requests, seen through a fetch of the test's own): the page docs/sources/buildium.md, read record by record.
 */
import { describe, expect, it } from 'vitest';
import { createConnector, SourcePermanentError, SourceTransientError } from '../../source';
import { dateOf, mapLease, mapProperty, mapResident, mapUnit, MappingError, moneyOf, timeOf } from '../../source/buildium/mapping';

const unit = (over: Record<string, unknown> = {}) => ({
  Id: 7,
  PropertyId: 3,
  UnitNumber: '101',
  FloorPlanId: 12,
  FloorPlanName: '2x1',
  UnitBedrooms: 'TwoBed',
  UnitBathrooms: 'OnePointFiveBath',
  UnitSize: 880,
  MaxOccupants: 4,
  MarketRent: 1035.5,
  OccupancyStatus: 'Occupied',
  Description: 'Corner unit',
  Address: { AddressLine1: '1 Main St', AddressLine2: null, AddressLine3: 'Rear', City: 'Austin', State: 'TX', PostalCode: '78701', Country: 'US' },
  CreatedDateTime: '2024-01-02T03:04:05Z',
  LastUpdatedDateTime: '2025-06-30T23:59:59Z',
  ...over,
});

const lease = (over: Record<string, unknown> = {}) => ({
  Id: 40,
  PropertyId: 3,
  UnitId: 7,
  UnitNumber: '101',
  LeaseType: 'FixedWithRollover',
  LeaseStatus: 'Future',
  LeaseFromDate: '2026-03-01',
  LeaseToDate: '2027-02-28',
  MoveInDate: '2026-03-01',
  MoveOutDate: null,
  NoticeGivenDate: null,
  SignedDate: '2026-01-15',
  TermMonths: 12,
  Rent: 0.29,
  SecurityDeposit: 4.35,
  Balance: -12.3,
  Occupants: 2,
  IsRenewal: true,
  RenewalOfLeaseId: 39,
  Notes: null,
  Tenants: [
    { Id: 100, Role: 'Primary' },
    { Id: 101, Role: 'CoTenant' },
    { Id: 102, Role: 'Occupant' },
    { Id: 103, Role: 'Cosigner' },
  ],
  CreatedDateTime: '2026-01-15T10:00:00Z',
  LastUpdatedDateTime: '2026-01-15T10:00:00Z',
  ...over,
});

describe('money', () => {
  it('reads a JSON number with two decimals as integer minor units, never through a float product', () => {
    expect(moneyOf(1035.5)).toEqual({ amount: 103550, currency: 'USD' });
    expect(moneyOf(1035.55)).toEqual({ amount: 103555, currency: 'USD' });
    expect(moneyOf(0.29)).toEqual({ amount: 29, currency: 'USD' }); // 0.29 * 100 = 28.999999999999996
    expect(moneyOf(4.35)).toEqual({ amount: 435, currency: 'USD' }); // 4.35 * 100 = 434.99999999999994
    expect(moneyOf(1.005)).toEqual({ amount: 100, currency: 'USD' }); // 1.005 * 100 = 100.49999999999999, and half to even
    expect(moneyOf(-12.3)).toEqual({ amount: -1230, currency: 'USD' });
    expect(moneyOf(12345678.91)).toEqual({ amount: 1234567891, currency: 'USD' });
    expect(moneyOf(0)).toEqual({ amount: 0, currency: 'USD' });
    expect(moneyOf(null)).toBeNull();
  });

  it('refuses what is not a JSON number', () => {
    for (const bad of ['1035.50', 'call for price', true, {}, Number.NaN]) expect(() => moneyOf(bad)).toThrow(MappingError);
  });
});

describe('dates and times', () => {
  it('keeps YYYY-MM-DD dates that exist, and refuses others', () => {
    expect(dateOf('2024-02-29')).toBe('2024-02-29');
    expect(dateOf(null)).toBeNull();
    for (const bad of ['2025-02-29', '02/28/2025', '2025-2-28', '2025-13-01', '', 20250228]) expect(() => dateOf(bad)).toThrow(/not a date/);
  });

  it('reads UTC times to ISO 8601 with milliseconds, and refuses times without Z', () => {
    expect(timeOf('2025-06-30T23:59:59Z')).toBe('2025-06-30T23:59:59.000Z');
    expect(timeOf('2025-06-30T23:59:59.5Z')).toBe('2025-06-30T23:59:59.500Z');
    for (const bad of ['2025-06-30T23:59:59', '2025-06-30T23:59:59-05:00', '2025-06-30 23:59:59Z', '2025-06-31T00:00:00Z'])
      expect(() => timeOf(bad)).toThrow(/not a UTC time/);
  });
});

describe('records', () => {
  it('maps a unit: rooms by name (a half bath counts its whole ones), money, status lower-cased, leftovers in custom_data with times normalized', () => {
    expect(mapUnit(unit())).toEqual({
      x_id: '7',
      property_x_id: '3',
      unit_number: '101',
      floorplan_id: '12',
      floorplan_name: '2x1',
      bedrooms: 2,
      bathrooms: 1,
      square_feet: 880,
      max_occupants: 4,
      market_rent: { amount: 103550, currency: 'USD' },
      status: 'occupied',
      note: 'Corner unit',
      address: { line_1: '1 Main St', line_2: null, city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' },
      custom_data: {
        'Address.AddressLine3': 'Rear',
        CreatedDateTime: '2024-01-02T03:04:05.000Z',
        LastUpdatedDateTime: '2025-06-30T23:59:59.000Z',
        UnitBathrooms: 'OnePointFiveBath',
      },
    });
    expect(mapUnit(unit({ UnitBathrooms: 'TwoBath' }))).toMatchObject({
      bathrooms: 2,
      custom_data: expect.not.objectContaining({ UnitBathrooms: expect.anything() }),
    });
    expect(mapUnit(unit({ UnitBathrooms: 'FourPointFiveBath' })).bathrooms).toBe(4);
    expect(mapUnit(unit({ UnitBedrooms: 'Studio', UnitBathrooms: 'NotSet', FloorPlanId: null, MarketRent: null, Address: null }))).toMatchObject({
      bedrooms: 0,
      bathrooms: null,
      floorplan_id: null,
      market_rent: null,
      address: null,
    });
    expect(Object.keys(mapUnit(unit({ Zeta: 1, Alpha: 2 })).custom_data)).toEqual([
      'Address.AddressLine3',
      'Alpha',
      'CreatedDateTime',
      'LastUpdatedDateTime',
      'UnitBathrooms',
      'Zeta',
    ]);
  });

  it('maps a lease: status and type folded, roles, renewal, dates kept, money in minor units', () => {
    const m = mapLease(lease());
    expect(m).toMatchObject({
      x_id: '40',
      property_x_id: '3',
      unit_x_id: '7',
      previous_lease_x_id: '39',
      status: 'pending',
      type: 'fixed_with_rollover',
      start_date: '2026-03-01',
      end_date: '2027-02-28',
      signed_date: '2026-01-15',
      rent_amount: { amount: 29, currency: 'USD' },
      security_deposit: { amount: 435, currency: 'USD' },
      balance: { amount: -1230, currency: 'USD' },
      term_months: 12,
      is_renewal: true,
      residents: [
        { x_id: '100', role: 'primary' },
        { x_id: '101', role: 'responsible' },
        { x_id: '102', role: 'occupant' },
        { x_id: '103', role: 'guarantor' },
      ],
    });
    expect(m.custom_data).toMatchObject({ Occupants: 2, UnitNumber: '101' });
    expect(mapLease(lease({ LeaseStatus: 'Active', LeaseType: 'AtWill', LeaseToDate: null }))).toMatchObject({
      status: 'active',
      type: 'month_to_month',
      end_date: null,
    });
    // A running lease whose tenant has given notice is on notice; one that is over stays ended.
    expect(mapLease(lease({ LeaseStatus: 'Active', NoticeGivenDate: '2025-05-01' }))).toMatchObject({ status: 'notice', notice_date: '2025-05-01' });
    expect(mapLease(lease({ LeaseStatus: 'Past', NoticeGivenDate: '2025-05-01' }))).toMatchObject({ status: 'ended', notice_date: '2025-05-01' });
    expect(mapLease(lease({ LeaseStatus: 'Past', LeaseType: 'Fixed', Rent: null }))).toMatchObject({
      status: 'ended',
      type: 'fixed',
      rent_amount: { amount: 0, currency: 'USD' },
    });
  });

  it('maps a tenant: status folded, phones typed with the first one primary, the primary address', () => {
    const t = mapResident({
      Id: 100,
      PropertyId: 3,
      FirstName: 'Katherine',
      MiddleName: null,
      LastName: 'Johnson',
      Email: 'kj@example.com',
      PhoneNumbers: [
        { Number: '757-555-0142', Type: 'Mobile' },
        { Number: '757-555-0100', Type: 'Work' },
      ],
      DateOfBirth: '1918-08-26',
      PrimaryAddress: {
        AddressLine1: '1 Langley Blvd',
        AddressLine2: null,
        AddressLine3: null,
        City: 'Hampton',
        State: 'VA',
        PostalCode: '23681',
        Country: null,
      },
      Status: 'Current',
    });
    expect(t).toMatchObject({
      x_id: '100',
      status: 'current',
      date_of_birth: '1918-08-26',
      phones: [
        { type: 'mobile', number: '757-555-0142', primary: true },
        { type: 'office', number: '757-555-0100', primary: false },
      ],
      address: { line_1: '1 Langley Blvd', city: 'Hampton', state: 'VA', postal_code: '23681', country: null },
    });
    expect(mapResident({ Id: 1, Status: 'Future', PhoneNumbers: [] })).toMatchObject({ status: 'applicant', phones: [] });
    expect(mapResident({ Id: 1, Status: 'Past', PhoneNumbers: null })).toMatchObject({ status: 'past', phones: null });
  });

  it('maps a rental property: active flag, sub-type and policies in CDM style, photos as media', () => {
    expect(
      mapProperty({
        Id: 3,
        Name: 'Elm Court',
        IsActive: false,
        RentalType: 'Residential',
        RentalSubType: 'MultiFamily',
        PetPolicy: 'Not Allowed',
        SmokingPolicy: 'Designated Areas',
        Photos: [{ Url: 'https://example.com/1.jpg', Caption: null }],
        Latitude: 30.25,
        Longitude: -97.75,
        YearBuilt: null,
      }),
    ).toMatchObject({
      x_id: '3',
      name: 'Elm Court',
      status: 'inactive',
      type: 'apartment',
      pet_policy: 'not_allowed',
      smoking_policy: 'designated_areas',
      media: [{ type: 'photo', url: 'https://example.com/1.jpg', caption: null }],
      latitude: 30.25,
      year_built: null,
      custom_data: { RentalType: 'Residential' },
    });
  });

  it.each([
    ['an id that is not an integer', { Id: '7' }, /Id is not an id: "7"/],
    ['no id', { Id: null }, /record without Id/],
    ['money as a string', { MarketRent: 'call for price' }, /not a decimal amount: "call for price"/],
    ['an unknown status', { OccupancyStatus: 'Down' }, /unknown OccupancyStatus: "Down"/],
    ['an unknown bedroom name', { UnitBedrooms: 'TenBed' }, /unknown UnitBedrooms/],
    ['a time with an offset', { LastUpdatedDateTime: '2025-06-30T18:59:59-05:00' }, /not a UTC time/],
    ['a count as text', { UnitSize: '880' }, /not an integer: "880"/],
    ['a list that is not one', { Address: 'somewhere' }, /Address is not an object/],
  ])('refuses %s with what is wrong', (_name, over, reason) => {
    expect(() => mapUnit(unit(over))).toThrow(reason);
  });

  it('refuses an unknown lease type, role or lease status, and a malformed date', () => {
    expect(() => mapLease(lease({ LeaseType: 'Monthly' }))).toThrow(/unknown LeaseType: "Monthly"/);
    expect(() => mapLease(lease({ Tenants: [{ Id: 1, Role: 'Owner' }] }))).toThrow(/unknown tenant Role: "Owner"/);
    expect(() => mapLease(lease({ LeaseStatus: 'Evicted' }))).toThrow(/unknown LeaseStatus/);
    expect(() => mapLease(lease({ LeaseFromDate: '03/01/2026' }))).toThrow(/not a date: "03\/01\/2026"/);
  });
});

/** A connector over a fetch of the test's own: what it asked for, and the replies it is given in turn. */
function wired(replies: { status: number; body?: unknown; headers?: Record<string, string> }[]) {
  const asked: { url: URL; method: string; headers: Record<string, string>; body: unknown }[] = [];
  const fetchFn: typeof fetch = async (input, init) => {
    asked.push({
      url: new URL(String(input)),
      method: init?.method ?? 'GET',
      headers: Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v])),
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    });
    const r = replies.shift() ?? { status: 500 };
    return new Response(r.body === undefined ? '' : JSON.stringify(r.body), {
      status: r.status,
      headers: { 'content-type': 'application/json', ...r.headers },
    });
  };
  const conn = createConnector(
    { dialect: 'buildium', base_url: 'http://pms.test/', client_id: 'cid', client_secret: 'secret' },
    { fetch: fetchFn, backoffMs: 1, sleep: async () => {} },
  );
  return { conn, asked };
}

describe('the client on the wire', () => {
  it('pages by limit and offset, authenticates with the id and secret, and knows from X-Total-Count whether more follows', async () => {
    const { conn, asked } = wired([
      { status: 200, body: [unit({ Id: 7 }), unit({ Id: 8 })], headers: { 'x-total-count': '5' } },
      { status: 200, body: [unit({ Id: 11 })], headers: { 'x-total-count': '5' } },
    ]);
    expect(conn.dialect).toBe('buildium');
    expect(conn.capabilities).toEqual({ delta: true, idempotentCreates: true });
    const second = await conn.readPage('unit', 2, 2);
    expect(second).toMatchObject({ page: 2, hasMore: true, skipped: [] });
    expect(second.records.map((r) => r.x_id)).toEqual(['7', '8']);
    expect((await conn.readPage('unit', 3, 2)).hasMore).toBe(false);
    expect(asked[0]!.url.pathname).toBe('/v1/rentals/units');
    expect(Object.fromEntries(asked[0]!.url.searchParams)).toEqual({ limit: '2', offset: '2' });
    expect(asked[0]!.headers).toMatchObject({ 'x-buildium-client-id': 'cid', 'x-buildium-client-secret': 'secret' });
    expect(Object.fromEntries(asked[1]!.url.searchParams)).toEqual({ limit: '2', offset: '4' });
  });

  it('rounds a change window outward to whole seconds, in UTC', async () => {
    const { conn, asked } = wired([{ status: 200, body: [], headers: { 'x-total-count': '0' } }]);
    await conn.readChangedPage('lease', { from: new Date('2025-01-31T10:04:05.900Z'), to: new Date('2025-01-31T10:09:00.001Z') }, 1, 1000);
    expect(asked[0]!.url.pathname).toBe('/v1/leases');
    expect(Object.fromEntries(asked[0]!.url.searchParams)).toEqual({
      lastupdatedfrom: '2025-01-31T10:04:05Z',
      lastupdatedto: '2025-01-31T10:09:01Z',
      limit: '1000',
      offset: '0',
    });
  });

  it('sets a record it cannot read aside with its id and reason, and reads the rest of the page', async () => {
    const { conn } = wired([
      { status: 200, body: [unit({ MarketRent: 'call for price' }), { Name: 'no id' }, unit({ Id: 9 })], headers: { 'x-total-count': '3' } },
    ]);
    const page = await conn.readPage('unit', 1, 50);
    expect(page.records.map((r) => r.x_id)).toEqual(['9']);
    expect(page.skipped).toEqual([
      { x_id: '7', reason: 'not a decimal amount: "call for price"' },
      { x_id: null, reason: 'record without Id' },
    ]);
  });

  it('looks ids up in chunks of at most 1000, and leaves out ids that cannot be the source’s', async () => {
    const ids = Array.from({ length: 1500 }, (_, i) => String(i + 1));
    const { conn, asked } = wired([
      { status: 200, body: [], headers: { 'x-total-count': '0' } },
      { status: 200, body: [], headers: { 'x-total-count': '0' } },
    ]);
    await conn.readByIds('resident', [...ids, 'abc', '0']);
    expect(asked.map((a) => a.url.searchParams.get('ids')!.split(',').length)).toEqual([1000, 500]);
    expect(asked[0]!.url.pathname).toBe('/v1/leases/tenants');
  });

  it('sends a create once, with the idempotency key, and a lease’s applicant as related', async () => {
    const { conn, asked } = wired([{ status: 201, body: lease({ Id: 77, Tenants: [{ Id: 500, Role: 'Primary' }] }) }]);
    const made = await conn.create(
      'lease',
      {
        property_x_id: '3',
        lease_start_date: '2026-03-01',
        lease_end_date: '2027-02-28',
        move_in_date: '2026-03-01',
        lease_term_id: 'Fixed',
        floorplan_id: '12',
        unit_space_id: '7',
        first_name: 'Katherine',
        last_name: 'Johnson',
        customer_relationship_type_id: 'Primary',
        phone_number: '757-555-0142',
        phone_number_type_id: 'Mobile',
        address_type_id: 'Primary',
        street_line_1: '1 Langley Blvd',
        city: 'Hampton',
        state: 'Virginia',
        state_code: 'VA',
        postal_code: '23681',
      },
      { idempotencyKey: 'op_123' },
    );
    expect(made).toEqual({ x_id: '77', related: [{ entity: 'resident', x_id: '500' }] });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ method: 'POST', headers: { 'idempotency-key': 'op_123' } });
    expect(asked[0]!.body).toEqual({
      PropertyId: 3,
      UnitId: 7,
      FloorPlanId: 12,
      LeaseType: 'Fixed',
      LeaseFromDate: '2026-03-01',
      LeaseToDate: '2027-02-28',
      MoveInDate: '2026-03-01',
      Applicant: {
        FirstName: 'Katherine',
        LastName: 'Johnson',
        Role: 'Primary',
        PhoneNumbers: [{ Number: '757-555-0142', Type: 'Mobile' }],
        Address: { AddressLine1: '1 Langley Blvd', City: 'Hampton', State: 'VA', PostalCode: '23681' },
        AddressType: 'Primary',
      },
    });
  });

  it('updates by reading the record and sending every writable field once, the patch applied', async () => {
    const current = unit({ Id: 7, MarketRent: 1000 });
    const { conn, asked } = wired([
      { status: 200, body: current },
      { status: 200, body: { ...current, MarketRent: 1035.5 } },
    ]);
    expect(await conn.update('unit', '7', { market_rent: { amount: 103550, currency: 'USD' }, bedrooms: 9 })).toEqual({ x_id: '7', related: [] });
    expect(asked.map((a) => `${a.method} ${a.url.pathname}`)).toEqual(['GET /v1/rentals/units/7', 'PUT /v1/rentals/units/7']);
    expect(asked[1]!.body).toEqual({
      UnitNumber: '101',
      FloorPlanId: 12,
      UnitBedrooms: 'NineBedPlus',
      UnitBathrooms: 'OnePointFiveBath',
      UnitSize: 880,
      MaxOccupants: 4,
      MarketRent: 1035.5,
      Description: 'Corner unit',
    });
  });

  it('refuses, before sending anything, what the wire would store as something else: 10 bedrooms, 6 bathrooms, phones without one primary', async () => {
    const { conn, asked } = wired([
      { status: 200, body: unit({ Id: 7 }) },
      { status: 200, body: unit({ Id: 7 }) },
    ]);
    await expect(conn.create('unit', { property_x_id: '3', unit_number: '9', bedrooms: 10 })).rejects.toThrow(
      /bedrooms 10 is more than the source can hold: at most 9/,
    );
    await expect(conn.update('unit', '7', { bathrooms: 6 })).rejects.toThrow(/bathrooms 6 is more than the source can hold: at most 5/);
    await expect(conn.update('resident', '7', { phones: [{ type: 'mobile', number: '+15125550100', primary: false }] } as never)).rejects.toThrow(
      /exactly one primary phone/,
    );
    expect(asked.filter((a) => a.method !== 'GET')).toEqual([]);
  });

  it('turns a validation failure into a permanent error carrying the source’s field messages', async () => {
    const { conn } = wired([
      { status: 400, body: { UserMessage: 'Validation failed', Errors: [{ Key: 'FloorPlanId', Value: 'The floor plan is not the unit’s.' }] } },
    ]);
    const err = await conn.create('unit', { property_x_id: '3', unit_number: 'X', floorplan_id: '99' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourcePermanentError);
    expect(err).toMatchObject({
      status: 400,
      code: 'VALIDATION_FAILED',
      message: 'POST /v1/rentals/units: source rejected the request: Validation failed: FloorPlanId: The floor plan is not the unit’s.',
    });
  });

  it('classifies a write’s 429 and 5xx, sent once: rate limited applied nothing, a 5xx may have', async () => {
    const { conn, asked } = wired([
      { status: 429, body: { UserMessage: 'slow down' }, headers: { 'retry-after': '2' } },
      { status: 503, body: { UserMessage: 'down' } },
    ]);
    const limited = await conn.create('unit', { property_x_id: '3', unit_number: 'X' }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(SourceTransientError);
    expect(limited).toMatchObject({ status: 429, retryAfterMs: 2000, maybeApplied: false });
    const down = await conn.create('unit', { property_x_id: '3', unit_number: 'X' }).catch((e: unknown) => e);
    expect(down).toMatchObject({ status: 503, maybeApplied: true });
    expect(asked).toHaveLength(2);
  });

  it('reads one record, and null for one the source does not have', async () => {
    const { conn } = wired([
      { status: 200, body: unit({ Id: 7 }) },
      { status: 404, body: { UserMessage: 'not found' } },
    ]);
    expect((await conn.readOne('unit', '7'))!.x_id).toBe('7');
    expect(await conn.readOne('unit', '8')).toBeNull();
    expect(await conn.readOne('unit', 'not-an-id')).toBeNull();
  });
});
