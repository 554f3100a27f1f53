/**
 * Entrata-style references of `0` (docs/sources/entrata.md: "a floorplanId (or any reference) of 0 or "" is none"):
 * a unit's or customer's property, a lease's property, unit and renewed lease read as none, exactly as an absent one
 * does (the record is kept, its reference null), never as a record whose id is "0".
 */
import { describe, expect, it } from 'vitest';
import { mapLease, mapResident, mapUnit } from '../../source/entrata/mapping';

describe('an Entrata-style reference of 0', () => {
  it.each([0, '0', ' 0 ', '', null])('%j names no property of a unit or customer', (none) => {
    expect(mapUnit({ unitId: 100001, propertyId: none, unitNumber: '101' })).toMatchObject({ x_id: '100001', property_x_id: null, unit_number: '101' });
    expect(mapResident({ customerId: 2000001, propertyId: none, firstName: 'Ada' })).toMatchObject({ x_id: '2000001', property_x_id: null, first_name: 'Ada' });
  });

  it.each([0, '0', '', null])('%j names no property, unit or renewed lease of a lease', (none) => {
    const lease = mapLease({ leaseId: 5000002, propertyId: none, unitId: none, previousLeaseId: none, rent: '1200.00' });
    expect(lease).toMatchObject({ x_id: '5000002', property_x_id: null, unit_x_id: null, previous_lease_x_id: null });
    expect(lease.custom_data).toEqual({});
  });

  it('leaves every other reference as the id it names', () => {
    expect(mapUnit({ unitId: 100001, propertyId: 1001 }).property_x_id).toBe('1001');
    expect(mapResident({ customerId: 2000001, propertyId: '1001' }).property_x_id).toBe('1001');
    expect(mapLease({ leaseId: 5000002, propertyId: 1001, unitId: '100001', previousLeaseId: 5000001 })).toMatchObject({
      property_x_id: '1001',
      unit_x_id: '100001',
      previous_lease_x_id: '5000001',
    });
  });
});
