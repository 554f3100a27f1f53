/**
 * The sandbox PMS's own setup: the code lists its write methods accept and its pick-list methods serve, and the lease
 * terms each property offers. Written here, for the simulated system alone (nothing from source/): the connector
 * learns these values by asking the sandbox, as it would ask a real PMS, so a connector that read them wrong would be
 * caught by the tests instead of agreeing with the sandbox by construction.
 */

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
