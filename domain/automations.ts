/**
 * Automations (docs/api.md Events → AUTOMATION_*, docs/decisions.md Automations): scheduled CSV exports of one entity of an
 * integration. Their schedule, destination, run states and retry schedule, and the workflow contract. Pure: workflows
 * import it.
 */
import type { Entity } from './cdm';
import type { RetrySchedule } from './retry';
import { RETRIED_STATUSES, retriedStatesBefore, type RetriedStatus } from './states';

export const AUTOMATION_STATUSES = ['active', 'paused'] as const;

/**
 * A run's states, those of all work the retry loop drives (domain/states.ts):
 * - `queued`: created, its first attempt not finished
 * - `running`: an attempt failed transiently and another is scheduled (`next_attempt_at`)
 * - `succeeded`: the file was delivered; AUTOMATION_COMPLETED recorded
 * - `failed`: a permanent failure, or the last retry failed; AUTOMATION_FAILED recorded
 */
export const RUN_STATUSES = RETRIED_STATUSES;
export type RunStatus = RetriedStatus;

/** The states a run may move to `to` from: the guard on every status write. */
export const runStatesBefore = retriedStatesBefore;

/** `{every: seconds}` or `{cron, timezone?}` (IANA zone; default UTC). */
export type AutomationSchedule = { every: number } | { cron: string; timezone?: string };

/**
 * CSV-injection protection (OWASP): a text cell starting with `=`, `+`, `-`, `@`, tab or CR gets a leading `'` and
 * text cells are quoted, so a spreadsheet shows the value instead of running it as a formula. On unless the
 * automation turns it off (`escape_formulas: false`, for files read by programs that need every value as it is).
 * Stored with the destination (the automations table's `destination` JSON): it is about whoever opens the file there,
 * and it needs no column of its own.
 */
export const escapeFormulasOf = (destination: { escape_formulas?: boolean }): boolean => destination.escape_formulas !== false;

/** The entity an automation exports, by its plural (list endpoint) name; the singular is accepted too. */
export const EXPORT_ENTITIES: Record<string, Entity> = {
  properties: 'property',
  property: 'property',
  units: 'unit',
  unit: 'unit',
  residents: 'resident',
  resident: 'resident',
  leases: 'lease',
  lease: 'lease',
};
export const PLURAL: Record<Entity, string> = { property: 'properties', unit: 'units', resident: 'residents', lease: 'leases' };

/** Shortest interval of an `every` schedule. */
export const MIN_EVERY_SECONDS = 60;

/** Bytes (UTF-8) of the name part of a file name: with the run id and `.csv`, well under the 255 of most file systems. */
const FILE_NAME_PART_BYTES = 180;

/** File name of a run: `<automation name>-<run id>.csv`, the name made safe for file systems and URLs. */
export function exportFileName(automationName: string, runId: string): string {
  const safe = automationName
    .normalize('NFKC')
    .replace(/[/\\:*?"<>|\u0000-\u001f\u007f]+/g, '_')
    .replace(/^\.+/, '_')
    .trim();
  // Cut by bytes, whole characters only (a name of 200 CJK characters is 600 bytes).
  let kept = '';
  let bytes = 0;
  for (const ch of safe) {
    const cp = ch.codePointAt(0)!;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes > FILE_NAME_PART_BYTES) break;
    kept += ch;
  }
  return `${kept.trim() || 'export'}-${runId}.csv`;
}

export type RunTrigger = 'schedule' | 'manual';

/** Input of the run workflow: ids only (the rows go straight from the cache to the destination). */
export interface AutomationRunInput {
  runId: string;
  /**
   * The retry schedule (AUTOMATION_RETRY_SCHEDULE_MS): after a transient failure, the next attempt; a permanent one
   * (a 4xx, a bad directory) ends the run at once.
   */
  schedule?: RetrySchedule;
  /** The list form runs started before `schedule` was passed carry (delays before each attempt, the first at once). */
  scheduleMs?: readonly number[];
}

export interface AutomationRunResult {
  runId: string;
  status: 'succeeded' | 'failed';
  attempts: number;
  recordsExported: number | null;
}

/** Input of the workflow an automation's Temporal Schedule starts: it creates the run, then runs it as a child. */
export interface AutomationTickInput {
  automationId: string;
  /** The runs' retry schedule (see AutomationRunInput). */
  schedule?: RetrySchedule;
  /** The list form of firings scheduled before `schedule` was passed. */
  scheduleMs?: readonly number[];
}

/** What one export attempt reports to the workflow. */
export type ExportOutcome =
  | { outcome: 'succeeded'; recordsExported: number; fileName: string }
  | { outcome: 'transient'; error: string }
  | { outcome: 'permanent'; error: string }
  /** The run is already terminal, or its automation was deleted. */
  | { outcome: 'gone'; reason: string };

const IDENTITY = ['id', 'x_id', 'organization_id', 'integration_id'] as const;
const TIMES = ['custom_data', 'created_at', 'updated_at', 'deleted_at', 'ps_synced_at'] as const;

/** The fields of each entity's record, in the API's order: what an export may name in `columns`. */
export const RECORD_FIELDS: Record<Entity, readonly string[]> = {
  property: [
    ...IDENTITY,
    'name',
    'type',
    'status',
    'address',
    'description',
    'year_built',
    'total_units',
    'total_buildings',
    'total_floors',
    'website_url',
    'email',
    'phones',
    'latitude',
    'longitude',
    'timezone_id',
    'management_company_name',
    'tax_id',
    'pet_policy',
    'smoking_policy',
    'media',
    ...TIMES,
  ],
  unit: [
    ...IDENTITY,
    'property_id',
    'unit_number',
    'floorplan_id',
    'floorplan_name',
    'bedrooms',
    'bathrooms',
    'square_feet',
    'max_occupants',
    'market_rent',
    'status',
    'note',
    'address',
    ...TIMES,
  ],
  resident: [...IDENTITY, 'property_id', 'first_name', 'middle_name', 'last_name', 'email', 'phones', 'date_of_birth', 'address', 'status', ...TIMES],
  lease: [
    ...IDENTITY,
    'property_id',
    'unit_id',
    'resident_ids',
    'residents',
    'status',
    'type',
    'start_date',
    'end_date',
    'move_in_date',
    'move_out_date',
    'notice_date',
    'signed_date',
    'rent_amount',
    'security_deposit',
    'balance',
    'term_months',
    'renewal_status',
    'is_renewal',
    'previous_lease_id',
    'concessions',
    'notes',
    ...TIMES,
  ],
};

/** Money fields: each becomes two columns, `<field>_amount` (integer minor units) and `<field>_currency`. */
export const MONEY_FIELDS: Record<Entity, readonly string[]> = {
  property: [],
  unit: ['market_rent'],
  resident: [],
  lease: ['rent_amount', 'security_deposit', 'balance'],
};

/** The CSV header of an export of `fields` (all of the entity's by default). */
export function csvColumns(entity: Entity, fields: readonly string[] = RECORD_FIELDS[entity]): string[] {
  const money = new Set(MONEY_FIELDS[entity]);
  return fields.flatMap((f) => (money.has(f) ? [`${f}_amount`, `${f}_currency`] : [f]));
}
