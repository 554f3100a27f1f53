/**
 * After a create whose outcome is unknown, the record it would have made, looked up by what identifies it: the same
 * rule for every dialect (a client only says how to list an entity's records at one property and how to look
 * records up by id), so that no dialect finds a duplicate another would have refused to take for its own.
 * - a unit: its property and unit number;
 * - a resident: property and names, then the email when given, else a phone number (digits alone), else the names;
 * - a lease: its unit and dates (a month-to-month lease may have no end), and an applicant of that name on it.
 * Text is compared trimmed and case-insensitive; of several matches the newest (highest native id) is the one.
 */
import type { Entity, InputOf } from '../domain/cdm';
import type { CreateInputOf, RecordsById, WritableEntity, WriteResult } from './connector';
import { digits, fold, newest, sameId } from './values';

/** What a client offers the lookup. */
export interface CreatedLookup {
  /** The readable records of an entity at one property (its x_id) that pass `keep`; none for an id not native. */
  atProperty<E extends WritableEntity>(entity: E, propertyXId: string, keep: (r: InputOf[E]) => boolean): Promise<InputOf[E][]>;
  readByIds<E extends Entity>(entity: E, xIds: string[]): Promise<RecordsById<E>>;
}

export async function findCreatedIn<E extends WritableEntity>(source: CreatedLookup, entity: E, input: CreateInputOf[E]): Promise<WriteResult | null> {
  switch (entity) {
    case 'unit': {
      const u = input as CreateInputOf['unit'];
      const hit = newest(await source.atProperty('unit', u.property_x_id, (r) => fold(r.unit_number) === fold(u.unit_number)));
      return hit ? { x_id: hit.x_id, related: [] } : null;
    }
    case 'resident': {
      const c = input as CreateInputOf['resident'];
      const email = fold(c.email);
      const phones = new Set((c.phones ?? []).map((p) => digits(p.number)).filter(Boolean));
      const hit = newest(
        await source.atProperty('resident', c.property_x_id, (r) => {
          if (fold(r.first_name) !== fold(c.first_name) || fold(r.last_name) !== fold(c.last_name)) return false;
          if (email) return fold(r.email) === email;
          if (phones.size > 0) return (r.phones ?? []).some((p) => phones.has(digits(p.number)));
          return true;
        }),
      );
      return hit ? { x_id: hit.x_id, related: [] } : null;
    }
    default: {
      const l = input as CreateInputOf['lease'];
      const leases = await source.atProperty(
        'lease',
        l.property_x_id,
        (r) =>
          sameId(r.unit_x_id, l.unit_space_id) &&
          r.start_date === l.lease_start_date &&
          (r.end_date === l.lease_end_date || (r.end_date === null && r.type === 'month_to_month')),
      );
      if (leases.length === 0) return null;
      // The applicant is a resident of the lease: a lease of that unit and term for someone else is not ours.
      const people = await source.readByIds('resident', [...new Set(leases.flatMap((r) => r.residents.map((p) => p.x_id)))]);
      const named = new Set(
        people.records.filter((r) => fold(r.first_name) === fold(l.first_name) && fold(r.last_name) === fold(l.last_name)).map((r) => r.x_id),
      );
      const matches = leases.flatMap((lease) => {
        const ours = lease.residents.filter((p) => named.has(p.x_id));
        const applicant = ours.find((p) => p.role === 'primary') ?? newest(ours);
        return applicant ? [{ x_id: lease.x_id, applicant: applicant.x_id }] : [];
      });
      const hit = newest(matches);
      return hit ? { x_id: hit.x_id, related: [{ entity: 'resident', x_id: hit.applicant }] } : null;
    }
  }
}
