/**
 * The deterministic data of a sandbox company: a pure function of (seed, size), where size is the number of
 * leases. Proportions for size N: ~max(1, N/400) properties, ~N/2 units, ~N residents. Every unit has a history of
 * leases (newest last, so a renewal always has a higher id than the lease it renews and pages after it); lease
 * statuses are drawn from decks so that every status is present from a few dozen leases on.
 *
 * "Now" for generated data is fixed (REF_DAY), so the same seed gives byte-identical records on any day. The records
 * are the flavour-neutral model (sandbox/model.ts), so a company is the same data in either flavour.
 */
import { Readable } from 'node:stream';
import type postgres from 'postgres';
import { pipeline } from 'node:stream/promises';
import type { LeaseModel, LeaseState, Phone, PropertyContext, PropertyModel, ResidentModel, ResidentState, TenantRole, UnitModel, UnitState } from './model';
import { refsOf, type Entity, type Floorplan, type NextIds } from './model';
import * as W from './names';
import { Deck, Rng, streamSeed } from './random';
import { addMonths, DAY, dayOf, isoDate } from './time';

const REF_DAY = dayOf('2025-06-01');
const REF_MS = REF_DAY * DAY;

/** First native id of each entity: distinct ranges make ids recognisable in logs, as in real systems. */
const ID_BASE: NextIds = { property: 1001, unit: 100_001, resident: 2_000_001, lease: 5_000_001 };

/** A generated record: its model and its last-update time (generated records were last changed in the past). */
interface GenRecord {
  entity: Entity;
  id: number;
  updated: number;
  model: PropertyModel | UnitModel | ResidentModel | LeaseModel;
}

export type { PropertyContext };

const proportions = (size: number) => {
  const units = Math.max(1, Math.round(size / 2));
  return { properties: Math.max(1, Math.min(units, Math.round(size / 400))), units };
};

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const phone = (area: string, rng: Rng) => `${area}-555-${pad(rng.int(100, 9999), 4)}`;
const timeOn = (day: number, rng: Rng) => day * DAY + rng.int(7 * 3600, 19 * 3600) * 1000;
const dollars = (cents: number) => Math.round(cents / 100) * 100;
/** A coordinate as the PMS keeps it: six decimals. */
const coordinate = (x: number) => Number(x.toFixed(6));

export function makeProperty(rng: Rng, id: number, units: number, nextFloorplanId: () => number, createdMs: number) {
  const c = rng.pick(W.CITIES);
  const word = rng.pick(W.PROPERTY_WORDS);
  const name = `${word} ${rng.pick(W.PROPERTY_KINDS)}`;
  const address = {
    line1: `${rng.int(100, 9899)} ${rng.pick(W.STREETS)}`,
    line2: '',
    city: c.city,
    state: c.state,
    postalCode: `${c.zip}${pad(rng.int(1, 99))}`,
    country: 'US',
  };
  const phones: Phone[] = [{ number: phone(c.area, rng), kind: 'office', primary: true }];
  if (rng.chance(0.5)) phones.push({ number: phone(c.area, rng), kind: 'fax', primary: false });
  const floorplans: Floorplan[] = [];
  const plans = rng.int(3, 5);
  for (let i = 0; i < plans; i++) {
    const bedrooms = Math.min(3, i);
    floorplans.push({
      id: nextFloorplanId(),
      name: `${String.fromCharCode(65 + bedrooms)}${i + 1} - ${bedrooms === 0 ? 'Studio' : `${bedrooms} Bed`}`,
      bedrooms,
      bathrooms: Math.max(1, bedrooms - (rng.chance(0.5) ? 1 : 0)),
      squareFeet: 450 + bedrooms * 300 + rng.int(0, 150),
    });
  }
  const photoCount = rng.int(0, 3);
  const photos = Array.from({ length: photoCount }, (_, i) => ({
    url: `https://images.example.com/p${id}/${i + 1}.jpg`,
    caption: i === 0 ? 'Exterior' : `Amenity ${i}`,
  }));
  // The draws below happen in this order, which the generated data depends on: keep it.
  const model: PropertyModel = {
    id,
    created: createdMs,
    zone: c.tz,
    name: `${name} Apartments`,
    marketingName: `${name} at ${rng.pick(W.PROPERTY_WORDS)} ${c.city}`,
    kind: rng.weighted([
      ['Apartment', 85],
      ['Townhome', 7],
      ['Senior', 4],
      ['Student', 4],
    ] as const),
    active: true,
    description: `${name} offers ${units} homes in ${c.city}, ${c.state}.`,
    yearBuilt: rng.int(1965, 2022),
    units,
    buildings: Math.max(1, Math.ceil(units / 24)),
    floors: rng.int(2, 5),
    website: `https://www.${word.toLowerCase()}${id}.example.com`,
    email: `leasing@${word.toLowerCase()}${id}.example.com`,
    address,
    phones,
    latitude: coordinate(c.lat + (rng.next() - 0.5) / 10),
    longitude: coordinate(c.lng + (rng.next() - 0.5) / 10),
    managementCompany: rng.pick(W.MANAGERS),
    taxId: `${rng.int(10, 99)}-${pad(rng.int(0, 9_999_999), 7)}`,
    petPolicy: rng.weighted([
      ['Restricted', 60],
      ['Allowed', 25],
      ['Not Allowed', 15],
    ]),
    smokingPolicy: rng.weighted([
      ['Not Allowed', 75],
      ['Designated Areas', 20],
      ['Allowed', 5],
    ]),
    photos,
    parkingSpaces: units + rng.int(0, units),
    amenities: rng.sample(W.AMENITIES, rng.int(2, 5)).join(', '),
    officeHours: rng.pick(['Mon-Fri 9:00-18:00', 'Mon-Sat 10:00-17:00', 'Mon-Fri 8:30-17:30, Sat 10:00-16:00']),
    floorplans,
  };
  return { model, ctx: contextOf(model) };
}

/** The context of a property (for its records, and for records created later by changes and writes). */
export function contextOf(p: PropertyModel): PropertyContext {
  const city = W.CITIES.find((c) => c.city === p.address.city);
  return { id: p.id, timeZone: p.zone, address: p.address, baseRentCents: (city?.rent ?? 1400) * 100, floorplans: p.floorplans };
}

export function makeUnit(rng: Rng, id: number, p: PropertyContext, unitNumber: string, status: UnitState, createdMs: number): UnitModel {
  const fp = p.floorplans.length > 0 ? rng.pick(p.floorplans) : undefined;
  const plan = fp ?? { id: null, name: '', bedrooms: 1, bathrooms: 1, squareFeet: 700 };
  const rent = dollars(p.baseRentCents * (0.7 + plan.bedrooms * 0.25) * (0.95 + rng.next() * 0.1));
  return {
    id,
    created: createdMs,
    zone: p.timeZone,
    propertyId: p.id,
    unitNumber,
    buildingName: `Building ${unitNumber.split('-')[0]}`,
    floorNumber: Number(unitNumber.split('-')[1]?.[0] ?? 1) || 1,
    floorplanId: plan.id,
    floorplanName: plan.name,
    bedrooms: plan.bedrooms,
    bathrooms: plan.bathrooms,
    squareFeet: plan.squareFeet + rng.int(-20, 20),
    maxOccupants: Math.max(1, plan.bedrooms) * 2,
    marketRentCents: rent,
    status,
    remarks: rng.chance(0.1) ? rng.pick(['Corner unit', 'Recently renovated', 'Faces courtyard', 'ADA accessible']) : '',
    address: { ...p.address, line2: `Apt ${unitNumber}` },
    amenities: rng.sample(W.UNIT_AMENITIES, rng.int(1, 3)).join(', '),
    furnished: rng.chance(0.05),
    parkingSpaces: rng.int(0, 2),
    availableOn: status !== 'occupied' ? isoDate(REF_DAY + rng.int(0, 60)) : null,
  };
}

export function makeCustomer(rng: Rng, id: number, p: PropertyContext, unitNumber: string | null, status: ResidentState, createdMs: number): ResidentModel {
  const first = rng.pick(W.FIRST_NAMES);
  const last = rng.pick(W.LAST_NAMES);
  const area = W.CITIES.find((c) => c.city === p.address.city)?.area ?? '512';
  const phones: Phone[] = [{ number: phone(area, rng), kind: 'mobile', primary: true }];
  if (rng.chance(0.3)) phones.push({ number: phone(area, rng), kind: 'home', primary: false });
  const slug = (s: string) =>
    s
      .toLowerCase()
      .normalize('NFD')
      .replace(/[^a-z]/g, '');
  const dob = dayOf('1950-01-01') + rng.int(0, 54 * 365);
  return {
    id,
    created: createdMs,
    zone: p.timeZone,
    propertyId: p.id,
    firstName: first,
    middleName: rng.chance(0.3) ? rng.pick(W.FIRST_NAMES) : '',
    lastName: last,
    email: rng.chance(0.95) ? `${slug(first)}.${slug(last)}${id % 10_000}@example.com` : '',
    phones,
    dateOfBirth: rng.chance(0.9) ? isoDate(dob) : null,
    address: unitNumber && rng.chance(0.9) ? { ...p.address, line2: `Apt ${unitNumber}` } : null,
    status,
    leadSource: rng.chance(0.8) ? rng.pick(W.LEAD_SOURCES) : '',
    preferredLanguage: rng.weighted([
      ['en', 85],
      ['es', 12],
      ['zh', 3],
    ]),
    employer: rng.pick(W.EMPLOYERS),
  };
}

/** The customer status a person has given the status of their newest lease. */
function customerStatusFor(status: LeaseState): ResidentState {
  switch (status) {
    case 'pending':
      return 'applicant';
    case 'active':
      return 'current';
    case 'notice':
      return 'notice';
    default:
      return 'past';
  }
}

/** The unit status given the status of the unit's newest lease. */
function unitStatusFor(status: LeaseState | null, rng: Rng): UnitState {
  switch (status) {
    case 'active':
      return 'occupied';
    case 'notice':
      return rng.chance(0.5) ? 'notice_unrented' : 'notice_rented';
    case 'pending':
      return 'vacant_rented';
    default:
      return rng.chance(0.7) ? 'vacant_ready' : 'vacant_not_ready';
  }
}

export interface LeaseDates {
  start: number;
  end: number;
  moveIn: number | null;
  moveOut: number | null;
  notice: number | null;
  signed: number | null;
  term: number;
}

const pickTerm = (rng: Rng) =>
  rng.weighted([
    [12, 70],
    [6, 8],
    [9, 5],
    [18, 10],
    [24, 7],
  ] as const);

/** Dates of a chain's newest lease, which may still be running around REF_DAY. */
function newestDates(rng: Rng, status: LeaseState): LeaseDates {
  const term = pickTerm(rng);
  const span = (start: number) => addMonths(start, term) - 1;
  switch (status) {
    case 'active': {
      const start = REF_DAY - rng.int(0, 330);
      return { start, end: span(start), moveIn: start, moveOut: null, notice: null, signed: start - rng.int(3, 30), term };
    }
    case 'notice': {
      const end = REF_DAY + rng.int(5, 60);
      const start = addMonths(end + 1, -term);
      return { start, end, moveIn: start, moveOut: end, notice: Math.min(REF_DAY - rng.int(0, 10), end - 30), signed: start - rng.int(3, 30), term };
    }
    case 'pending': {
      const start = REF_DAY + rng.int(5, 75);
      return { start, end: span(start), moveIn: null, moveOut: null, notice: null, signed: rng.chance(0.5) ? REF_DAY - rng.int(0, 5) : null, term };
    }
    case 'cancelled': {
      const start = REF_DAY + rng.int(-30, 60);
      return { start, end: span(start), moveIn: null, moveOut: null, notice: null, signed: null, term };
    }
    case 'ended': {
      const end = REF_DAY - rng.int(1, 200);
      const start = addMonths(end + 1, -term);
      return { start, end, moveIn: start, moveOut: end, notice: end - rng.int(30, 60), signed: start - rng.int(3, 30), term };
    }
    default: {
      // terminated / evicted: left before the end of the term
      const start = REF_DAY - rng.int(120, 500);
      const moveOut = Math.max(start + 30, REF_DAY - rng.int(1, 100));
      return { start, end: span(start), moveIn: start, moveOut, notice: moveOut - rng.int(5, 30), signed: start - rng.int(3, 30), term };
    }
  }
}

/** Dates of a historical lease that ended before `nextStart` (the day before it when renewed). */
function historicalDates(rng: Rng, status: LeaseState, nextStart: number, renewed: boolean): LeaseDates {
  const term = pickTerm(rng);
  const end = renewed ? nextStart - 1 : nextStart - rng.int(3, 45);
  const start = addMonths(end + 1, -term);
  const signed = start - rng.int(3, 30);
  switch (status) {
    case 'cancelled':
      return { start, end, moveIn: null, moveOut: null, notice: null, signed: null, term };
    case 'terminated':
    case 'evicted': {
      const moveOut = start + rng.int(30, Math.max(31, end - start - 10));
      return { start, end, moveIn: start, moveOut, notice: moveOut - rng.int(5, 30), signed, term };
    }
    default:
      return { start, end, moveIn: start, moveOut: renewed ? null : end, notice: renewed ? null : end - rng.int(30, 60), signed, term };
  }
}

export function makeLease(
  rng: Rng,
  id: number,
  p: PropertyContext,
  unit: { unitId: number; marketRentCents: number },
  status: LeaseState,
  dates: LeaseDates,
  tenants: LeaseModel['tenants'],
  previous: { leaseId: number; rentCents: number } | null,
  renewalOfferStatus: string,
  createdMs: number,
): LeaseModel {
  let rentCents = previous ? dollars(previous.rentCents * 1.03) : dollars(unit.marketRentCents * (0.92 + rng.next() * 0.13));
  if (rng.chance(0.1)) rentCents += 50;
  const live = status === 'active' || status === 'notice';
  const closed = status === 'ended' || status === 'terminated' || status === 'evicted';
  const balance =
    live || closed
      ? rng.weighted([
          [0, closed ? 70 : 80],
          [rng.int(1, 150_000), closed ? 28 : 15],
          [-rng.int(1, 20_000), closed ? 2 : 5],
        ] as const)
      : 0;
  const deposit = rng.weighted([
    [50_000, 60],
    [rentCents, 30],
    [null, 10],
  ] as const);
  const opt = (d: number | null) => (d === null ? null : isoDate(d));
  // One lease in twenty runs month to month; of the fixed ones, some roll over at the end of their term (a pure
  // function of the id, so the draws, and with them the rest of the data, are what they were before that kind).
  const monthly = rng.chance(0.05);
  return {
    id,
    created: createdMs,
    zone: p.timeZone,
    propertyId: p.id,
    unitId: unit.unitId,
    state: status,
    kind: monthly ? 'month_to_month' : id % 7 === 0 ? 'fixed_with_rollover' : 'fixed',
    start: isoDate(dates.start),
    end: isoDate(dates.end),
    moveIn: opt(dates.moveIn),
    moveOut: opt(dates.moveOut),
    notice: opt(dates.notice),
    signed: opt(dates.signed),
    rentCents,
    depositCents: deposit,
    balanceCents: balance,
    termMonths: dates.term,
    renewalOfferStatus,
    previousLeaseId: previous?.leaseId ?? null,
    concessions: rng.chance(0.1) ? rng.pick(W.CONCESSIONS) : '',
    notes: rng.chance(0.1) ? rng.pick(W.NOTES) : '',
    tenants,
    petCount: rng.weighted([
      [0, 70],
      [1, 25],
      [2, 5],
    ] as const),
    parkingSpaces: rng.int(0, 2),
    occupants: tenants.length + rng.int(0, 2),
    leadSource: rng.chance(0.7) ? rng.pick(W.LEAD_SOURCES) : '',
  };
}

/** Created and last-modified instants of a record first entered on `day`. */
function stamps(rng: Rng, day: number): { created: number; updated: number } {
  const created = timeOn(Math.min(day, REF_DAY - 1), rng);
  const updated = Math.min(REF_MS + 10 * 3600_000, created + rng.int(0, Math.max(0, REF_DAY - day)) * DAY + rng.int(0, 3600) * 1000);
  return { created, updated };
}

/** Spread `total` leases over `units` units: ~5 % of units never leased, the rest 1-6 leases each, summing exactly. */
function leasesPerUnit(rng: Rng, units: number, total: number): Uint8Array {
  const counts = new Uint8Array(units);
  const empty = Math.floor(units * 0.05);
  const emptySet = new Set(
    rng.sample(
      Array.from({ length: units }, (_, i) => i),
      empty,
    ),
  );
  let sum = 0;
  for (let i = 0; i < units; i++) {
    if (emptySet.has(i)) continue;
    counts[i] = rng.weighted([
      [1, 30],
      [2, 35],
      [3, 25],
      [4, 10],
    ] as const);
    sum += counts[i]!;
  }
  const candidates = Array.from({ length: units }, (_, i) => i).filter((i) => !emptySet.has(i));
  if (candidates.length === 0) candidates.push(0);
  // Adjust to the exact size; with a handful of leases some units may go unleased.
  while (sum < total) {
    const i = rng.pick(candidates);
    if (counts[i]! < 250) {
      counts[i]!++;
      sum++;
    }
  }
  let multi = candidates.filter((i) => counts[i]! > 1).length;
  while (sum > total) {
    const i = rng.pick(candidates);
    const c = counts[i]!;
    if (c > 1 || (c === 1 && multi === 0)) {
      counts[i] = c - 1;
      sum--;
      if (c === 2) multi--;
    }
  }
  return counts;
}

/** All records of a company, property by property. Returns the next free id of each entity. */
function* generateCompany(seed: number, size: number): Generator<GenRecord, NextIds> {
  const rng = new Rng(streamSeed(seed, 'generate'));
  const { properties, units } = proportions(size);
  const counts = leasesPerUnit(rng, units, size);
  const finals = new Deck<LeaseState>(rng, [
    ['active', 11],
    ['notice', 3],
    ['pending', 2],
    ['ended', 1],
    ['terminated', 1],
    ['evicted', 1],
    ['cancelled', 1],
  ]);
  const history = new Deck<LeaseState>(rng, [
    ['ended', 14],
    ['terminated', 2],
    ['evicted', 1],
    ['cancelled', 3],
  ]);
  const next: NextIds = { ...ID_BASE };
  let floorplanId = 1;
  let unitIndex = 0;

  for (let pi = 0; pi < properties; pi++) {
    const unitCount = Math.floor(units / properties) + (pi < units % properties ? 1 : 0);
    const pStamp = stamps(rng, REF_DAY - rng.int(400, 3000));
    const { model: property, ctx } = makeProperty(rng, next.property++, unitCount, () => floorplanId++, pStamp.created);
    yield { entity: 'property', id: ctx.id, updated: pStamp.updated, model: property };
    let leasesHere = 0;

    for (let ui = 0; ui < unitCount; ui++, unitIndex++) {
      const k = counts[unitIndex] ?? 0;
      leasesHere += k;
      const building = String.fromCharCode(65 + (Math.floor(ui / 24) % 26)) + (ui >= 624 ? String(Math.floor(ui / 624)) : '');
      const unitNumber = `${building}-${1 + Math.floor((ui % 24) / 8)}${pad(1 + (ui % 8))}`;
      const statuses: LeaseState[] = [];
      for (let j = 0; j < k; j++) statuses.push(j === k - 1 ? finals.draw() : history.draw());
      const renewal = statuses.map((_, j) => j > 0 && statuses[j - 1] === 'ended' && rng.chance(0.45));
      const dates: LeaseDates[] = new Array(k);
      for (let j = k - 1; j >= 0; j--) {
        dates[j] = j === k - 1 ? newestDates(rng, statuses[j]!) : historicalDates(rng, statuses[j]!, dates[j + 1]!.start, renewal[j + 1]!);
      }
      const unitId = next.unit++;
      const uStamp = stamps(rng, Math.min(Math.floor(pStamp.created / DAY), (dates[0]?.start ?? REF_DAY) - 30));
      const unit = makeUnit(rng, unitId, ctx, unitNumber, unitStatusFor(statuses[k - 1] ?? null, rng), uStamp.created);
      yield { entity: 'unit', id: unitId, updated: uStamp.updated, model: unit };
      const marketRentCents = unit.marketRentCents ?? 0;

      const people = new Map<number, { newest: LeaseState; firstDay: number }>();
      let previous: { leaseId: number; rentCents: number; tenants: LeaseModel['tenants'] } | null = null;
      for (let j = 0; j < k; j++) {
        const status = statuses[j]!;
        const d = dates[j]!;
        let tenants: LeaseModel['tenants'];
        if (renewal[j] && previous) tenants = previous.tenants;
        else {
          const n = rng.weighted([
            [1, 85],
            [2, 12],
            [3, 3],
          ] as const);
          tenants = [];
          for (let c = 0; c < n; c++) {
            const role: TenantRole = c === 0 ? 'primary' : c === 2 && rng.chance(0.5) ? (rng.chance(0.5) ? 'occupant' : 'guarantor') : 'responsible';
            tenants.push({ id: next.resident++, role });
          }
        }
        for (const t of tenants) {
          const seen = people.get(t.id);
          people.set(t.id, { newest: status, firstDay: seen?.firstDay ?? (d.signed ?? d.start) - 10 });
        }
        const renewedNext = renewal[j + 1] ?? false;
        const offer = renewedNext
          ? 'Accepted'
          : status === 'notice'
            ? 'Declined'
            : status === 'active' && d.end - REF_DAY < 90
              ? 'Offered'
              : status === 'active'
                ? 'Not Started'
                : '';
        const s = stamps(rng, (d.signed ?? d.start) - rng.int(0, 10));
        const lease = makeLease(
          rng,
          next.lease++,
          ctx,
          { unitId, marketRentCents },
          status,
          d,
          tenants,
          renewal[j] && previous ? previous : null,
          offer,
          s.created,
        );
        yield { entity: 'lease', id: lease.id, updated: s.updated, model: lease };
        previous = { leaseId: lease.id, rentCents: lease.rentCents, tenants };
      }
      for (const [customerId, who] of people) {
        const s = stamps(rng, who.firstDay);
        const c = makeCustomer(rng, customerId, ctx, unitNumber, customerStatusFor(who.newest), s.created);
        yield { entity: 'resident', id: customerId, updated: s.updated, model: c };
      }
    }
    // Prospects: applicants on file without a lease yet.
    const prospects = Math.round(leasesHere * 0.03);
    for (let i = 0; i < prospects; i++) {
      const s = stamps(rng, REF_DAY - rng.int(1, 60));
      const id = next.resident++;
      yield { entity: 'resident', id, updated: s.updated, model: makeCustomer(rng, id, ctx, null, 'applicant', s.created) };
    }
  }
  return next;
}

/** COPY text format: backslash is the escape character; JSON text has no raw tabs or newlines. */
const copyText = (s: string) => s.replace(/\\/g, '\\\\');
const copyNum = (n: number | null) => (n === null ? '\\N' : String(n));

/** Generate a company's records (models and last-update times) straight into sandbox.records with COPY, in one pass and bounded memory. */
export async function insertGenerated(sql: postgres.Sql, companyId: string, seed: number, size: number): Promise<NextIds> {
  const gen = generateCompany(seed, size);
  let nextIds: NextIds = { ...ID_BASE };
  const company = copyText(companyId);
  function* lines(): Generator<string> {
    let chunk = '';
    for (;;) {
      const step = gen.next();
      if (step.done) {
        nextIds = step.value;
        break;
      }
      const r = step.value;
      const refs = refsOf(r.entity, r.model);
      chunk +=
        `${company}\t${r.entity}\t${r.id}\t${copyNum(refs.property_id)}\t${copyNum(refs.unit_id)}\t${copyNum(refs.previous_id)}\t` +
        `${refs.customer_ids ? `{${refs.customer_ids.join(',')}}` : '\\N'}\t${new Date(r.updated).toISOString()}\t${copyText(JSON.stringify(r.model))}\n`;
      if (chunk.length > 256_000) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk) yield chunk;
  }
  const writable = await sql`
    copy sandbox.records (company_id, entity, id, property_id, unit_id, previous_id, customer_ids, updated_at, model) from stdin`.writable();
  await pipeline(Readable.from(lines()), writable);
  return nextIds;
}
