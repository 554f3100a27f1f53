/**
 * The code tables of the Entrata-style API: the ids its records carry instead of names, as its documentation
 * lists them. The connector maps them to CDM values; the sandbox PMS implements the same API and emits them.
 * Several source codes fold into one CDM value, so the connector also keeps the raw id in custom_data.
 */
import type { LeaseStatus } from '../../domain/cdm';

/** `leaseStatusTypeId` */
export const LEASE_STATUS_TYPES = {
  1: { name: 'Applicant', cdm: 'pending' },
  2: { name: 'Approved', cdm: 'pending' },
  3: { name: 'Current', cdm: 'active' },
  4: { name: 'Notice', cdm: 'notice' },
  5: { name: 'Past', cdm: 'ended' },
  6: { name: 'Cancelled', cdm: 'cancelled' },
  7: { name: 'Terminated', cdm: 'terminated' },
  8: { name: 'Evicted', cdm: 'evicted' },
} as const satisfies Record<number, { name: string; cdm: LeaseStatus }>;

/** `unitStatusTypeId` */
export const UNIT_STATUS_TYPES = {
  1: { name: 'Vacant Unrented Ready', cdm: 'vacant' },
  2: { name: 'Vacant Unrented Not Ready', cdm: 'vacant' },
  3: { name: 'Vacant Rented', cdm: 'vacant' },
  4: { name: 'Occupied No Notice', cdm: 'occupied' },
  5: { name: 'Notice Unrented', cdm: 'notice' },
  6: { name: 'Notice Rented', cdm: 'notice' },
} as const satisfies Record<number, { name: string; cdm: 'vacant' | 'occupied' | 'notice' }>;

/** `customerStatusTypeId` */
export const CUSTOMER_STATUS_TYPES = {
  1: { name: 'Applicant', cdm: 'applicant' },
  2: { name: 'Current', cdm: 'current' },
  3: { name: 'Notice', cdm: 'notice' },
  4: { name: 'Past', cdm: 'past' },
} as const satisfies Record<number, { name: string; cdm: 'applicant' | 'current' | 'notice' | 'past' }>;

/** `customerTypeId` of a customer on a lease (the CDM lease resident role); also `customer_relationship_type_id`. */
export const CUSTOMER_TYPES = {
  1: { name: 'Primary', cdm: 'primary' },
  2: { name: 'Responsible', cdm: 'responsible' },
  3: { name: 'Non-Responsible Occupant', cdm: 'occupant' },
  4: { name: 'Guarantor', cdm: 'guarantor' },
} as const satisfies Record<number, { name: string; cdm: 'primary' | 'responsible' | 'occupant' | 'guarantor' }>;

/** `leaseIntervalTypeId` (the CDM lease type). */
export const LEASE_INTERVAL_TYPES = {
  1: { name: 'Lease', cdm: 'fixed' },
  2: { name: 'Month To Month', cdm: 'month_to_month' },
} as const satisfies Record<number, { name: string; cdm: string }>;

/** `phoneNumberTypeId` (the CDM phone `type`); also `phone_number_type_id` on writes. */
export const PHONE_NUMBER_TYPES = {
  1: { name: 'Home', cdm: 'home' },
  2: { name: 'Office', cdm: 'office' },
  3: { name: 'Mobile', cdm: 'mobile' },
  4: { name: 'Fax', cdm: 'fax' },
} as const satisfies Record<number, { name: string; cdm: string }>;

export type CodeTable = Record<number, { name: string; cdm?: string }>;

/** The code table entry for an id (number or numeric string), or undefined. */
export function codeOf<T extends CodeTable>(table: T, id: unknown): T[keyof T] | undefined {
  const n = typeof id === 'number' ? id : typeof id === 'string' && /^\d+$/.test(id.trim()) ? Number(id) : NaN;
  return Number.isInteger(n) ? (table as Record<number, T[keyof T]>)[n] : undefined;
}
