/**
 * The contract of the sandbox PMS's control endpoints (used by the admin API for sandbox integrations, and by
 * tests and demos). Placeholder client until the sandbox lands; the sandbox issue implements it over HTTP.
 */
import type { Entity } from '../domain/cdm';

export type PerEntity<T> = Partial<Record<Entity, T>>;

export interface SandboxChangeRequest {
  /** Records to change: a total spread over entities, or counts per entity. */
  update?: number | PerEntity<number>;
  create?: number | PerEntity<number>;
  delete?: number | PerEntity<number>;
  /** Leases whose status moves along a realistic transition (pending→active, active→notice→ended, ...). */
  lease_transitions?: number;
}

export interface SandboxChangeResult {
  updated: Record<Entity, string[]>;
  created: Record<Entity, string[]>;
  deleted: Record<Entity, string[]>;
  lease_transitions: { x_id: string; from: string; to: string }[];
}

export type SandboxFaultKind = 'unavailable' | 'rate_limited' | 'slow' | 'reject_writes';

export interface SandboxControl {
  /** Provision a company (one per integration) with generated data; returns the API key the connector uses. */
  createCompany(input: { companyId: string; size: number; seed: number }): Promise<{ api_key: string }>;
  deleteCompany(companyId: string): Promise<void>;
  applyChanges(companyId: string, req: SandboxChangeRequest): Promise<SandboxChangeResult>;
  /** `count`: how many requests the fault affects; omitted = until cleared. */
  setFault(companyId: string, fault: { kind: SandboxFaultKind; count?: number }): Promise<void>;
  clearFaults(companyId: string): Promise<void>;
}

export function sandboxControlClient(_baseUrl: string): SandboxControl {
  throw new Error('sandbox control client not implemented yet');
}
