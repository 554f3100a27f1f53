/** The event catalogue (docs/api.md Events) and the rules that pick an event for a record change (docs/decisions.md). */
import type { Entity } from './cdm';

/** docs/api.md's categories: what receivers and the public events feed get. */
export const CATALOG_CATEGORIES = ['sync_lifecycle', 'data_change', 'automation'] as const;
/**
 * And `operational`: notices for operators about the delivery itself (SUBSCRIPTION_DISABLED), outside docs/api.md's
 * catalog, so sent only to subscriptions that name them (`["*"]` does not cover them) and not in the public feed.
 */
export const EVENT_CATEGORIES = [...CATALOG_CATEGORIES, 'operational'] as const;
export type EventCategory = (typeof EVENT_CATEGORIES)[number];

const EVENT_TYPES = {
  FIRST_SYNC_COMPLETE: 'sync_lifecycle',
  SYNC_COMPLETE: 'sync_lifecycle',
  PROPERTY_CREATED: 'data_change',
  PROPERTY_UPDATED: 'data_change',
  UNIT_CREATED: 'data_change',
  UNIT_UPDATED: 'data_change',
  RESIDENT_CREATED: 'data_change',
  RESIDENT_UPDATED: 'data_change',
  LEASE_UPDATED: 'data_change',
  LEASE_SIGNED: 'data_change',
  LEASE_RENEWED: 'data_change',
  LEASE_ENDED: 'data_change',
  LEASE_EVICTED: 'data_change',
  LEASE_CANCELLED: 'data_change',
  AUTOMATION_COMPLETED: 'automation',
  AUTOMATION_FAILED: 'automation',
  SUBSCRIPTION_DISABLED: 'operational',
} as const satisfies Record<string, EventCategory>;
export type EventType = keyof typeof EVENT_TYPES;
export const ALL_EVENT_TYPES = Object.keys(EVENT_TYPES) as EventType[];
/** Types only a subscription that names them receives, left out of the public feed. */
export const OPERATIONAL_EVENT_TYPES = ALL_EVENT_TYPES.filter((t) => EVENT_TYPES[t] === 'operational');
/** docs/api.md's catalog: every type but the operational ones. */
export const CATALOG_EVENT_TYPES = ALL_EVENT_TYPES.filter((t) => EVENT_TYPES[t] !== 'operational');

export function categoryOf(type: EventType): EventCategory {
  return EVENT_TYPES[type];
}

export interface SyncCompleteData {
  sync_job_id: string;
  started_at: string;
  finished_at: string;
  records_new: number;
  records_updated: number;
  records_soft_deleted: number;
  /** Records the source served that the run could not read and left as they were (listed on the sync job). */
  records_skipped: number;
}

const UPDATED: Record<Exclude<Entity, 'lease'>, EventType> = {
  property: 'PROPERTY_UPDATED',
  unit: 'UNIT_UPDATED',
  resident: 'RESIDENT_UPDATED',
};
const CREATED: Record<Exclude<Entity, 'lease'>, EventType> = {
  property: 'PROPERTY_CREATED',
  unit: 'UNIT_CREATED',
  resident: 'RESIDENT_CREATED',
};

/** The lifecycle event a lease status move fires, or null when the status has none. */
function leaseLifecycleEvent(status: string | null, isRenewal: boolean | null): EventType | null {
  switch (status) {
    case 'active':
      return isRenewal ? 'LEASE_RENEWED' : 'LEASE_SIGNED';
    case 'ended':
    case 'terminated':
      return 'LEASE_ENDED';
    case 'evicted':
      return 'LEASE_EVICTED';
    case 'cancelled':
      return 'LEASE_CANCELLED';
    default:
      return null;
  }
}

type ChangeKind = { kind: 'created' } | { kind: 'updated'; previousStatus: string | null; changed: string[] };

/**
 * Which event a record change produces and whether it carries the full record.
 * - created: `*_CREATED` with the full record; a lease fires its status's lifecycle event, else LEASE_UPDATED.
 * - updated: `*_UPDATED` with the changed fields; a lease whose status moved to one with a lifecycle event fires
 *   that event with the full record.
 */
export function eventFor(
  entity: Entity,
  change: ChangeKind,
  record: { status?: string | null; is_renewal?: boolean | null; deleted_at?: string | null },
): { type: EventType; full: boolean } {
  if (entity !== 'lease') {
    return change.kind === 'created' ? { type: CREATED[entity], full: true } : { type: UPDATED[entity], full: false };
  }
  const statusMoved = change.kind === 'created' || (change.changed.includes('status') && change.previousStatus !== record.status);
  const lifecycle = statusMoved && !record.deleted_at ? leaseLifecycleEvent(record.status ?? null, record.is_renewal ?? null) : null;
  if (lifecycle) return { type: lifecycle, full: true };
  return { type: 'LEASE_UPDATED', full: change.kind === 'created' };
}
