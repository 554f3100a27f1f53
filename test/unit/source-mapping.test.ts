import { describe, expect, it } from 'vitest';
import { toUsDate } from '../../source/entrata/client';
import { decimalToMinor, minorToDecimal } from '../../source/values';
import {
  asList,
  leaseStatusOf,
  localToUtcMs,
  mapLease,
  mapProperty,
  mapResident,
  mapUnit,
  MappingError,
  moneyOf,
  residentStatusOf,
  roleOf,
  toIsoDate,
  toUtcIso,
  unitStatusOf,
  wrappedList,
} from '../../source/entrata/mapping';
import { localTime } from '../../sandbox/time';

describe('decimal strings to minor units', () => {
  it.each([
    ['1035', 103500],
    ['1035.5', 103550],
    ['1035.00', 103500],
    ['-12.30', -1230],
    ['+7.01', 701],
    ['.5', 50],
    ['0', 0],
    ['-0.00', 0],
    ['  99.99 ', 9999],
    ['90071992547409.91', 9007199254740991],
  ])('%s -> %d', (input, minor) => {
    expect(decimalToMinor(input)).toBe(minor);
  });

  it('never goes through floating point (values floats cannot hold exactly)', () => {
    expect(decimalToMinor('0.29')).toBe(29); // 0.29 * 100 = 28.999999999999996 in floats
    expect(decimalToMinor('1.005', 2)).toBe(100); // half to even: 100.5 -> 100
    expect(decimalToMinor('4.35')).toBe(435); // 4.35 * 100 = 434.99999999999994
  });

  it('rounds extra decimals half to even (banker’s rounding)', () => {
    expect(decimalToMinor('10.005')).toBe(1000);
    expect(decimalToMinor('10.015')).toBe(1002);
    expect(decimalToMinor('10.0150001')).toBe(1002);
    expect(decimalToMinor('10.0050001')).toBe(1001);
    expect(decimalToMinor('10.004999')).toBe(1000);
    expect(decimalToMinor('-10.005')).toBe(-1000);
    expect(decimalToMinor('-10.0051')).toBe(-1001);
    expect(decimalToMinor('0.995')).toBe(100);
  });

  it('honours the currency exponent', () => {
    expect(moneyOf('1035', 'JPY')).toEqual({ amount: 1035, currency: 'JPY' });
    expect(moneyOf('1.2345', 'KWD')).toEqual({ amount: 1234, currency: 'KWD' });
    expect(moneyOf('', 'USD')).toBeNull();
    expect(moneyOf(null, 'USD')).toBeNull();
  });

  it.each(['', '-', '.', '1,035.00', '1e3', '12.3.4', 'abc', '$10', '1 035', 'NaN', '99999999999999999.00'])('refuses %j', (input) => {
    expect(() => decimalToMinor(input)).toThrow(MappingError);
  });

  it('formats minor units back to decimal strings for writes', () => {
    expect(minorToDecimal({ amount: 103550, currency: 'USD' })).toBe('1035.50');
    expect(minorToDecimal({ amount: -5, currency: 'USD' })).toBe('-0.05');
    expect(minorToDecimal({ amount: 7, currency: 'JPY' })).toBe('7');
    expect(minorToDecimal({ amount: 1234, currency: 'KWD' })).toBe('1.234');
    for (const cents of [0, 1, 99, 100, 123456789, -1230]) expect(decimalToMinor(minorToDecimal({ amount: cents, currency: 'USD' }))).toBe(cents);
  });
});

describe('dates and times', () => {
  it('reads MM/DD/YYYY and ISO dates, refusing impossible ones', () => {
    expect(toIsoDate('01/31/2025')).toBe('2025-01-31');
    expect(toIsoDate('2/9/2024')).toBe('2024-02-09');
    expect(toIsoDate('2024-02-29')).toBe('2024-02-29');
    expect(toIsoDate('')).toBeNull();
    for (const bad of ['02/30/2025', '13/01/2025', '2025-02-29', '31/01/2025', '2025/01/31', 'yesterday']) {
      expect(() => toIsoDate(bad), bad).toThrow(MappingError);
    }
    expect(toUsDate('2025-01-31')).toBe('01/31/2025');
  });

  it('converts local times with an offset to UTC with milliseconds', () => {
    expect(toUtcIso('2025-01-31T10:04:05-06:00')).toBe('2025-01-31T16:04:05.000Z');
    expect(toUtcIso('2025-01-31T10:04:05+0530')).toBe('2025-01-31T04:34:05.000Z');
    expect(toUtcIso('2025-01-31 10:04:05.1234Z')).toBe('2025-01-31T10:04:05.123Z');
    expect(toUtcIso('2025-12-31T23:30:00-01:00')).toBe('2026-01-01T00:30:00.000Z');
    expect(toUtcIso('')).toBeNull();
    expect(toUtcIso('2025-01-31T10:04:05+05:45')).toBe('2025-01-31T04:19:05.000Z');
    expect(toUtcIso('2024-02-29T23:59:59-10:00')).toBe('2024-03-01T09:59:59.000Z');
    expect(() => toUtcIso('2025-02-29T10:04:05-06:00')).toThrow(MappingError);
    expect(() => toUtcIso('2025-01-31T24:04:05-06:00')).toThrow(MappingError);
    expect(() => toUtcIso('2025-01-31T10:04:05*06:00')).toThrow(MappingError);
  });

  it('reads wall times without an offset in the given zone, across DST', () => {
    expect(toUtcIso('01/31/2025 10:04:05', 'America/Chicago')).toBe('2025-01-31T16:04:05.000Z');
    expect(toUtcIso('07/31/2025 10:04:05', 'America/Chicago')).toBe('2025-07-31T15:04:05.000Z');
    expect(toUtcIso('07/31/2025 10:04 PM', 'America/Phoenix')).toBe('2025-08-01T05:04:00.000Z');
    expect(toUtcIso('01/31/2025 12:00:00 AM', 'UTC')).toBe('2025-01-31T00:00:00.000Z');
    // 02:30 does not exist on 2025-03-09 in Chicago; 01:30 happens twice on 2025-11-02: the earlier offset wins.
    expect(toUtcIso('2025-03-09T02:30:00', 'America/Chicago')).toBe('2025-03-09T08:30:00.000Z');
    expect(toUtcIso('2025-11-02T01:30:00', 'America/Chicago')).toBe('2025-11-02T06:30:00.000Z');
    expect(() => toUtcIso('01/31/2025 10:04:05')).toThrow(/no time zone/);
    expect(() => toUtcIso('01/31/2025 10:04:05', 'Mars/Olympus')).toThrow(/unknown time zone/);
    expect(() => toUtcIso('2025-01-31T25:00:00Z')).toThrow(MappingError);
  });

  it('the sandbox’s local times round-trip through the connector’s conversion', () => {
    for (const tz of ['America/Chicago', 'America/Phoenix', 'Pacific/Honolulu', 'America/Anchorage', 'Australia/Sydney']) {
      for (let ms = Date.UTC(2024, 0, 1); ms < Date.UTC(2026, 0, 1); ms += 7 * 3_600_000 + 59_000) {
        expect(toUtcIso(localTime(ms, tz))).toBe(new Date(Math.floor(ms / 1000) * 1000).toISOString());
      }
    }
    expect(localTime(Date.UTC(2025, 0, 31, 16, 4, 5), 'America/Chicago')).toBe('2025-01-31T10:04:05-06:00');
    const wall = { y: 2025, mo: 7, d: 4, h: 9, mi: 0, s: 0, ms: 0 };
    expect(new Date(localToUtcMs(wall, 'America/New_York')).toISOString()).toBe('2025-07-04T13:00:00.000Z');
  });
});

describe('lists and codes', () => {
  it('treats a lone element, null, "" and {} as lists', () => {
    expect(asList([1, 2])).toEqual([1, 2]);
    expect(asList({ a: 1 })).toEqual([{ a: 1 }]);
    expect(asList(null)).toEqual([]);
    expect(asList('')).toEqual([]);
    expect(asList({})).toEqual([]);
    expect(wrappedList({ lease: { leaseId: 1 } }, 'lease')).toEqual([{ leaseId: 1 }]);
    expect(wrappedList({ lease: [{ leaseId: 1 }, { leaseId: 2 }] }, 'lease')).toHaveLength(2);
    expect(wrappedList({}, 'lease')).toEqual([]);
    expect(wrappedList('', 'lease')).toEqual([]);
  });

  it('maps status ids to CDM names, as numbers or strings, and refuses unknown ones', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(leaseStatusOf)).toEqual(['pending', 'pending', 'active', 'notice', 'ended', 'cancelled', 'terminated', 'evicted']);
    expect(leaseStatusOf('3')).toBe('active');
    expect([1, 2, 3, 4, 5, 6].map(unitStatusOf)).toEqual(['vacant', 'vacant', 'vacant', 'occupied', 'notice', 'notice']);
    expect([1, 2, 3, 4].map(residentStatusOf)).toEqual(['applicant', 'current', 'notice', 'past']);
    expect([1, 2, 3, 4].map(roleOf)).toEqual(['primary', 'responsible', 'occupant', 'guarantor']);
    expect(leaseStatusOf(null)).toBeNull();
    expect(() => leaseStatusOf(99)).toThrow(/leaseStatusTypeId/);
    expect(() => unitStatusOf('vacant')).toThrow(MappingError);
  });
});

describe('records', () => {
  const lease = {
    leaseId: 5000042,
    propertyId: 1001,
    unitId: 100017,
    leaseStatusTypeId: '2',
    leaseIntervalTypeId: 1,
    leaseStartDate: '02/01/2025',
    leaseEndDate: '01/31/2026',
    moveInDate: '',
    moveOutDate: '',
    noticeDate: '',
    leaseSignedDate: '01/20/2025',
    rent: '1035.5',
    securityDeposit: '',
    balance: '-12.30',
    currencyCode: 'usd',
    leaseTermMonths: '12',
    renewalOfferStatus: 'Not Started',
    isRenewal: '1',
    previousLeaseId: 5000041,
    concessions: '',
    notes: ' Paid by check ',
    customers: { customer: { customerId: 2000007, customerTypeId: 1, moveInOrder: 1 } },
    petCount: 2,
    parkingSpaces: 1,
    occupants: 3,
    leadSource: 'Zillow',
    createdOn: '2025-01-20T09:15:00-06:00',
    updatedOn: '2025-07-01T09:15:00-05:00',
    someNewField: { nested: [1, 2] },
  };

  it('maps a lease with every quirk, keeping unmapped fields in custom_data', () => {
    const m = mapLease(lease);
    expect(m).toMatchObject({
      x_id: '5000042',
      property_x_id: '1001',
      unit_x_id: '100017',
      previous_lease_x_id: '5000041',
      residents: [{ x_id: '2000007', role: 'primary' }],
      status: 'pending',
      type: 'fixed',
      start_date: '2025-02-01',
      end_date: '2026-01-31',
      move_in_date: null,
      signed_date: '2025-01-20',
      rent_amount: { amount: 103550, currency: 'USD' },
      security_deposit: null,
      balance: { amount: -1230, currency: 'USD' },
      term_months: 12,
      renewal_status: 'not_started',
      is_renewal: true,
      concessions: null,
      notes: 'Paid by check',
    });
    expect(m.custom_data).toEqual({
      petCount: 2,
      parkingSpaces: 1,
      occupants: 3,
      leadSource: 'Zillow',
      createdOn: '2025-01-20T15:15:00.000Z',
      updatedOn: '2025-07-01T14:15:00.000Z',
      someNewField: { nested: [1, 2] },
      'customers.0.moveInOrder': 1,
      leaseStatusTypeId: '2',
    });
  });

  it('maps several customers given as an array, and a lease without rent as zero', () => {
    const m = mapLease({
      ...lease,
      rent: '',
      customers: {
        customer: [
          { customerId: 1, customerTypeId: 1 },
          { customerId: 2, customerTypeId: '4' },
        ],
      },
    });
    expect(m.residents).toEqual([
      { x_id: '1', role: 'primary' },
      { x_id: '2', role: 'guarantor' },
    ]);
    expect(m.rent_amount).toEqual({ amount: 0, currency: 'USD' });
  });

  it('refuses a malformed record', () => {
    expect(() => mapLease({ ...lease, leaseId: '' })).toThrow(/leaseId/);
    expect(() => mapLease({ ...lease, rent: '10,00' })).toThrow(MappingError);
    expect(() => mapLease({ ...lease, leaseStartDate: '31/01/2025' })).toThrow(MappingError);
    expect(() => mapLease('not a record')).toThrow(MappingError);
    expect(() => mapLease({ ...lease, isRenewal: 'maybe' })).toThrow(/boolean/);
  });

  it('maps a property: one phone as an object, policies to names, times in its own zone', () => {
    const p = mapProperty({
      propertyId: 1001,
      propertyName: 'Maple Court Apartments',
      marketingName: 'Maple Court at Riverside',
      propertyType: 'Apartment',
      isDisabled: '0',
      yearBuilt: '1998',
      numberOfUnits: 120,
      address: { streetLine1: '100 Main St', streetLine2: '', city: 'Austin', state: 'TX', postalCode: '78701', country: 'US', county: 'Travis' },
      phones: { phone: { phoneNumber: '512-555-0100', phoneNumberTypeId: 2, isPrimary: '1' } },
      latitude: '30.267153',
      longitude: '-97.743061',
      timeZone: 'America/Chicago',
      petPolicy: 'Restricted',
      smokingPolicy: 'Not Allowed',
      photos: { photo: { url: 'https://x/1.jpg', caption: 'Front' } },
      parkingSpaces: 150,
      createdOn: '03/01/2020 08:00:00',
    });
    expect(p).toMatchObject({
      x_id: '1001',
      name: 'Maple Court Apartments',
      type: 'apartment',
      status: 'active',
      year_built: 1998,
      total_units: 120,
      address: { line_1: '100 Main St', line_2: null, city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' },
      phones: [{ type: 'office', number: '512-555-0100', primary: true }],
      latitude: 30.267153,
      longitude: -97.743061,
      timezone_id: 'America/Chicago',
      pet_policy: 'restricted',
      smoking_policy: 'not_allowed',
      media: [{ type: 'photo', url: 'https://x/1.jpg', caption: 'Front' }],
      description: null,
      email: null,
    });
    expect(p.custom_data).toEqual({
      marketingName: 'Maple Court at Riverside',
      parkingSpaces: 150,
      'address.county': 'Travis',
      createdOn: '2020-03-01T14:00:00.000Z',
    });
  });

  it('maps units and residents, keeping the raw unit status id', () => {
    const u = mapUnit({
      unitId: 7,
      propertyId: 1,
      unitNumber: 'A-101',
      bedrooms: '2',
      bathrooms: 1,
      squareFeet: '850',
      marketRent: '1450',
      unitStatusTypeId: 2,
      availableOn: '03/01/2025',
      isFurnished: '0',
    });
    expect(u).toMatchObject({
      x_id: '7',
      property_x_id: '1',
      unit_number: 'A-101',
      bedrooms: 2,
      bathrooms: 1,
      square_feet: 850,
      market_rent: { amount: 145000, currency: 'USD' },
      status: 'vacant',
      address: null,
    });
    expect(u.custom_data).toEqual({ availableOn: '2025-03-01', isFurnished: '0', unitStatusTypeId: 2 });
    expect(() => mapUnit({ unitId: 7, bedrooms: '2.5' })).toThrow(/integer/);

    const r = mapResident({
      customerId: 9,
      propertyId: 1,
      firstName: 'Ada',
      middleName: '',
      lastName: "O'Brien",
      email: 'ada@example.com',
      phones: {
        phone: [
          { phoneNumber: '512-555-0101', phoneNumberTypeId: 3, isPrimary: '1' },
          { phoneNumber: '512-555-0102', phoneNumberTypeId: 1, isPrimary: '0', extension: '12' },
        ],
      },
      dateOfBirth: '12/10/1990',
      address: null,
      customerStatusTypeId: 2,
      leadSource: 'Walk-in',
    });
    expect(r).toMatchObject({
      x_id: '9',
      first_name: 'Ada',
      middle_name: null,
      last_name: "O'Brien",
      phones: [
        { type: 'mobile', number: '512-555-0101', primary: true },
        { type: 'home', number: '512-555-0102', primary: false },
      ],
      date_of_birth: '1990-12-10',
      address: null,
      status: 'current',
    });
    expect(r.custom_data).toEqual({ leadSource: 'Walk-in', 'phones.1.extension': '12' });
  });
});
