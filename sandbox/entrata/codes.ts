/**
 * The entrata flavour's codes: the ids its records carry for the model's vocabularies, the code lists its write
 * methods accept and its pick-list methods serve, and the lease terms each property offers. Written here, for the
 * simulated system alone (nothing from source/): the connector learns these values from its own documentation or by
 * asking the sandbox, as it would a real PMS, so a connector that read them wrong would be caught by the tests
 * instead of agreeing with the sandbox by construction.
 */
import type { LeaseModel, LeaseState, PhoneKind, ResidentState, TenantRole, UnitState } from '../model';

/** `leaseStatusTypeId`: a pending lease is an Applicant (1) until signed, then Approved (2). */
export function leaseStatusId(lease: Pick<LeaseModel, 'state' | 'signed'>): number {
  const ids: Record<LeaseState, number> = { pending: 1, active: 3, notice: 4, ended: 5, cancelled: 6, terminated: 7, evicted: 8 };
  return lease.state === 'pending' && lease.signed !== null ? 2 : ids[lease.state];
}

/** `unitStatusTypeId` */
export const UNIT_STATUS_ID: Record<UnitState, number> = {
  vacant_ready: 1,
  vacant_not_ready: 2,
  vacant_rented: 3,
  occupied: 4,
  notice_unrented: 5,
  notice_rented: 6,
};

/** `customerStatusTypeId` */
export const CUSTOMER_STATUS_ID: Record<ResidentState, number> = { applicant: 1, current: 2, notice: 3, past: 4 };

/** `customerTypeId` of a lease's customer, and `customerRelationshipTypeId` of an applicant (CUSTOMER_RELATIONSHIP_TYPES). */
export const ROLE_ID: Record<TenantRole, number> = { primary: 1, responsible: 2, occupant: 3, guarantor: 4 };
export const ROLE_OF_ID: Record<number, TenantRole> = { 1: 'primary', 2: 'responsible', 3: 'occupant', 4: 'guarantor' };

/** `phoneNumberTypeId` (PHONE_NUMBER_TYPES). */
export const PHONE_TYPE_ID: Record<PhoneKind, number> = { home: 1, office: 2, mobile: 3, fax: 4 };
export const PHONE_KIND_OF_ID: Record<number, PhoneKind> = { 1: 'home', 2: 'office', 3: 'mobile', 4: 'fax' };

export interface Code {
  id: number;
  name: string;
}

/** `customerRelationshipTypeId` of a lease applicant (and `customerTypeId` of a lease's customers). */
export const CUSTOMER_RELATIONSHIP_TYPES: readonly Code[] = [
  { id: 1, name: 'Primary' },
  { id: 2, name: 'Responsible' },
  { id: 3, name: 'Non-Responsible Occupant' },
  { id: 4, name: 'Guarantor' },
];

/** `phoneNumberTypeId` of a phone number. */
export const PHONE_NUMBER_TYPES: readonly Code[] = [
  { id: 1, name: 'Home' },
  { id: 2, name: 'Office' },
  { id: 3, name: 'Mobile' },
  { id: 4, name: 'Fax' },
];

/** `addressTypeId` of a lease applicant's address. */
export const ADDRESS_TYPES: readonly Code[] = [
  { id: 1, name: 'Current' },
  { id: 2, name: 'Mailing' },
  { id: 3, name: 'Previous' },
];

export interface LeaseTerm extends Code {
  months: number;
}

/** Every lease term the company has set up, by `leaseTermId`. */
export const LEASE_TERMS: readonly LeaseTerm[] = [
  { id: 1, name: '6 Months', months: 6 },
  { id: 2, name: '12 Months', months: 12 },
  { id: 3, name: '18 Months', months: 18 },
  { id: 4, name: '24 Months', months: 24 },
];

/**
 * The lease terms a property offers (what `sendLeases` accepts there, and `getLeaseTerms` lists): every property
 * leases for 6 and 12 months; even-numbered properties also for 18, odd-numbered ones also for 24. A pure function of
 * the property id, so generated data stays a function of (seed, size).
 */
export function leaseTermsAt(propertyId: number): LeaseTerm[] {
  const extra = propertyId % 2 === 0 ? 3 : 4;
  return LEASE_TERMS.filter((t) => t.id <= 2 || t.id === extra);
}

/** The entry of a list with this id, if any. */
export const codeIn = <T extends Code>(list: readonly T[], id: number): T | undefined => list.find((c) => c.id === id);
