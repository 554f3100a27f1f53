/**
 * The look-up of a create whose outcome is unknown (source/find-created.ts), over a fake source: ids compared as the
 * source reads them (a numeric id travels as a number, so `0100001` names unit space 100001).
 */
import { expect, it } from 'vitest';
import type { InputOf } from '../../domain/cdm';
import { findCreatedIn, type CreatedLookup } from '../../source/find-created';
import { leaseInput, residentInput } from '../support/fixtures';

const lease = leaseInput(
  '5000001',
  { property: '7', unit: '100001', residents: [{ x_id: '2000001', role: 'primary' }] },
  { start_date: '2027-03-01', end_date: '2028-02-29' },
);
const applicant = residentInput('2000001', '7', { first_name: 'Opal', last_name: 'Options' });

const source: CreatedLookup = {
  atProperty: async (entity, propertyXId, keep) => (entity === 'lease' && Number(propertyXId) === 7 ? [lease as InputOf[typeof entity]].filter(keep) : []),
  readByIds: async (_entity, ids) => ({ records: ids.includes('2000001') ? [applicant as never] : [], unreadable: [] }) as never,
};

it('finds a lease whose unit space id was sent with leading zeros', async () => {
  const input = {
    ...{
      property_x_id: '07',
      unit_space_id: '0100001',
      lease_start_date: '2027-03-01',
      lease_end_date: '2028-02-29',
      first_name: 'Opal',
      last_name: 'Options',
    },
  };
  expect(await findCreatedIn(source, 'lease', input as never)).toMatchObject({ x_id: '5000001' });
  expect(await findCreatedIn(source, 'lease', { ...input, unit_space_id: '100002' } as never)).toBeNull();
});
